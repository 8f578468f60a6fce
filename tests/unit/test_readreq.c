/* Unit tests for the bodies of the lease-free reads (storage/readreq.h): defaults, clamps,
 * the refusals and their codes. The routes' behaviour is in tests/integration/reads.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "storage/readreq.h"

typedef struct parsed {
    int rc;
    const char *code;
    char err[QERR_TEXT_MAX];
    fetch_args fa;
    changed_args ca;
} parsed;

static arena g_ar;

static parsed run(const char *body, int changed)
{
    parsed p;
    memset(&p, 0, sizeof p);
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts o = {0};
    assert_int_equal(json_parse(&d, body, strlen(body), &o), 0);
    qerr_detail e;
    memset(&e, 0, sizeof e);
    qerr q = changed ? changed_parse_request(&d, &g_ar, &p.ca, &e) : fetch_parse_request(&d, &g_ar, &p.fa, &e);
    /* the convention (core/qerr.h): QERR_OK, or QERR_BAD_INPUT with a stable code and a sentence */
    assert_true(q == QERR_OK || q == QERR_BAD_INPUT);
    p.rc = q == QERR_OK ? 0 : -1;
    p.code = e.code;
    snprintf(p.err, sizeof p.err, "%s", e.text);
    json_doc_free(&d);
    return p;
}

static void refused(const char *body, int changed, const char *code, const char *in_err)
{
    parsed p = run(body, changed);
    assert_int_equal(p.rc, -1);
    assert_string_equal(p.code, code);
    if (!strstr(p.err, in_err))
        fail_msg("%s: \"%s\" does not say \"%s\"", body, p.err, in_err);
}

static void test_fetch_defaults_and_clamps(void **state)
{
    (void)state;
    parsed p = run("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\"},"
                   "{\"queue\":\"caf\\u00e9\",\"partition\":\"x\",\"offset\":7,\"maxBytes\":100}]}", 0);
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.fa.n, 2);
    assert_int_equal(p.fa.max_bytes, FETCH_DEFAULT_MAX_BYTES);
    assert_int_equal(p.fa.max_records, FETCH_CALL_MAX_RECORDS);
    assert_string_equal(p.fa.entries[0].queue, "q");
    assert_int_equal(p.fa.entries[0].offset, 0);
    assert_int_equal(p.fa.entries[0].max_bytes, FETCH_DEFAULT_MAX_BYTES);
    assert_string_equal(p.fa.entries[1].queue, "caf\xc3\xa9");
    assert_int_equal(p.fa.entries[1].offset, 7);
    assert_int_equal(p.fa.entries[1].max_bytes, 100);
    p = run("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\",\"maxBytes\":1e40}],\"maxBytes\":999999999999}", 0);
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.fa.entries[0].max_bytes, FETCH_ENTRY_MAX_BYTES);
    assert_int_equal(p.fa.max_bytes, FETCH_CALL_MAX_BYTES);
    p = run("{\"entries\":[]}", 0);
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.fa.n, 0);
}

static void test_fetch_refusals(void **state)
{
    (void)state;
    refused("{\"queue\":\"q\"}", 0, "invalid_request", "unknown field \"queue\"");
    refused("{}", 0, "invalid_request", "entries is required");
    refused("{\"entries\":[1]}", 0, "invalid_request", "entries[0] must be an object");
    refused("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\",\"fromOffset\":1}]}", 0, "invalid_request",
            "entries[0]: unknown field \"fromOffset\"");
    refused("{\"entries\":[{\"queue\":\"\",\"partition\":\"p\"}]}", 0, "invalid_request", "queue is required");
    refused("{\"entries\":[{\"queue\":\"a\\u0000b\",\"partition\":\"p\"}]}", 0, "invalid_request", "queue is required");
    refused("{\"entries\":[{\"queue\":\"q\",\"partition\":7}]}", 0, "invalid_request", "partition is required");
    refused("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\",\"offset\":-1}]}", 0, "invalid_request", "offset");
    refused("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\",\"offset\":\"1\"}]}", 0, "invalid_request", "offset");
    refused("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\",\"maxBytes\":0}]}", 0, "invalid_request", "maxBytes");
    refused("{\"entries\":[],\"maxBytes\":true}", 0, "invalid_request", "maxBytes");
    /* 1025 entries */
    char *big = test_malloc(1025 * 40 + 32);
    strcpy(big, "{\"entries\":[");
    for (int i = 0; i < 1025; i++)
        strcat(big, i ? ",{\"queue\":\"q\",\"partition\":\"p\"}" : "{\"queue\":\"q\",\"partition\":\"p\"}");
    strcat(big, "]}");
    refused(big, 0, "too_many_entries", "1025 entries");
    test_free(big);
}

static void test_changed(void **state)
{
    (void)state;
    parsed p = run("{\"entries\":[{\"queue\":\"q\"},{\"queue\":\"r\",\"limit\":5000,\"since\":\"1970-01-01T00:00:01.5Z\","
                   "\"after\":\"42\"}]}", 1);
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.ca.n, 2);
    assert_int_equal(p.ca.entries[0].limit, CHANGED_DEFAULT_LIMIT);
    assert_int_equal(p.ca.entries[0].has_since, 0);
    assert_int_equal(p.ca.entries[0].after, 0);
    assert_int_equal(p.ca.entries[1].limit, CHANGED_MAX_LIMIT);
    assert_int_equal(p.ca.entries[1].has_since, 1);
    assert_int_equal(p.ca.entries[1].since, 1500000);
    assert_int_equal(p.ca.entries[1].after, 42);
    refused("{\"queue\":\"q\",\"since\":0}", 1, "invalid_request", "unknown field \"queue\"");
    refused("{\"entries\":[],\"maxBytes\":1}", 1, "invalid_request", "unknown field \"maxBytes\"");
    refused("{\"entries\":[{\"queue\":\"q\",\"since\":1791009457000000}]}", 1, "invalid_time", "ISO-8601");
    refused("{\"entries\":[{\"queue\":\"q\",\"since\":\"soon\"}]}", 1, "invalid_time", "ISO-8601");
    refused("{\"entries\":[{\"queue\":\"q\",\"after\":3}]}", 1, "invalid_cursor", "after");
    refused("{\"entries\":[{\"queue\":\"q\",\"after\":\"-3\"}]}", 1, "invalid_cursor", "after");
    refused("{\"entries\":[{\"queue\":\"q\",\"after\":\"1234567890123456789\"}]}", 1, "invalid_cursor", "after");
    refused("{\"entries\":[{\"queue\":\"q\",\"limit\":0}]}", 1, "invalid_request", "limit");
    refused("{\"entries\":[{\"queue\":\"q\",\"partition\":\"p\"}]}", 1, "invalid_request", "unknown field \"partition\"");
}

static int setup(void **state)
{
    (void)state;
    arena_init(&g_ar);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    arena_free(&g_ar);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fetch_defaults_and_clamps),
        cmocka_unit_test(test_fetch_refusals),
        cmocka_unit_test(test_changed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
