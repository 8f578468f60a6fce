/* Unit tests for the JSON span reader and writer helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json/json.h"

static int parse(json_doc *d, const char *s)
{
    memset(d, 0, sizeof *d);
    return json_parse(d, s, strlen(s), NULL);
}

static void raw_eq(const json_doc *d, int t, const char *want)
{
    size_t n;
    const char *p = json_raw(d, t, &n);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(p, want, n);
}

static void test_int_field_and_unknown_key(void **state)
{
    (void)state;
    json_doc d;
    assert_int_equal(parse(&d, "{\"a\":5,\"b\":null,\"c\":\"5\",\"d\":1.5,\"e\":11}"), 0);
    int64_t v = -1;
    assert_int_equal(json_int_field(&d, 0, "a", 0, 10, &v), 1);
    assert_int_equal(v, 5);
    v = -1;
    assert_int_equal(json_int_field(&d, 0, "b", 0, 10, &v), 0); /* null is absent */
    assert_int_equal(json_int_field(&d, 0, "zz", 0, 10, &v), 0);
    assert_int_equal(v, -1);
    assert_int_equal(json_int_field(&d, 0, "c", 0, 10, &v), -1); /* a string */
    assert_int_equal(json_int_field(&d, 0, "d", 0, 10, &v), -1); /* not an integer */
    assert_int_equal(json_int_field(&d, 0, "e", 0, 10, &v), -1); /* out of range */
    assert_int_equal(v, -1);
    static const char *const all[] = {"a", "b", "c", "d", "e", NULL};
    static const char *const some[] = {"a", "b", "d", "e", NULL};
    static const char *const none[] = {NULL};
    assert_int_equal(json_unknown_key(&d, 0, all), -1);
    int k = json_unknown_key(&d, 0, some);
    assert_true(k >= 0 && json_str_eq(&d, k, "c"));
    k = json_unknown_key(&d, 0, none);
    assert_true(k >= 0 && json_str_eq(&d, k, "a"));
    json_doc_free(&d);
}

static void test_valid_documents(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "{}", "[]", "0", "-0", "1.5e10", "-1.25E-3", "\"\"", "true", "false", "null", " \t\n\r{} ",
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"\\u00e9\\n\"}", "\"\\ud83d\\ude00\"", "\"caf\xc3\xa9\"",
        "\"\xf0\x9f\x98\x80\"", "[[[[[]]]]]", "{\"\":0}", "1E+2",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        json_doc d;
        if (parse(&d, ok[i]) != 0)
            fail_msg("rejected valid JSON %s: %s", ok[i], d.err);
        json_doc_free(&d);
    }
}

static void test_invalid_documents(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "01", "1.", ".5", "-", "+1", "1e", "tru", "nul",
        "\"abc", "\"\\x\"", "\"\\u12g4\"", "[1 2]", "{\"a\" 1}", "{\"a\":}", "\"a\tb\"", "\"\xc3\"",
        "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"", "{} {}", "[\"a\",]", "NaN", "Infinity",
        "{\"a\":1 \"b\":2}", "\"\xff\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_doc d;
        if (parse(&d, bad[i]) == 0)
            fail_msg("accepted invalid JSON [%s]", bad[i]);
        assert_true(strlen(d.err) > 0);
        assert_non_null(strstr(d.err, "position"));
        json_doc_free(&d);
    }
}

static void test_depth_limit(void **state)
{
    (void)state;
    char deep[JSON_MAX_DEPTH * 2 + 4];
    size_t n = 0;
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        deep[n++] = ']';
    json_doc d = {0};
    assert_int_equal(json_parse(&d, deep, n, NULL), 0);
    json_doc_free(&d);
    char deeper[JSON_MAX_DEPTH * 2 + 4];
    n = 0;
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        deeper[n++] = '[';
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        deeper[n++] = ']';
    assert_int_equal(json_parse(&d, deeper, n, NULL), -1);
    assert_non_null(strstr(d.err, "nesting too deep"));
    json_doc_free(&d);
}

