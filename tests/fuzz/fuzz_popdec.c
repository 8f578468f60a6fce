/* fuzz_popdec — the pop result decoder (consume/popdec.h) over rows built from arbitrary
 * input: each row takes a kind, offsets, a count and a length from a 12-byte header, then that
 * many bytes as its segment (or partition name). Checks: delivered records lie inside the
 * claim's [start, end) and their spans inside the input; records counted equal records
 * delivered; claims are numbered 0, 1, ... in order and each is reported once. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consume/popdec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_popdec: check failed at line %d: %s\n", __LINE__, #c);                      \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

typedef struct st {
    const uint8_t *lo, *hi;
    uint64_t delivered;
    int last_index;
    int reported; /* claims reported to on_partition */
} st;

static int inside(const st *s, const void *p, size_t n)
{
    return n == 0 || ((const uint8_t *)p >= s->lo && (const uint8_t *)p + n <= s->hi);
}

static void on_record(void *arg, const popped_partition *p, const record_view *v, int64_t ts)
{
    st *s = arg;
    (void)ts;
    CHECK((int64_t)v->offset >= p->start && (int64_t)v->offset < p->end);
    CHECK(p->index >= 0 && p->index == s->last_index);
    CHECK(inside(s, v->payload, v->payload_len));
    CHECK(inside(s, v->producer, v->producer_len));
    CHECK(inside(s, v->txn, v->txn_len));
    s->delivered++;
}

static void on_partition(void *arg, const popped_partition *p)
{
    st *s = arg;
    /* hints (-1), and each claim once, in order, after its records */
    if (p->index >= 0)
        CHECK(p->index == s->reported++);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st s = {.lo = data, .hi = data + size, .last_index = -1};
    pop_outcome out;
    pop_decoder d;
    pop_decoder_init(&d, on_record, on_partition, &s, &out);
    static const uint8_t pu[16];
    size_t i = 0;
    while (i + 12 <= size) {
        const uint8_t *h = data + i;
        i += 12;
        size_t len = (size_t)(h[10] | h[11] << 8);
        if (len > size - i)
            len = size - i;
        pop_row r;
        memset(&r, 0, sizeof r);
        r.kind = h[0] % 6;
        r.pid = h[1];
        r.puuid = pu;
        r.a = (int64_t)(h[2] | h[3] << 8) - 16;
        r.b = r.a + h[4];
        r.c = h[5];
        r.seg_ts = h[6];
        r.seg_count_null = h[7] & 1;
        r.seg_count = h[8] | (h[9] & 0x7f) << 8;
        r.seg_data = data + i;
        r.seg_len = len;
        r.pname = (const char *)data + i;
        r.pname_len = len;
        if (h[7] & 2) {
            r.qname = (const char *)data + i;
            r.qname_len = len;
        }
        i += len;
        if (r.kind == POP_ROW_CLAIM)
            s.last_index++;
        if (pop_decoder_row(&d, &r) < 0)
            break;
        CHECK(out.claimed == s.last_index + 1);
        CHECK(strlen(out.why) < sizeof out.why);
        CHECK((out.conflation == 0 || out.conflation == 1) && (out.conflict == 0 || out.conflict == 1));
        CHECK(out.policy || (!out.conflation && !out.conflict)); /* said only by a policy row (kind 3) */
    }
    pop_decoder_end(&d);
    CHECK(out.records == s.delivered);
    CHECK(s.reported == out.claimed || s.reported == out.claimed - 1); /* -1: a corrupt segment stopped it */
    return 0;
}
