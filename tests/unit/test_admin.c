/* Unit tests for the admin surface's pure helpers (admin/admin.h): the record status rule,
 * decoding a dead letter's record copy, server transactionId times, group states. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin/admin.h"
#include "core/timeutil.h"
#include "core/uuid.h"

static void test_status_rule(void **state)
{
    (void)state;
    /* done = 5, a live lease up to 8 */
    assert_int_equal(admin_record_status(0, 5, 8, 0), REC_COMPLETED);
    assert_int_equal(admin_record_status(4, 5, 8, 0), REC_COMPLETED);
    assert_int_equal(admin_record_status(5, 5, 8, 0), REC_PROCESSING);
    assert_int_equal(admin_record_status(7, 5, 8, 0), REC_PROCESSING);
    assert_int_equal(admin_record_status(8, 5, 8, 0), REC_PENDING);
    /* a dead letter wins over every position */
    assert_int_equal(admin_record_status(0, 5, 8, 1), REC_DEAD_LETTER);
    assert_int_equal(admin_record_status(9, 5, 8, 1), REC_DEAD_LETTER);
    /* no lease: live_end == done */
    assert_int_equal(admin_record_status(5, 5, 5, 0), REC_PENDING);
}

static void test_status_names(void **state)
{
    (void)state;
    const char *names[] = {"pending", "processing", "completed", "dead_letter"};
    for (int i = 0; i < 4; i++) {
        enum rec_status s;
        assert_int_equal(admin_status_parse(names[i], &s), 0);
        assert_int_equal(s, i);
        assert_string_equal(admin_status_name(s), names[i]);
    }
    enum rec_status s;
    assert_int_equal(admin_status_parse("Pending", &s), -1);
    assert_int_equal(admin_status_parse("", &s), -1);
    assert_int_equal(admin_status_parse("dead", &s), -1);
    assert_string_equal(admin_status_name(REC_STATUS_ANY), "unknown");
}

/* Encodes one record the way a segment holds it and returns the bytes after the version
 * byte: what queen.record_at_v1 copies into a dead letter. */
static void encoded(const record_in *r, buf *out)
{
    buf seg;
    buf_init(&seg, 0);
    segment_begin(&seg);
    assert_int_equal(record_encode(&seg, r), 0);
    buf_reset(out);
    buf_append(out, seg.data + 1, seg.len - 1);
    buf_free(&seg);
}

static void test_record_decode(void **state)
{
    (void)state;
    static const uint8_t trace[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    record_in r;
    memset(&r, 0, sizeof r);
    r.txn = "order-1";
    r.txn_len = 7;
    r.txn_producer = 1;
    r.trace = trace;
    r.producer = "alice";
    r.producer_len = 5;
    r.payload = "{\"total\":42.00}";
    r.payload_len = strlen(r.payload);
    buf rec, scratch, json;
    buf_init(&rec, 0);
    buf_init(&scratch, 0);
    buf_init(&json, 0);
    encoded(&r, &rec);
    record_view v;
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, rec.len, 17, &scratch, &v), 0);
    assert_int_equal(v.offset, 17);
    char txt[64];
    assert_int_equal(record_txn_text(&v, txt, sizeof txt), 7);
    assert_memory_equal(txt, "order-1", 7);
    assert_true(v.flags & REC_TXN_PRODUCER);
    assert_memory_equal(v.trace, trace, 16);
    assert_int_equal(v.producer_len, 5);
    assert_memory_equal(v.producer, "alice", 5);
    admin_payload_json(&json, &v);
    assert_string_equal(buf_cstr(&json), "{\"total\":42.00}");

    /* a trailing byte, a truncation, nothing at all: corrupt */
    buf_putc(&rec, 0);
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, rec.len, 0, &scratch, &v), -1);
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, rec.len - 2, 0, &scratch, &v), -1);
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, 0, 0, &scratch, &v), -1);

    /* an empty payload is written as null; a sealed one this node cannot open (here: not even
     * an envelope) as null with the reason next to it (storage/payload.h has the full tests) */
    r.payload = NULL;
    r.payload_len = 0;
    encoded(&r, &rec);
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, rec.len, 0, &scratch, &v), 0);
    buf_reset(&json);
    admin_payload_json(&json, &v);
    assert_string_equal(buf_cstr(&json), "null");
    r.payload = "AAAA";
    r.payload_len = 4;
    r.encrypted = 1;
    encoded(&r, &rec);
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, rec.len, 0, &scratch, &v), 0);
    buf_reset(&json);
    admin_payload_json(&json, &v);
    assert_string_equal(buf_cstr(&json), "null,\"payloadError\":\"the sealed value is corrupt (not an envelope, "
                                         "truncated, or its tag does not verify)\"");

    /* a server transactionId (a lowercase UUID) is stored as 16 bytes and comes back as text */
    r.txn = "01a227bc-d6c6-70d5-a45d-37a66df68794";
    r.txn_len = 36;
    encoded(&r, &rec);
    assert_int_equal(admin_record_decode((const uint8_t *)rec.data, rec.len, 0, &scratch, &v), 0);
    assert_true(v.flags & REC_TXN_UUID);
    assert_int_equal(record_txn_text(&v, txt, sizeof txt), 36);
    assert_memory_equal(txt, r.txn, 36);
    buf_free(&rec);
    buf_free(&scratch);
    buf_free(&json);
}

