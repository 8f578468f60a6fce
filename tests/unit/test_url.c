/* Unit tests for url.c: percent-decoding, the name check (UTF-8 without NUL), the query string
 * and route matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/arena.h"
#include "http/url.h"
#include "json/json.h"

static enum url_err dec(arena *ar, const char *in, const char **out, size_t *len)
{
    return url_decode_name(ar, in, strlen(in), 1, out, len);
}

static void test_decode(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(url_decode("a%20b+c", 7, out, 1), 5);
    assert_string_equal(out, "a b c");
    assert_int_equal(url_decode("a%20b+c", 7, out, 0), 5);
    assert_string_equal(out, "a b+c");
    assert_int_equal(url_decode("%2F%2f%41", 9, out, 0), 3);
    assert_string_equal(out, "//A");
    assert_int_equal(url_decode("", 0, out, 0), 0);
    /* escapes cut at the end, or not hex */
    assert_int_equal(url_decode("%", 1, out, 0), -1);
    assert_int_equal(url_decode("a%4", 3, out, 0), -1);
    assert_int_equal(url_decode("%zz", 3, out, 0), -1);
    assert_int_equal(url_decode("%4g", 3, out, 0), -1);
    /* the length given is honoured (no read past it) */
    assert_int_equal(url_decode("%41%", 3, out, 0), 1);
    assert_string_equal(out, "A");
}

