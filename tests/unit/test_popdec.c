/* Unit tests for the pop result decoder (consume/popdec.h): records cut to each claim's
 * offsets, claims numbered in order, hints and partitions reported, the empty outcome, the
 * group's policy row, and a corrupt segment refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consume/popdec.h"
#include "core/buf.h"
#include "storage/record.h"

typedef struct seen {
    int nrec;
    int index[32];
    uint64_t offset[32];
    int64_t ts[32];
    char payload[32][16];
    char queue[32][16];
    int npart;
    int part_index[16];
    uint64_t part_id[16];
    int part_more[16];
} seen;

static void on_record(void *arg, const popped_partition *p, const record_view *v, int64_t ts)
{
    seen *s = arg;
    assert_true(s->nrec < 32);
    s->index[s->nrec] = p->index;
    s->offset[s->nrec] = v->offset;
    s->ts[s->nrec] = ts;
    snprintf(s->payload[s->nrec], 16, "%.*s", (int)v->payload_len, v->payload);
    snprintf(s->queue[s->nrec], 16, "%.*s", (int)p->queue_len, p->queue ? p->queue : "");
    s->nrec++;
}

static void on_partition(void *arg, const popped_partition *p)
{
    seen *s = arg;
    assert_true(s->npart < 16);
    s->part_index[s->npart] = p->index;
    s->part_id[s->npart] = p->id;
    s->part_more[s->npart] = p->more;
    s->npart++;
}

/* a segment of n records whose payloads are "p<offset>" from base */
static void segment(buf *b, uint64_t base, int n)
{
    buf_reset(b);
    segment_begin(b);
    for (int k = 0; k < n; k++) {
        char pl[16], txn[16];
        int pn = snprintf(pl, sizeof pl, "p%llu", (unsigned long long)(base + (uint64_t)k));
        int tn = snprintf(txn, sizeof txn, "t%d", k);
        record_in r = {.txn = txn, .txn_len = (size_t)tn, .payload = pl, .payload_len = (size_t)pn};
        assert_int_equal(record_encode(b, &r), 0);
    }
}

static const uint8_t PU[16] = {7};

static pop_row claim(uint64_t pid, const char *name, int64_t start, int64_t end, int more)
{
    pop_row r = {.kind = POP_ROW_CLAIM, .pid = pid, .puuid = PU, .pname = name, .pname_len = strlen(name),
                 .a = start, .b = end, .c = 123, .seg_count = more, .seg_count_null = 0};
    return r;
}

static pop_row seg(const buf *b, int64_t base, int n, int64_t ts)
{
    pop_row r = {.kind = POP_ROW_SEGMENT, .a = base, .b = base + n - 1, .seg_ts = ts, .seg_count = n,
                 .seg_data = (const uint8_t *)b->data, .seg_len = b->len};
    return r;
}

static void test_claims_cut_to_their_offsets(void **state)
{
    (void)state;
    buf s1, s2, s3;
    buf_init(&s1, 0);
    buf_init(&s2, 0);
    buf_init(&s3, 0);
    segment(&s1, 0, 5);  /* offsets 0..4; the claim takes [2, 7) */
    segment(&s2, 5, 4);  /* 5..8 */
    segment(&s3, 10, 3); /* another partition: 10..12, the claim takes [10, 12) */
    seen sn;
    memset(&sn, 0, sizeof sn);
    pop_outcome out;
    pop_decoder d;
    pop_decoder_init(&d, on_record, on_partition, &sn, &out);
    pop_row hint = {.kind = POP_ROW_HINT, .pid = 99};
    pop_row rows[] = {hint, claim(1, "a", 2, 7, 1), seg(&s1, 0, 5, 1000), seg(&s2, 5, 4, 2000),
                      claim(2, "b", 10, 12, 0), seg(&s3, 10, 3, 3000)};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_int_equal(pop_decoder_row(&d, &rows[i]), 0);
    pop_decoder_end(&d);
    assert_int_equal(out.claimed, 2);
    assert_int_equal(out.records, 7);
    assert_int_equal(sn.nrec, 7);
    uint64_t want[] = {2, 3, 4, 5, 6, 10, 11};
    for (int k = 0; k < 7; k++)
        assert_int_equal(sn.offset[k], want[k]);
    assert_string_equal(sn.payload[0], "p2");
    assert_string_equal(sn.payload[4], "p6");
    assert_int_equal(sn.index[4], 0);
    assert_int_equal(sn.index[5], 1);
    assert_int_equal(sn.ts[2], 1000);
    assert_int_equal(sn.ts[3], 2000); /* each segment's stamp */
    /* the hint first (index -1), then each claim after its records, with `more` */
    assert_int_equal(sn.npart, 3);
    assert_int_equal(sn.part_index[0], -1);
    assert_int_equal(sn.part_id[0], 99);
    assert_int_equal(sn.part_index[1], 0);
    assert_int_equal(sn.part_more[1], 1);
    assert_int_equal(sn.part_id[2], 2);
    assert_int_equal(sn.part_more[2], 0);
    buf_free(&s1);
    buf_free(&s2);
    buf_free(&s3);
}

