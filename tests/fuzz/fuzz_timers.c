/* fuzz_timers — json_parse then timer_parse_request on arbitrary input, as POST /api/v1/timers
 * does. Checks: the outcome does not depend on whether values below the timer fields were
 * tokenised; accepted timers are within every bound; the encoded record decodes back to the
 * same transactionId, traceId and payload bytes. */
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

static int parse_with(const char *src, size_t len, uint32_t depth, arena *ar, timer_spec **specs, int *n,
                      char *err, size_t errlen)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = depth};
    int r = -2;
    if (json_parse(&d, src, len, &jo) == 0 && json_type_of(&d, 0) == JSON_OBJECT) {
        err[0] = '\0';
        int batch;
        r = timer_parse_request(&d, ar, specs, n, &batch, err, errlen);
        CHECK(r == 0 || r == -1);
        if (r < 0)
            CHECK(err[0] != '\0' && strlen(err) < errlen);
    }
    json_doc_free(&d);
    return r;
}

static void check_spec(const timer_spec *s, const char *src, size_t size)
{
    CHECK(s->queue_len >= 1 && s->queue_len <= TIMER_NAME_MAX_BYTES && !memchr(s->queue, 0, s->queue_len));
    CHECK(s->partition_len >= 1 && s->partition_len <= TIMER_NAME_MAX_BYTES);
    CHECK(s->txn_len >= 1 && s->txn_len <= TIMER_TXN_MAX_BYTES);
    if (s->delay_us >= 0)
        CHECK(s->delay_us <= TIMER_DELAY_MAX_MS * 1000);
    else
        CHECK(s->fire_at_us >= TIMER_FIRE_AT_MIN_US && s->fire_at_us <= TIMER_FIRE_AT_MAX_US);
    if (s->payload) {
        CHECK(s->payload >= src && s->payload + s->payload_len <= src + size);
        CHECK(s->payload_len <= TIMER_PAYLOAD_MAX_BYTES);
    }
    buf seg;
    buf_init(&seg, 0);
    segment_begin(&seg);
    CHECK(timer_encode_record(s, NULL, 0, &seg) == 0);
    seg_reader sr;
    record_view v;
    CHECK(seg_reader_init(&sr, (const uint8_t *)seg.data, seg.len, 0, 1) == 0);
    CHECK(seg_reader_next(&sr, &v) == 1);
    char txt[300];
    size_t tl = record_txn_text(&v, txt, sizeof txt);
    CHECK(tl == s->txn_len && memcmp(txt, s->txn, tl) == 0);
    CHECK(!!v.trace == !!s->has_trace);
    CHECK(v.payload_len == s->payload_len);
    if (v.payload_len)
        CHECK(memcmp(v.payload, s->payload, v.payload_len) == 0);
    CHECK(seg_reader_next(&sr, &v) == 0);
    buf_free(&seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    arena a1, a2;
    arena_init(&a1);
    arena_init(&a2);
    timer_spec *s1 = NULL, *s2 = NULL;
    int n1 = 0, n2 = 0;
    char e1[600], e2[600];
    int r1 = parse_with(src, size, 3, &a1, &s1, &n1, e1, sizeof e1);
    int r2 = parse_with(src, size, 0, &a2, &s2, &n2, e2, sizeof e2);
    CHECK(r1 == r2);
    if (r1 == -1)
        CHECK(strcmp(e1, e2) == 0);
    if (r1 == 0) {
        CHECK(n1 == n2 && n1 >= 1 && n1 <= TIMER_BATCH_MAX_ITEMS);
        for (int i = 0; i < n1; i++) {
            check_spec(&s1[i], src, size);
            CHECK(s1[i].fire_at_us == s2[i].fire_at_us && s1[i].delay_us == s2[i].delay_us);
            CHECK(s1[i].payload_len == s2[i].payload_len);
        }
    }
    arena_free(&a1);
    arena_free(&a2);
    return 0;
}