static void test_name_check(void **state)
{
    (void)state;
    arena ar;
    arena_init(&ar);
    const char *s;
    size_t n;
    static const struct {
        const char *in;
        enum url_err want;
    } cases[] = {
        {"orders", URL_OK},
        {"%c3%a9t%c3%a9", URL_OK},            /* été */
        {"%f0%9f%98%80", URL_OK},             /* U+1F600 */
        {"%f4%8f%bf%bf", URL_OK},             /* U+10FFFF, the last code point */
        {"%ef%bf%bd", URL_OK},                /* U+FFFD itself */
        {"%ff%fe", URL_BAD_UTF8},             /* never in UTF-8 */
        {"%c0%af", URL_BAD_UTF8},             /* overlong '/' */
        {"%c0%80", URL_BAD_UTF8},             /* overlong NUL */
        {"%e0%80%af", URL_BAD_UTF8},          /* overlong, three bytes */
        {"%f0%80%80%af", URL_BAD_UTF8},       /* overlong, four bytes */
        {"%ed%a0%80", URL_BAD_UTF8},          /* U+D800, a surrogate */
        {"%ed%bf%bf", URL_BAD_UTF8},          /* U+DFFF */
        {"%f4%90%80%80", URL_BAD_UTF8},       /* U+110000 */
        {"ab%e2%82", URL_BAD_UTF8},           /* cut */
        {"%80", URL_BAD_UTF8},                /* a continuation byte alone */
        {"a%00b", URL_NUL},
        {"%00", URL_NUL},
        {"a%zzb", URL_BAD_ESCAPE},
        {"ab%f", URL_BAD_ESCAPE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s = NULL;
        enum url_err e = dec(&ar, cases[i].in, &s, &n);
        if (e != cases[i].want)
            fail_msg("%s: got %d, want %d", cases[i].in, e, cases[i].want);
        if (e == URL_OK) {
            assert_non_null(s);
            assert_int_equal(strlen(s), n);
        }
    }
    /* raw bytes (not percent-encoded) are checked the same way */
    assert_int_equal(url_name_check("\xff", 1), URL_BAD_UTF8);
    assert_int_equal(url_name_check("a\0b", 3), URL_NUL);
    assert_int_equal(url_name_check("", 0), URL_OK);
    for (int e = URL_OK; e <= URL_TOO_MANY; e++)
        assert_true(strlen(url_err_text((enum url_err)e)) > 0);
    arena_free(&ar);
}

static void test_query(void **state)
{
    (void)state;
    arena ar;
    arena_init(&ar);
    url_query q;
    const char *bad = "unset";
    const char *s = "queue=a%20b&&flag&batch=10&queue=second&x+y=1+2&=v&e=";
    assert_int_equal(url_query_parse(&ar, s, strlen(s), &q, &bad), URL_OK);
    assert_null(bad);
    assert_int_equal(q.n, 7);
    assert_string_equal(url_query_get(&q, "queue"), "a b"); /* the first one */
    assert_string_equal(url_query_get(&q, "flag"), "");
    assert_string_equal(url_query_get(&q, "batch"), "10");
    assert_string_equal(url_query_get(&q, "x y"), "1 2");
    assert_string_equal(url_query_get(&q, ""), "v");
    assert_string_equal(url_query_get(&q, "e"), "");
    assert_null(url_query_get(&q, "missing"));
    assert_null(url_query_get(&q, "queu"));

    assert_int_equal(url_query_parse(&ar, "", 0, &q, &bad), URL_OK);
    assert_int_equal(q.n, 0);
    assert_null(url_query_get(&q, "a"));
    assert_int_equal(url_query_parse(&ar, "&&&", 3, &q, &bad), URL_OK);
    assert_int_equal(q.n, 0);

    /* a bad value names its parameter; a bad name names none */
    s = "limit=5&queue=%ff%fe";
    assert_int_equal(url_query_parse(&ar, s, strlen(s), &q, &bad), URL_BAD_UTF8);
    assert_string_equal(bad, "queue");
    s = "limit=5&task=a%00";
    assert_int_equal(url_query_parse(&ar, s, strlen(s), &q, &bad), URL_NUL);
    assert_string_equal(bad, "task");
    s = "ns=%e2%82";
    assert_int_equal(url_query_parse(&ar, s, strlen(s), &q, &bad), URL_BAD_UTF8);
    assert_string_equal(bad, "ns");
    s = "a%ffb=1";
    assert_int_equal(url_query_parse(&ar, s, strlen(s), &q, &bad), URL_BAD_UTF8);
    assert_null(bad);
    s = "a=%zz";
    assert_int_equal(url_query_parse(&ar, s, strlen(s), &q, &bad), URL_BAD_ESCAPE);
    assert_string_equal(bad, "a");

    /* the ceiling on parameters: exactly URL_MAX_QUERY_PARAMS pass, one more does not (empty
     * pairs do not count) */
    char big[URL_MAX_QUERY_PARAMS * 8 + 16];
    size_t len = 0;
    for (int i = 0; i < URL_MAX_QUERY_PARAMS; i++)
        len += (size_t)snprintf(big + len, sizeof big - len, "p%d=1&&", i);
    assert_int_equal(url_query_parse(&ar, big, len, &q, &bad), URL_OK);
    assert_int_equal(q.n, URL_MAX_QUERY_PARAMS);
    len += (size_t)snprintf(big + len, sizeof big - len, "x");
    assert_int_equal(url_query_parse(&ar, big, len, &q, &bad), URL_TOO_MANY);
    arena_free(&ar);
}

#define NROUTES 9
static char g_pats[NROUTES][64];
static url_route g_routes[NROUTES];

static void routes_init(void)
{
    static const char *const def[NROUTES][2] = {
        {"GET", "/health"},
        {"GET", "/api/v1/consumer-groups/lagging"},
        {"GET", "/api/v1/consumer-groups/:group"},
        {"DELETE", "/api/v1/consumer-groups/:group"},
        {"GET", "/api/v1/pop/queue/:queue"},
        {"GET", "/api/v1/pop/queue/:queue/partition/:partition"},
        {"PUT", "/api/v1/kv/:namespace/:key"},
        {"GET", "/api/v1/timers/:queue/*timerKey"}, /* before the shorter route: "q//" is key "/" */
        {"GET", "/api/v1/timers/:queue"},
    };
    for (int i = 0; i < NROUTES; i++) {
        snprintf(g_pats[i], sizeof g_pats[i], "%s", def[i][1]);
        assert_int_equal(url_route_init(&g_routes[i], def[i][0], g_pats[i]), 0);
    }
}

static int route(const char *method, const char *path, url_match *m, int *mismatch)
{
    static char work[512];
    snprintf(work, sizeof work, "%s", path);
    return url_route_match(g_routes, NROUTES, method, work, m, mismatch);
}

static void test_routes(void **state)
{
    (void)state;
    routes_init();
    url_match m;
    int mm;
    assert_int_equal(route("GET", "/health", &m, &mm), 0);
    assert_int_equal(m.nparams, 0);
    assert_int_equal(route("GET", "/health/", &m, &mm), 0); /* a trailing slash is ignored */
    assert_int_equal(route("GET", "/health//", &m, &mm), 0);   /* one empty last segment only */
    assert_int_equal(route("GET", "/health///", &m, &mm), -1);
    assert_int_equal(route("GET", "/healthz", &m, &mm), -1);
    assert_int_equal(mm, 0);
    /* the fixed route comes first in the table, and wins */
    assert_int_equal(route("GET", "/api/v1/consumer-groups/lagging", &m, &mm), 1);
    assert_int_equal(route("GET", "/api/v1/consumer-groups/workers", &m, &mm), 2);
    assert_int_equal(m.nparams, 1);
    assert_string_equal(m.name[0], "group");
    assert_int_equal(m.raw_len[0], 7);
    assert_memory_equal(m.raw[0], "workers", 7);
    assert_int_equal(route("DELETE", "/api/v1/consumer-groups/workers", &m, &mm), 3);
    /* a known path under another method */
    assert_int_equal(route("POST", "/api/v1/consumer-groups/workers", &m, &mm), -1);
    assert_int_equal(mm, 1);
    /* an encoded slash stays inside its segment; the raw segment is handed back */
    assert_int_equal(route("GET", "/api/v1/pop/queue/a%2Fb/partition/p", &m, &mm), 5);
    assert_int_equal(m.nparams, 2);
    assert_int_equal(m.raw_len[0], 5);
    assert_memory_equal(m.raw[0], "a%2Fb", 5);
    assert_string_equal(m.name[1], "partition");
    /* a parameter never matches an empty segment */
    assert_int_equal(route("GET", "/api/v1/pop/queue//partition/p", &m, &mm), -1);
    assert_int_equal(route("PUT", "/api/v1/kv/ns/k", &m, &mm), 6);
    assert_int_equal(route("PUT", "/api/v1/kv/ns", &m, &mm), -1);
    /* too many segments for any route */
    assert_int_equal(route("GET", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", &m, &mm), -1);
    assert_int_equal(route("GET", "", &m, &mm), -1);
    assert_int_equal(route("GET", "/", &m, &mm), -1);

    /* a rest-of-path parameter: everything after the fixed segments, slashes and all */
    assert_int_equal(route("GET", "/api/v1/timers/q", &m, &mm), 8);
    assert_int_equal(route("GET", "/api/v1/timers/q/", &m, &mm), 8);
    assert_int_equal(route("GET", "/api/v1/timers/q/order:9/expire", &m, &mm), 7);
    assert_int_equal(m.nparams, 2);
    assert_string_equal(m.name[0], "queue");
    assert_memory_equal(m.raw[0], "q", 1);
    assert_string_equal(m.name[1], "timerKey");
    assert_int_equal(m.raw_len[1], 14);
    assert_memory_equal(m.raw[1], "order:9/expire", 14);
    /* empty segments and a trailing slash belong to it; an encoded slash too */
    assert_int_equal(route("GET", "/api/v1/timers/q/a//b/", &m, &mm), 7);
    assert_int_equal(m.raw_len[1], 5);
    assert_memory_equal(m.raw[1], "a//b/", 5);
    assert_int_equal(route("GET", "/api/v1/timers/q//", &m, &mm), 7);
    assert_int_equal(m.raw_len[1], 1);
    assert_memory_equal(m.raw[1], "/", 1);
    assert_int_equal(route("GET", "/api/v1/timers/q/a%2Fb", &m, &mm), 7);
    assert_memory_equal(m.raw[1], "a%2Fb", 5);
    /* more segments than any fixed route may have */
    assert_int_equal(route("GET", "/api/v1/timers/q/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15", &m, &mm), 7);
    assert_int_equal(m.raw_len[1], strlen("1/2/3/4/5/6/7/8/9/10/11/12/13/14/15"));
    assert_memory_equal(m.raw[1], "1/2/3/4/5/6/7/8/9/10/11/12/13/14/15", m.raw_len[1]);
    assert_int_equal(route("DELETE", "/api/v1/timers/q/k", &m, &mm), -1);
    assert_int_equal(mm, 1);
    assert_int_equal(route("GET", "/api/v1/timers//k", &m, &mm), -1);

    /* route table limits */
    char p1[] = "/a/b/c/d/e/f/g/h/i/j/k/l/m";
    url_route rt;
    assert_int_equal(url_route_init(&rt, "GET", p1), -1);
    char p2[] = "/:a/:b/:c/:d/:e/:f/:g";
    assert_int_equal(url_route_init(&rt, "GET", p2), -1);
    char p3[] = "//a//:b/";
    assert_int_equal(url_route_init(&rt, "GET", p3), 0);
    assert_int_equal(rt.nsegs, 2);
    assert_string_equal(rt.segs[1], ":b");
    char p4[] = "/a/*rest/b"; /* nothing after the rest of the path */
    assert_int_equal(url_route_init(&rt, "GET", p4), -1);
    char p5[] = "/a/*rest";
    assert_int_equal(url_route_init(&rt, "GET", p5), 0);
    assert_int_equal(rt.rest, 1);
}

static void test_lossy_writer(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    assert_int_equal(jw_string_lossy(&b, "ok \"x\"", 6), 0);
    assert_string_equal(buf_cstr(&b), "\"ok \\\"x\\\"\"");
    buf_reset(&b);
    /* a cut three-byte sequence and a stray 0xff become U+FFFD each, valid text stays */
    assert_int_equal(jw_string_lossy(&b, "a\xe2\x82" "b\xff\xc3\xa9", 7), 0);
    assert_string_equal(buf_cstr(&b), "\"a\xef\xbf\xbd\xef\xbf\xbd" "b\xef\xbf\xbd\xc3\xa9\"");
    assert_int_equal(utf8_valid((const uint8_t *)b.data, b.len), 0);
    /* every bad byte grows to three: the repaired text is longer than the input (found by
     * fuzz_url: a scratch buffer capped at the input's size overflowed) */
    buf_reset(&b);
    char ff[100];
    memset(ff, 0xff, sizeof ff);
    assert_int_equal(jw_string_lossy(&b, ff, sizeof ff), 0);
    assert_int_equal(b.len, 2 + 3 * sizeof ff);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),     cmocka_unit_test(test_name_check),   cmocka_unit_test(test_query),
        cmocka_unit_test(test_routes),     cmocka_unit_test(test_lossy_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