static void test_namespace_claims_name_their_queue(void **state)
{
    (void)state;
    buf s1;
    buf_init(&s1, 0);
    segment(&s1, 0, 2);
    seen sn;
    memset(&sn, 0, sizeof sn);
    pop_outcome out;
    pop_decoder d;
    pop_decoder_init(&d, on_record, NULL, &sn, &out); /* no partition callback */
    pop_row c = claim(3, "p", 0, 2, 0);
    c.qname = "orders";
    c.qname_len = 6;
    pop_row sg = seg(&s1, 0, 2, 5);
    assert_int_equal(pop_decoder_row(&d, &c), 0);
    assert_int_equal(pop_decoder_row(&d, &sg), 0);
    pop_decoder_end(&d);
    assert_int_equal(sn.nrec, 2);
    assert_string_equal(sn.queue[1], "orders");
    buf_free(&s1);
}

static void test_empty_outcome(void **state)
{
    (void)state;
    seen sn;
    memset(&sn, 0, sizeof sn);
    pop_outcome out;
    pop_decoder d;
    pop_decoder_init(&d, on_record, on_partition, &sn, &out);
    pop_row e = {.kind = POP_ROW_EMPTY, .pname = "lease_held", .pname_len = 10, .c = 1700000000000000};
    assert_int_equal(pop_decoder_row(&d, &e), 0);
    pop_decoder_end(&d);
    assert_int_equal(out.claimed, 0);
    assert_string_equal(out.why, "lease_held");
    assert_int_equal(out.retry_at, 1700000000000000);
    assert_int_equal(sn.npart, 0);
    /* a reason longer than the field is cut, never overrun */
    pop_row l = {.kind = POP_ROW_EMPTY, .pname = "a_reason_far_longer_than_thirty_two_bytes", .pname_len = 41};
    assert_int_equal(pop_decoder_row(&d, &l), 0);
    assert_int_equal(strlen(out.why), sizeof out.why - 1);
}

static void test_policy_row(void **state)
{
    (void)state;
    buf s1;
    buf_init(&s1, 0);
    segment(&s1, 0, 3);
    seen sn;
    memset(&sn, 0, sizeof sn);
    pop_outcome out;
    pop_decoder d;
    pop_decoder_init(&d, on_record, on_partition, &sn, &out);
    assert_int_equal(out.policy, 0); /* no row: nothing said (queue mode, no such queue) */
    /* pop_v2's first row: the group conflates, and the pop declared otherwise */
    pop_row pol = {.kind = POP_ROW_POLICY, .a = 1, .b = 1, .seg_count_null = 1, .seg_ts_null = 1};
    assert_int_equal(pop_decoder_row(&d, &pol), 0);
    /* a conflating claim is the newest record only: [2, 3) of the segment 0..2 */
    pop_row c = claim(1, "a", 2, 3, 0);
    pop_row sg = seg(&s1, 0, 3, 1);
    assert_int_equal(pop_decoder_row(&d, &c), 0);
    assert_int_equal(pop_decoder_row(&d, &sg), 0);
    /* after the claims: how many records the conflating claims retired (0..1 here) */
    pop_row cf = {.kind = POP_ROW_CONFLATED, .a = 2};
    assert_int_equal(pop_decoder_row(&d, &cf), 0);
    pop_decoder_end(&d);
    assert_int_equal(out.conflated, 2);
    assert_int_equal(out.policy, 1);
    assert_int_equal(out.conflation, 1);
    assert_int_equal(out.conflict, 1);
    assert_int_equal(out.claimed, 1);
    assert_int_equal(sn.nrec, 1);
    assert_int_equal(sn.offset[0], 2);
    assert_int_equal(sn.npart, 1); /* the policy row is no partition */
    /* the other way round: not conflating, no conflict */
    pop_decoder_init(&d, on_record, on_partition, &sn, &out);
    pop_row off = {.kind = POP_ROW_POLICY, .a = 0, .b = 0};
    assert_int_equal(pop_decoder_row(&d, &off), 0);
    assert_int_equal(out.policy, 1);
    assert_int_equal(out.conflation, 0);
    assert_int_equal(out.conflict, 0);
    buf_free(&s1);
}

static void test_corrupt_segment(void **state)
{
    (void)state;
    buf s1;
    buf_init(&s1, 0);
    segment(&s1, 0, 3);
    seen sn;
    memset(&sn, 0, sizeof sn);
    pop_outcome out;
    pop_decoder d;
    pop_decoder_init(&d, on_record, on_partition, &sn, &out);
    pop_row c = claim(1, "a", 0, 3, 0);
    assert_int_equal(pop_decoder_row(&d, &c), 0);
    /* cut short: the third record's bytes are missing */
    pop_row sg = seg(&s1, 0, 3, 1);
    sg.seg_len -= 2;
    assert_int_equal(pop_decoder_row(&d, &sg), -1);
    /* an unknown segment version */
    buf_reset(&s1);
    buf_putc(&s1, 99);
    pop_row bad = seg(&s1, 0, 0, 1);
    assert_int_equal(pop_decoder_row(&d, &bad), -1);
    /* more records than the row says */
    segment(&s1, 0, 3);
    pop_row more = seg(&s1, 0, 3, 1);
    more.seg_count = 2;
    assert_int_equal(pop_decoder_row(&d, &more), -1);
    buf_free(&s1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claims_cut_to_their_offsets),
        cmocka_unit_test(test_namespace_claims_name_their_queue),
        cmocka_unit_test(test_empty_outcome),
        cmocka_unit_test(test_policy_row), cmocka_unit_test(test_corrupt_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