static void test_v7_time(void **state)
{
    (void)state;
    uuid u;
    uuid_v7(&u);
    char s[37];
    uuid_format(&u, s);
    int64_t t = admin_uuid_v7_time_us(s, 36);
    int64_t now = wall_us();
    assert_true(t > now - 5000000 && t <= now);
    assert_int_equal(t % 1000, 0);
    /* a message id (version 8), a v4, text: not a server transactionId */
    uuid_message_id(1, 2, &u);
    uuid_format(&u, s);
    assert_int_equal(admin_uuid_v7_time_us(s, 36), 0);
    assert_int_equal(admin_uuid_v7_time_us("0190c2d4-0000-4000-8000-000000000001", 36), 0);
    assert_int_equal(admin_uuid_v7_time_us("order-1", 7), 0);
    assert_int_equal(admin_uuid_v7_time_us("", 0), 0);
    /* the 48-bit millisecond field */
    assert_int_equal(admin_uuid_v7_time_us("000000000001-7000-8000-000000000000", 36), 0); /* not canonical */
    assert_int_equal(admin_uuid_v7_time_us("00000000-0001-7000-8000-000000000000", 36), 1000);
}

static void test_group_state(void **state)
{
    (void)state;
    assert_string_equal(admin_group_state(0, 0), "Dead");
    assert_string_equal(admin_group_state(0, 1), "Stable");
    assert_string_equal(admin_group_state(ADMIN_LAGGING_AFTER_US, 1), "Stable");
    assert_string_equal(admin_group_state(ADMIN_LAGGING_AFTER_US + 1, 1), "Lagging");
    assert_string_equal(admin_group_state(ADMIN_LAGGING_AFTER_US + 1, 0), "Lagging");
}

static void test_iso_or_null(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    admin_iso_ms_or_null(&b, 0);
    buf_putc(&b, ' ');
    admin_iso_ms_or_null(&b, 1700000000123456);
    buf_putc(&b, ' ');
    admin_iso_us_or_null(&b, 1700000000123456);
    buf_putc(&b, ' ');
    admin_iso_us_or_null(&b, -1);
    assert_string_equal(buf_cstr(&b), "null \"2023-11-14T22:13:20.123Z\" \"2023-11-14T22:13:20.123456Z\" null");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_rule),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_record_decode),
        cmocka_unit_test(test_v7_time),
        cmocka_unit_test(test_group_state),
        cmocka_unit_test(test_iso_or_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