static void test_raw_spans_byte_exact(void **state)
{
    (void)state;
    const char *src = "{\"items\":[{\"queue\":\"q\",\"payload\":{\"total\":42.00, \"n\" : [1, 2]}},"
                      "{\"payload\":\n  {\n    \"x\": 1e3\n  }\n},{\"payload\":\"\\u00e9\"},{\"payload\":null}]}";
    json_doc d;
    assert_int_equal(parse(&d, src), 0);
    int items = json_get(&d, 0, "items");
    assert_int_equal(json_type_of(&d, items), JSON_ARRAY);
    assert_int_equal(d.toks[items].count, 4);
    int it = json_first(&d, items);
    raw_eq(&d, json_get(&d, it, "payload"), "{\"total\":42.00, \"n\" : [1, 2]}");
    it = json_next(&d, it);
    raw_eq(&d, json_get(&d, it, "payload"), "{\n    \"x\": 1e3\n  }");
    it = json_next(&d, it);
    raw_eq(&d, json_get(&d, it, "payload"), "\"\\u00e9\"");
    it = json_next(&d, it);
    raw_eq(&d, json_get(&d, it, "payload"), "null");
    json_doc_free(&d);
}

static void test_token_depth_makes_payload_opaque(void **state)
{
    (void)state;
    const char *src = "{\"items\":[{\"payload\":{\"a\":[1,2,3],\"b\":{\"c\":4}}, \"queue\":\"q\"}]}";
    json_doc d = {0};
    json_opts o = {.token_depth = 3};
    assert_int_equal(json_parse(&d, src, strlen(src), &o), 0);
    /* root, "items", array, item, "payload", payload(opaque), "queue", "q" */
    assert_int_equal(d.ntok, 8);
    int item = json_first(&d, json_get(&d, 0, "items"));
    int p = json_get(&d, item, "payload");
    assert_true(d.toks[p].flags & JSON_TOK_OPAQUE);
    raw_eq(&d, p, "{\"a\":[1,2,3],\"b\":{\"c\":4}}");
    assert_true(json_str_eq(&d, json_get(&d, item, "queue"), "q"));
    json_doc_free(&d);
    /* invalid JSON inside an opaque value is still rejected */
    const char *bad = "{\"items\":[{\"payload\":{\"a\":[1,2,]}}]}";
    assert_int_equal(json_parse(&d, bad, strlen(bad), &o), -1);
    json_doc_free(&d);
}

static void test_strings_decode(void **state)
{
    (void)state;
    json_doc d;
    assert_int_equal(parse(&d, "[\"a\\\"b\\\\c\\/\\n\", \"\\u00e9\\ud83d\\ude00\", \"\\udc00\", \"plain\"]"), 0);
    buf b;
    buf_init(&b, 0);
    int t = json_first(&d, 0);
    assert_int_equal(json_str_decode(&d, t, &b), 0);
    assert_string_equal(buf_cstr(&b), "a\"b\\c/\n");
    assert_true(json_str_eq(&d, t, "a\"b\\c/\n"));
    assert_false(json_str_eq(&d, t, "a\"b\\c/"));
    assert_int_equal(json_str_decoded_len(&d, t), 7);
    buf_reset(&b);
    t = json_next(&d, t);
    assert_int_equal(json_str_decode(&d, t, &b), 0);
    assert_string_equal(buf_cstr(&b), "\xc3\xa9\xf0\x9f\x98\x80");
    buf_reset(&b);
    t = json_next(&d, t);
    assert_int_equal(json_str_decode(&d, t, &b), 0);
    assert_string_equal(buf_cstr(&b), "\xef\xbf\xbd"); /* lone surrogate → U+FFFD */
    t = json_next(&d, t);
    const char *p;
    size_t n;
    assert_int_equal(json_str_span(&d, t, &p, &n), 0);
    assert_int_equal(n, 5);
    buf_free(&b);
    json_doc_free(&d);
}

