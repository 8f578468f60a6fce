/* Unit tests for the segment record encoding (storage/record.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "storage/record.h"

static const uint8_t TRACE[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                  0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};

static record_in rec(const char *txn, const char *producer, const char *payload)
{
    record_in r;
    memset(&r, 0, sizeof r);
    r.txn = txn;
    r.txn_len = strlen(txn);
    if (producer) {
        r.producer = producer;
        r.producer_len = strlen(producer);
    }
    if (payload) {
        r.payload = payload;
        r.payload_len = strlen(payload);
    }
    return r;
}

/* Encodes one record, checking record_encoded_size against the bytes appended. */
static void encode_checked(buf *b, const record_in *r)
{
    size_t before = b->len;
    assert_int_equal(record_encode(b, r), 0);
    assert_int_equal(b->len - before, record_encoded_size(r));
}

/* Checks that a decoded view holds exactly what was encoded. */
static void view_matches(const record_view *v, const record_in *r, uint64_t offset)
{
    assert_int_equal(v->offset, offset);
    char txt[128];
    size_t n = record_txn_text(v, txt, sizeof txt);
    assert_int_equal(n, r->txn_len);
    assert_memory_equal(txt, r->txn, n);
    if (txn_is_lower_uuid(r->txn, r->txn_len)) {
        assert_true(v->flags & REC_TXN_UUID);
        assert_int_equal(v->txn_len, 16);
    } else {
        assert_false(v->flags & REC_TXN_UUID);
        assert_int_equal(v->txn_len, r->txn_len);
        if (r->txn_len)
            assert_memory_equal(v->txn, r->txn, r->txn_len);
    }
    if (r->trace) {
        assert_true(v->flags & REC_TRACE);
        assert_non_null(v->trace);
        assert_memory_equal(v->trace, r->trace, 16);
    } else {
        assert_false(v->flags & REC_TRACE);
        assert_null(v->trace);
    }
    if (r->producer) {
        assert_true(v->flags & REC_PRODUCER);
        assert_int_equal(v->producer_len, r->producer_len);
        if (r->producer_len)
            assert_memory_equal(v->producer, r->producer, r->producer_len);
    } else {
        assert_false(v->flags & REC_PRODUCER);
        assert_null(v->producer);
        assert_int_equal(v->producer_len, 0);
    }
    assert_int_equal(!!(v->flags & REC_TXN_PRODUCER), !!r->txn_producer);
    assert_int_equal(!!(v->flags & REC_ENCRYPTED), !!r->encrypted);
    assert_int_equal(v->payload_len, r->payload_len);
    if (r->payload_len)
        assert_memory_equal(v->payload, r->payload, r->payload_len);
}

/* Encodes recs into a segment and reads them back from base. */
static void round_trip(const record_in *recs, size_t n, uint64_t base)
{
    buf b;
    buf_init(&b, 0);
    segment_begin(&b);
    assert_int_equal(b.len, 1);
    assert_int_equal((uint8_t)b.data[0], SEGMENT_VERSION);
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        encode_checked(&b, &recs[i]);
        total += record_encoded_size(&recs[i]);
    }
    assert_int_equal(b.len, total);
    seg_reader s;
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)b.data, b.len, base, (uint32_t)n), 0);
    record_view v;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(seg_reader_next(&s, &v), 1);
        view_matches(&v, &recs[i], base + i);
    }
    assert_int_equal(seg_reader_next(&s, &v), 0);
    assert_int_equal(seg_reader_next(&s, &v), 0); /* stays at the end */
    buf_free(&b);
}

static void test_round_trip_basic(void **state)
{
    (void)state;
    record_in r[6];
    r[0] = rec("order-1", NULL, "{\"a\":1}");
    r[1] = rec("order-2", "svc-billing", "[1,2,3]");
    r[1].trace = TRACE;
    r[2] = rec("", NULL, "null");
    r[3] = rec("x", "", "\"s\"");       /* producer present but empty */
    r[4] = rec("txn-with-trace", NULL, "1");
    r[4].trace = TRACE;
    r[5] = rec("enc", "p", "sealed-bytes\x01\x02");
    r[5].encrypted = 1;
    round_trip(r, 6, 0);
    round_trip(r, 6, 1000);
    round_trip(r, 6, UINT64_MAX - 6);
}

