/* Unit tests for the segment record encoding (storage/record.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <zstd.h>

#include "core/uuid.h"
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
    static const uint8_t v3[] = {3, 0x00, 0x00, 0x00};
    static const uint8_t vff[] = {0xff};
    assert_int_equal(seg_reader_init(&s, v0, 0, 0, 0), -1); /* no version byte at all */
    assert_int_equal(seg_reader_init(&s, v0, 1, 0, 0), -1);
    assert_int_equal(seg_reader_init(&s, v3, sizeof v3, 0, 1), -1);
    /* codec 1 is known; this one's first chunk holds no record: corrupt */
    record_view v;
    assert_int_equal(seg_reader_init(&s, v2, sizeof v2, 0, 1), 0);
    assert_int_equal(seg_reader_next(&s, &v), -1);
    seg_reader_done(&s);
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


/* ---- codec 1: chunks of records and of producer zstd frames ---- */

static const uint8_t ID7[16] = {0x01, 0x8f, 0x00, 0x11, 0x22, 0x33, 0x70, 0x01,
                                0x80, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};

/* One producer frame: u32le body_len | 0 | id | u16le txn | payload */
static void put_frame(buf *raw, const char *txn, const char *payload)
{
    size_t tl = strlen(txn), pl = strlen(payload);
    uint32_t blen = (uint32_t)(1 + 16 + 2 + tl + pl);
    uint8_t h[4] = {(uint8_t)blen, (uint8_t)(blen >> 8), (uint8_t)(blen >> 16), (uint8_t)(blen >> 24)};
    buf_append(raw, h, 4);
    buf_putc(raw, 0);
    buf_append(raw, ID7, 16);
    uint8_t t[2] = {(uint8_t)tl, (uint8_t)(tl >> 8)};
    buf_append(raw, t, 2);
    buf_append(raw, txn, tl);
    buf_append(raw, payload, pl);
}

static void zframe(const buf *raw, buf *z)
{
    buf_reset(z);
    size_t cap = ZSTD_compressBound(raw->len);
    buf_reserve(z, cap);
    size_t n = ZSTD_compress(z->data, cap, raw->data, raw->len, 1);
    assert_false(ZSTD_isError(n));
    z->len = n;
}

/* records chunk (2 records) | zstd chunk (3 frames, producer "svc") | records chunk (1 record) */
static void build_mixed(buf *seg, buf *z)
{
    buf recs, raw;
    buf_init(&recs, 0);
    buf_init(&raw, 0);
    record_in a = rec("t-a", NULL, "{\"a\":1}"), b = rec("t-b", "me", "[2]"), c = rec("t-c", NULL, "3");
    record_encode(&recs, &a);
    record_encode(&recs, &b);
    put_frame(&raw, "z-0", "{\"z\":0}");
    put_frame(&raw, "", "\"one\"");
    put_frame(&raw, "z-2", "{\"z\":[2,2]}");
    zframe(&raw, z);
    buf_reset(seg);
    segment_begin_chunked(seg);
    segment_chunk_records(seg, 2, recs.data, recs.len);
    segment_chunk_zframes(seg, 3, "svc", 3, z->data, z->len, 1);
    buf_reset(&recs);
    record_encode(&recs, &c);
    segment_chunk_records(seg, 1, recs.data, recs.len);
    buf_free(&recs);
    buf_free(&raw);
}

static void expect_mixed(const record_view *v, int i)
{
    static const char *txns[] = {"t-a", "t-b", "z-0", NULL, "z-2", "t-c"};
    static const char *payloads[] = {"{\"a\":1}", "[2]", "{\"z\":0}", "\"one\"", "{\"z\":[2,2]}", "3"};
    char txt[64];
    size_t n = record_txn_text(v, txt, sizeof txt);
    if (txns[i]) {
        assert_int_equal(n, strlen(txns[i]));
        assert_memory_equal(txt, txns[i], n);
    } else {
        /* an empty transactionId reads back as the frame's message id */
        uuid u;
        memcpy(u.b, ID7, 16);
        char want[UUID_STR_LEN + 1];
        uuid_format(&u, want);
        assert_int_equal(n, UUID_STR_LEN);
        assert_memory_equal(txt, want, n);
        assert_false(v->flags & REC_TXN_PRODUCER);
    }
    if (i >= 2 && i <= 4) {
        assert_true(v->flags & REC_PRODUCER);
        assert_int_equal(v->producer_len, 3);
        assert_memory_equal(v->producer, "svc", 3);
        assert_null(v->zchunk); /* a chunk with frames without a transactionId never goes out as stored */
        if (txns[i])
            assert_true(v->flags & REC_TXN_PRODUCER);
    }
    assert_int_equal(v->payload_len, strlen(payloads[i]));
    assert_memory_equal(v->payload, payloads[i], v->payload_len);
}

