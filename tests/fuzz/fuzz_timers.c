/* fuzz_timers — json_parse then timer_ops_parse_body on arbitrary input, as POST
 * /api/v1/timers does. Checks: the outcome does not depend on whether values below the op
 * fields were tokenised; a refusal has a status, a reason and a sentence; accepted ops are
 * within every bound, their payload is one JSON text; the encoded record decodes back to the
 * same transactionId and payload bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "storage/record.h"
#include "timers/timers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_timers: check failed at line %d: %s\n", __LINE__, #c);                      \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static int parse_with(const char *src, size_t len, uint32_t depth, arena *ar, timer_op **ops, int *n,
                      qerr_detail *why)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = depth};
    int r = -2;
    if (json_parse(&d, src, len, &jo) == 0) {
        memset(why, 0, sizeof *why);
        r = (int)timer_ops_parse_body(&d, ar, ops, n, why);
        CHECK(r == QERR_OK || r == QERR_BAD_INPUT);
        if (r == QERR_BAD_INPUT)
            CHECK(why->code && strncmp(why->code, "timer_", 6) == 0 && why->reason && why->index >= -1 &&
                  why->text[0] != '\0' && strlen(why->text) < sizeof why->text);
    }
    json_doc_free(&d);
    return r;
}

static void check_op(const timer_op *o)
{
    CHECK(o->kind >= TIMER_OP_SCHEDULE && o->kind <= TIMER_OP_CANCEL);
    CHECK(o->queue_len >= 1 && o->queue_len <= TIMER_NAME_MAX_BYTES && !memchr(o->queue, 0, o->queue_len));
    CHECK(o->key_len >= 1 && o->key_len <= TIMER_KEY_MAX_BYTES && !memchr(o->key, 0, o->key_len));
    if (o->txn)
        CHECK(o->txn_len >= 1 && o->txn_len <= TIMER_TXN_MAX_BYTES && !memchr(o->txn, 0, o->txn_len));
    if (o->kind == TIMER_OP_CANCEL) {
        CHECK(o->partition == NULL && o->payload == NULL);
        return;
    }
    CHECK(o->txn != NULL);
    CHECK(o->partition_len >= 1 && o->partition_len <= TIMER_NAME_MAX_BYTES);
    CHECK(o->delay_us >= 0 && o->delay_us <= TIMER_DELAY_MAX_MS * 1000);
    CHECK(o->payload_len >= 1 && o->payload_len <= TIMER_PAYLOAD_MAX_BYTES);
    json_doc pd;
    memset(&pd, 0, sizeof pd);
    CHECK(json_parse(&pd, o->payload, o->payload_len, NULL) == 0);
    json_doc_free(&pd);
    buf seg;
    buf_init(&seg, 0);
    segment_begin(&seg);
    CHECK(timer_encode_record(o, NULL, 0, &seg) == 0);
    seg_reader sr;
    record_view v;
    CHECK(seg_reader_init(&sr, (const uint8_t *)seg.data, seg.len, 0, 1) == 0);
    CHECK(seg_reader_next(&sr, &v) == 1);
    CHECK(v.flags & REC_TXN_PRODUCER);
    char txt[300];
    size_t tl = record_txn_text(&v, txt, sizeof txt);
    CHECK(tl == o->txn_len && memcmp(txt, o->txn, tl) == 0);
    CHECK(v.payload_len == o->payload_len && memcmp(v.payload, o->payload, v.payload_len) == 0);
    CHECK(seg_reader_next(&sr, &v) == 0);
    buf_free(&seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    arena a1, a2;
    arena_init(&a1);
    arena_init(&a2);
    timer_op *o1 = NULL, *o2 = NULL;
    int n1 = 0, n2 = 0;
    qerr_detail w1, w2;
    int r1 = parse_with(src, size, 3, &a1, &o1, &n1, &w1);
    int r2 = parse_with(src, size, 0, &a2, &o2, &n2, &w2);
    CHECK(r1 == r2);
    if (r1 == QERR_BAD_INPUT)
        CHECK(strcmp(w1.code, w2.code) == 0 && strcmp(w1.reason, w2.reason) == 0 && w1.index == w2.index && strcmp(w1.text, w2.text) == 0);
    if (r1 == QERR_OK) {
        CHECK(n1 == n2 && n1 >= 0 && n1 <= TIMER_BATCH_MAX_OPS);
        for (int i = 0; i < n1; i++) {
            check_op(&o1[i]);
            CHECK(o1[i].kind == o2[i].kind && o1[i].delay_us == o2[i].delay_us);
            CHECK(o1[i].payload_len == o2[i].payload_len);
            if (o1[i].payload_len)
                CHECK(memcmp(o1[i].payload, o2[i].payload, o1[i].payload_len) == 0);
        }
    }
    arena_free(&a1);
    arena_free(&a2);
    return 0;
}
