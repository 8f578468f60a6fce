/* Unit tests for a tenant's sink settings document (sink/sinkdoc.h): a full document, the
 * queues array, the canonical settings, enabled, the kept secret, and every refusal the spec
 * names (node-wide settings, unknown fields, fields named like secrets, 32 KiB, the secret's
 * 4 KiB), plus the sink's own rules with field names — never with the secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sink/sinkdoc.h"

static const uint8_t T[16] = {0xaa, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1};
#define SECRET "s3cr3t-Marker-Zq9"
#define BASE "\"endpoint\":\"http://127.0.0.1:9000\",\"region\":\"us-east-1\",\"bucket\":\"lake\",\"accessKey\":\"ak\""

static int parse(const char *js, int keep, s3_sink_doc *d, s3_doc_refusal *why)
{
    return s3_sink_doc_parse(js, strlen(js), T, keep, d, why);
}

static void refused(const char *js, int keep, const char *code, const char *field)
{
    s3_sink_doc d;
    s3_doc_refusal why;
    int rc = parse(js, keep, &d, &why);
    if (rc == 0)
        s3_sink_doc_free(&d);
    assert_int_equal(rc, -1);
    assert_string_equal(why.code, code);
    if (field)
        assert_string_equal(why.field, field);
    assert_null(strstr(why.msg, SECRET));
    assert_null(strstr(why.msg, "QUEEN_S3_"));
}

static void test_full_document(void **st)
{
    (void)st;
    s3_sink_doc d;
    s3_doc_refusal why;
    const char *js = "{" BASE ",\"secretKey\":\"" SECRET "\",\"queues\":[\"orders\",\"bills\"],\"format\":\"parquet\","
                     "\"pathStyle\":true,\"maxWindowMs\":1000,\"enabled\":false}";
    assert_int_equal(parse(js, 0, &d, &why), 0);
    assert_int_equal(d.has_secret, 1);
    assert_int_equal(d.enabled, 0);
    assert_string_equal(d.cfg.secret_key, SECRET);
    assert_string_equal(d.cfg.bucket, "lake");
    assert_int_equal(d.cfg.nqueues, 2);
    assert_string_equal(d.cfg.queues[1], "bills");
    assert_int_equal(d.cfg.format, S3_FORMAT_PARQUET);
    assert_int_equal(d.cfg.path_style, 1);
    assert_int_equal(d.cfg.max_window_ms, 1000);
    assert_memory_equal(d.cfg.tenant, T, 16);
    const char *set = buf_cstr(&d.settings);
    assert_null(strstr(set, SECRET));
    assert_null(strstr(set, "enabled"));
    assert_string_equal(set, "{\"queues\":[\"orders\",\"bills\"],\"endpoint\":\"http://127.0.0.1:9000\",\"region\":"
                             "\"us-east-1\",\"bucket\":\"lake\",\"accessKey\":\"ak\",\"pathStyle\":true,\"format\":"
                             "\"parquet\",\"maxWindowMs\":1000}");
    s3_sink_doc_free(&d);
    /* queues "*", no secret with one kept */
    assert_int_equal(parse("{" BASE ",\"queues\":\"*\"}", 1, &d, &why), 0);
    assert_int_equal(d.has_secret, 0);
    assert_null(d.cfg.secret_key);
    assert_int_equal(d.cfg.queues_all, 1);
    assert_int_equal(d.enabled, 1);
    s3_sink_doc_free(&d);
}

