/* Unit tests for the QPB1 binary push decoder (storage/qpb.h): the three body forms the 2.x
 * client sends (plain with transaction ids, one zstd body, producer-compressed frames), the
 * counts flag, and a refusal naming the group and message for every way a body can be wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "core/buf.h"
#include "storage/qpb.h"

static void u16(buf *b, uint32_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    buf_append(b, x, 2);
}

static void u32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_append(b, x, 4);
}

static void text16(buf *b, const char *s)
{
    u16(b, (uint32_t)strlen(s));
    buf_puts(b, s);
}

static void zstd_append(buf *b, const void *src, size_t n)
{
    size_t cap = ZSTD_compressBound(n);
    char *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, src, n, 1);
    assert_false(ZSTD_isError(zn));
    buf_append(b, z, zn);
    free(z);
}

static const uint8_t V7[16] = {0x01, 0x93, 0x00, 0x00, 0x00, 0x01, 0x70, 0x01,
                               0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07};

/* one frame: u32 body_len | u8 flags | id | u16 txn | payload */
static void frame(buf *b, uint8_t flags, const uint8_t id[16], const char *txn, const char *payload)
{
    u32(b, (uint32_t)(1 + 16 + 2 + strlen(txn) + strlen(payload)));
    buf_append(b, &flags, 1);
    buf_append(b, id, 16);
    text16(b, txn);
    buf_puts(b, payload);
}

static int decode(const buf *b, size_t max_raw, arena *ar, qpb_body *out, qpb_error *e)
{
    return qpb_decode(b->data, b->len, max_raw, ar, out, e);
}

static void plain_body(buf *b, uint8_t flags)
{
    buf_puts(b, "QPB1");
    buf_append(b, &flags, 1);
    u32(b, 2);
    text16(b, "orders");
    text16(b, "p1");
    u32(b, 2);
    if (flags & QPB_FLAG_TXN)
        text16(b, "t-1");
    u32(b, 7);
    buf_puts(b, "{\"a\":1}");
    if (flags & QPB_FLAG_TXN)
        text16(b, "");
    u32(b, 4);
    buf_puts(b, "null");
    text16(b, "orders");
    text16(b, "Default");
    u32(b, 1);
    if (flags & QPB_FLAG_TXN)
        text16(b, "t-3");
    u32(b, 3);
    buf_puts(b, "[1]");
}

static void test_plain_with_txn(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    plain_body(&b, QPB_FLAG_TXN | QPB_FLAG_COUNTS);
    arena ar;
    arena_init(&ar);
    qpb_body out;
    qpb_error e;
    assert_int_equal(decode(&b, 1 << 20, &ar, &out, &e), 0);
    assert_int_equal(out.flags, QPB_FLAG_TXN | QPB_FLAG_COUNTS);
    assert_int_equal(out.groups, 2);
    assert_int_equal(out.n, 3);
    assert_memory_equal(out.items[0].queue, "orders", 6);
    assert_memory_equal(out.items[0].partition, "p1", 2);
    assert_int_equal(out.items[0].txn_len, 3);
    assert_memory_equal(out.items[0].txn, "t-1", 3);
    assert_int_equal(out.items[0].payload_len, 7);
    assert_memory_equal(out.items[0].payload, "{\"a\":1}", 7);
    /* an empty transactionId: the broker mints one */
    assert_null(out.items[1].txn);
    assert_int_equal(out.items[1].txn_len, 0);
    assert_int_equal(out.items[2].group, 1);
    assert_int_equal(out.items[2].pos, 0);
    assert_memory_equal(out.items[2].partition, "Default", 7);
    assert_false(out.items[0].has_id);
    arena_free(&ar);
    buf_free(&b);
}

