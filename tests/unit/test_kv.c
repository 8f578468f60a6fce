/* Unit tests for the KV ops without a database (kv/kv.h): name checks, request parsing and
 * its error messages, the failure messages and result JSON, LIKE escaping, parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "kv/kv.h"
#include "kv/kv_wire.h"

static qerr_detail g_err;

typedef struct parsed {
    json_doc d;
    arena ar;
    kv_op *ops;
    int n;
    qerr rc;
} parsed;

static void parse_batch(parsed *p, const char *text)
{
    memset(p, 0, sizeof *p);
    arena_init(&p->ar);
    json_opts o = {.token_depth = 3};
    if (json_parse(&p->d, text, strlen(text), &o) != 0)
        fail_msg("bad test JSON %s: %s", text, p->d.err);
    memset(&g_err, 0, sizeof g_err);
    p->rc = kv_parse_batch(&p->d, &p->ar, &p->ops, &p->n, &g_err);
}

static void parsed_free(parsed *p)
{
    json_doc_free(&p->d);
    arena_free(&p->ar);
}

/* Parses a batch that must fail with exactly `want`. */
static void batch_fails(const char *text, const char *want)
{
    parsed p;
    parse_batch(&p, text);
    if (p.rc != QERR_BAD_INPUT)
        fail_msg("expected failure for %s", text);
    assert_string_equal(g_err.text, want);
    parsed_free(&p);
}

