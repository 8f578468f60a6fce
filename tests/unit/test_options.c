/* Unit tests for queue options (queue/options.h): defaults, bounds, types, JSON output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "queue/options.h"

static const char *const DEFAULTS_JSON =
    "{\"priority\":0,\"leaseTime\":300,\"retryLimit\":3,\"retryDelay\":1000,\"maxSize\":0,\"ttl\":3600,"
    "\"deadLetterQueue\":true,\"dlqAfterMaxRetries\":true,\"delayedProcessing\":0,\"windowBuffer\":0,"
    "\"retentionSeconds\":0,\"completedRetentionSeconds\":0,\"retentionEnabled\":false,"
    "\"encryptionEnabled\":false,\"maxWaitTimeSeconds\":0,\"retentionSinkHold\":null,"
    "\"retentionSinkHoldMaxSeconds\":604800}";

static qerr_detail g_det;
#define g_err (g_det.text)

/* Parses `options` JSON text; returns queue_options_parse's result. */
static qerr parse_opts(const char *text, queue_options *o)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    if (json_parse(&d, text, strlen(text), NULL) != 0)
        fail_msg("bad test JSON %s: %s", text, d.err);
    memset(&g_det, 0, sizeof g_det);
    qerr r = queue_options_parse(&d, 0, o, &g_det);
    json_doc_free(&d);
    return r;
}

static void json_eq(const queue_options *o, const char *want)
{
    buf b;
    buf_init(&b, 0);
    queue_options_json(o, &b);
    assert_string_equal(buf_cstr(&b), want);
    /* what is written is valid JSON */
    json_doc d = {0};
    assert_int_equal(json_parse(&d, b.data, b.len, NULL), 0);
    json_doc_free(&d);
    buf_free(&b);
}

static void test_defaults(void **state)
{
    (void)state;
    queue_options o;
    memset(&o, 0x5a, sizeof o);
    queue_options_defaults(&o);
    assert_int_equal(o.lease_time, 300);
    assert_int_equal(o.retry_limit, 3);
    assert_int_equal(o.retry_delay, 1000);
    assert_int_equal(o.priority, 0);
    assert_int_equal(o.ttl, 3600);
    assert_int_equal(o.retention_sink_hold_max_seconds, 7 * 86400);
    assert_string_equal(o.retention_sink_hold, "");
    json_eq(&o, DEFAULTS_JSON);

    /* tok -1, a JSON null and an empty object all give the defaults */
    json_doc d = {0};
    assert_int_equal(json_parse(&d, "null", 4, NULL), 0);
    memset(&o, 0x5a, sizeof o);
    assert_int_equal(queue_options_parse(&d, -1, &o, &g_det), QERR_OK);
    json_eq(&o, DEFAULTS_JSON);
    memset(&o, 0x5a, sizeof o);
    assert_int_equal(queue_options_parse(&d, 0, &o, &g_det), QERR_OK);
    json_eq(&o, DEFAULTS_JSON);
    json_doc_free(&d);
    memset(&o, 0x5a, sizeof o);
    assert_int_equal(parse_opts("{}", &o), QERR_OK);
    json_eq(&o, DEFAULTS_JSON);

    /* what a node writes into queen.option_defaults at boot: the same set */
    buf b;
    buf_init(&b, 0);
    queue_options_defaults_json(&b);
    assert_string_equal(buf_cstr(&b), DEFAULTS_JSON);
    buf_free(&b);
}

static void test_full_overwrite(void **state)
{
    (void)state;
    queue_options o;
    assert_int_equal(parse_opts("{\"leaseTime\":60,\"retryLimit\":9,\"deadLetterQueue\":true,"
                                "\"retentionSinkHold\":\"s3-main\"}",
                                &o),
                     0);
    assert_int_equal(o.lease_time, 60);
    assert_int_equal(o.retry_limit, 9);
    assert_int_equal(o.dead_letter_queue, 1);
    assert_string_equal(o.retention_sink_hold, "s3-main");
    /* configure is a full overwrite: what is not sent goes back to its default */
    assert_int_equal(parse_opts("{\"windowBuffer\":10}", &o), QERR_OK);
    assert_int_equal(o.lease_time, 300);
    assert_int_equal(o.retry_limit, 3);
    assert_int_equal(o.dead_letter_queue, 1);
    assert_string_equal(o.retention_sink_hold, "");
    assert_int_equal(o.window_buffer, 10);
}