static void test_uuid_txn_ids(void **state)
{
    (void)state;
    record_in r[4];
    r[0] = rec("0190f5c2-7a3b-7def-8123-456789abcdef", NULL, "{}");
    r[1] = rec("00000000-0000-0000-0000-000000000000", "prod", "{}");
    r[2] = rec("ffffffff-ffff-ffff-ffff-ffffffffffff", NULL, "{}");
    r[2].trace = TRACE;
    r[3] = rec("0190F5C2-7A3B-7DEF-8123-456789ABCDEF", NULL, "{}"); /* upper case stays text */
    for (int i = 0; i < 3; i++) {
        assert_true(txn_is_lower_uuid(r[i].txn, r[i].txn_len));
        /* flags + 16 raw bytes + payload */
        assert_int_equal(record_encoded_size(&r[i]),
                         1 + 16 + (r[i].trace ? 16 : 0) + (r[i].producer ? 1 + r[i].producer_len : 0) + 1 + 2);
    }
    assert_false(txn_is_lower_uuid(r[3].txn, r[3].txn_len));
    assert_int_equal(record_encoded_size(&r[3]), 1 + 1 + 36 + 1 + 2);
    round_trip(r, 4, 42);

    /* mixed case and near-misses stay text and round-trip exactly */
    const char *texts[] = {
        "0190f5c2-7a3b-7def-8123-456789abcdeF", "0190f5c2-7a3b-7def-8123-456789abcde",
        "0190f5c2-7a3b-7def-8123-456789abcdef0", "0190f5c27a3b-7def-8123-456789abcdef0",
        "0190f5c2-7a3b-7def-8123_456789abcdef", "g190f5c2-7a3b-7def-8123-456789abcdef",
        "{0190f5c2-7a3b-7def-8123-456789abcdef}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        record_in t = rec(texts[i], NULL, "0");
        assert_false(txn_is_lower_uuid(t.txn, t.txn_len));
        round_trip(&t, 1, 7);
    }
}

static void test_txn_producer_flag(void **state)
{
    (void)state;
    record_in r[3];
    r[0] = rec("client-chosen", "alice", "{}");
    r[0].txn_producer = 1;
    r[1] = rec("0190f5c2-7a3b-7def-8123-456789abcdef", NULL, "{}");
    r[1].txn_producer = 1;
    r[2] = rec("0190f5c2-7a3b-7def-8123-456789abcdee", NULL, "{}");
    r[2].txn_producer = 0;
    buf b;
    buf_init(&b, 0);
    segment_begin(&b);
    encode_checked(&b, &r[0]);
    assert_int_equal((uint8_t)b.data[1], REC_TXN_PRODUCER | REC_PRODUCER);
    size_t at = b.len;
    encode_checked(&b, &r[1]);
    assert_int_equal((uint8_t)b.data[at], REC_TXN_PRODUCER | REC_TXN_UUID);
    at = b.len;
    encode_checked(&b, &r[2]);
    assert_int_equal((uint8_t)b.data[at], REC_TXN_UUID);
    buf_free(&b);
    round_trip(r, 3, 5);
}

static void test_empty_payload(void **state)
{
    (void)state;
    record_in r[2];
    r[0] = rec("t", NULL, NULL); /* payload NULL, length 0 */
    r[1] = rec("u", NULL, "");   /* empty string */
    buf b;
    buf_init(&b, 0);
    segment_begin(&b);
    encode_checked(&b, &r[0]);
    /* flags, txn len 1, 't', payload len 0 */
    static const uint8_t want[] = {SEGMENT_VERSION, 0x00, 0x01, 't', 0x00};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    encode_checked(&b, &r[1]);
    seg_reader s;
    record_view v;
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)b.data, b.len, 9, 2), 0);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(v.payload_len, 0);
    assert_int_equal(v.offset, 9);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(v.payload_len, 0);
    assert_int_equal(v.offset, 10);
    assert_int_equal(seg_reader_next(&s, &v), 0);
    buf_free(&b);
    round_trip(r, 2, 0);
}

static void test_big_payloads(void **state)
{
    (void)state;
    static const size_t sizes[] = {127, 128, 16383, 16384, 70000, 2097151, 2097152, 5u << 20};
    record_in r[sizeof sizes / sizeof sizes[0]];
    char *payloads[sizeof sizes / sizeof sizes[0]];
    char *bigprod = malloc(300);
    memset(bigprod, 'p', 300);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        payloads[i] = malloc(sizes[i]);
        for (size_t k = 0; k < sizes[i]; k++)
            payloads[i][k] = (char)('a' + (k * 7 + i) % 26);
        r[i] = rec("big", NULL, NULL);
        r[i].payload = payloads[i];
        r[i].payload_len = sizes[i];
        if (i % 2) {
            r[i].producer = bigprod;
            r[i].producer_len = 300;
        }
        assert_int_equal(record_encoded_size(&r[i]),
                         1 + 1 + 3 + (i % 2 ? 2 + 300 : 0) + varint_len(sizes[i]) + sizes[i]);
    }
    round_trip(r, sizeof sizes / sizeof sizes[0], 123456789);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        free(payloads[i]);
    free(bigprod);
}

