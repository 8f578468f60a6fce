/* Unit tests for timer ops without a database (timers/timers.h): the 2.x op shapes, their
 * defaults and bounds, the server-owned fields, base64 and zstd payloads, the refusal reasons,
 * the encoded record and the statement's parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "core/base64.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "storage/payload.h"
#include "storage/record.h"
#include "timers/timers.h"

typedef struct parsed {
    json_doc d;
    arena ar;
    timer_op *ops;
    int n;
    qerr rc;
    qerr_detail why;
} parsed;

static void parse(parsed *p, const char *text)
{
    memset(p, 0, sizeof *p);
    arena_init(&p->ar);
    json_opts o = {.token_depth = 3};
    if (json_parse(&p->d, text, strlen(text), &o) != 0)
        fail_msg("bad test JSON %s: %s", text, p->d.err);
    p->rc = timer_ops_parse_body(&p->d, &p->ar, &p->ops, &p->n, &p->why);
}

static void parsed_free(parsed *p)
{
    json_doc_free(&p->d);
    arena_free(&p->ar);
}

/* {"operations":[<op>]} */
static void parse_op(parsed *p, const char *op)
{
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"operations\":[%s]}", op);
    parse(p, buf_cstr(&b));
    buf_free(&b);
}

/* "code:reason" of a refusal */
static const char *code_reason(const qerr_detail *w)
{
    static char out[128];
    snprintf(out, sizeof out, "%s:%s", w->code, w->reason);
    return out;
}

/* The op is refused with this "code:reason", and the detail holds `detail`. */
static void refused(const char *op, const char *reason, const char *detail)
{
    parsed p;
    parse_op(&p, op);
    if (p.rc != QERR_BAD_INPUT)
        fail_msg("expected a refusal for %s", op);
    assert_string_equal(code_reason(&p.why), reason);
    assert_int_equal(p.why.index, 0);
    if (!strstr(p.why.text, detail))
        fail_msg("detail \"%s\" does not hold \"%s\"", p.why.text, detail);
    parsed_free(&p);
}

/* base64 of text, as a JSON string's content */
static const char *b64(const char *text, size_t n, buf *keep)
{
    buf_reset(keep);
    b64_encode(keep, text, n);
    return buf_cstr(keep);
}

static void test_schedule_defaults(void **state)
{
    (void)state;
    parsed p;
    /* {"total": 42.00} */
    parse_op(&p, "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"order:9/expire\",\"payload\":"
                 "\"eyJ0b3RhbCI6IDQyLjAwfQ==\",\"delayMs\":1500}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.n, 1);
    timer_op *o = &p.ops[0];
    assert_int_equal(o->kind, TIMER_OP_SCHEDULE);
    assert_string_equal(o->queue, "q");
    assert_string_equal(o->key, "order:9/expire");
    assert_int_equal(o->partition_len, 7);
    assert_memory_equal(o->partition, "Default", 7);
    assert_int_equal(o->delay_us, 1500000);
    /* the JSON text as sent, byte for byte */
    assert_int_equal(o->payload_len, strlen("{\"total\": 42.00}"));
    assert_memory_equal(o->payload, "{\"total\": 42.00}", o->payload_len);
    /* no txn: a UUIDv7 made here (the client makes its own; a raw caller may not) */
    assert_int_equal(o->txn_len, 36);
    assert_true(txn_is_lower_uuid(o->txn, o->txn_len));
    uuid zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_not_equal(o->id.b, zero.b, 16);
    parsed_free(&p);

    parse_op(&p, "{\"op\":\"reschedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ\",\"delayMs\":0,"
                 "\"txn\":\"t-1\",\"partition\":\"p7\",\"payloadZstd\":false}");
    assert_int_equal(p.rc, QERR_OK);
    o = &p.ops[0];
    assert_int_equal(o->kind, TIMER_OP_RESCHEDULE);
    assert_string_equal(o->txn, "t-1");
    assert_string_equal(o->partition, "p7");
    assert_int_equal(o->payload_len, 1); /* "MQ" unpadded: "1" */
    assert_memory_equal(o->payload, "1", 1);
    parsed_free(&p);

    /* a cancel: queue, timerKey, txn only */
    parse_op(&p, "{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\"}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.ops[0].kind, TIMER_OP_CANCEL);
    assert_null(p.ops[0].txn);
    assert_null(p.ops[0].partition);
    parsed_free(&p);
    parse_op(&p, "{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"txn\":\"t\\u00e9\"}");
    assert_int_equal(p.rc, QERR_OK);
    assert_string_equal(p.ops[0].txn, "t\xc3\xa9");
    parsed_free(&p);
    /* "" is no txn (as for a push) */
    parse_op(&p, "{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"txn\":\"\"}");
    assert_int_equal(p.rc, QERR_OK);
    assert_null(p.ops[0].txn);
    parsed_free(&p);
}

static void test_delay(void **state)
{
    (void)state;
    parsed p;
    /* a delay in the past fires on the next round */
    parse_op(&p, "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":-5000}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.ops[0].delay_us, 0);
    parsed_free(&p);
    parse_op(&p, "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":315360000000}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.ops[0].delay_us, 315360000000000LL);
    parsed_free(&p);
    parse_op(&p, "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":-315360000000}");
    assert_int_equal(p.rc, QERR_OK);
    parsed_free(&p);
    const char *range = "delayMs must be an integer between -315360000000 and 315360000000";
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":315360000001}",
            "timer_invalid_delay:out_of_range", range);
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":-315360000001}",
            "timer_invalid_delay:out_of_range", range);
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":\"5\"}",
            "timer_invalid_delay:not_integer", range);
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":1.5}",
            "timer_invalid_delay:not_integer", range);
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":true}",
            "timer_invalid_delay:not_integer", range);
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\"}", "timer_invalid_delay:missing",
            "delayMs is required");
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":null}",
            "timer_invalid_delay:missing", "delayMs is required");
}