static void test_check_name(void **state)
{
    (void)state;
    qerr_detail e;
    assert_int_equal(kv_check_name("key", "a", 1, 10, &e), QERR_OK);
    assert_int_equal(kv_check_name("key", "", 0, 10, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "key must be a non-empty string");
    assert_int_equal(kv_check_name("key", "0123456789", 10, 10, &e), QERR_OK);
    assert_int_equal(kv_check_name("key", "0123456789x", 11, 10, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "key is 11 bytes; at most 10 are allowed");
    assert_int_equal(kv_check_name("namespace", "a\0b", 3, 10, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "namespace must not contain NUL characters");
    assert_int_equal(kv_check_name("key", "\xc3\x28", 2, 10, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "key must be valid UTF-8");
    assert_int_equal(kv_check_name("key", "caf\xc3\xa9", 5, 10, &e), QERR_OK);
}

/* Both sides of every bound of kv_check_op. */
static void test_check_op_bounds(void **state)
{
    (void)state;
    qerr_detail e;
    char key[KV_KEY_MAX_BYTES + 2];
    memset(key, 'k', sizeof key);
    key[KV_KEY_MAX_BYTES] = '\0';
    kv_op o = kv_op_put("ns", key, "1", 0);
    assert_int_equal(kv_check_op(&o, &e), QERR_OK);
    key[KV_KEY_MAX_BYTES] = 'k';
    key[KV_KEY_MAX_BYTES + 1] = '\0';
    o = kv_op_put("ns", key, "1", 0);
    assert_int_equal(kv_check_op(&o, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "key is 1025 bytes; at most 1024 are allowed");

    char ns[KV_NAMESPACE_MAX_BYTES + 2];
    memset(ns, 'n', sizeof ns);
    ns[KV_NAMESPACE_MAX_BYTES] = '\0';
    o = kv_op_get(ns, "k");
    assert_int_equal(kv_check_op(&o, &e), QERR_OK);
    ns[KV_NAMESPACE_MAX_BYTES] = 'n';
    ns[KV_NAMESPACE_MAX_BYTES + 1] = '\0';
    o = kv_op_get(ns, "k");
    assert_int_equal(kv_check_op(&o, &e), QERR_BAD_INPUT);

    o = kv_op_put("ns", "k", "1", KV_TTL_MAX_MS);
    assert_int_equal(kv_check_op(&o, &e), QERR_OK);
    o.ttl_ms = KV_TTL_MAX_MS + 1;
    assert_int_equal(kv_check_op(&o, &e), QERR_BAD_INPUT);

    o = kv_op_put("ns", "k", "", 0);
    assert_int_equal(kv_check_op(&o, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "value is required (any JSON value)");

    static char big[KV_VALUE_MAX_BYTES + 2];
    memset(big, '1', sizeof big);
    big[KV_VALUE_MAX_BYTES] = '\0';
    o = kv_op_put("ns", "k", big, 0);
    assert_int_equal(kv_check_op(&o, &e), QERR_OK);
    big[KV_VALUE_MAX_BYTES] = '1';
    big[KV_VALUE_MAX_BYTES + 1] = '\0';
    o = kv_op_put("ns", "k", big, 0);
    assert_int_equal(kv_check_op(&o, &e), QERR_BAD_INPUT);

    o = kv_op_put_if_version("ns", "k", "1", 0, 0);
    assert_int_equal(kv_check_op(&o, &e), QERR_BAD_INPUT);
    assert_string_equal(e.text, "ifVersion must be a positive integer");
    o = kv_op_put_if_version("ns", "k", "1", 0, 1);
    assert_int_equal(kv_check_op(&o, &e), QERR_OK);
}

static void test_constructors(void **state)
{
    (void)state;
    kv_op o = kv_op_put_if_absent("queen-s3", "s3:default:orders:lease", "{\"node\":\"a\"}", 30000);
    assert_int_equal(o.kind, KV_PUT);
    assert_int_equal(o.expect, KV_EXPECT_ABSENT);
    assert_int_equal(o.ttl_ms, 30000);
    assert_string_equal(kv_kind_name(&o), "putIfAbsent");
    o = kv_op_put_if_version("ns", "k", "1", 0, 41);
    assert_int_equal(o.expect, KV_EXPECT_VERSION);
    assert_int_equal(o.version, 41);
    assert_string_equal(kv_kind_name(&o), "put");
    o = kv_op_incr("ns", "k", -3);
    assert_int_equal(o.by, -3);
    assert_string_equal(kv_kind_name(&o), "incr");
    o = kv_op_delete_if_version("ns", "k", 7);
    assert_string_equal(kv_kind_name(&o), "delete");
    assert_int_equal(o.version, 7);
    assert_int_equal(kv_metric_slot(&o), 3);
}

static void test_parse_batch_ok(void **state)
{
    (void)state;
    parsed p;
    parse_batch(&p, "{\"namespace\":\"ns\",\"ops\":["
                    "{\"op\":\"put\",\"key\":\"a\",\"value\": {\"x\" : 42.00 },\"ttlMs\":5000,\"ifVersion\":9},"
                    "{\"op\":\"putIfAbsent\",\"namespace\":\"other\",\"key\":\"b\",\"value\":null},"
                    "{\"op\":\"get\",\"key\":\"c\",\"ifAbsent\":true},"
                    "{\"op\":\"delete\",\"key\":\"d\"},"
                    "{\"op\":\"incr\",\"key\":\"e\",\"max\":10,\"ttlMs\":1000},"
                    "{\"op\":\"incr\",\"key\":\"f\",\"by\":-2}]}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.n, 6);
    kv_op *o = p.ops;
    assert_int_equal(o[0].kind, KV_PUT);
    assert_int_equal(o[0].expect, KV_EXPECT_VERSION);
    assert_int_equal(o[0].version, 9);
    assert_int_equal(o[0].ttl_ms, 5000);
    /* the raw span: spacing and number spelling as sent */
    assert_int_equal(o[0].value_len, strlen("{\"x\" : 42.00 }"));
    assert_memory_equal(o[0].value, "{\"x\" : 42.00 }", o[0].value_len);
    assert_int_equal(o[0].ns_len, 2);
    assert_memory_equal(o[0].ns, "ns", 2);
    assert_int_equal(o[1].expect, KV_EXPECT_ABSENT);
    assert_memory_equal(o[1].ns, "other", 5);
    assert_memory_equal(o[1].value, "null", 4);
    assert_int_equal(o[2].kind, KV_GET);
    assert_int_equal(o[2].expect, KV_EXPECT_ABSENT);
    assert_int_equal(o[3].kind, KV_DELETE);
    assert_int_equal(o[3].expect, KV_EXPECT_NONE);
    assert_int_equal(o[4].kind, KV_INCR);
    assert_int_equal(o[4].by, 1);
    assert_int_equal(o[4].has_max, 1);
    assert_int_equal(o[4].max, 10);
    assert_int_equal(o[5].by, -2);
    assert_int_equal(o[5].has_max, 0);
    parsed_free(&p);

    /* escaped keys are decoded */
    parse_batch(&p, "{\"ops\":[{\"op\":\"get\",\"namespace\":\"n\\u00e9\",\"key\":\"a\\/b\"}]}");
    assert_int_equal(p.rc, QERR_OK);
    assert_int_equal(p.ops[0].ns_len, 3);
    assert_memory_equal(p.ops[0].ns, "n\xc3\xa9", 3);
    assert_memory_equal(p.ops[0].key, "a/b", 3);
    parsed_free(&p);
}

static void test_parse_batch_errors(void **state)
{
    (void)state;
    batch_fails("{}", "ops array is required");
    batch_fails("{\"ops\":{}}", "ops array is required");
    batch_fails("{\"ops\":[]}", "ops must hold at least one op");
    batch_fails("{\"ops\":[1]}", "ops[0]: an op must be a JSON object");
    batch_fails("{\"ops\":[],\"extra\":1}", "unknown field in the batch body (fields: namespace, ops)");
    batch_fails("{\"namespace\":5,\"ops\":[{}]}", "namespace must be a string");
    batch_fails("{\"ops\":[{\"key\":\"k\",\"namespace\":\"n\"}]}",
                "ops[0]: op is required (get, put, putIfAbsent, delete or incr)");
    batch_fails("{\"ops\":[{\"op\":\"upsert\",\"key\":\"k\",\"namespace\":\"n\"}]}",
                "ops[0]: op must be one of get, put, putIfAbsent, delete, incr");
    batch_fails("{\"ops\":[{\"op\":\"get\",\"key\":\"k\"}]}",
                "ops[0]: namespace is required (in the op or for the whole batch)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"get\"}]}", "ops[0]: key is required");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"get\",\"key\":\"\"}]}",
                "ops[0]: key must be a non-empty string");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"get\",\"key\":7}]}", "ops[0]: key must be a string");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"get\",\"key\":\"a\\u0000b\"}]}",
                "ops[0]: key must not contain NUL characters");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\"}]}",
                "ops[0]: value is required (any JSON value)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"get\",\"key\":\"k\",\"value\":1}]}",
                "ops[0]: value is only accepted by put and putIfAbsent");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"ifVersion\":0}]}",
                "ops[0]: ifVersion must be a positive integer (a version this store returned)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"ifVersion\":\"3\"}]}",
                "ops[0]: ifVersion must be a positive integer (a version this store returned)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"ifVersion\":1.5}]}",
                "ops[0]: ifVersion must be a positive integer (a version this store returned)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"putIfAbsent\",\"key\":\"k\",\"value\":1,\"ifVersion\":2}]}",
                "ops[0]: ifVersion and ifAbsent (or putIfAbsent) cannot be combined");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"ifAbsent\":1}]}",
                "ops[0]: ifAbsent must be true or false");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"ttlMs\":0}]}",
                "ops[0]: ttlMs must be an integer between 1 and 315360000000");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"get\",\"key\":\"k\",\"ttlMs\":10}]}",
                "ops[0]: ttlMs is only accepted by put, putIfAbsent and incr");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"incr\",\"key\":\"k\",\"by\":\"1\"}]}",
                "ops[0]: by must be an integer (64-bit)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"incr\",\"key\":\"k\",\"by\":9223372036854775808}]}",
                "ops[0]: by must be an integer (64-bit)");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"by\":2}]}",
                "ops[0]: by is only accepted by incr");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"max\":2}]}",
                "ops[0]: max is only accepted by incr");
    batch_fails("{\"namespace\":\"n\",\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":1,\"ifVerison\":2}]}",
                "ops[0]: unknown field \"ifVerison\" (fields: op, namespace, key, value, ttlMs, ifVersion, ifAbsent, "
                "by, max)");
}

