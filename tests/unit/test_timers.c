/* Unit tests for timer requests without a database (timers/timers.h): parsing fireAt and
 * delayMs, the bounds, defaults, error messages, and the encoded record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "crypto/seal.h"
#include "storage/payload.h"
#include "storage/record.h"
#include "timers/timers.h"

static char g_err[600];

typedef struct parsed {
    json_doc d;
    arena ar;
    timer_spec *specs;
    int n;
    int is_batch;
    int rc;
} parsed;

static void parse(parsed *p, const char *text)
{
    memset(p, 0, sizeof *p);
    arena_init(&p->ar);
    json_opts o = {.token_depth = 3};
    if (json_parse(&p->d, text, strlen(text), &o) != 0)
        fail_msg("bad test JSON %s: %s", text, p->d.err);
    g_err[0] = '\0';
    p->rc = timer_parse_request(&p->d, &p->ar, &p->specs, &p->n, &p->is_batch, g_err, sizeof g_err);
}

static void parsed_free(parsed *p)
{
    json_doc_free(&p->d);
    arena_free(&p->ar);
}

static void fails(const char *text, const char *want)
{
    parsed p;
    parse(&p, text);
    if (p.rc != -1)
        fail_msg("expected failure for %s", text);
    assert_string_equal(g_err, want);
    parsed_free(&p);
}

static void test_single_defaults(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"queue\":\"q\",\"delayMs\":1500,\"payload\": {\"total\": 42.00}}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.is_batch, 0);
    timer_spec *s = &p.specs[0];
    assert_memory_equal(s->queue, "q", 1);
    assert_int_equal(s->partition_len, 7);
    assert_memory_equal(s->partition, "Default", 7);
    assert_int_equal(s->delay_us, 1500000);
    assert_int_equal(s->payload_len, strlen("{\"total\": 42.00}"));
    assert_memory_equal(s->payload, "{\"total\": 42.00}", s->payload_len);
    /* no transactionId: a server UUIDv7, not deduplicated */
    assert_int_equal(s->txn_len, 36);
    assert_int_equal(s->txn_producer, 0);
    assert_true(txn_is_lower_uuid(s->txn, s->txn_len));
    assert_int_equal(s->has_trace, 0);
    parsed_free(&p);
}