/* Every field the server owns, in both spellings, and anything starting with '_': refused by
 * name, on a schedule and on a cancel. */
static void test_server_owned(void **state)
{
    (void)state;
    static const char *const owned[] = {
        "producerSub", "producer_sub", "messageId",    "message_id",    "tenant",   "tenantId",
        "tenant_id",   "deliverAt",    "deliver_at",   "delaySeconds",  "delay_seconds", "attempts",
        "claimToken",  "claim_token",  "claimedUntil", "claimed_until", "_x",       "_",
    };
    char op[300], want[80];
    for (size_t i = 0; i < ARRAY_LEN(owned); i++) {
        snprintf(op, sizeof op,
                 "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":1,"
                 "\"%s\":\"mallory\"}",
                 owned[i]);
        snprintf(want, sizeof want, "operations[0]: \"%s\" is owned by the server", owned[i]);
        refused(op, "timer_server_owned_field:server_owned", want);
        snprintf(op, sizeof op, "{\"%s\":1,\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\"}", owned[i]);
        refused(op, "timer_server_owned_field:server_owned", want);
    }
    /* an escaped underscore is one too */
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"\\u005fsecret\":1}", "timer_server_owned_field:server_owned",
            "\"_secret\" is owned by the server");
    /* "tenant" is owned; "tenants" is merely unknown */
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"tenants\":1}", "timer_unknown_field:unknown",
            "unknown field \"tenants\"");
}