static void test_integers(void **state)
{
    (void)state;
    json_doc d;
    assert_int_equal(parse(&d, "[0, -5, 9223372036854775807, -9223372036854775808, 9223372036854775808, 1.0, 1e2]"), 0);
    int64_t v;
    int t = json_first(&d, 0);
    assert_int_equal(json_int64(&d, t, &v), 0);
    assert_int_equal(v, 0);
    t = json_next(&d, t);
    assert_int_equal(json_int64(&d, t, &v), 0);
    assert_int_equal(v, -5);
    t = json_next(&d, t);
    assert_int_equal(json_int64(&d, t, &v), 0);
    assert_true(v == INT64_MAX);
    t = json_next(&d, t);
    assert_int_equal(json_int64(&d, t, &v), 0);
    assert_true(v == INT64_MIN);
    t = json_next(&d, t);
    assert_int_equal(json_int64(&d, t, &v), -1);
    t = json_next(&d, t);
    assert_int_equal(json_int64(&d, t, &v), -1);
    t = json_next(&d, t);
    assert_int_equal(json_int64(&d, t, &v), -1);
    json_doc_free(&d);
}

static void test_duplicate_keys_last_wins(void **state)
{
    (void)state;
    json_doc d;
    assert_int_equal(parse(&d, "{\"a\":1,\"b\":2,\"a\":3}"), 0);
    int64_t v;
    assert_int_equal(json_int64(&d, json_get(&d, 0, "a"), &v), 0);
    assert_int_equal(v, 3);
    assert_int_equal(json_get(&d, 0, "zz"), -1);
    json_doc_free(&d);
}

static void test_token_limit(void **state)
{
    (void)state;
    json_doc d = {0};
    json_opts o = {.max_tokens = 3};
    assert_int_equal(json_parse(&d, "[1,2,3,4]", 9, &o), -1);
    assert_non_null(strstr(d.err, "too many"));
    json_doc_free(&d);
}

static void test_raw_has_nul(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int nul;
    } cases[] = {
        {"\"\\u0000\"", 1},
        {"{\"a\":[1,{\"b\":\"x\\u0000y\"}]}", 1},
        {"{\"k\\u0000\":1}", 1},
        {"\"\\\\u0000\"", 0},        /* an escaped backslash, then the text u0000 */
        {"\"\\\\\\u0000\"", 1},    /* an escaped backslash, then the escape */
        {"\"\\u00001\"", 1},
        {"\"\\u0001\"", 0},
        {"\"\\u1000\"", 0},
        {"\"\\\"u0000\"", 0},        /* an escaped quote, then the text u0000 */
        {"[\"a\",\"u0000\"]", 0},
        {"12", 0},
        {"\"\"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_doc d = {0};
        assert_int_equal(json_parse(&d, cases[i].text, strlen(cases[i].text), NULL), 0);
        json_doc_free(&d);
        if (json_raw_has_nul(cases[i].text, strlen(cases[i].text)) != cases[i].nul)
            fail_msg("case %zu: %s", i, cases[i].text);
    }
}

static void test_writer_escapes(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    jw_string(&b, "a\"b\\c\n\x01\xc3\xa9", 9);
    assert_string_equal(buf_cstr(&b), "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    /* what the writer emits, the reader reads back to the same bytes */
    json_doc d = {0};
    assert_int_equal(json_parse(&d, b.data, b.len, NULL), 0);
    buf out;
    buf_init(&out, 0);
    json_str_decode(&d, 0, &out);
    assert_int_equal(out.len, 9);
    assert_memory_equal(out.data, "a\"b\\c\n\x01\xc3\xa9", 9);
    json_doc_free(&d);
    buf_free(&out);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_documents),
        cmocka_unit_test(test_invalid_documents),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_raw_spans_byte_exact),
        cmocka_unit_test(test_token_depth_makes_payload_opaque),
        cmocka_unit_test(test_strings_decode),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_duplicate_keys_last_wins),
        cmocka_unit_test(test_token_limit),
        cmocka_unit_test(test_int_field_and_unknown_key),
        cmocka_unit_test(test_writer_escapes),
        cmocka_unit_test(test_raw_has_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