/* Exactly KV_BATCH_MAX_OPS ops pass; one more is refused. */
static void test_batch_size_bound(void **state)
{
    (void)state;
    for (int extra = 0; extra <= 1; extra++) {
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"namespace\":\"n\",\"ops\":[");
        for (int i = 0; i < KV_BATCH_MAX_OPS + extra; i++)
            buf_printf(&b, "%s{\"op\":\"get\",\"key\":\"k%d\"}", i ? "," : "", i);
        buf_puts(&b, "]}");
        parsed p;
        parse_batch(&p, buf_cstr(&b));
        if (extra) {
            assert_int_equal(p.rc, QERR_BAD_INPUT);
            assert_string_equal(g_err.text, "ops holds 1001 ops; at most 1000 are allowed");
        } else {
            assert_int_equal(p.rc, QERR_OK);
            assert_int_equal(p.n, KV_BATCH_MAX_OPS);
        }
        parsed_free(&p);
        buf_free(&b);
    }
}

/* The single-op routes fix the kind and read the rest. */
static void test_parse_single(void **state)
{
    (void)state;
    const char *text = "{\"value\":[1, 2],\"ttlMs\":100}";
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = 1};
    assert_int_equal(json_parse(&d, text, strlen(text), &jo), 0);
    arena ar;
    arena_init(&ar);
    kv_op o;
    assert_int_equal(kv_parse_op_fields(&d, 0, KV_PUT, 1, &ar, &o, &g_err), QERR_OK);
    assert_int_equal(o.kind, KV_PUT);
    assert_int_equal(o.expect, KV_EXPECT_ABSENT);
    assert_memory_equal(o.value, "[1, 2]", 6);
    assert_null(o.ns);
    assert_int_equal(kv_parse_op_fields(&d, 0, KV_INCR, 0, &ar, &o, &g_err), QERR_BAD_INPUT);
    assert_string_equal(g_err.text, "value is only accepted by put and putIfAbsent");
    json_doc_free(&d);
    arena_free(&ar);
}