static void test_fire_at_forms(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"queue\":\"q\",\"fireAt\":\"2030-01-02T03:04:05.678901Z\"}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.specs[0].delay_us, -1);
    assert_int_equal(p.specs[0].fire_at_us, 1893553445678901LL);
    parsed_free(&p);
    parse(&p, "{\"queue\":\"q\",\"fireAt\":\"2030-01-02T04:04:05+01:00\"}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.specs[0].fire_at_us, 1893553445000000LL);
    parsed_free(&p);
    parse(&p, "{\"queue\":\"q\",\"fireAt\":1893553445678901}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.specs[0].fire_at_us, 1893553445678901LL);
    parsed_free(&p);
    /* both ends of the accepted range */
    parse(&p, "{\"queue\":\"q\",\"fireAt\":1000000000000000}");
    assert_int_equal(p.rc, 0);
    parsed_free(&p);
    parse(&p, "{\"queue\":\"q\",\"fireAt\":253402300799999999}");
    assert_int_equal(p.rc, 0);
    parsed_free(&p);
    const char *range = "fireAt must be between 2001-09-09 and 9999-12-31 (as an integer: microseconds since the "
                        "epoch, 1000000000000000..253402300799999999)";
    /* milliseconds sent by mistake would fire at once: refused */
    fails("{\"queue\":\"q\",\"fireAt\":1893553445678}", range);
    fails("{\"queue\":\"q\",\"fireAt\":999999999999999}", range);
    fails("{\"queue\":\"q\",\"fireAt\":253402300800000000}", range);
    fails("{\"queue\":\"q\",\"fireAt\":\"tomorrow\"}",
          "fireAt must be an ISO-8601 timestamp such as 2030-01-02T03:04:05.678Z");
    fails("{\"queue\":\"q\",\"fireAt\":1.5e15}",
          "fireAt must be an ISO-8601 string or an integer of microseconds since the epoch");
    fails("{\"queue\":\"q\",\"fireAt\":true}",
          "fireAt must be an ISO-8601 string or an integer of microseconds since the epoch");
}

static void test_delay_bounds(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"queue\":\"q\",\"delayMs\":0}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.specs[0].delay_us, 0);
    parsed_free(&p);
    parse(&p, "{\"queue\":\"q\",\"delayMs\":315360000000}");
    assert_int_equal(p.rc, 0);
    parsed_free(&p);
    const char *msg = "delayMs must be an integer between 0 and 315360000000";
    fails("{\"queue\":\"q\",\"delayMs\":315360000001}", msg);
    fails("{\"queue\":\"q\",\"delayMs\":-1}", msg);
    fails("{\"queue\":\"q\",\"delayMs\":\"5\"}", msg);
    fails("{\"queue\":\"q\",\"delayMs\":1,\"fireAt\":1893553445678901}", "give either fireAt or delayMs, not both");
    fails("{\"queue\":\"q\"}", "fireAt (ISO-8601 or microseconds since the epoch) or delayMs is required");
    fails("{\"queue\":\"q\",\"delayMs\":null}", "fireAt (ISO-8601 or microseconds since the epoch) or delayMs is required");
}

static void test_fields(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"queue\":\"q\",\"partition\":\"p-1\",\"delayMs\":5,\"transactionId\":\"order-1\","
              "\"traceId\":\"0190C2D4-0000-7000-8000-000000000001\"}");
    assert_int_equal(p.rc, 0);
    timer_spec *s = &p.specs[0];
    assert_memory_equal(s->partition, "p-1", 3);
    assert_int_equal(s->txn_producer, 1);
    assert_memory_equal(s->txn, "order-1", 7);
    assert_int_equal(s->has_trace, 1);
    assert_int_equal(s->trace[0], 0x01);
    assert_int_equal(s->trace[15], 0x01);
    assert_null(s->payload);
    parsed_free(&p);
    /* "" transactionId = none given, as for push */
    parse(&p, "{\"queue\":\"q\",\"delayMs\":5,\"transactionId\":\"\",\"traceId\":\"\"}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.specs[0].txn_producer, 0);
    assert_int_equal(p.specs[0].has_trace, 0);
    parsed_free(&p);

    char q[300];
    memset(q, 'q', sizeof q);
    char text[400];
    snprintf(text, sizeof text, "{\"queue\":\"%.*s\",\"delayMs\":1}", TIMER_NAME_MAX_BYTES, q);
    parse(&p, text);
    assert_int_equal(p.rc, 0);
    parsed_free(&p);
    snprintf(text, sizeof text, "{\"queue\":\"%.*s\",\"delayMs\":1}", TIMER_NAME_MAX_BYTES + 1, q);
    fails(text, "queue must be 1 to 255 bytes without NUL characters");
    fails("{\"delayMs\":1}", "queue is required (a string)");
    fails("{\"queue\":1,\"delayMs\":1}", "queue is required (a string)");
    fails("{\"queue\":\"\",\"delayMs\":1}", "queue must be 1 to 255 bytes without NUL characters");
    fails("{\"queue\":\"a\\u0000b\",\"delayMs\":1}", "queue must be 1 to 255 bytes without NUL characters");
    fails("{\"queue\":\"q\",\"partition\":5,\"delayMs\":1}", "partition must be a string");
    fails("{\"queue\":\"q\",\"delayMs\":1,\"transactionId\":7}", "transactionId must be a string");
    fails("{\"queue\":\"q\",\"delayMs\":1,\"traceId\":\"nope\"}", "traceId must be a UUID");
    fails("{\"queue\":\"q\",\"delayMs\":1,\"delay\":5}",
          "unknown field \"delay\" (fields: queue, partition, payload, fireAt, delayMs, transactionId, traceId)");
    fails("[1]", "a timer must be a JSON object");
}

static void test_batches(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"items\":[{\"queue\":\"a\",\"delayMs\":1},{\"queue\":\"b\",\"fireAt\":1893553445678901}]}");
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.is_batch, 1);
    /* ids are UUIDv7 made in order: the insert's id order is the request order */
    assert_true(memcmp(p.specs[0].id.b, p.specs[1].id.b, 16) < 0);
    parsed_free(&p);
    fails("{\"items\":[]}", "items must hold at least one timer");
    fails("{\"items\":{}}", "a batch body is {\"items\": [timer, ...]} and nothing else");
    fails("{\"items\":[],\"queue\":\"q\"}", "a batch body is {\"items\": [timer, ...]} and nothing else");
    fails("{\"items\":[{\"queue\":\"a\",\"delayMs\":1},{\"queue\":\"b\"}]}",
          "items[1]: fireAt (ISO-8601 or microseconds since the epoch) or delayMs is required");
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"items\":[");
    for (int i = 0; i <= TIMER_BATCH_MAX_ITEMS; i++)
        buf_printf(&b, "%s{\"queue\":\"q\",\"delayMs\":1}", i ? "," : "");
    buf_puts(&b, "]}");
    fails(buf_cstr(&b), "items holds 10001 timers; at most 10000 are accepted per request");
    buf_free(&b);
}

