/* Unit tests for the request body readers: a push item (storage/pushreq.h) and an
 * acknowledgment (consume/ackreq.h), each field's defaults and refusals with their messages,
 * and the string helpers under them (json_str_field, json_text_dup). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consume/ackreq.h"
#include "core/arena.h"
#include "core/uuid.h"
#include "json/json.h"
#include "storage/pushreq.h"

typedef struct fx {
    json_doc d;
    arena ar;
    qerr_detail err;
    const char *msg; /* err.text */
} fx;

static void fx_parse(fx *f, const char *src, uint32_t depth)
{
    memset(f, 0, sizeof *f);
    arena_init(&f->ar);
    json_opts o = {.token_depth = depth};
    if (json_parse(&f->d, src, strlen(src), &o) != 0)
        fail_msg("json_parse(%s): %s", src, f->d.err);
}

static void fx_free(fx *f)
{
    json_doc_free(&f->d);
    arena_free(&f->ar);
}

/* push_item_read on the first element of {"items":[...]}: 0 or -1, pi filled */
static int push_one(fx *f, const char *src, push_item *pi)
{
    fx_parse(f, src, 3);
    int items = json_get(&f->d, 0, "items");
    assert_true(items >= 0);
    memset(pi, 0, sizeof *pi);
    f->msg = f->err.text;
    qerr e = push_item_read(&f->ar, &f->d, json_first(&f->d, items), 4, pi, &f->err);
    assert_true(e == QERR_OK || e == QERR_BAD_INPUT);
    if (e != QERR_OK)
        assert_null(f->err.code); /* the generic code of a 400 */
    return e == QERR_OK ? 0 : -1;
}

static void push_refused(const char *src, const char *want)
{
    fx f;
    push_item pi;
    assert_int_equal(push_one(&f, src, &pi), -1);
    assert_string_equal(f.msg, want);
    fx_free(&f);
}

static void test_push_item_fields(void **state)
{
    (void)state;
    fx f;
    push_item pi;
    assert_int_equal(push_one(&f,
                              "{\"items\":[{\"queue\":\"q\\u00e9\",\"partition\":\"p\",\"transactionId\":\"t-1\","
                              "\"traceId\":\"0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b\",\"payload\":{\"a\":[1, 2]}}]}",
                              &pi),
                     0);
    assert_int_equal(pi.queue_len, 3);
    assert_memory_equal(pi.queue, "q\xc3\xa9", 3); /* decoded */
    assert_int_equal(pi.partition_len, 1);
    assert_int_equal(pi.txn_len, 3);
    assert_int_equal(pi.txn_producer, 1);
    assert_int_equal(pi.has_trace, 1);
    assert_int_equal(pi.trace[0], 0x01);
    assert_int_equal(pi.trace[15], 0x2b);
    /* the payload is the body's span, byte for byte */
    assert_int_equal(pi.payload_len, 12);
    assert_memory_equal(pi.payload, "{\"a\":[1, 2]}", 12);
    fx_free(&f);
}

static void test_push_item_defaults(void **state)
{
    (void)state;
    fx f;
    push_item pi;
    assert_int_equal(push_one(&f, "{\"items\":[{\"queue\":\"q\",\"transactionId\":\"\",\"traceId\":null}]}", &pi), 0);
    assert_int_equal(pi.partition_len, 7);
    assert_memory_equal(pi.partition, "Default", 7);
    /* no (or an empty) transactionId: a generated UUID, not deduplicated */
    assert_int_equal(pi.txn_len, 36);
    assert_int_equal(pi.txn_producer, 0);
    uuid u;
    assert_int_equal(uuid_parse(pi.txn, 36, &u), 0);
    assert_int_equal(pi.has_trace, 0);
    assert_null(pi.payload);
    assert_int_equal(pi.payload_len, 0);
    fx_free(&f);
    assert_int_equal(push_one(&f, "{\"items\":[{\"queue\":\"q\",\"payload\":null}]}", &pi), 0);
    assert_int_equal(pi.payload_len, 4); /* null is a payload like any other */
    fx_free(&f);
}