static kv_outcome failed(enum kv_fail f, int op, int64_t cur_version, const char *cur_value)
{
    kv_outcome o;
    memset(&o, 0, sizeof o);
    o.fail = f;
    o.failed_op = op;
    o.current.version = cur_version;
    if (cur_value) {
        o.current.value = cur_value;
        o.current.value_len = strlen(cur_value);
    }
    return o;
}

static void fail_msg_is(const kv_op *ops, kv_outcome o, const char *want)
{
    buf b;
    buf_init(&b, 0);
    kv_fail_message(ops, &o, &b);
    assert_string_equal(buf_cstr(&b), want);
    buf_free(&b);
}

static void test_fail_messages(void **state)
{
    (void)state;
    kv_op ops[2] = {kv_op_put("ns", "a", "1", 0), kv_op_put_if_version("queen-s3", "lease", "{}", 0, 41)};
    fail_msg_is(ops, failed(KV_FAIL_VERSION, 1, 57, NULL),
                "op 1 (put queen-s3/lease): version mismatch: required version 41, found 57");
    fail_msg_is(ops, failed(KV_FAIL_ABSENT, 1, 0, NULL),
                "op 1 (put queen-s3/lease): the key is absent and version 41 was required");
    kv_op pia = kv_op_put_if_absent("ns", "k", "1", 0);
    fail_msg_is(&pia, failed(KV_FAIL_EXISTS, 0, 3, "1"),
                "op 0 (putIfAbsent ns/k): the key exists (version 3) and absence was required");
    kv_op inc = kv_op_incr("rl", "user-1", 1);
    inc.has_max = 1;
    inc.max = 10;
    fail_msg_is(&inc, failed(KV_FAIL_MAX, 0, 12, "10"), "op 0 (incr rl/user-1): incr refused: 10 + 1 would pass max 10");
    fail_msg_is(&inc, failed(KV_FAIL_NOT_INTEGER, 0, 12, "\"x\""),
                "op 0 (incr rl/user-1): incr needs an integer value and the stored value is not one");
    fail_msg_is(&inc, failed(KV_FAIL_OVERFLOW, 0, 12, "9223372036854775807"),
                "op 0 (incr rl/user-1): incr by 1 would leave the 64-bit integer range");

    buf b;
    buf_init(&b, 0);
    kv_outcome o = failed(KV_FAIL_MAX, 0, 12, "10");
    kv_fail_json(&b, &inc, &o);
    assert_string_equal(buf_cstr(&b),
                        "{\"error\":\"op 0 (incr rl/user-1): incr refused: 10 + 1 would pass max 10\",\"code\":\"conflict\",\"failedOp\":0,"
                        "\"reason\":\"max_exceeded\",\"op\":\"incr\",\"namespace\":\"rl\",\"key\":\"user-1\","
                        "\"currentVersion\":12,\"currentValue\":10}");
    buf_free(&b);
    for (int f = 0; f < KV_FAIL_COUNT; f++)
        assert_string_not_equal(kv_fail_reason((enum kv_fail)f), "unknown");
}

/* A long name is cut in messages, never inside a UTF-8 character (found by fuzz_kv: the 409
 * body was not valid UTF-8). */