static void test_codec1_reads_every_chunk(void **state)
{
    (void)state;
    buf seg, z;
    buf_init(&seg, 0);
    buf_init(&z, 0);
    build_mixed(&seg, &z);
    assert_true(segment_is_chunked((const uint8_t *)seg.data, seg.len));
    seg_reader s;
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)seg.data, seg.len, 100, 6), 0);
    record_view v;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(seg_reader_next(&s, &v), 1);
        assert_int_equal(v.offset, 100 + (uint64_t)i);
        expect_mixed(&v, i);
    }
    assert_int_equal(seg_reader_next(&s, &v), 0);
    seg_reader_done(&s);
    /* a count that does not match the chunks is corrupt, both ways */
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)seg.data, seg.len, 0, 7), 0);
    int rc, got = 0;
    while ((rc = seg_reader_next(&s, &v)) == 1)
        got++;
    assert_int_equal(rc, -1);
    assert_int_equal(got, 6);
    seg_reader_done(&s);
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)seg.data, seg.len, 0, 5), 0);
    got = 0;
    while ((rc = seg_reader_next(&s, &v)) == 1)
        got++;
    assert_int_equal(rc, -1);
    seg_reader_done(&s);
    buf_free(&seg);
    buf_free(&z);
}

static void test_codec1_zchunk_pass_and_skip(void **state)
{
    (void)state;
    buf seg, z;
    buf_init(&seg, 0);
    buf_init(&z, 0);
    build_mixed(&seg, &z);
    seg_reader s;
    record_view v;
    seg_zchunk zc;
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)seg.data, seg.len, 10, 6), 0);
    assert_int_equal(seg_reader_zchunk(&s, &zc), 0); /* a records chunk comes first */
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_zchunk(&s, &zc), 0); /* inside a chunk */
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(seg_reader_zchunk(&s, &zc), 1);
    assert_int_equal(zc.base_offset, 12);
    assert_int_equal(zc.count, 3);
    assert_int_equal(zc.producer_len, 3);
    /* the stored bytes are the producer's frame, unchanged */
    assert_int_equal(zc.zlen, z.len);
    assert_memory_equal(zc.z, z.data, z.len);
    seg_reader_pass(&s, &zc);
    assert_null(s.mem); /* passed without inflating */
    assert_int_equal(seg_reader_next(&s, &v), 1);
    assert_int_equal(v.offset, 15);
    expect_mixed(&v, 5);
    assert_int_equal(seg_reader_next(&s, &v), 0);
    seg_reader_done(&s);
    /* skip_below passes the zstd chunk below the offset without inflating it */
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)seg.data, seg.len, 10, 6), 0);
    seg_reader_skip_below(&s, 15);
    int n = 0;
    while (seg_reader_next(&s, &v) == 1)
        n++;
    assert_int_equal(n, 3); /* two of the first chunk, then offset 15 */
    assert_int_equal(v.offset, 15);
    assert_null(s.mem);
    seg_reader_done(&s);
    /* codec 0 has no zstd chunk */
    buf plain;
    buf_init(&plain, 0);
    segment_begin(&plain);
    record_in a = rec("x", NULL, "1");
    record_encode(&plain, &a);
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)plain.data, plain.len, 0, 1), 0);
    assert_int_equal(seg_reader_zchunk(&s, &zc), 0);
    buf_free(&plain);
    buf_free(&seg);
    buf_free(&z);
}