static void test_encode_respects_buf_ceiling(void **state)
{
    (void)state;
    record_in r = rec("t", NULL, "0123456789");
    buf b;
    buf_init(&b, 8);
    segment_begin(&b);
    assert_int_equal(record_encode(&b, &r), -1);
    assert_true(b.overflow);
    assert_int_equal(b.len, 1); /* nothing half-written */
    buf_free(&b);
}

static void test_end_of_segment(void **state)
{
    (void)state;
    seg_reader s;
    record_view v;
    /* an empty segment: version byte only, zero records */
    static const uint8_t empty[] = {SEGMENT_VERSION};
    assert_int_equal(seg_reader_init(&s, empty, 1, 77, 0), 0);
    assert_int_equal(seg_reader_next(&s, &v), 0);

    buf b;
    buf_init(&b, 0);
    segment_begin(&b);
    record_in r = rec("a", NULL, "1");
    encode_checked(&b, &r);
    encode_checked(&b, &r);
    const uint8_t *p = (const uint8_t *)b.data;

    /* count larger than the records present */
    assert_int_equal(seg_reader_init(&s, p, b.len, 0, 3), 0);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_next(&s, &v), -1);

    /* count smaller: the remaining bytes are trailing garbage */
    assert_int_equal(seg_reader_init(&s, p, b.len, 0, 1), 0);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_next(&s, &v), -1);

    /* count 0 with records present */
    assert_int_equal(seg_reader_init(&s, p, b.len, 0, 0), 0);
    assert_int_equal(seg_reader_next(&s, &v), -1);

    /* trailing byte after the last record */
    buf_putc(&b, 0);
    p = (const uint8_t *)b.data;
    assert_int_equal(seg_reader_init(&s, p, b.len, 0, 2), 0);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_next(&s, &v), -1);
    buf_free(&b);
}

static void test_bad_header(void **state)
{
    (void)state;
    seg_reader s;
    static const uint8_t v0[] = {0};
    static const uint8_t v2[] = {2, 0x00, 0x00, 0x00};
    static const uint8_t vff[] = {0xff};
    assert_int_equal(seg_reader_init(&s, v0, 0, 0, 0), -1); /* no version byte at all */
    assert_int_equal(seg_reader_init(&s, v0, 1, 0, 0), -1);
    assert_int_equal(seg_reader_init(&s, v2, sizeof v2, 0, 1), -1);
    assert_int_equal(seg_reader_init(&s, vff, 1, 0, 0), -1);
}

/* Reads a hand-made segment (version byte prepended) expecting `ok` good records then -1. */
static void expect_corrupt(const uint8_t *body, size_t n, uint32_t count, int ok)
{
    uint8_t *data = malloc(n + 1); /* exact size: ASan catches any over-read */
    data[0] = SEGMENT_VERSION;
    if (n)
        memcpy(data + 1, body, n);
    seg_reader s;
    record_view v;
    assert_int_equal(seg_reader_init(&s, data, n + 1, 0, count), 0);
    for (int i = 0; i < ok; i++)
        assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_next(&s, &v), -1);
    free(data);
}