static void test_messages_cut_at_characters(void **state)
{
    (void)state;
    assert_int_equal(utf8_cut("abc", 3, 10), 3);
    assert_int_equal(utf8_cut("ab\xc3\xa9", 4, 3), 2);
    assert_int_equal(utf8_cut("ab\xc3\xa9", 4, 4), 4);
    assert_int_equal(utf8_cut("\xf0\x9f\x98\x80x", 5, 3), 0);
    assert_int_equal(utf8_cut("\xf0\x9f\x98\x80x", 5, 4), 4);
    char ns[100];
    memset(ns, 'a', 79);
    memcpy(ns + 79, "\xc3\xa9zz", 5); /* the é straddles the 80-byte cut */
    kv_op op = kv_op_put_if_version(ns, "k", "1", 0, 5);
    kv_outcome o = failed(KV_FAIL_VERSION, 0, 6, NULL);
    buf b;
    buf_init(&b, 0);
    kv_fail_json(&b, &op, &o);
    assert_int_equal(utf8_valid((const uint8_t *)b.data, b.len), 0);
    json_doc d;
    memset(&d, 0, sizeof d);
    assert_int_equal(json_parse(&d, b.data, b.len, NULL), 0);
    json_doc_free(&d);
    char want[100];
    snprintf(want, sizeof want, "(put %.79s/k)", ns); /* the 79 a's, without the cut é */
    assert_non_null(strstr(buf_cstr(&b), want));
    buf_free(&b);
}

static void test_result_json(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    kv_op g = kv_op_get("ns", "k\"q");
    kv_result r = {.version = 5, .value = "{\"a\": 1.50}", .value_len = 11, .expires_at_us = 0, .flag = 1};
    kv_result_json(&b, &g, &r);
    assert_string_equal(buf_cstr(&b), "{\"op\":\"get\",\"namespace\":\"ns\",\"key\":\"k\\\"q\",\"found\":true,"
                                      "\"value\":{\"a\": 1.50},\"version\":5,\"expiresAt\":null}");
    buf_reset(&b);
    kv_op d = kv_op_delete("ns", "k");
    kv_result rd = {.flag = 0};
    kv_result_json(&b, &d, &rd);
    assert_string_equal(buf_cstr(&b), "{\"op\":\"delete\",\"namespace\":\"ns\",\"key\":\"k\",\"deleted\":false,"
                                      "\"version\":null,\"expiresAt\":null}");
    buf_reset(&b);
    kv_op p = kv_op_put("ns", "k", "1", 10);
    kv_result rp = {.version = 9, .expires_at_us = 1700000000000000, .flag = 1};
    kv_result_json(&b, &p, &rp);
    assert_string_equal(buf_cstr(&b), "{\"op\":\"put\",\"namespace\":\"ns\",\"key\":\"k\",\"created\":true,"
                                      "\"version\":9,\"expiresAt\":1700000000000000}");
    buf_free(&b);
}

static void test_like_prefix(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    kv_like_prefix("s3:a_b%c\\d", 10, &b);
    assert_string_equal(buf_cstr(&b), "s3:a\\_b\\%c\\\\d%");
    buf_reset(&b);
    kv_like_prefix("", 0, &b);
    assert_string_equal(buf_cstr(&b), "%");
    buf_free(&b);
}

/* The parameters: ten of them, arrays in binary, a put's value as is and NULL otherwise. */
static void test_batch_params(void **state)
{
    (void)state;
    uint8_t tenant[16] = {0};
    tenant[15] = 1;
    kv_op ops[3] = {kv_op_put("ns", "a", " 42.00", 0), kv_op_get("ns", "b"), kv_op_incr("ns", "c", 2)};
    ops[2].has_max = 1;
    ops[2].max = 5;
    kv_params p;
    kv_batch_params(tenant, ops, 3, &p);
    assert_int_equal(p.n, 10);
    assert_int_equal(p.lengths[0], 16);
    assert_memory_equal(p.values[0], tenant, 16);
    for (int i = 0; i < 10; i++)
        assert_int_equal(p.formats[i], 1);
    /* $5 values: header (20) + (4 + 6) + 4 (NULL) + 4 (NULL) */
    assert_int_equal(p.lengths[4], 20 + 10 + 4 + 4);
    assert_non_null(memmem(p.values[4], (size_t)p.lengths[4], " 42.00", 6));
    kv_params_free(&p);

    kv_list_params(tenant, "ns", 2, "s3:", 3, NULL, 0, 10, &p);
    assert_int_equal(p.n, 6);
    assert_int_equal(p.lengths[3], 4);
    assert_memory_equal(p.values[3], "s3:%", 4);
    assert_int_equal(p.lengths[2], 0);
    assert_int_equal((int64_t)be_get64((const uint8_t *)p.values[4]), 11);
    assert_int_equal((int64_t)be_get64((const uint8_t *)p.values[5]), KV_ANSWER_MAX_BYTES);
    kv_params_free(&p);
}