static void test_refusals(void **st)
{
    (void)st;
    refused("[1]", 0, "invalid_request", NULL);
    refused("{", 0, "invalid_request", NULL);
    refused("{" BASE ",\"queues\":\"*\"}", 0, "s3_invalid_secret", "secretKey");
    refused("{" BASE ",\"queues\":\"*\",\"secretKey\":\"\"}", 0, "s3_invalid_secret", "secretKey");
    refused("{" BASE ",\"queues\":\"*\",\"secretKey\":5}", 0, "s3_invalid_secret", "secretKey");
    refused("{" BASE ",\"queues\":\"*\",\"memoryMb\":64,\"secretKey\":\"" SECRET "\"}", 0, "s3_node_wide_setting",
            "memoryMb");
    refused("{" BASE ",\"queues\":\"*\",\"leaseTtlMs\":5000}", 1, "s3_node_wide_setting", "leaseTtlMs");
    refused("{" BASE ",\"queues\":\"*\",\"instance\":\"x\"}", 1, "s3_node_wide_setting", "instance");
    refused("{" BASE ",\"queues\":\"*\",\"secretAccessKey\":\"x\"}", 1, "s3_secret_field", "secretAccessKey");
    refused("{" BASE ",\"queues\":\"*\",\"sessionToken\":\"x\"}", 1, "s3_secret_field", "sessionToken");
    refused("{" BASE ",\"queues\":\"*\",\"PASSWORD\":\"x\"}", 1, "s3_secret_field", "PASSWORD");
    refused("{" BASE ",\"queues\":\"*\",\"colour\":\"x\"}", 1, "unknown_field", "colour");
    refused("{" BASE ",\"queues\":\"*\",\"enabled\":\"yes\"}", 1, "s3_invalid_setting", "enabled");
    refused("{" BASE "}", 1, "s3_invalid_setting", "queues");
    refused("{" BASE ",\"queues\":[]}", 1, "s3_invalid_setting", "queues");
    refused("{" BASE ",\"queues\":[\"a,b\"]}", 1, "s3_invalid_setting", "queues");
    refused("{" BASE ",\"queues\":{\"a\":1}}", 1, "s3_invalid_setting", "queues");
    refused("{" BASE ",\"queues\":\"*\",\"maxWindowMs\":50,\"secretKey\":\"" SECRET "\"}", 0, "s3_invalid_setting",
            "maxWindowMs");
    refused("{" BASE ",\"queues\":\"*\",\"format\":\"csv\"}", 1, "s3_invalid_setting", "format");
    refused("{\"region\":\"r\",\"bucket\":\"b\",\"accessKey\":\"a\",\"queues\":\"*\"}", 1, "s3_invalid_setting",
            "endpoint");
    refused("{" BASE ",\"queues\":\"*\",\"bucket\":\"has/slash\"}", 1, "s3_invalid_setting", "bucket");
    refused("{" BASE ",\"queues\":\"*\",\"sseKmsKeyId\":\"k\"}", 1, "s3_invalid_setting", "sseKmsKeyId");
    refused("{" BASE ",\"queues\":\"*\",\"targetMb\":\"lots\"}", 1, "s3_invalid_setting", "targetMb");
    refused("{" BASE ",\"queues\":\"*\",\"region\":\"\"}", 1, "s3_invalid_setting", "region");
    /* the message carries the sink's own sentence with field names */
    s3_sink_doc d;
    s3_doc_refusal why;
    assert_int_equal(parse("{" BASE ",\"queues\":\"*\",\"maxWindowMs\":50}", 1, &d, &why), -1);
    assert_non_null(strstr(why.msg, "maxWindowMs=50 is outside 100..=86400000"));
}

static void test_sizes(void **st)
{
    (void)st;
    /* a secret of 4096 bytes passes, 4097 does not */
    size_t n = 4096;
    char *big = malloc(n + 400);
    char *sec = malloc(n + 2);
    memset(sec, 'k', n + 1);
    sec[n] = '\0';
    snprintf(big, n + 400, "{" BASE ",\"queues\":\"*\",\"secretKey\":\"%s\"}", sec);
    s3_sink_doc d;
    s3_doc_refusal why;
    assert_int_equal(parse(big, 0, &d, &why), 0);
    s3_sink_doc_free(&d);
    sec[n] = 'k';
    sec[n + 1] = '\0';
    snprintf(big, n + 400, "{" BASE ",\"queues\":\"*\",\"secretKey\":\"%s\"}", sec);
    refused(big, 0, "s3_invalid_secret", "secretKey");
    free(big);
    free(sec);
    /* the settings past 32 KiB (a long queue list) */
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{" BASE ",\"queues\":[");
    for (int i = 0; i < 3000; i++)
        buf_printf(&b, "%s\"queue-%05d\"", i ? "," : "", i);
    buf_puts(&b, "]}");
    refused(buf_cstr(&b), 1, "s3_too_large", NULL);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_document),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