static void test_all_set_json(void **state)
{
    (void)state;
    queue_options o;
    const char *in = "{\"priority\":-5,\"leaseTime\":1,\"retryLimit\":2,\"retryDelay\":3,\"maxSize\":4,\"ttl\":3600,"
                     "\"deadLetterQueue\":true,\"dlqAfterMaxRetries\":true,\"delayedProcessing\":6,"
                     "\"windowBuffer\":7,\"retentionSeconds\":8,\"completedRetentionSeconds\":9,"
                     "\"retentionEnabled\":true,\"encryptionEnabled\":true,\"maxWaitTimeSeconds\":10,"
                     "\"retentionSinkHold\":\"default\",\"retentionSinkHoldMaxSeconds\":60}";
    assert_int_equal(parse_opts(in, &o), QERR_OK);
    json_eq(&o, in); /* same fixed order */
    /* and in a different input order, the output order is the table's */
    const char *shuffled = "{\"retentionSinkHoldMaxSeconds\":60,\"retentionSinkHold\":\"default\","
                           "\"maxWaitTimeSeconds\":10,\"encryptionEnabled\":true,\"retentionEnabled\":true,"
                           "\"completedRetentionSeconds\":9,\"retentionSeconds\":8,\"windowBuffer\":7,"
                           "\"delayedProcessing\":6,\"dlqAfterMaxRetries\":true,\"deadLetterQueue\":true,\"ttl\":3600,"
                           "\"maxSize\":4,\"retryDelay\":3,\"retryLimit\":2,\"leaseTime\":1,\"priority\":-5}";
    assert_int_equal(parse_opts(shuffled, &o), QERR_OK);
    json_eq(&o, in);
}

typedef struct int_opt {
    const char *name;
    size_t offset;
    long long lo, hi;
    const char *unit;
} int_opt;

#define DAY 86400LL
#define OFF(f) offsetof(queue_options, f)
static const int_opt int_opts[] = {
    {"priority", OFF(priority), -1000000, 1000000, NULL},
    {"leaseTime", OFF(lease_time), 0, 30 * DAY, "seconds"},
    {"retryLimit", OFF(retry_limit), 0, 1000000, NULL},
    {"retryDelay", OFF(retry_delay), 0, 30 * DAY * 1000, "milliseconds"},
    {"maxSize", OFF(max_size), 0, INT64_MAX / 2, "messages"},
    {"delayedProcessing", OFF(delayed_processing), 0, 365 * DAY, "seconds"},
    {"windowBuffer", OFF(window_buffer), 0, 30 * DAY, "seconds"},
    {"retentionSeconds", OFF(retention_seconds), 0, 3650 * DAY, "seconds"},
    {"completedRetentionSeconds", OFF(completed_retention_seconds), 0, 3650 * DAY, "seconds"},
    {"maxWaitTimeSeconds", OFF(max_wait_time_seconds), 0, 3650 * DAY, "seconds"},
    {"retentionSinkHoldMaxSeconds", OFF(retention_sink_hold_max_seconds), 60, 3650 * DAY, "seconds"},
};
static const struct {
    const char *name;
    size_t offset;
} bool_opts[] = {
    {"deadLetterQueue", OFF(dead_letter_queue)},
    {"dlqAfterMaxRetries", OFF(dlq_after_max_retries)},
    {"retentionEnabled", OFF(retention_enabled)},
    {"encryptionEnabled", OFF(encryption_enabled)},
};
#undef OFF

static void int_error_text(const int_opt *r, char *out, size_t cap)
{
    snprintf(out, cap, "options.%s must be an integer between %lld and %lld%s%s", r->name, r->lo, r->hi,
             r->unit ? " " : "", r->unit ? r->unit : "");
}