/* ---- the 2.x wire (kv_wire.h) ---- */

static qerr wire(const char *body, arena *ar, kvw_op **ops, int *n, qerr_detail *why)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = 4};
    assert_int_equal(json_parse(&d, body, strlen(body), &jo), 0);
    memset(why, 0, sizeof *why);
    qerr rc = kvw_parse_body(&d, ar, ops, n, why);
    json_doc_free(&d);
    return rc;
}

static void test_wire_ops(void **state)
{
    (void)state;
    arena ar;
    arena_init(&ar);
    kvw_op *ops;
    int n;
    qerr_detail why;
    const char *body = "{\"operations\":[{\"op\":\"put\",\"ns\":\"n\",\"key\":\"k\",\"value\":{\"a\" : 1},\"ttlSeconds\":30,"
                       "\"expect\":7,\"required\":true},{\"op\":\"putIfAbsent\",\"ns\":\"n\",\"key\":\"k\",\"value\":1,"
                       "\"forever\":true},{\"op\":\"incr\",\"ns\":\"n\",\"key\":\"c\",\"min\":0,\"max\":9,\"forever\":true},"
                       "{\"op\":\"getMany\",\"ns\":\"n\",\"keys\":[\"a\",\"b\"]},{\"op\":\"getPrefix\",\"ns\":\"n\","
                       "\"prefix\":\"p\",\"limit\":99999}]}";
    assert_int_equal(wire(body, &ar, &ops, &n, &why), QERR_OK);
    assert_int_equal(n, 5);
    assert_int_equal(ops[0].kind, KVW_PUT);
    assert_true(ops[0].has_expect && ops[0].expect == 7 && ops[0].required && ops[0].ttl_s == 30 && !ops[0].forever);
    assert_int_equal(ops[0].value_len, 9);
    assert_memory_equal(ops[0].value, "{\"a\" : 1}", 9);
    assert_true(ops[1].has_expect && ops[1].expect == 0 && ops[1].forever);
    assert_true(ops[2].delta == 1 && ops[2].has_min && ops[2].has_max && ops[2].max == 9);
    assert_int_equal(ops[3].nkeys, 2);
    assert_int_equal(ops[4].limit, KVW_PREFIX_LIMIT_MAX);
    uint8_t tenant[16] = {0};
    kvw_params p;
    kvw_params_build(tenant, 0, ops, n, &p);
    assert_int_equal(p.n, 17);
    kvw_params_free(&p);
    arena_free(&ar);
}

static void test_wire_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *body, *code, *reason;
        int index;
    } cases[] = {
        {"{\"operations\":[{\"op\":\"put\",\"ns\":\"n\",\"key\":\"k\",\"value\":1}]}", "kv_expiry_not_specified",
         "kv_expiry_not_specified", 0},
        {"{\"operations\":[{\"op\":\"get\",\"ns\":\"n\",\"key\":\"k\"},{\"op\":\"getPrefix\",\"ns\":\"n\",\"prefix\":\"\"}]}",
         "kv_prefix_required", "kv_prefix_required", 1},
        {"{\"operations\":[{\"op\":\"put\",\"ns\":\"n\",\"key\":\"k\",\"value\":1,\"forever\":true,\"expect\":null}]}",
         "kv_invalid_expect", "not_integer", 0},
        {"{\"operations\":[{\"op\":\"incr\",\"ns\":\"n\",\"key\":\"k\",\"forever\":true,\"expect\":1}]}", "kv_unknown_field",
         "unknown", 0},
        {"{\"operations\":[{\"op\":\"check\",\"ns\":\"n\",\"key\":\"k\"}]}", "kv_invalid_expect", "missing", 0},
        {"{\"operations\":[{\"op\":\"get\",\"ns\":\"n\",\"key\":\"a\\u0000\"}]}", "kv_invalid_name", "key_invalid", 0},
        {"{\"ops\":[]}", "kv_invalid_body", "unknown_field", -1},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        arena ar;
        arena_init(&ar);
        kvw_op *ops;
        int n;
        qerr_detail why;
        assert_int_equal(wire(cases[i].body, &ar, &ops, &n, &why), QERR_BAD_INPUT);
        assert_string_equal(why.code, cases[i].code);
        assert_string_equal(why.reason, cases[i].reason);
        assert_int_equal(why.index, cases[i].index);
        assert_true(why.text[0] != '\0');
        arena_free(&ar);
    }
}