static void test_fields(void **state)
{
    (void)state;
    refused("{\"queue\":\"q\",\"timerKey\":\"k\"}", "timer_invalid_op:op_unknown", "op must be");
    refused("{\"op\":\"Schedule\",\"queue\":\"q\",\"timerKey\":\"k\"}", "timer_invalid_op:op_unknown", "op must be");
    refused("{\"op\":1,\"queue\":\"q\",\"timerKey\":\"k\"}", "timer_invalid_op:op_unknown", "op must be");
    refused("[1]", "timer_invalid_op:not_object", "operations[0]: an op must be a JSON object");
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"when\":1}", "timer_unknown_field:unknown",
            "operations[0]: unknown field \"when\"");
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":1}", "timer_unknown_field:not_for_cancel",
            "a cancel takes op, queue, timerKey and txn, not \"delayMs\"");
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\"}", "timer_unknown_field:not_for_cancel",
            "not \"payload\"");
    refused("{\"op\":\"cancel\",\"timerKey\":\"k\"}", "timer_invalid_name:queue_missing", "queue is required");
    refused("{\"op\":\"cancel\",\"queue\":5,\"timerKey\":\"k\"}", "timer_invalid_name:queue_missing", "queue is required");
    refused("{\"op\":\"cancel\",\"queue\":\"\",\"timerKey\":\"k\"}", "timer_invalid_name:queue_invalid", "queue must be 1 to 255 bytes");
    refused("{\"op\":\"cancel\",\"queue\":\"a\\u0000b\",\"timerKey\":\"k\"}", "timer_invalid_name:queue_missing",
            "queue is required");
    refused("{\"op\":\"cancel\",\"queue\":\"q\"}", "timer_invalid_name:key_missing", "timerKey is required");
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"\"}", "timer_invalid_name:key_invalid", "timerKey must be 1 to 1024");
    refused("{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"txn\":7}", "timer_invalid_name:txn_invalid", "txn must be a string");
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":1,\"partition\":\"\"}",
            "timer_invalid_name:partition_invalid", "partition must be 1 to 255 bytes");
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":1,\"partition\":[]}",
            "timer_invalid_name:partition_invalid", "partition must be a string");
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"payload\":\"MQ==\",\"delayMs\":1,\"payloadZstd\":1}",
            "timer_invalid_payload:zstd_invalid", "payloadZstd must be true or false");
    /* the bounds of the names, both sides */
    buf b, op;
    buf_init(&b, 0);
    buf_init(&op, 0);
    for (int i = 0; i < 1024; i++)
        buf_putc(&b, 'k');
    buf_printf(&op, "{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"%s\"}", buf_cstr(&b));
    parsed p;
    parse_op(&p, buf_cstr(&op));
    assert_int_equal(p.rc, QERR_OK);
    parsed_free(&p);
    buf_reset(&op);
    buf_printf(&op, "{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"%sk\"}", buf_cstr(&b));
    refused(buf_cstr(&op), "timer_invalid_name:key_invalid", "timerKey must be 1 to 1024 bytes");
    buf_reset(&op);
    buf_printf(&op, "{\"op\":\"cancel\",\"queue\":\"%.256s\",\"timerKey\":\"k\"}", buf_cstr(&b));
    refused(buf_cstr(&op), "timer_invalid_name:queue_invalid", "queue must be 1 to 255 bytes");
    buf_reset(&op);
    buf_printf(&op, "{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\",\"txn\":\"%.256s\"}", buf_cstr(&b));
    refused(buf_cstr(&op), "timer_invalid_name:txn_invalid", "txn must be 1 to 255 bytes");
    buf_free(&b);
    buf_free(&op);
}

static void test_payloads(void **state)
{
    (void)state;
    buf k;
    buf_init(&k, 0);
    char op[600];
#define SCHED "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":1,\"payload\":"
    refused(SCHED "null}", "timer_invalid_payload:missing", "payload is required");
    refused("{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":1}", "timer_invalid_payload:missing",
            "payload is required");
    refused(SCHED "{\"a\":1}}", "timer_invalid_payload:not_base64", "payload must be a string");
    refused(SCHED "\"not base64!\"}", "timer_invalid_payload:not_base64", "payload is not base64");
    refused(SCHED "\"Zh==\"}", "timer_invalid_payload:not_base64", "payload is not base64"); /* trailing bits */
    refused(SCHED "\"-_8=\"}", "timer_invalid_payload:not_base64", "payload is not base64");  /* URL-safe: not this wire */
    refused(SCHED "\"MQ\\u0000\"}", "timer_invalid_payload:not_base64", "NUL");
    refused(SCHED "\"\"}", "timer_invalid_payload:not_json", "it is empty");
    snprintf(op, sizeof op, SCHED "\"%s\"}", b64("{\"a\":", 5, &k));
    refused(op, "timer_invalid_payload:not_json", "payload must be one JSON text");
    snprintf(op, sizeof op, SCHED "\"%s\"}", b64("1 2", 3, &k));
    refused(op, "timer_invalid_payload:not_json", "payload must be one JSON text");
    snprintf(op, sizeof op, SCHED "\"%s\"}", b64("\"\xff\"", 3, &k));
    refused(op, "timer_invalid_payload:not_json", "payload must be one JSON text");
    /* any JSON text, kept as sent (blanks included) */
    parsed p;
    snprintf(op, sizeof op, SCHED "\"%s\"}", b64(" [ \"caf\\u00e9\" , 1.50 ] ", 24, &k));
    parse_op(&p, op);
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.ops[0].payload_len, 24);
    assert_memory_equal(p.ops[0].payload, " [ \"caf\\u00e9\" , 1.50 ] ", 24);
    parsed_free(&p);

    /* the limit, both sides: a JSON string of exactly TIMER_PAYLOAD_MAX_BYTES, then one more */
    for (int extra = 0; extra <= 1; extra++) {
        size_t n = TIMER_PAYLOAD_MAX_BYTES + (size_t)extra;
        char *big = xmalloc(n);
        memset(big, 'x', n);
        big[0] = big[n - 1] = '"';
        buf body;
        buf_init(&body, 0);
        buf_puts(&body, SCHED "\"");
        b64_encode(&body, big, n);
        buf_puts(&body, "\"}");
        parse_op(&p, buf_cstr(&body));
        if (extra) {
            assert_int_equal(p.rc, QERR_BAD_INPUT);
            assert_string_equal(code_reason(&p.why), "timer_limit_exceeded:payload_too_large");
            assert_non_null(strstr(p.why.text, "at most 4194304"));
        } else {
            assert_int_equal(p.rc, QERR_OK);
            assert_int_equal(p.ops[0].payload_len, n);
        }
        parsed_free(&p);
        buf_free(&body);
        free(big);
    }
    buf_free(&k);
}