static void test_int_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof int_opts / sizeof int_opts[0]; i++) {
        const int_opt *r = &int_opts[i];
        char text[200], want[200];
        queue_options o;
        const long long ok[] = {r->lo, r->hi};
        for (int k = 0; k < 2; k++) {
            snprintf(text, sizeof text, "{\"%s\":%lld}", r->name, ok[k]);
            if (parse_opts(text, &o) != QERR_OK)
                fail_msg("%s rejected: %s", text, g_err);
            assert_int_equal(*(int64_t *)((char *)&o + r->offset), ok[k]);
        }
        const long long bad[] = {r->lo - 1, r->hi + 1};
        int_error_text(r, want, sizeof want);
        for (int k = 0; k < 2; k++) {
            snprintf(text, sizeof text, "{\"%s\":%lld}", r->name, bad[k]);
            assert_int_equal(parse_opts(text, &o), QERR_BAD_INPUT);
            assert_string_equal(g_err, want);
        }
        /* wrong types */
        static const char *const wrong[] = {"\"5\"", "1.0", "1e2", "true", "null", "[1]", "{}",
                                            "9223372036854775808", "-9223372036854775809", "0.5"};
        for (size_t k = 0; k < sizeof wrong / sizeof wrong[0]; k++) {
            snprintf(text, sizeof text, "{\"%s\":%s}", r->name, wrong[k]);
            assert_int_equal(parse_opts(text, &o), QERR_BAD_INPUT);
            assert_string_equal(g_err, want);
        }
    }
}