static void test_wire_required_failure(void **state)
{
    (void)state;
    char reason[32];
    assert_int_equal(kvw_required_failure("QK001", "kv_ops_v1: op 3: version", reason, sizeof reason), 3);
    assert_string_equal(reason, "version");
    assert_int_equal(kvw_required_failure("QK002", "kv_ops_v1: op 3: version", reason, sizeof reason), 0);
    assert_int_equal(kvw_required_failure("QK001", "something else", reason, sizeof reason), 0);
}

static void test_lock_ops(void **state)
{
    (void)state;
    static const struct {
        const char *body, *code;
    } cases[] = {
        {"{\"operations\":[{\"op\":\"acquire\",\"name\":\"a#b\",\"ttlSeconds\":5}]}", "lock_invalid_name"},
        {"{\"operations\":[{\"op\":\"acquire\",\"name\":\"a\\u0085b\",\"ttlSeconds\":5}]}", "lock_invalid_name"},
        {"{\"operations\":[{\"op\":\"acquire\",\"name\":\"a\"}]}", "lock_invalid_ttl"},
        {"{\"operations\":[{\"op\":\"renew\",\"name\":\"a\",\"ttlSeconds\":5,\"token\":true}]}", "lock_invalid_token"},
        {"{\"operations\":[{\"op\":\"get\",\"name\":\"a\",\"limit\":2}]}", "lock_unknown_field"},
        {"{\"operations\":[{\"op\":\"acquire\",\"name\":\"a\",\"ttlSeconds\":5,\"limit\":1025}]}", "lock_invalid_limit"},
        {"{\"operations\":[{\"op\":\"acquire\",\"name\":\"a\",\"ttlSeconds\":5,\"limit\":4,\"owner\":\"h:1:ab\"},"
         "{\"op\":\"release\",\"name\":\"a\",\"token\":9,\"slot\":3}]}",
         NULL},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        arena ar;
        arena_init(&ar);
        json_doc d;
        memset(&d, 0, sizeof d);
        json_opts jo = {.token_depth = 3};
        assert_int_equal(json_parse(&d, cases[i].body, strlen(cases[i].body), &jo), 0);
        lockw_op *ops;
        int n;
        qerr_detail why;
        memset(&why, 0, sizeof why);
        qerr rc = lockw_parse_body(&d, &ar, &ops, &n, &why);
        json_doc_free(&d);
        if (cases[i].code) {
            assert_int_equal(rc, QERR_BAD_INPUT);
            assert_string_equal(why.code, cases[i].code);
        } else {
            assert_int_equal(rc, QERR_OK);
            assert_int_equal(n, 2);
            assert_true(ops[0].limit == 4 && ops[0].owner_len == 6 && ops[1].has_slot && ops[1].slot == 3 && ops[1].token == 9);
            uint8_t tenant[16] = {0};
            kvw_params p;
            lockw_params_build(tenant, ops, n, &p);
            assert_int_equal(p.n, 8);
            kvw_params_free(&p);
        }
        arena_free(&ar);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_name),     cmocka_unit_test(test_check_op_bounds),
        cmocka_unit_test(test_constructors),   cmocka_unit_test(test_parse_batch_ok),
        cmocka_unit_test(test_parse_batch_errors), cmocka_unit_test(test_batch_size_bound),
        cmocka_unit_test(test_parse_single),   cmocka_unit_test(test_fail_messages),
        cmocka_unit_test(test_messages_cut_at_characters),
        cmocka_unit_test(test_result_json),    cmocka_unit_test(test_like_prefix),
        cmocka_unit_test(test_batch_params),
        cmocka_unit_test(test_wire_ops),       cmocka_unit_test(test_wire_refusals),
        cmocka_unit_test(test_wire_required_failure), cmocka_unit_test(test_lock_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