/* base64 of a zstd frame of `text` (content size in the header unless sizeless) */
static void zstd_b64(const char *text, size_t n, int sizeless, buf *out)
{
    size_t cap = ZSTD_compressBound(n);
    char *z = xmalloc(cap);
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cx, ZSTD_c_contentSizeFlag, sizeless ? 0 : 1);
    size_t zn;
    if (sizeless) {
        /* streaming without a pledged size leaves the size out of the header */
        ZSTD_outBuffer ob = {z, cap, 0};
        ZSTD_inBuffer ib = {text, n, 0};
        assert_false(ZSTD_isError(ZSTD_compressStream2(cx, &ob, &ib, ZSTD_e_end)));
        zn = ob.pos;
    } else {
        zn = ZSTD_compress2(cx, z, cap, text, n);
        assert_false(ZSTD_isError(zn));
    }
    ZSTD_freeCCtx(cx);
    buf_reset(out);
    b64_encode(out, z, zn);
    free(z);
}

static void test_zstd(void **state)
{
    (void)state;
    buf z, body;
    buf_init(&z, 0);
    buf_init(&body, 0);
    parsed p;
#define ZOP(b64text)                                                                                               \
    (buf_reset(&body), buf_printf(&body,                                                                           \
                                  "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":1,"          \
                                  "\"payloadZstd\":true,\"payload\":\"%s\"}",                                      \
                                  b64text),                                                                        \
     buf_cstr(&body))
    const char *json = "{\"order\": 7, \"lines\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]}";
    zstd_b64(json, strlen(json), 0, &z);
    parse_op(&p, ZOP(buf_cstr(&z)));
    assert_int_equal(p.rc, QERR_OK);
    /* stored decompressed: the message a consumer reads is the JSON text */
    assert_int_equal(p.ops[0].payload_len, strlen(json));
    assert_memory_equal(p.ops[0].payload, json, strlen(json));
    parsed_free(&p);
    /* no content size in the header */
    zstd_b64(json, strlen(json), 1, &z);
    refused(ZOP(buf_cstr(&z)), "timer_invalid_payload:zstd_invalid", "must carry its content size");
    /* not a frame at all: the JSON's own base64 with payloadZstd set */
    buf_reset(&z);
    b64_encode(&z, json, strlen(json));
    refused(ZOP(buf_cstr(&z)), "timer_invalid_payload:zstd_invalid", "is not a zstd frame");
    /* two frames, or a frame and trailing bytes */
    {
        size_t cap = ZSTD_compressBound(strlen(json));
        char *f = xmalloc(2 * cap + 1);
        size_t n1 = ZSTD_compress(f, cap, json, strlen(json), 1);
        memcpy(f + n1, f, n1);
        buf_reset(&z);
        b64_encode(&z, f, 2 * n1);
        refused(ZOP(buf_cstr(&z)), "timer_invalid_payload:zstd_invalid", "exactly one zstd frame");
        f[n1] = 'x';
        buf_reset(&z);
        b64_encode(&z, f, n1 + 1);
        refused(ZOP(buf_cstr(&z)), "timer_invalid_payload:zstd_invalid", "exactly one zstd frame");
        /* a damaged frame: its checksum or its blocks fail */
        f[n1 / 2] ^= 0x55;
        buf_reset(&z);
        b64_encode(&z, f, n1);
        parse_op(&p, ZOP(buf_cstr(&z)));
        assert_int_equal(p.rc, QERR_BAD_INPUT);
        assert_true(strcmp(code_reason(&p.why), "timer_invalid_payload:zstd_invalid") == 0 ||
                    strcmp(code_reason(&p.why), "timer_invalid_payload:not_json") == 0);
        parsed_free(&p);
        free(f);
    }
    /* decompresses to something that is not JSON */
    zstd_b64("{\"a\":", 5, 0, &z);
    refused(ZOP(buf_cstr(&z)), "timer_invalid_payload:not_json", "payload must be one JSON text");
    /* the limit applies to the decompressed bytes, both sides */
    for (int extra = 0; extra <= 1; extra++) {
        size_t n = TIMER_PAYLOAD_MAX_BYTES + (size_t)extra;
        char *big = xmalloc(n);
        memset(big, '1', n);
        zstd_b64(big, n, 0, &z);
        parse_op(&p, ZOP(buf_cstr(&z)));
        if (extra) {
            assert_int_equal(p.rc, QERR_BAD_INPUT);
            assert_string_equal(code_reason(&p.why), "timer_limit_exceeded:payload_too_large");
            assert_non_null(strstr(p.why.text, "decompresses to 4194305 bytes"));
        } else {
            assert_int_equal(p.rc, QERR_OK);
            assert_int_equal(p.ops[0].payload_len, n);
        }
        parsed_free(&p);
        free(big);
    }
    buf_free(&z);
    buf_free(&body);
}