static void test_codec1_to_records(void **state)
{
    (void)state;
    buf seg, z, out;
    buf_init(&seg, 0);
    buf_init(&z, 0);
    buf_init(&out, 0);
    build_mixed(&seg, &z);
    assert_int_equal(segment_to_records((const uint8_t *)seg.data, seg.len, 6, &out), 0);
    assert_int_equal((uint8_t)out.data[0], SEGMENT_VERSION);
    seg_reader s;
    record_view v;
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)out.data, out.len, 0, 6), 0);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(seg_reader_next(&s, &v), 1);
        expect_mixed(&v, i);
    }
    assert_int_equal(seg_reader_next(&s, &v), 0);
    /* a corrupt one is refused */
    assert_int_equal(segment_to_records((const uint8_t *)seg.data, seg.len - 1, 6, &out), -1);
    buf_free(&seg);
    buf_free(&z);
    buf_free(&out);
}

static void test_codec1_corrupt(void **state)
{
    (void)state;
    buf seg, z;
    buf_init(&seg, 0);
    buf_init(&z, 0);
    build_mixed(&seg, &z);
    /* every truncation, and every single-byte change of the chunk heads, is caught or reads
     * within bounds (ASan checks the latter) */
    for (size_t cut = 1; cut < seg.len; cut++) {
        uint8_t *t = malloc(cut);
        memcpy(t, seg.data, cut);
        seg_reader s;
        record_view v;
        assert_int_equal(seg_reader_init(&s, t, cut, 0, 6), 0);
        int rc, got = 0;
        while ((rc = seg_reader_next(&s, &v)) == 1)
            got++;
        assert_int_equal(rc, -1);
        assert_true(got < 6);
        assert_int_equal(seg_reader_next(&s, &v), -1);
        seg_reader_done(&s);
        free(t);
    }
    for (size_t i = 1; i < seg.len; i++) {
        uint8_t *t = malloc(seg.len);
        memcpy(t, seg.data, seg.len);
        t[i] ^= 0x5a;
        seg_reader s;
        record_view v;
        assert_int_equal(seg_reader_init(&s, t, seg.len, 0, 6), 0);
        while (seg_reader_next(&s, &v) == 1)
            ;
        seg_reader_done(&s);
        free(t);
    }
    /* an unknown chunk kind, a zero count, and a zstd frame without its content size */
    const uint8_t bad_kind[] = {SEGMENT_CHUNKED, 7, 1, 0};
    const uint8_t zero[] = {SEGMENT_CHUNKED, CHUNK_RECORDS, 0, 0};
    seg_reader s;
    record_view v;
    assert_int_equal(seg_reader_init(&s, bad_kind, sizeof bad_kind, 0, 1), 0);
    assert_int_equal(seg_reader_next(&s, &v), -1);
    assert_int_equal(seg_reader_init(&s, zero, sizeof zero, 0, 1), 0);
    assert_int_equal(seg_reader_next(&s, &v), -1);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    buf raw, sized;
    buf_init(&raw, 0);
    buf_init(&sized, 0);
    put_frame(&raw, "t", "1");
    buf_reserve(&z, ZSTD_compressBound(raw.len));
    size_t zn = ZSTD_compress2(cc, z.data, ZSTD_compressBound(raw.len), raw.data, raw.len);
    assert_false(ZSTD_isError(zn));
    ZSTD_freeCCtx(cc);
    segment_begin_chunked(&sized);
    segment_chunk_zframes(&sized, 1, NULL, 0, z.data, zn, 0);
    assert_int_equal(seg_reader_init(&s, (const uint8_t *)sized.data, sized.len, 0, 1), 0);
    assert_int_equal(seg_reader_next(&s, &v), -1);
    seg_reader_done(&s);
    buf_free(&raw);
    buf_free(&sized);
    buf_free(&seg);
    buf_free(&z);
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
        cmocka_unit_test(test_codec1_reads_every_chunk),
        cmocka_unit_test(test_codec1_zchunk_pass_and_skip),
        cmocka_unit_test(test_codec1_to_records),
        cmocka_unit_test(test_codec1_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