static void test_corrupt_inputs(void **state)
{
    (void)state;
    /* sanity: a valid record: flags 0, txn "ab", payload "x" */
    static const uint8_t good[] = {0x00, 0x02, 'a', 'b', 0x01, 'x'};
    {
        uint8_t data[sizeof good + 1];
        data[0] = SEGMENT_VERSION;
        memcpy(data + 1, good, sizeof good);
        seg_reader s;
        record_view v;
        assert_int_equal(seg_reader_init(&s, data, sizeof data, 0, 1), 0);
        assert_int_equal(seg_reader_next(&s, &v), 1);
        assert_int_equal(seg_reader_next(&s, &v), 0);
    }
    /* every strict prefix of a valid record is corrupt */
    for (size_t n = 0; n < sizeof good; n++)
        expect_corrupt(good, n, 1, 0);

    /* truncated varint for the txn length */
    static const uint8_t tv1[] = {0x00, 0x80};
    expect_corrupt(tv1, sizeof tv1, 1, 0);
    static const uint8_t tv2[] = {0x00, 0xff, 0xff, 0xff};
    expect_corrupt(tv2, sizeof tv2, 1, 0);
    /* truncated varint for the payload length */
    static const uint8_t tv3[] = {0x00, 0x00, 0x80};
    expect_corrupt(tv3, sizeof tv3, 1, 0);
    /* varint longer than 10 bytes / above 2^64 */
    static const uint8_t ov1[] = {0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
    expect_corrupt(ov1, sizeof ov1, 1, 0);
    static const uint8_t ov2[] = {0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x00};
    expect_corrupt(ov2, sizeof ov2, 1, 0);
    /* lengths past the end: txn, producer, payload */
    static const uint8_t le1[] = {0x00, 0x05, 'a', 'b', 0x00};
    expect_corrupt(le1, sizeof le1, 1, 0);
    static const uint8_t le2[] = {REC_PRODUCER, 0x00, 0x09, 'p', 0x00};
    expect_corrupt(le2, sizeof le2, 1, 0);
    static const uint8_t le3[] = {0x00, 0x00, 0x03, 'x', 'y'};
    expect_corrupt(le3, sizeof le3, 1, 0);
    /* a huge length (2^63) must not wrap the bounds check */
    static const uint8_t le4[] = {0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    expect_corrupt(le4, sizeof le4, 1, 0);
    static const uint8_t le5[] = {0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'a'};
    expect_corrupt(le5, sizeof le5, 1, 0);
    /* uuid txn / trace shorter than 16 bytes */
    static const uint8_t sh1[] = {REC_TXN_UUID, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    expect_corrupt(sh1, sizeof sh1, 1, 0);
    static const uint8_t sh2[] = {REC_TRACE, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    expect_corrupt(sh2, sizeof sh2, 1, 0);
    /* unknown flag bits */
    for (unsigned bit = 6; bit < 8; bit++) {
        uint8_t uf[] = {(uint8_t)(1u << bit), 0x00, 0x00};
        expect_corrupt(uf, sizeof uf, 1, 0);
    }
    static const uint8_t uf2[] = {0x00, 0x00, 0x00, 0xc0, 0x00, 0x00};
    expect_corrupt(uf2, sizeof uf2, 2, 1);
    /* a good record then a truncated one */
    static const uint8_t gt[] = {0x00, 0x00, 0x00, 0x00, 0x01};
    expect_corrupt(gt, sizeof gt, 2, 1);
}

static void test_every_flag_combination(void **state)
{
    (void)state;
    /* all 64 known-flag combinations decode; hand-built so REC_* layout is pinned */
    for (unsigned f = 0; f <= REC_KNOWN_FLAGS; f++) {
        buf b;
        buf_init(&b, 0);
        segment_begin(&b);
        buf_putc(&b, (char)f);
        if (f & REC_TXN_UUID)
            buf_append(&b, TRACE, 16);
        else
            buf_append(&b, "\x03xyz", 4);
        if (f & REC_TRACE)
            buf_append(&b, TRACE, 16);
        if (f & REC_PRODUCER)
            buf_append(&b, "\x02pp", 3);
        buf_append(&b, "\x02{}", 3);
        seg_reader s;
        record_view v;
        assert_int_equal(seg_reader_init(&s, (const uint8_t *)b.data, b.len, 3, 1), 0);
        assert_int_equal(seg_reader_next(&s, &v), 1);
        assert_int_equal(v.flags, f);
        assert_int_equal(v.offset, 3);
        assert_int_equal(v.payload_len, 2);
        assert_memory_equal(v.payload, "{}", 2);
        char txt[64];
        if (f & REC_TXN_UUID) {
            assert_int_equal(record_txn_text(&v, txt, sizeof txt), 36);
            assert_string_equal(txt, "00112233-4455-6677-8899-aabbccddeeff");
        } else {
            assert_int_equal(record_txn_text(&v, txt, sizeof txt), 3);
            assert_memory_equal(txt, "xyz", 3);
        }
        assert_int_equal(seg_reader_next(&s, &v), 0);
        buf_free(&b);
    }
}

static void test_txn_text_small_buffer(void **state)
{
    (void)state;
    record_view v;
    memset(&v, 0, sizeof v);
    v.flags = REC_TXN_UUID;
    v.txn = TRACE;
    v.txn_len = 16;
    char out[64];
    assert_int_equal(record_txn_text(&v, out, 36), 0); /* needs room for the NUL */
    assert_int_equal(record_txn_text(&v, out, 37), 36);
    v.flags = 0;
    v.txn = (const uint8_t *)"hello";
    v.txn_len = 5;
    memset(out, 'Z', sizeof out);
    assert_int_equal(record_txn_text(&v, out, 3), 3);
    assert_memory_equal(out, "hel", 3);
    assert_int_equal(out[3], 'Z');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_basic),
        cmocka_unit_test(test_uuid_txn_ids),
        cmocka_unit_test(test_txn_producer_flag),
        cmocka_unit_test(test_empty_payload),
        cmocka_unit_test(test_big_payloads),
        cmocka_unit_test(test_encode_respects_buf_ceiling),
        cmocka_unit_test(test_end_of_segment),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_corrupt_inputs),
        cmocka_unit_test(test_every_flag_combination),
        cmocka_unit_test(test_txn_text_small_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