static void test_bodies(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"operations\":[]}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.n, 0);
    parsed_free(&p);
    const char *shape = "the body is {\"operations\": [op, ...]} and nothing else";
    const char *bodies[] = {
        "{\"operations\":[],\"x\":1}",
        "{\"queue\":\"q\",\"delayMs\":5,\"payload\":1}", /* the retired server-id shape */
        "{\"items\":[]}",
        "{}",
    };
    for (size_t i = 0; i < ARRAY_LEN(bodies); i++) {
        parse(&p, bodies[i]);
        assert_int_equal(p.rc, QERR_BAD_INPUT);
        assert_string_equal(code_reason(&p.why), "timer_invalid_body:shape");
        assert_int_equal(p.why.index, -1);
        assert_non_null(strstr(p.why.text, shape));
        parsed_free(&p);
    }
    parse(&p, "{\"operations\":{}}");
    assert_int_equal(p.rc, QERR_BAD_INPUT);
    assert_string_equal(code_reason(&p.why), "timer_invalid_body:not_array");
    assert_string_equal(p.why.text, "operations must be an array of timer ops");
    parsed_free(&p);
    /* the second op's refusal names it */
    parse(&p, "{\"operations\":[{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k\"},{\"op\":\"x\"}]}");
    assert_int_equal(p.rc, QERR_BAD_INPUT);
    assert_non_null(strstr(p.why.text, "operations[1]: op must be"));
    assert_int_equal(p.why.index, 1);
    parsed_free(&p);
    /* at most TIMER_BATCH_MAX_OPS, both sides */
    for (int extra = 0; extra <= 1; extra++) {
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"operations\":[");
        for (int i = 0; i < TIMER_BATCH_MAX_OPS + extra; i++)
            buf_printf(&b, "%s{\"op\":\"cancel\",\"queue\":\"q\",\"timerKey\":\"k%d\"}", i ? "," : "", i);
        buf_puts(&b, "]}");
        parse(&p, buf_cstr(&b));
        if (extra) {
            assert_int_equal(p.rc, QERR_BAD_INPUT);
            assert_string_equal(code_reason(&p.why), "timer_limit_exceeded:too_many_ops");
            assert_string_equal(p.why.text, "operations holds 1001 ops; at most 1000 are taken at once");
        } else {
            assert_int_equal(p.rc, QERR_OK);
            assert_int_equal(p.n, TIMER_BATCH_MAX_OPS);
        }
        parsed_free(&p);
        buf_free(&b);
    }
    /* the rider's array names itself */
    json_doc d;
    memset(&d, 0, sizeof d);
    const char *rider = "{\"timers\":[{\"op\":\"cancel\"}]}";
    assert_int_equal(json_parse(&d, rider, strlen(rider), NULL), 0);
    arena ar;
    arena_init(&ar);
    timer_op *ops;
    int n;
    qerr_detail why;
    assert_int_equal(timer_ops_parse(&d, json_get(&d, 0, "timers"), "timers", &ar, &ops, &n, &why), QERR_BAD_INPUT);
    assert_string_equal(why.text, "timers[0]: queue is required (a string)");
    arena_free(&ar);
    json_doc_free(&d);
}