static void test_int_error_texts(void **state)
{
    (void)state;
    queue_options o;
    assert_int_equal(parse_opts("{\"leaseTime\":-1}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "options.leaseTime must be an integer between 0 and 2592000 seconds");
    assert_int_equal(parse_opts("{\"priority\":\"high\"}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "options.priority must be an integer between -1000000 and 1000000");
    assert_int_equal(parse_opts("{\"maxSize\":4611686018427387904}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "options.maxSize must be an integer between 0 and 4611686018427387903 messages");
    assert_int_equal(parse_opts("{\"retentionSinkHoldMaxSeconds\":59}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "options.retentionSinkHoldMaxSeconds must be an integer between 60 and 315360000 "
                               "seconds");
    assert_int_equal(parse_opts("{\"retryDelay\":2592000001}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "options.retryDelay must be an integer between 0 and 2592000000 milliseconds");
    /* -0 is zero */
    assert_int_equal(parse_opts("{\"leaseTime\":-0}", &o), QERR_OK);
    assert_int_equal(o.lease_time, 0);
}

static void test_bools(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bool_opts / sizeof bool_opts[0]; i++) {
        char text[200], want[200];
        queue_options o;
        snprintf(text, sizeof text, "{\"%s\":true}", bool_opts[i].name);
        assert_int_equal(parse_opts(text, &o), QERR_OK);
        assert_int_equal(*(int64_t *)((char *)&o + bool_opts[i].offset), 1);
        snprintf(text, sizeof text, "{\"%s\":false}", bool_opts[i].name);
        assert_int_equal(parse_opts(text, &o), QERR_OK);
        assert_int_equal(*(int64_t *)((char *)&o + bool_opts[i].offset), 0);
        snprintf(want, sizeof want, "options.%s must be true or false", bool_opts[i].name);
        static const char *const wrong[] = {"1", "0", "\"true\"", "null", "[]", "{}", "1.5"};
        for (size_t k = 0; k < sizeof wrong / sizeof wrong[0]; k++) {
            snprintf(text, sizeof text, "{\"%s\":%s}", bool_opts[i].name, wrong[k]);
            assert_int_equal(parse_opts(text, &o), QERR_BAD_INPUT);
            assert_string_equal(g_err, want);
        }
    }
}

static void test_unknown_and_shape(void **state)
{
    (void)state;
    queue_options o;
    assert_int_equal(parse_opts("{\"foo\":1}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "unknown option \"foo\"");
    assert_int_equal(parse_opts("{\"windowBuffer\":1,\"LeaseTime\":1}", &o), QERR_BAD_INPUT); /* names are case-sensitive */
    assert_string_equal(g_err, "unknown option \"LeaseTime\"");
    assert_int_equal(parse_opts("{\"\":1}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "unknown option \"\"");
    assert_int_equal(parse_opts("{\"f\\u006fo\":1}", &o), QERR_BAD_INPUT); /* the decoded name is reported */
    assert_string_equal(g_err, "unknown option \"foo\"");
    static const char *const not_obj[] = {"[]", "1", "\"x\"", "true", "false", "[{\"windowBuffer\":1}]"};
    for (size_t i = 0; i < sizeof not_obj / sizeof not_obj[0]; i++) {
        assert_int_equal(parse_opts(not_obj[i], &o), QERR_BAD_INPUT);
        assert_string_equal(g_err, "options must be an object");
    }
    /* an escaped key that decodes to a real name is that option */
    assert_int_equal(parse_opts("{\"lease\\u0054ime\":5}", &o), QERR_OK);
    assert_int_equal(o.lease_time, 5);
    /* duplicate keys: the last one wins */
    assert_int_equal(parse_opts("{\"windowBuffer\":1,\"windowBuffer\":2}", &o), QERR_OK);
    assert_int_equal(o.window_buffer, 2);
    /* an error in a later member is still found */
    assert_int_equal(parse_opts("{\"windowBuffer\":1,\"retryLimit\":3,\"bogus\":true}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "unknown option \"bogus\"");
    /* nested values do not confuse member iteration */
    assert_int_equal(parse_opts("{\"priority\":1,\"foo\":{\"ttl\":[1,2,{\"x\":3}]},\"windowBuffer\":2}", &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, "unknown option \"foo\"");
}

static void test_options_in_a_larger_document(void **state)
{
    (void)state;
    const char *text = "{\"queue\":\"q\",\"options\":{\"windowBuffer\":42,\"priority\":7},\"after\":[1,2]}";
    json_doc d = {0};
    assert_int_equal(json_parse(&d, text, strlen(text), NULL), 0);
    queue_options o;
    assert_int_equal(queue_options_parse(&d, json_get(&d, 0, "options"), &o, &g_det), QERR_OK);
    assert_int_equal(o.window_buffer, 42);
    assert_int_equal(o.priority, 7);
    assert_int_equal(queue_options_parse(&d, json_get(&d, 0, "missing"), &o, &g_det), QERR_OK);
    assert_int_equal(o.ttl, 3600);
    json_doc_free(&d);
}

/* ttl is a legacy option of the earlier release, stored and reported but not enforced: any
 * value in range is kept (and echoed), out-of-range ones are refused like any integer option */
static void test_ttl_stored(void **state)
{
    (void)state;
    queue_options o;
    static const int64_t ok[] = {0, 60, 3600, 7200, 3650LL * 86400};
    char in[64];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(in, sizeof in, "{\"ttl\":%lld}", (long long)ok[i]);
        assert_int_equal(parse_opts(in, &o), QERR_OK);
        assert_int_equal(o.ttl, ok[i]);
        buf b;
        buf_init(&b, 0);
        queue_options_json(&o, &b);
        snprintf(in, sizeof in, "\"ttl\":%lld,", (long long)ok[i]);
        assert_non_null(strstr(buf_cstr(&b), in));
        buf_free(&b);
    }
    static const char *const bad[] = {"{\"ttl\":-1}", "{\"ttl\":315360001}", "{\"ttl\":\"60\"}", "{\"ttl\":1.5}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_opts(bad[i], &o), QERR_BAD_INPUT);
        assert_non_null(strstr(g_err, "options.ttl must be an integer between 0 and 315360000 seconds"));
    }
}

static void test_sink_hold(void **state)
{
    (void)state;
    queue_options o;
    const char *want_err = "options.retentionSinkHold must be a sink name (letters, digits, '-', '_', '.', at most "
                           "64) or null";
    assert_int_equal(parse_opts("{\"retentionSinkHold\":\"default\"}", &o), QERR_OK);
    assert_string_equal(o.retention_sink_hold, "default");
    buf b;
    buf_init(&b, 0);
    queue_options_json(&o, &b);
    assert_non_null(strstr(buf_cstr(&b), "\"retentionSinkHold\":\"default\","));
    buf_free(&b);
    assert_int_equal(parse_opts("{\"retentionSinkHold\":null}", &o), QERR_OK);
    assert_string_equal(o.retention_sink_hold, "");
    json_eq(&o, DEFAULTS_JSON);
    assert_int_equal(parse_opts("{\"retentionSinkHold\":false}", &o), QERR_OK);
    assert_string_equal(o.retention_sink_hold, "");
    assert_int_equal(parse_opts("{\"retentionSinkHold\":\"\"}", &o), QERR_OK);
    assert_string_equal(o.retention_sink_hold, "");
    assert_int_equal(parse_opts("{\"retentionSinkHold\":\"a-b_c.D9\"}", &o), QERR_OK);
    assert_string_equal(o.retention_sink_hold, "a-b_c.D9");

    char text[200], name[80];
    memset(name, 'n', 64);
    name[64] = '\0';
    snprintf(text, sizeof text, "{\"retentionSinkHold\":\"%s\"}", name);
    assert_int_equal(parse_opts(text, &o), QERR_OK);
    assert_string_equal(o.retention_sink_hold, name);
    name[64] = 'n';
    name[65] = '\0';
    snprintf(text, sizeof text, "{\"retentionSinkHold\":\"%s\"}", name);
    assert_int_equal(parse_opts(text, &o), QERR_BAD_INPUT);
    assert_string_equal(g_err, want_err);

    static const char *const bad[] = {"\"bad name!\"", "\"a b\"", "\"a/b\"", "\"caf\xc3\xa9\"", "true", "1",
                                      "[]",           "{}",     "\"a\\nb\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "{\"retentionSinkHold\":%s}", bad[i]);
        assert_int_equal(parse_opts(text, &o), QERR_BAD_INPUT);
        assert_string_equal(g_err, want_err);
    }
}

/* An unknown name of 250 bytes is named whole in the sentence (the detail holds it). */
static void test_long_unknown_name(void **state)
{
    (void)state;
    json_doc d = {0};
    buf text;
    buf_init(&text, 0);
    buf_puts(&text, "{\"");
    for (int i = 0; i < 250; i++)
        buf_putc(&text, 'x');
    buf_puts(&text, "\":1}");
    assert_int_equal(json_parse(&d, text.data, text.len, NULL), 0);
    queue_options o;
    qerr_detail e;
    assert_int_equal(queue_options_parse(&d, 0, &o, &e), QERR_BAD_INPUT);
    assert_int_equal(strlen(e.text), strlen("unknown option \"\"") + 250);
    assert_memory_equal(e.text, "unknown option \"xxx", 19);
    json_doc_free(&d);
    buf_free(&text);
}

/* The raw JSON of one option of an effective options object, null when absent or not an object. */
static void test_option_raw(void **state)
{
    (void)state;
    const char *text = "{\"leaseTime\":300,\"retentionSinkHold\":\"s3\",\"deadLetterQueue\":false,\"x\":{\"a\" : [1]}}";
    json_doc d = {0};
    assert_int_equal(json_parse(&d, text, strlen(text), NULL), 0);
    buf b;
    buf_init(&b, 0);
    queue_option_raw(&b, &d, 1, "leaseTime");
    buf_putc(&b, ',');
    queue_option_raw(&b, &d, 1, "retentionSinkHold");
    buf_putc(&b, ',');
    queue_option_raw(&b, &d, 1, "deadLetterQueue");
    buf_putc(&b, ',');
    queue_option_raw(&b, &d, 1, "x");
    buf_putc(&b, ',');
    queue_option_raw(&b, &d, 1, "ttl");
    buf_putc(&b, ',');
    queue_option_raw(&b, &d, 0, "leaseTime");
    assert_string_equal(buf_cstr(&b), "300,\"s3\",false,{\"a\" : [1]},null,null");
    buf_free(&b);
    json_doc_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full_overwrite),
        cmocka_unit_test(test_all_set_json),
        cmocka_unit_test(test_int_bounds),
        cmocka_unit_test(test_int_error_texts),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_unknown_and_shape),
        cmocka_unit_test(test_options_in_a_larger_document),
        cmocka_unit_test(test_sink_hold),
        cmocka_unit_test(test_ttl_stored),
        cmocka_unit_test(test_long_unknown_name),
        cmocka_unit_test(test_option_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