/* The stored record decodes back to what was given, payload byte for byte. */
static void test_record(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"queue\":\"q\",\"delayMs\":1,\"transactionId\":\"t-9\",\"traceId\":"
              "\"0190c2d4-0000-7000-8000-000000000001\",\"payload\":[ \"caf\\u00e9\" , 1.50 ]}");
    assert_int_equal(p.rc, 0);
    buf seg;
    buf_init(&seg, 0);
    segment_begin(&seg);
    assert_int_equal(timer_encode_record(&p.specs[0], "alice", 5, &seg), 0);
    seg_reader sr;
    record_view v;
    assert_int_equal(seg_reader_init(&sr, (const uint8_t *)seg.data, seg.len, 7, 1), 0);
    assert_int_equal(seg_reader_next(&sr, &v), 1);
    assert_int_equal(v.offset, 7);
    assert_true(v.flags & REC_TXN_PRODUCER);
    char txt[64];
    assert_int_equal(record_txn_text(&v, txt, sizeof txt), 3);
    assert_memory_equal(txt, "t-9", 3);
    assert_non_null(v.trace);
    assert_int_equal(v.producer_len, 5);
    assert_memory_equal(v.producer, "alice", 5);
    const char *want = "[ \"caf\\u00e9\" , 1.50 ]";
    assert_int_equal(v.payload_len, strlen(want));
    assert_memory_equal(v.payload, want, v.payload_len);
    assert_int_equal(seg_reader_next(&sr, &v), 0);
    buf_free(&seg);
    parsed_free(&p);
}

/* The create statement's parameters: eleven, binary, NULL fire_at for a delay and vice versa. */
/* A timer of an encrypted queue is sealed when made (s->seal), and a plaintext one can be
 * sealed later in place (timer_reseal_record): the same record but its payload. */