static void test_cancel_op(void **state)
{
    (void)state;
    timer_op op;
    qerr_detail why;
    assert_int_equal(timer_cancel_op("q", 1, "a/b", 3, "t", 1, &op, &why), QERR_OK);
    assert_int_equal(op.kind, TIMER_OP_CANCEL);
    assert_string_equal(op.txn, "t");
    assert_int_equal(timer_cancel_op("q", 1, "a/b", 3, "", 0, &op, &why), QERR_OK);
    assert_null(op.txn);
    char big[1100];
    memset(big, 'k', sizeof big);
    assert_int_equal(timer_cancel_op("q", 1, big, 1025, NULL, 0, &op, &why), QERR_BAD_INPUT);
    assert_string_equal(code_reason(&why), "timer_invalid_name:key_invalid");
    assert_int_equal(timer_cancel_op(big, 256, "k", 1, NULL, 0, &op, &why), QERR_BAD_INPUT);
    assert_string_equal(code_reason(&why), "timer_invalid_name:queue_invalid");
    assert_int_equal(timer_cancel_op("q", 1, "k", 1, big, 256, &op, &why), QERR_BAD_INPUT);
    assert_string_equal(code_reason(&why), "timer_invalid_name:txn_invalid");
}

/* The stored record decodes back to what was given, payload byte for byte; its transactionId
 * is a producer's (deduplicated when it fires). */
static void test_record(void **state)
{
    (void)state;
    parsed p;
    buf k;
    buf_init(&k, 0);
    char op[300];
    snprintf(op, sizeof op,
             "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":1,\"txn\":\"t-9\",\"payload\":\"%s\"}",
             b64("[ \"caf\\u00e9\" , 1.50 ]", 22, &k));
    parse_op(&p, op);
    assert_int_equal(p.rc, QERR_OK);
    buf seg;
    buf_init(&seg, 0);
    segment_begin(&seg);
    assert_int_equal(timer_encode_record(&p.ops[0], "alice", 5, &seg), 0);
    seg_reader sr;
    record_view v;
    assert_int_equal(seg_reader_init(&sr, (const uint8_t *)seg.data, seg.len, 7, 1), 0);
    assert_int_equal(seg_reader_next(&sr, &v), 1);
    assert_int_equal(v.offset, 7);
    assert_true(v.flags & REC_TXN_PRODUCER);
    assert_null(v.trace);
    char txt[64];
    assert_int_equal(record_txn_text(&v, txt, sizeof txt), 3);
    assert_memory_equal(txt, "t-9", 3);
    assert_int_equal(v.producer_len, 5);
    assert_memory_equal(v.producer, "alice", 5);
    const char *want = "[ \"caf\\u00e9\" , 1.50 ]";
    assert_int_equal(v.payload_len, strlen(want));
    assert_memory_equal(v.payload, want, v.payload_len);
    assert_int_equal(seg_reader_next(&sr, &v), 0);
    buf_free(&seg);
    buf_free(&k);
    parsed_free(&p);
}

/* A timer of an encrypted queue is sealed when made (op->seal), and a plaintext one can be
 * sealed later in place (timer_reseal_record): the same record but its payload. */