static void test_plain_without_txn_and_zstd_body(void **state)
{
    (void)state;
    buf plain;
    buf_init(&plain, 0);
    plain_body(&plain, 0);
    arena ar;
    arena_init(&ar);
    qpb_body out;
    qpb_error e;
    assert_int_equal(decode(&plain, 1 << 20, &ar, &out, &e), 0);
    assert_int_equal(out.n, 3);
    assert_null(out.items[0].txn);
    /* the same body as one zstd frame (flag 1, raw_len) */
    buf z;
    buf_init(&z, 0);
    buf_puts(&z, "QPB1");
    uint8_t fl = QPB_FLAG_ZSTD;
    buf_append(&z, &fl, 1);
    u32(&z, (uint32_t)(plain.len - 5));
    zstd_append(&z, plain.data + 5, plain.len - 5);
    assert_int_equal(decode(&z, 1 << 20, &ar, &out, &e), 0);
    assert_int_equal(out.n, 3);
    assert_int_equal(out.raw_bytes, plain.len - 5);
    assert_memory_equal(out.items[2].payload, "[1]", 3);
    /* raw_len that disagrees with the frame */
    z.data[5] ^= 1;
    assert_int_equal(decode(&z, 1 << 20, &ar, &out, &e), -1);
    assert_string_equal(e.reason, "zstd_invalid");
    z.data[5] ^= 1;
    /* more than the request may expand to */
    assert_int_equal(decode(&z, 10, &ar, &out, &e), -1);
    assert_string_equal(e.reason, "too_large");
    arena_free(&ar);
    buf_free(&plain);
    buf_free(&z);
}

/* a flag-8 body with one group whose frames are `frames` */
static void frames_body(buf *b, const buf *frames, uint32_t n)
{
    buf_puts(b, "QPB1");
    uint8_t fl = QPB_FLAG_FRAMES;
    buf_append(b, &fl, 1);
    u32(b, 1);
    text16(b, "events");
    text16(b, "k");
    u32(b, n);
    buf z;
    buf_init(&z, 0);
    zstd_append(&z, frames->data, frames->len);
    u32(b, (uint32_t)z.len);
    buf_append(b, z.data, z.len);
    buf_free(&z);
}

static void test_frames(void **state)
{
    (void)state;
    buf f;
    buf_init(&f, 0);
    frame(&f, 0, V7, "0193-txn", "{\"n\":1}");
    frame(&f, 0, V7, "", "\"two\"");
    buf b;
    buf_init(&b, 0);
    frames_body(&b, &f, 2);
    arena ar;
    arena_init(&ar);
    qpb_body out;
    qpb_error e;
    assert_int_equal(decode(&b, 1 << 20, &ar, &out, &e), 0);
    assert_int_equal(out.n, 2);
    assert_true(out.items[0].has_id);
    assert_memory_equal(out.items[0].id, V7, 16);
    assert_memory_equal(out.items[0].txn, "0193-txn", 8);
    assert_memory_equal(out.items[0].payload, "{\"n\":1}", 7);
    assert_null(out.items[1].txn);
    assert_memory_equal(out.items[1].payload, "\"two\"", 5);
    assert_int_equal(out.raw_bytes, f.len);
    /* a count that disagrees with the frames */
    buf b2;
    buf_init(&b2, 0);
    frames_body(&b2, &f, 1);
    assert_int_equal(decode(&b2, 1 << 20, &ar, &out, &e), -1);
    assert_string_equal(e.reason, "trailing_bytes");
    assert_int_equal(e.group, 0);
    arena_free(&ar);
    buf_free(&f);
    buf_free(&b);
    buf_free(&b2);
}

/* a refusal of a frame: reason and the message it names */
static void frame_refused(void (*make)(buf *), const char *reason, int64_t item)
{
    buf f;
    buf_init(&f, 0);
    make(&f);
    buf b;
    buf_init(&b, 0);
    frames_body(&b, &f, 2);
    arena ar;
    arena_init(&ar);
    qpb_body out;
    qpb_error e;
    assert_int_equal(decode(&b, 1 << 20, &ar, &out, &e), -1);
    assert_string_equal(e.reason, reason);
    assert_int_equal(e.group, 0);
    assert_int_equal(e.item, item);
    assert_non_null(strstr(e.detail, "group 0"));
    arena_free(&ar);
    buf_free(&f);
    buf_free(&b);
}