static void test_push_item_refusals(void **state)
{
    (void)state;
    push_refused("{\"items\":[7]}", "Each item must be an object (items[4] is not)");
    push_refused("{\"items\":[{}]}", "Queue must be a string");
    push_refused("{\"items\":[{\"queue\":1}]}", "Queue must be a string");
    push_refused("{\"items\":[{\"queue\":\"\"}]}", "Queue name must be 1 to 255 bytes without NUL characters (items[4])");
    push_refused("{\"items\":[{\"queue\":\"a\\u0000b\"}]}",
                 "Queue name must be 1 to 255 bytes without NUL characters (items[4])");
    push_refused("{\"items\":[{\"queue\":\"q\",\"partition\":[]}]}", "Partition must be a string");
    push_refused("{\"items\":[{\"queue\":\"q\",\"partition\":\"\"}]}",
                 "Partition name must be 1 to 255 bytes without NUL characters (items[4])");
    push_refused("{\"items\":[{\"queue\":\"q\",\"transactionId\":5}]}", "TransactionId must be a string");
    push_refused("{\"items\":[{\"queue\":\"q\",\"transactionId\":\"\\u0000\"}]}",
                 "TransactionId must be at most 255 bytes without NUL characters (items[4])");
    push_refused("{\"items\":[{\"queue\":\"q\",\"traceId\":true}]}", "TraceId must be a string");
    push_refused("{\"items\":[{\"queue\":\"q\",\"traceId\":\"not-a-uuid\"}]}", "TraceId must be a UUID (items[4])");
    /* the limits are bytes: 255 pass, 256 do not */
    char big[400];
    int n = snprintf(big, sizeof big, "{\"items\":[{\"queue\":\"%0255d\"}]}", 0);
    assert_true(n > 0);
    fx f;
    push_item pi;
    assert_int_equal(push_one(&f, big, &pi), 0);
    assert_int_equal(pi.queue_len, 255);
    fx_free(&f);
    snprintf(big, sizeof big, "{\"items\":[{\"queue\":\"q\",\"transactionId\":\"%0256d\"}]}", 0);
    push_refused(big, "TransactionId must be at most 255 bytes without NUL characters (items[4])");
}

static int ack_one(fx *f, const char *src, int batch, ack_item *it)
{
    fx_parse(f, src, 0);
    memset(it, 0, sizeof *it);
    f->msg = f->err.text;
    qerr e = ack_item_read(&f->ar, &f->d, 0, batch, 2, it, &f->err);
    assert_true(e == QERR_OK || e == QERR_BAD_INPUT);
    return e == QERR_OK ? 0 : -1;
}

static void ack_refused(const char *src, int batch, const char *want)
{
    fx f;
    ack_item it;
    assert_int_equal(ack_one(&f, src, batch, &it), -1);
    assert_string_equal(f.msg, want);
    fx_free(&f);
}

#define PID "\"partitionId\":\"0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b\""

static void test_ack_item_fields(void **state)
{
    (void)state;
    fx f;
    ack_item it;
    assert_int_equal(ack_one(&f, "{\"transactionId\":\"t\"," PID "}", 0, &it), 0);
    assert_int_equal(it.txn_len, 1);
    assert_string_equal(it.status, "completed");
    assert_int_equal(it.part.b[0], 0x01);
    assert_int_equal(it.has_lease, 0);
    assert_null(it.error);
    fx_free(&f);
    assert_int_equal(ack_one(&f,
                             "{\"transactionId\":\"t\"," PID ",\"status\":\"failed\",\"error\":\"boom\","
                             "\"leaseId\":\"0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2c\"}",
                             1, &it),
                     0);
    assert_string_equal(it.status, "failed");
    assert_string_equal(it.error, "boom");
    assert_int_equal(it.has_lease, 1);
    assert_int_equal(it.lease.b[15], 0x2c);
    fx_free(&f);
    /* a framed pop's decimal partition id passes on as 00000000-0000-0000-<id> */
    assert_int_equal(ack_one(&f, "{\"transactionId\":\"t\",\"partitionId\":\"258\"}", 0, &it), 0);
    for (int k = 0; k < 14; k++)
        assert_int_equal(it.part.b[k], 0);
    assert_int_equal(it.part.b[14], 1);
    assert_int_equal(it.part.b[15], 2);
    fx_free(&f);
    /* an empty leaseId is no lease */
    assert_int_equal(ack_one(&f, "{\"transactionId\":\"t\"," PID ",\"leaseId\":\"\"}", 0, &it), 0);
    assert_int_equal(it.has_lease, 0);
    fx_free(&f);
}