static void test_sealed_records(void **state)
{
    (void)state;
    seal_key key;
    qerr_detail err;
    assert_int_equal(seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key, &err),
                     QERR_OK);
    parsed p;
    /* {"total":42.00} */
    parse_op(&p, "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":5,\"txn\":\"t-9\","
                 "\"payload\":\"eyJ0b3RhbCI6NDIuMDB9\"}");
    assert_int_equal(p.rc, QERR_OK);
    buf plain, rec, seg, out;
    buf_init(&plain, 0);
    buf_init(&rec, 0);
    buf_init(&seg, 0);
    buf_init(&out, 0);
    /* sealing needs the node key */
    seal_set_node_key(NULL);
    p.ops[0].seal = 1;
    assert_int_equal(timer_encode_record(&p.ops[0], "alice", 5, &rec), -1);
    seal_set_node_key(&key);
    assert_int_equal(timer_encode_record(&p.ops[0], "alice", 5, &rec), 0);
    assert_null(memmem(rec.data, rec.len, "42.00", 5));
    assert_true((uint8_t)rec.data[0] & REC_ENCRYPTED);
    /* sealed already: nothing to do */
    assert_int_equal(timer_reseal_record((const uint8_t *)rec.data, rec.len, &out), 1);
    assert_int_equal(out.len, 0);

    p.ops[0].seal = 0;
    assert_int_equal(timer_encode_record(&p.ops[0], "alice", 5, &plain), 0);
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
    assert_int_equal(v.flags, REC_ENCRYPTED | REC_TXN_PRODUCER | REC_PRODUCER);
    char txt[64];
    assert_int_equal(record_txn_text(&v, txt, sizeof txt), 3);
    assert_memory_equal(txt, "t-9", 3);
    assert_int_equal(v.producer_len, 5);
    buf json;
    buf_init(&json, 0);
    record_payload_json(&json, &v);
    assert_string_equal(buf_cstr(&json), "{\"total\":42.00}");
    buf_free(&json);
    /* a made transactionId (a UUID, 16 bytes stored) survives the re-encoding */
    parsed_free(&p);
    parse_op(&p, "{\"op\":\"schedule\",\"queue\":\"q\",\"timerKey\":\"k\",\"delayMs\":5,\"payload\":\"MQ==\"}");
    buf_reset(&plain);
    buf_reset(&out);
    assert_int_equal(timer_encode_record(&p.ops[0], NULL, 0, &plain), 0);
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

/* timer_ops_v1's parameters: the tenant and nine arrays, binary; a cancel's schedule-only
 * elements are NULL. */
static void test_ops_params(void **state)
{
    (void)state;
    parsed p;
    parse(&p, "{\"operations\":[{\"op\":\"schedule\",\"queue\":\"a\",\"timerKey\":\"k\",\"delayMs\":1,\"payload\":"
              "\"MQ==\"},{\"op\":\"cancel\",\"queue\":\"b\",\"timerKey\":\"k\"}]}");
    assert_int_equal(p.rc, QERR_OK);
    uint8_t tenant[16] = {0};
    timer_params tp;
    timer_ops_params(tenant, p.ops, p.n, NULL, 0, &tp);
    assert_int_equal(tp.n, 10);
    for (int i = 0; i < tp.n; i++)
        assert_int_equal(tp.formats[i], 1);
    assert_int_equal(tp.lengths[0], 16);
    /* delays ($7): a header of 20 bytes, one int8 (4 + 8), a NULL (4) */
    assert_int_equal(tp.lengths[6], 20 + 12 + 4);
    /* ids ($8): one uuid (4 + 16), a NULL */
    assert_int_equal(tp.lengths[7], 20 + 20 + 4);
    /* the cancel's txn ($6) is NULL: the schedule's is 36 bytes */
    assert_int_equal(tp.lengths[5], 20 + 4 + 36 + 4);
    timer_params_free(&tp);
    parsed_free(&p);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(timer_status_name(TIMER_SCHEDULED), "scheduled");
    assert_string_equal(timer_status_name(TIMER_RESCHEDULED), "rescheduled");
    assert_string_equal(timer_status_name(TIMER_CANCELLED), "cancelled");
    assert_string_equal(timer_status_name(TIMER_ABSENT), "absent");
    assert_string_equal(timer_status_name(TIMER_TOO_LATE), "too_late");
    assert_null(timer_status_name(TIMER_STATUS_COUNT));
    assert_null(timer_status_name(-1));
    /* QE002's message names the op (from 1) */
    assert_int_equal(timer_ops_refused_op("QE002", "timer_ops_v1: op 3 (queue \"x\") needs its payload sealed"), 3);
    assert_int_equal(timer_ops_refused_op("QE001", "timer_ops_v1: op 3 (queue \"x\")"), 0);
    assert_int_equal(timer_ops_refused_op("QE002", "push_v1: group 3"), 0);
    assert_int_equal(timer_ops_refused_op("QE002", "timer_ops_v1: op 0"), 0);
    assert_int_equal(timer_ops_refused_op("QE002", NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_defaults), cmocka_unit_test(test_delay),
        cmocka_unit_test(test_server_owned),      cmocka_unit_test(test_fields),
        cmocka_unit_test(test_payloads),          cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_bodies),            cmocka_unit_test(test_cancel_op),
        cmocka_unit_test(test_record),            cmocka_unit_test(test_sealed_records),
        cmocka_unit_test(test_ops_params),        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