static void bad_json(buf *f)
{
    frame(f, 0, V7, "a", "{}");
    frame(f, 0, V7, "b", "{\"x\":");
}
static void bad_id(buf *f)
{
    uint8_t v4[16];
    memcpy(v4, V7, 16);
    v4[6] = 0x41;
    frame(f, 0, V7, "a", "1");
    frame(f, 0, v4, "b", "2");
}
static void bad_flag(buf *f)
{
    frame(f, 4, V7, "a", "1");
    frame(f, 0, V7, "b", "2");
}
static void nul_txn(buf *f)
{
    frame(f, 0, V7, "a", "1");
    u32(f, 1 + 16 + 2 + 3 + 1);
    uint8_t z = 0;
    buf_append(f, &z, 1);
    buf_append(f, V7, 16);
    u16(f, 3);
    buf_append(f, "a\0b", 3);
    buf_puts(f, "2");
}
static void long_frame(buf *f)
{
    frame(f, 0, V7, "a", "1");
    u32(f, 1000);
    buf_puts(f, "0123456789012345678901234567890123456789"); /* fits the count check, not the length */
}

static void test_frame_refusals(void **state)
{
    (void)state;
    frame_refused(bad_json, "bad_payload", 1);
    frame_refused(bad_id, "bad_message_id", 1);
    frame_refused(bad_flag, "bad_frame", 0);
    frame_refused(nul_txn, "bad_transaction_id", 1);
    frame_refused(long_frame, "bad_frame", 1);
}

static void expect_refusal(const void *p, size_t n, const char *reason)
{
    arena ar;
    arena_init(&ar);
    qpb_body out;
    qpb_error e;
    assert_int_equal(qpb_decode(p, n, 1 << 20, &ar, &out, &e), -1);
    assert_string_equal(e.reason, reason);
    assert_true(strlen(e.detail) > 10);
    arena_free(&ar);
}

static void test_body_refusals(void **state)
{
    (void)state;
    expect_refusal("QPB2\0", 5, "bad_magic");
    expect_refusal("QPB1", 4, "truncated");
    expect_refusal("QPB1\x10", 5, "bad_flags");
    expect_refusal("QPB1\x09", 5, "bad_flags");
    expect_refusal("QPB1\0\0\0\0\0", 9, "truncated");           /* no group */
    expect_refusal("QPB1\0\xff\xff\xff\xff", 9, "truncated");   /* more groups than bytes */
    expect_refusal("QPB1\x01\x05\0\0\0abcde", 14, "zstd_invalid");
    /* every cut of a valid body is refused, never read past its end */
    buf b;
    buf_init(&b, 0);
    plain_body(&b, QPB_FLAG_TXN);
    for (size_t cut = 0; cut < b.len; cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, b.data, cut);
        arena ar;
        arena_init(&ar);
        qpb_body out;
        qpb_error e;
        assert_int_equal(qpb_decode(copy, cut, 1 << 20, &ar, &out, &e), -1);
        arena_free(&ar);
        free(copy);
    }
    /* a trailing byte */
    buf_puts(&b, "x");
    expect_refusal(b.data, b.len, "trailing_bytes");
    buf_free(&b);
    /* names: empty, NUL, invalid UTF-8, too long */
    const char *names[] = {"", "a\xff", "\xc0\xaf"};
    for (size_t i = 0; i < 3; i++) {
        buf n;
        buf_init(&n, 0);
        buf_puts(&n, "QPB1");
        buf_append(&n, "\0", 1);
        u32(&n, 1);
        text16(&n, names[i]);
        text16(&n, "p");
        u32(&n, 1);
        u32(&n, 1);
        buf_puts(&n, "1");
        expect_refusal(n.data, n.len, "bad_queue");
        buf_free(&n);
    }
    buf n;
    buf_init(&n, 0);
    buf_puts(&n, "QPB1");
    buf_append(&n, "\0", 1);
    u32(&n, 1);
    text16(&n, "q");
    u16(&n, 3);
    buf_append(&n, "p\0p", 3);
    u32(&n, 1);
    u32(&n, 1);
    buf_puts(&n, "1");
    expect_refusal(n.data, n.len, "bad_partition");
    buf_free(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_with_txn),
        cmocka_unit_test(test_plain_without_txn_and_zstd_body),
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_frame_refusals),
        cmocka_unit_test(test_body_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