static void test_sealed_records(void **state)
{
    (void)state;
    seal_key k;
    char err[200];
    assert_int_equal(seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &k, err,
                                    sizeof err),
                     0);
    parsed p;
    parse(&p, "{\"queue\":\"q\",\"delayMs\":5,\"transactionId\":\"t-9\",\"traceId\":"
              "\"0190c2d4-0000-7000-8000-000000000001\",\"payload\":{\"total\":42.00}}");
    assert_int_equal(p.rc, 0);
    buf plain, rec, seg, out;
    buf_init(&plain, 0);
    buf_init(&rec, 0);
    buf_init(&seg, 0);
    buf_init(&out, 0);
    /* sealing needs the node key */
    seal_set_node_key(NULL);
    p.specs[0].seal = 1;
    assert_int_equal(timer_encode_record(&p.specs[0], "alice", 5, &rec), -1);
    seal_set_node_key(&k);
    assert_int_equal(timer_encode_record(&p.specs[0], "alice", 5, &rec), 0);
    assert_null(memmem(rec.data, rec.len, "42.00", 5));
    assert_true((uint8_t)rec.data[0] & REC_ENCRYPTED);
    /* sealed already: nothing to do */
    assert_int_equal(timer_reseal_record((const uint8_t *)rec.data, rec.len, &out), 1);
    assert_int_equal(out.len, 0);

    p.specs[0].seal = 0;
    assert_int_equal(timer_encode_record(&p.specs[0], "alice", 5, &plain), 0);
    assert_false((uint8_t)plain.data[0] & REC_ENCRYPTED);
    assert_int_equal(timer_reseal_record((const uint8_t *)plain.data, plain.len, &out), 0);
    assert_null(memmem(out.data, out.len, "42.00", 5));
    segment_begin(&seg);
    buf_append(&seg, out.data, out.len);
    seg_reader sr;
    record_view v;
    assert_int_equal(seg_reader_init(&sr, (const uint8_t *)seg.data, seg.len, 0, 1), 0);
    assert_int_equal(seg_reader_next(&sr, &v), 1);
    assert_int_equal(seg_reader_next(&sr, &(record_view){0}), 0);
    assert_int_equal(v.flags, REC_ENCRYPTED | REC_TXN_PRODUCER | REC_TRACE | REC_PRODUCER);
    char txt[64];
    assert_int_equal(record_txn_text(&v, txt, sizeof txt), 3);
    assert_memory_equal(txt, "t-9", 3);
    assert_int_equal(v.producer_len, 5);
    buf json;
    buf_init(&json, 0);
    record_payload_json(&json, &v);
    assert_string_equal(buf_cstr(&json), "{\"total\":42.00}");
    buf_free(&json);
    /* a server transactionId (16 bytes stored) survives the re-encoding */
    parsed_free(&p);
    parse(&p, "{\"queue\":\"q\",\"delayMs\":5}");
    buf_reset(&plain);
    buf_reset(&out);
    assert_int_equal(timer_encode_record(&p.specs[0], NULL, 0, &plain), 0);
    assert_int_equal(timer_reseal_record((const uint8_t *)plain.data, plain.len, &out), 0);
    assert_true((uint8_t)out.data[0] & REC_TXN_UUID);
    assert_int_equal(out.len, plain.len + SEAL_OVERHEAD);
    /* not a record, or no key: -1 */
    assert_int_equal(timer_reseal_record((const uint8_t *)"\xff", 1, &out), -1);
    assert_int_equal(timer_reseal_record((const uint8_t *)plain.data, plain.len - 1, &out), -1);
    seal_set_node_key(NULL);
    assert_int_equal(timer_reseal_record((const uint8_t *)plain.data, plain.len, &out), -1);
    buf_free(&plain);
    buf_free(&rec);
    buf_free(&seg);
    buf_free(&out);
    parsed_free(&p);
}

static void test_create_params(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"items\":[{\"queue\":\"a\",\"delayMs\":1},{\"queue\":\"b\",\"fireAt\":1893553445678901}]}");
    assert_int_equal(p.rc, 0);
    uint8_t tenant[16] = {0};
    timer_params tp;
    timer_create_params(tenant, p.specs, p.n, NULL, 0, &tp);
    assert_int_equal(tp.n, 11);
    for (int i = 0; i < tp.n; i++)
        assert_int_equal(tp.formats[i], 1);
    /* fire_at ($5): header 20, a NULL (4), one int8 (4 + 8) */
    assert_int_equal(tp.lengths[4], 20 + 4 + 12);
    assert_int_equal(tp.lengths[5], 20 + 12 + 4);
    timer_params_free(&tp);
    parsed_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_defaults), cmocka_unit_test(test_fire_at_forms),
        cmocka_unit_test(test_delay_bounds),    cmocka_unit_test(test_fields),
        cmocka_unit_test(test_batches),         cmocka_unit_test(test_record),
        cmocka_unit_test(test_create_params),   cmocka_unit_test(test_sealed_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