static void test_ack_item_refusals(void **state)
{
    (void)state;
    ack_refused("[]", 1, "Each acknowledgment must be an object (acknowledgments[2] is not)");
    ack_refused("{}", 0, "transactionId is required");
    ack_refused("{}", 1, "Each acknowledgment must have a valid transactionId string");
    ack_refused("{\"transactionId\":\"\\u0000\"}", 1, "transactionId must not hold a NUL character (\\u0000)");
    ack_refused("{\"transactionId\":\"t\"}", 0, "partitionId is required to ensure message uniqueness");
    ack_refused("{\"transactionId\":\"t\",\"partitionId\":3}", 1,
                "Each acknowledgment must have a valid partitionId string to ensure message uniqueness");
    ack_refused("{\"transactionId\":\"t\",\"partitionId\":\"x\"}", 0,
                "partitionId must be a UUID or a framed pop's decimal partition id");
    ack_refused("{\"transactionId\":\"t\",\"partitionId\":\"x\"}", 1,
                "partitionId must be a UUID or a framed pop's decimal partition id in every acknowledgment");
    /* a framed pop's decimal id: 1..2^63-1, no leading zero */
    ack_refused("{\"transactionId\":\"t\",\"partitionId\":\"0\"}", 0,
                "partitionId must be a UUID or a framed pop's decimal partition id");
    ack_refused("{\"transactionId\":\"t\",\"partitionId\":\"012\"}", 0,
                "partitionId must be a UUID or a framed pop's decimal partition id");
    ack_refused("{\"transactionId\":\"t\",\"partitionId\":\"9223372036854775808\"}", 0,
                "partitionId must be a UUID or a framed pop's decimal partition id");
    ack_refused("{\"transactionId\":\"t\"," PID ",\"status\":1}", 0,
                "status must be a string (completed, failed, dlq or retry)");
    ack_refused("{\"transactionId\":\"t\"," PID ",\"leaseId\":1}", 0, "leaseId must be a string");
    ack_refused("{\"transactionId\":\"t\"," PID ",\"leaseId\":\"nope\"}", 0, "leaseId must be a UUID");
    ack_refused("{\"transactionId\":\"t\"," PID ",\"error\":{}}", 0, "error must be a string");
}

static void test_str_field(void **state)
{
    (void)state;
    fx f;
    fx_parse(&f, "{\"a\":\"x\\ny\",\"b\":null,\"c\":1,\"d\":\"\\u0000\",\"e\":\"plain\"}", 0);
    const char *s;
    size_t n;
    assert_int_equal(json_str_field(&f.ar, &f.d, 0, "a", &s, &n), 1);
    assert_int_equal(n, 3);
    assert_string_equal(s, "x\ny");
    assert_int_equal(json_str_field(&f.ar, &f.d, 0, "b", &s, &n), 0);
    assert_int_equal(json_str_field(&f.ar, &f.d, 0, "missing", &s, &n), 0);
    assert_int_equal(json_str_field(&f.ar, &f.d, 0, "c", &s, &n), -1);
    assert_int_equal(json_str_field(&f.ar, &f.d, 0, "d", &s, &n), JSON_STR_NUL);
    assert_null(s);
    assert_int_equal(json_str_field(&f.ar, &f.d, 0, "e", &s, &n), 1);
    assert_string_equal(s, "plain");
    char m[64];
    assert_string_equal(json_str_field_msg(JSON_STR_NUL, "k", "other", m, sizeof m), "k must not hold a NUL character (\\u0000)");
    assert_string_equal(json_str_field_msg(-1, "k", "other", m, sizeof m), "other");
    fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_item_fields),  cmocka_unit_test(test_push_item_defaults),
        cmocka_unit_test(test_push_item_refusals), cmocka_unit_test(test_ack_item_fields),
        cmocka_unit_test(test_ack_item_refusals),  cmocka_unit_test(test_str_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
