/* Unit tests for the sink's configuration (sink/sinkcfg.h): the spec's boot line, defaults,
 * every range, enumerations with their aliases, the string checks (endpoint, bucket, prefix,
 * names, queues), the refusal of QUEEN_S3_PARTITIONS, the ignored leftovers, the node-wide
 * knobs, the start line, and that the secret key never shows in any line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

/* The injected environment: NULL-terminated name/value pairs, then a second list that
 * overrides it (for "the minimal sink plus one variable"). */
static const char *const *g_env;
static const char *const *g_extra;

static const char *lookup(const char *const *env, const char *name, int *found)
{
    for (size_t i = 0; env && env[i]; i += 2)
        if (strcmp(env[i], name) == 0) {
            *found = 1;
            return env[i + 1];
        }
    return NULL;
}

static const char *env_get(const char *name)
{
    int found = 0;
    const char *v = lookup(g_extra, name, &found);
    if (found)
        return v;
    return lookup(g_env, name, &found);
}

#define ENV(...) (g_extra = NULL, g_env = (const char *const[]){__VA_ARGS__, NULL})
#define EXTRA(...) (g_extra = (const char *const[]){__VA_ARGS__, NULL})
#define SECRET "sEcReT-k3y-DO-NOT-PRINT"
#define MINIMAL()                                                                                              \
    ENV("QUEEN_S3_QUEUES", "orders", "QUEEN_S3_ENDPOINT", "http://127.0.0.1:9000", "QUEEN_S3_REGION", "us-east-1", \
        "QUEEN_S3_BUCKET", "lake", "QUEEN_S3_ACCESS_KEY", "queen", "QUEEN_S3_SECRET_KEY", SECRET)

static const uint8_t TENANT[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
#define FATAL "ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: "

static qerr_detail g_qd;
#define g_err (g_qd.text)

/* The loaders' qerr mapped to the old 1 / 0 / -1, checking the convention on the way: a
 * refusal is QERR_BAD_INPUT without a code, and the same without a detail. */
static int refusal(qerr e)
{
    if (e == QERR_OK)
        return 0;
    assert_int_equal(e, QERR_BAD_INPUT);
    assert_null(g_qd.code);
    return -1;
}

static int sink_load(s3_sink_config *c)
{
    int configured = -1;
    qerr e = s3_sink_config_from_env(c, TENANT, env_get, &configured, &g_qd);
    if (e != QERR_OK) {
        assert_int_equal(configured, 0);
        char keep[sizeof g_qd.text];
        memcpy(keep, g_qd.text, sizeof keep);
        s3_sink_config c2;
        assert_int_equal(s3_sink_config_from_env(&c2, TENANT, env_get, &configured, NULL), QERR_BAD_INPUT);
        s3_sink_config_free(&c2);
        memcpy(g_qd.text, keep, sizeof keep);
    }
    return refusal(e) < 0 ? -1 : configured;
}

static int knobs_load(s3_node_knobs *k, const char *node_id)
{
    return refusal(s3_node_knobs_load(k, env_get, node_id, &g_qd));
}

static int embedded_load(int *on)
{
    return refusal(s3_embedded_load(on, env_get, &g_qd));
}

static void sink_ok(s3_sink_config *c)
{
    memset(g_err, 0, sizeof g_err);
    int rc = sink_load(c);
    if (rc != 1)
        fail_msg("expected a sink, got %d: %s", rc, g_err);
}

/* Expects a refusal; returns the line (in g_err) after checking it never holds the secret. */
static const char *sink_fails(void)
{
    s3_sink_config c;
    memset(g_err, 0, sizeof g_err);
    assert_int_equal(sink_load(&c), -1);
    assert_null(strstr(g_err, SECRET));
    assert_null(strchr(g_err, '\n'));
    assert_int_equal(strncmp(g_err, FATAL, strlen(FATAL)), 0);
    /* a refused config holds nothing */
    assert_null(c.sink);
    assert_null(c.secret_key);
    assert_null(c.queues);
    return g_err;
}

static void sink_fails_with(const char *want)
{
    assert_string_equal(sink_fails(), want);
}

static void test_spec_boot_line(void **state)
{
    (void)state;
    MINIMAL();
    EXTRA("QUEEN_S3_MAX_WINDOW_MS", "50");
    sink_fails_with("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_MAX_WINDOW_MS=50 is outside 100..=86400000. "
                    "It is how long a window may stay open; the lag SLO is about this plus the safe lag");
}

static void test_defaults(void **state)
{
    (void)state;
    MINIMAL();
    s3_sink_config c;
    sink_ok(&c);
    assert_string_equal(c.tenant_text, "00000000-0000-0000-0000-000000000001");
    assert_memory_equal(c.tenant, TENANT, 16);
    assert_string_equal(c.sink, "default");
    assert_int_equal(c.queues_all, 0);
    assert_int_equal(c.nqueues, 1);
    assert_string_equal(c.queues[0], "orders");
    assert_string_equal(c.endpoint, "http://127.0.0.1:9000");
    assert_string_equal(c.region, "us-east-1");
    assert_string_equal(c.bucket, "lake");
    assert_string_equal(c.prefix, "queen");
    assert_string_equal(c.access_key, "queen");
    assert_string_equal(c.secret_key, SECRET);
    assert_int_equal(c.path_style, 0);
    assert_int_equal(c.sse, S3_SSE_OFF);
    assert_null(c.sse_kms_key_id);
    assert_int_equal(c.format, S3_FORMAT_JSONL);
    assert_int_equal(c.compression, S3_COMP_ZSTD);
    assert_int_equal(c.parquet_codec, S3_COMP_ZSTD);
    assert_int_equal(c.layout, S3_LAYOUT_MERGED);
    assert_int_equal(c.align, S3_ALIGN_HOUR);
    assert_int_equal(c.start, S3_START_LATEST);
    assert_int_equal(c.target_mb, 128);
    assert_int_equal(c.max_window_ms, 300000);
    assert_int_equal(s3_sink_object_codec(&c), S3_COMP_ZSTD);
    s3_sink_config_free(&c);
    assert_null(c.sink);
}

static void test_no_env_sink(void **state)
{
    (void)state;
    s3_sink_config c;
    ENV("QUEEN_S3_EMBEDDED", "true", "QUEEN_S3_MEMORY_MB", "64", "QUEEN_S3_QUEUES", "  ");
    assert_int_equal(sink_load(&c), 0);
    assert_string_equal(c.tenant_text, "00000000-0000-0000-0000-000000000001");
    assert_null(c.sink);
    s3_sink_config_free(&c);
    /* any per-sink variable without QUEEN_S3_QUEUES is a refusal naming QUEEN_S3_QUEUES */
    static const char *const per_sink[] = {
        "QUEEN_S3_ENDPOINT", "QUEEN_S3_REGION", "QUEEN_S3_BUCKET", "QUEEN_S3_ACCESS_KEY", "QUEEN_S3_SECRET_KEY",
        "QUEEN_S3_PATH_STYLE", "QUEEN_S3_PREFIX", "QUEEN_S3_SSE", "QUEEN_S3_SSE_KMS_KEY_ID", "QUEEN_S3_FORMAT",
        "QUEEN_S3_COMPRESSION", "QUEEN_S3_PARQUET_CODEC", "QUEEN_S3_LAYOUT", "QUEEN_S3_ALIGN", "QUEEN_S3_START",
        "QUEEN_S3_TARGET_MB", "QUEEN_S3_MAX_WINDOW_MS", "QUEEN_S3_SINK"};
    for (size_t i = 0; i < sizeof per_sink / sizeof per_sink[0]; i++) {
        g_extra = NULL;
        g_env = (const char *const[]){per_sink[i], "x", NULL};
        sink_fails_with(FATAL "QUEEN_S3_QUEUES is not set. It names the queues the sink mirrors, as a "
                              "comma-separated list or * for every queue");
    }
}

static void test_required(void **state)
{
    (void)state;
    static const struct {
        const char *name, *line;
    } req[] = {
        {"QUEEN_S3_ENDPOINT", FATAL "QUEEN_S3_ENDPOINT is not set. It is the URL of the S3 service: http:// or "
                                    "https://, a host and an optional port, no path"},
        {"QUEEN_S3_REGION", FATAL "QUEEN_S3_REGION is not set. It is the region the S3 requests are signed for"},
        {"QUEEN_S3_BUCKET", FATAL "QUEEN_S3_BUCKET is not set. It is the bucket the sink writes into"},
        {"QUEEN_S3_ACCESS_KEY",
         FATAL "QUEEN_S3_ACCESS_KEY is not set. It is the access key id the S3 requests are signed with"},
        {"QUEEN_S3_SECRET_KEY",
         FATAL "QUEEN_S3_SECRET_KEY is not set. It is the secret key the S3 requests are signed with"},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        MINIMAL();
        EXTRA(req[i].name, NULL);
        sink_fails_with(req[i].line);
        MINIMAL();
        EXTRA(req[i].name, " \t\n"); /* blank is unset */
        sink_fails_with(req[i].line);
    }
}

static void test_partitions_refused(void **state)
{
    (void)state;
    const char *want = FATAL "QUEEN_S3_PARTITIONS=cust-1,cust-2 is not supported. A static partition list cannot "
                             "work: a window can only close against what discovery reports, so the sink finds "
                             "every partition itself";
    MINIMAL();
    EXTRA("QUEEN_S3_PARTITIONS", "cust-1,cust-2");
    sink_fails_with(want);
    s3_node_knobs k;
    assert_int_equal(knobs_load(&k, "node-1"), -1);
    assert_string_equal(g_err, want);
    assert_null(k.instance);
    /* blank is unset */
    MINIMAL();
    EXTRA("QUEEN_S3_PARTITIONS", " ");
    s3_sink_config c;
    sink_ok(&c);
    s3_sink_config_free(&c);
}

/* The switch: a sentence like every other boot line, in the broker's context (the sink is
 * not on yet); unset and blank are off; aliases of a boolean as config.c takes them. */
static void test_embedded_switch(void **state)
{
    (void)state;
    int on = -1;
    ENV("QUEEN_S3_EMBEDDED", "maybe");
    assert_int_equal(embedded_load(&on), -1);
    assert_string_equal(g_err, "ERROR boot: FATAL: queen: QUEEN_S3_EMBEDDED=maybe is not one of true, false. It makes "
                               "this node run the S3 sink");
    assert_int_equal(on, 0);
    ENV("QUEEN_S3_EMBEDDED", "TRUE");
    assert_int_equal(embedded_load(&on), 0);
    assert_int_equal(on, 1);
    ENV("QUEEN_S3_EMBEDDED", "false");
    assert_int_equal(embedded_load(&on), 0);
    assert_int_equal(on, 0);
    ENV("QUEEN_S3_EMBEDDED", " ");
    on = -1;
    assert_int_equal(embedded_load(&on), 0);
    assert_int_equal(on, 0);
    ENV("OTHER", "x");
    on = -1;
    assert_int_equal(embedded_load(&on), 0);
    assert_int_equal(on, 0);
}

/* Every integer row: lo and hi pass, lo-1 and hi+1 are refused with the spec's form. */
static void test_int_ranges(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        long long lo, hi;
        int node;
    } rows[] = {
        {"QUEEN_S3_TARGET_MB", 1, 5120, 0},
        {"QUEEN_S3_MAX_WINDOW_MS", 100, 86400000, 0},
        {"QUEEN_S3_MEMORY_MB", 1, 1048576, 1},
        {"QUEEN_S3_FETCH_CONCURRENCY", 1, 256, 1},
        {"QUEEN_S3_DISCOVERY_INTERVAL_MS", 10, 3600000, 1},
        {"QUEEN_S3_SAFE_GUARD_MS", 0, 3600000, 1},
        {"QUEEN_S3_LEASE_TTL_MS", 1000, 3600000, 1},
        {"QUEEN_S3_MULTIPART_THRESHOLD_MB", 5, 5120, 1},
        {"QUEEN_S3_CHECKPOINT_EVERY", 1, 100000, 1},
        {"QUEEN_S3_SHUTDOWN_GRACE_MS", 0, 3600000, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        long long probe[4] = {rows[i].lo, rows[i].hi, rows[i].lo - 1, rows[i].hi + 1};
        for (int j = 0; j < 4; j++) {
            char v[32];
            snprintf(v, sizeof v, "%lld", probe[j]);
            MINIMAL();
            EXTRA(rows[i].name, v);
            int rc;
            int64_t got = -1;
            if (rows[i].node) {
                s3_node_knobs k;
                rc = knobs_load(&k, "n1");
                if (rc == 0) {
                    int64_t *f[] = {&k.memory_mb,    &k.fetch_concurrency, &k.discovery_interval_ms,
                                    &k.safe_guard_ms, &k.lease_ttl_ms,      &k.multipart_threshold_mb,
                                    &k.checkpoint_every, &k.shutdown_grace_ms};
                    got = *f[i - 2];
                    s3_node_knobs_free(&k);
                }
            } else {
                s3_sink_config c;
                rc = sink_load(&c);
                if (rc == 1)
                    got = i == 0 ? c.target_mb : c.max_window_ms;
                s3_sink_config_free(&c);
                rc = rc == 1 ? 0 : -1;
            }
            if (j < 2) {
                assert_int_equal(rc, 0);
                assert_int_equal(got, probe[j]);
            } else {
                assert_int_equal(rc, -1);
                char want[256];
                snprintf(want, sizeof want, FATAL "%s=%lld is outside %lld..=%lld. It is", rows[i].name, probe[j],
                         rows[i].lo, rows[i].hi);
                assert_int_equal(strncmp(g_err, want, strlen(want)), 0);
            }
        }
        MINIMAL();
        EXTRA(rows[i].name, "12abc");
        if (rows[i].node) {
            s3_node_knobs k;
            assert_int_equal(knobs_load(&k, "n1"), -1);
        } else {
            sink_fails();
        }
        assert_non_null(strstr(g_err, "=12abc is outside "));
    }
}

static void test_enums_and_aliases(void **state)
{
    (void)state;
    static const struct {
        const char *name, *value;
        int field; /* 0 format 1 compression 2 codec 3 layout 4 align 5 start 6 sse */
        int want;
    } cases[] = {
        {"QUEEN_S3_FORMAT", "PARQUET", 0, S3_FORMAT_PARQUET},
        {"QUEEN_S3_FORMAT", "json", 0, S3_FORMAT_JSONL},
        {"QUEEN_S3_FORMAT", " NDJSON ", 0, S3_FORMAT_JSONL},
        {"QUEEN_S3_FORMAT", "JsonL", 0, S3_FORMAT_JSONL},
        {"QUEEN_S3_COMPRESSION", "GZIP", 1, S3_COMP_GZIP},
        {"QUEEN_S3_COMPRESSION", "gz", 1, S3_COMP_GZIP},
        {"QUEEN_S3_COMPRESSION", "Zst", 1, S3_COMP_ZSTD},
        {"QUEEN_S3_COMPRESSION", "off", 1, S3_COMP_NONE},
        {"QUEEN_S3_COMPRESSION", "None", 1, S3_COMP_NONE},
        {"QUEEN_S3_PARQUET_CODEC", "Snappy", 2, S3_COMP_SNAPPY},
        {"QUEEN_S3_PARQUET_CODEC", "zstd", 2, S3_COMP_ZSTD},
        {"QUEEN_S3_LAYOUT", "PER-PARTITION", 3, S3_LAYOUT_PER_PARTITION},
        {"QUEEN_S3_ALIGN", "Day", 4, S3_ALIGN_DAY},
        {"QUEEN_S3_ALIGN", "none", 4, S3_ALIGN_NONE},
        {"QUEEN_S3_START", "EARLIEST", 5, S3_START_EARLIEST},
        {"QUEEN_S3_SSE", "aes256", 6, S3_SSE_AES256},
        {"QUEEN_S3_SSE", "AWS:KMS", 6, S3_SSE_KMS},
        {"QUEEN_S3_SSE", "none", 6, S3_SSE_OFF},
        {"QUEEN_S3_SSE", "OFF", 6, S3_SSE_OFF},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        MINIMAL();
        EXTRA(cases[i].name, cases[i].value);
        s3_sink_config c;
        sink_ok(&c);
        int got[] = {(int)c.format, (int)c.compression, (int)c.parquet_codec, (int)c.layout,
                     (int)c.align,  (int)c.start,       (int)c.sse};
        assert_int_equal(got[cases[i].field], cases[i].want);
        s3_sink_config_free(&c);
    }
    /* refusals list the canonical spellings only */
    static const char *const bad[][2] = {
        {"QUEEN_S3_FORMAT", FATAL "QUEEN_S3_FORMAT=csv is not one of jsonl, parquet. It is the file format of the "
                                  "data objects"},
        {"QUEEN_S3_COMPRESSION", FATAL "QUEEN_S3_COMPRESSION=csv is not one of zstd, gzip, none. It is how JSONL "
                                       "objects are compressed"},
        {"QUEEN_S3_PARQUET_CODEC", FATAL "QUEEN_S3_PARQUET_CODEC=csv is not one of zstd, snappy. It is how the "
                                         "pages of Parquet objects are compressed"},
        {"QUEEN_S3_LAYOUT", FATAL "QUEEN_S3_LAYOUT=csv is not one of merged, per-partition. It is whether a "
                                  "window writes one object or one per partition"},
        {"QUEEN_S3_ALIGN", FATAL "QUEEN_S3_ALIGN=csv is not one of hour, day, none. It is the time boundary no "
                                 "window crosses, which the dt= and hour= of its key come from"},
        {"QUEEN_S3_START", FATAL "QUEEN_S3_START=csv is not one of latest, earliest. It is where the sink starts "
                                 "reading a queue it has never committed"},
        {"QUEEN_S3_SSE", FATAL "QUEEN_S3_SSE=csv is not one of off, AES256, aws:kms. It is the server-side "
                               "encryption every upload asks the bucket for"},
        {"QUEEN_S3_PATH_STYLE", FATAL "QUEEN_S3_PATH_STYLE=csv is not one of true, false. It puts the bucket in "
                                      "the URL path instead of the host name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        MINIMAL();
        EXTRA(bad[i][0], "csv");
        sink_fails_with(bad[i][1]);
    }
    /* parquet picks its own codec */
    MINIMAL();
    EXTRA("QUEEN_S3_FORMAT", "parquet", "QUEEN_S3_PARQUET_CODEC", "snappy", "QUEEN_S3_COMPRESSION", "gzip");
    s3_sink_config c;
    sink_ok(&c);
    assert_int_equal(s3_sink_object_codec(&c), S3_COMP_SNAPPY);
    assert_int_equal(c.compression, S3_COMP_GZIP);
    s3_sink_config_free(&c);
    MINIMAL();
    EXTRA("QUEEN_S3_PATH_STYLE", "TRUE");
    sink_ok(&c);
    assert_int_equal(c.path_style, 1);
    s3_sink_config_free(&c);
}

static void test_endpoint(void **state)
{
    (void)state;
    static const char *const good[][2] = {
        {"http://127.0.0.1:9000", "http://127.0.0.1:9000"},
        {"http://127.0.0.1:9000/", "http://127.0.0.1:9000"},
        {" https://s3.eu-central-1.amazonaws.com// ", "https://s3.eu-central-1.amazonaws.com"},
        {"HTTPS://storage.googleapis.com", "HTTPS://storage.googleapis.com"},
        {"http://[::1]:9000", "http://[::1]:9000"},
        {"http://minio:65535", "http://minio:65535"},
        {"http://minio_1", "http://minio_1"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        MINIMAL();
        EXTRA("QUEEN_S3_ENDPOINT", good[i][0]);
        s3_sink_config c;
        sink_ok(&c);
        assert_string_equal(c.endpoint, good[i][1]);
        s3_sink_config_free(&c);
    }
    static const char *const bad[][2] = {
        {"ftp://minio:9000", "QUEEN_S3_ENDPOINT=ftp://minio:9000 is not an http:// or https:// URL. "},
        {"minio:9000", "QUEEN_S3_ENDPOINT=minio:9000 is not an http:// or https:// URL. "},
        {"http://", "QUEEN_S3_ENDPOINT=http:// has no host. "},
        {"http:///", "QUEEN_S3_ENDPOINT=http:/// has no host. "},
        {"http://:9000", "QUEEN_S3_ENDPOINT=http://:9000 has no host. "},
        {"http://minio:9000/lake", "QUEEN_S3_ENDPOINT=http://minio:9000/lake has a path; the bucket goes in "
                                   "QUEEN_S3_BUCKET and the key prefix in QUEEN_S3_PREFIX. "},
        {"http://minio:9000?x=1", "QUEEN_S3_ENDPOINT=http://minio:9000?x=1 has a path; "},
        {"http://minio:0", "QUEEN_S3_ENDPOINT=http://minio:0 has a port outside 1..=65535. "},
        {"http://minio:65536", "QUEEN_S3_ENDPOINT=http://minio:65536 has a port outside 1..=65535. "},
        {"http://minio:", "QUEEN_S3_ENDPOINT=http://minio: has a port outside 1..=65535. "},
        {"http://minio:9x", "QUEEN_S3_ENDPOINT=http://minio:9x has a port outside 1..=65535. "},
        {"http://mi nio", "QUEEN_S3_ENDPOINT=http://mi nio has an invalid host"},
        {"http://[::1", "QUEEN_S3_ENDPOINT=http://[::1 has an invalid IPv6 host. "},
        {"http://[]:9000", "QUEEN_S3_ENDPOINT=http://[]:9000 has an invalid IPv6 host. "},
        {"http://[::1]x", "QUEEN_S3_ENDPOINT=http://[::1]x has an invalid host. "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        MINIMAL();
        EXTRA("QUEEN_S3_ENDPOINT", bad[i][0]);
        const char *line = sink_fails();
        if (strncmp(line + strlen(FATAL), bad[i][1], strlen(bad[i][1])) != 0)
            fail_msg("endpoint %s: got [%s]", bad[i][0], line);
    }
}

static void test_secret_never_shown(void **state)
{
    (void)state;
    /* user information in the endpoint may be the secret: the value is not echoed */
    MINIMAL();
    EXTRA("QUEEN_S3_ENDPOINT", "http://queen:" SECRET "@minio:9000");
    sink_fails_with(FATAL "QUEEN_S3_ENDPOINT carries user information (not shown); the keys go in "
                          "QUEEN_S3_ACCESS_KEY and QUEEN_S3_SECRET_KEY. It is the URL of the S3 service: http:// "
                          "or https://, a host and an optional port, no path");
    MINIMAL();
    EXTRA("QUEEN_S3_SECRET_KEY", SECRET " with space");
    sink_fails_with(FATAL "QUEEN_S3_SECRET_KEY contains spaces or control characters (not shown). It is the "
                          "secret key the S3 requests are signed with");
    char big[5000];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, SECRET, strlen(SECRET));
    MINIMAL();
    EXTRA("QUEEN_S3_SECRET_KEY", big);
    sink_fails_with(FATAL "QUEEN_S3_SECRET_KEY is longer than 4096 bytes (not shown). It is the secret key the S3 "
                          "requests are signed with");
    /* a secret read from a file keeps no trailing newline */
    MINIMAL();
    EXTRA("QUEEN_S3_SECRET_KEY", SECRET "\n");
    s3_sink_config c;
    sink_ok(&c);
    assert_string_equal(c.secret_key, SECRET);
    /* and never shows in the start line */
    s3_node_knobs k;
    assert_int_equal(knobs_load(&k, "node-1"), 0);
    buf b;
    buf_init(&b, 0);
    s3_sink_boot_line(&c, &k, &b);
    assert_null(strstr(buf_cstr(&b), SECRET));
    buf_free(&b);
    s3_node_knobs_free(&k);
    s3_sink_config_free(&c);
}

static void test_names(void **state)
{
    (void)state;
    s3_sink_config c;
    /* bucket */
    static const char *const bad_buckets[] = {"a/b", "a b", "a?b", "a\tb"};
    for (size_t i = 0; i < sizeof bad_buckets / sizeof bad_buckets[0]; i++) {
        MINIMAL();
        EXTRA("QUEEN_S3_BUCKET", bad_buckets[i]);
        const char *line = sink_fails();
        assert_non_null(strstr(line, "is not a bucket name"));
    }
    MINIMAL();
    EXTRA("QUEEN_S3_BUCKET", "a/b");
    sink_fails_with(FATAL "QUEEN_S3_BUCKET=a/b is not a bucket name (letters, digits, '.', '-' and '_'; no '/', no "
                          "space). It is the bucket the sink writes into");
    MINIMAL();
    EXTRA("QUEEN_S3_BUCKET", "my.lake-01_x");
    sink_ok(&c);
    assert_string_equal(c.bucket, "my.lake-01_x");
    s3_sink_config_free(&c);
    /* region */
    MINIMAL();
    EXTRA("QUEEN_S3_REGION", "us:east");
    sink_fails_with(FATAL "QUEEN_S3_REGION=us:east is not 1 to 64 letters, digits, '.', '-' or '_'. It is the "
                          "region the S3 requests are signed for");
    MINIMAL();
    EXTRA("QUEEN_S3_REGION", "auto");
    sink_ok(&c);
    s3_sink_config_free(&c);
    /* access key */
    MINIMAL();
    EXTRA("QUEEN_S3_ACCESS_KEY", "a b");
    sink_fails_with(FATAL "QUEEN_S3_ACCESS_KEY=a b is not 1 to 256 bytes without spaces or control characters. It "
                          "is the access key id the S3 requests are signed with");
    /* sink name */
    MINIMAL();
    EXTRA("QUEEN_S3_SINK", "lake:2");
    sink_fails_with(FATAL "QUEEN_S3_SINK=lake:2 is not 1 to 64 letters, digits, '.', '-' or '_'. It names the sink "
                          "in its KV documents, its manifests and the retention hold");
    char n64[65], n65[66];
    memset(n64, 's', 64);
    n64[64] = '\0';
    memset(n65, 's', 65);
    n65[65] = '\0';
    MINIMAL();
    EXTRA("QUEEN_S3_SINK", n64);
    sink_ok(&c);
    assert_string_equal(c.sink, n64);
    s3_sink_config_free(&c);
    MINIMAL();
    EXTRA("QUEEN_S3_SINK", n65);
    assert_non_null(strstr(sink_fails(), "is not 1 to 64 letters"));
}

static void test_prefix(void **state)
{
    (void)state;
    static const char *const good[][2] = {
        {"queen", "queen"}, {"/lake/queen/", "lake/queen"}, {"//a//", "a"}, {" x/y ", "x/y"}, {"a.b/c..d", "a.b/c..d"},
    };
    s3_sink_config c;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        MINIMAL();
        EXTRA("QUEEN_S3_PREFIX", good[i][0]);
        sink_ok(&c);
        assert_string_equal(c.prefix, good[i][1]);
        s3_sink_config_free(&c);
    }
    static const char *const bad[][2] = {
        {"/", "QUEEN_S3_PREFIX=/ has no segment. "},
        {"a//b", "QUEEN_S3_PREFIX=a//b has an empty segment. "},
        {"a/../b", "QUEEN_S3_PREFIX=a/../b has a . or .. segment. "},
        {"./a", "QUEEN_S3_PREFIX=./a has a . or .. segment. "},
        {"..", "QUEEN_S3_PREFIX=.. has a . or .. segment. "},
        {"a\x01" "b", "QUEEN_S3_PREFIX=a?b may not contain control characters. "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        MINIMAL();
        EXTRA("QUEEN_S3_PREFIX", bad[i][0]);
        const char *line = sink_fails();
        if (strncmp(line + strlen(FATAL), bad[i][1], strlen(bad[i][1])) != 0)
            fail_msg("prefix %s: got [%s]", bad[i][0], line);
    }
}

static void test_queues(void **state)
{
    (void)state;
    s3_sink_config c;
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", " * ");
    sink_ok(&c);
    assert_int_equal(c.queues_all, 1);
    assert_int_equal(c.nqueues, 0);
    s3_sink_config_free(&c);
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", "orders, payments ,orders,a b,payments");
    sink_ok(&c);
    assert_int_equal(c.queues_all, 0);
    assert_int_equal(c.nqueues, 3);
    assert_string_equal(c.queues[0], "orders");
    assert_string_equal(c.queues[1], "payments");
    assert_string_equal(c.queues[2], "a b");
    s3_sink_config_free(&c);
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", "a,,b");
    sink_fails_with(FATAL "QUEEN_S3_QUEUES=a,,b has an empty queue name. It names the queues the sink mirrors, as a "
                          "comma-separated list or * for every queue");
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", "a,");
    assert_non_null(strstr(sink_fails(), "has an empty queue name"));
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", "a,*");
    assert_non_null(strstr(sink_fails(), "QUEEN_S3_QUEUES=a,* mixes * with queue names"));
    char longq[300];
    memset(longq, 'q', 256);
    longq[256] = '\0';
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", longq);
    assert_non_null(strstr(sink_fails(), "names a queue longer than 255 bytes"));
    longq[255] = '\0';
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", longq);
    sink_ok(&c);
    assert_int_equal(strlen(c.queues[0]), 255);
    s3_sink_config_free(&c);
}

static void test_kms(void **state)
{
    (void)state;
    s3_sink_config c;
    MINIMAL();
    EXTRA("QUEEN_S3_SSE_KMS_KEY_ID", "arn:aws:kms:1234");
    sink_fails_with(FATAL "QUEEN_S3_SSE_KMS_KEY_ID=arn:aws:kms:1234 is set while QUEEN_S3_SSE is not aws:kms. It is "
                          "the KMS key the bucket encrypts the objects with under aws:kms");
    MINIMAL();
    EXTRA("QUEEN_S3_SSE", "aws:kms", "QUEEN_S3_SSE_KMS_KEY_ID", "arn:aws:kms:eu:key/abcd9876");
    sink_ok(&c);
    assert_int_equal(c.sse, S3_SSE_KMS);
    assert_string_equal(c.sse_kms_key_id, "arn:aws:kms:eu:key/abcd9876");
    s3_node_knobs k;
    assert_int_equal(knobs_load(&k, "node-1"), 0);
    buf b;
    buf_init(&b, 0);
    s3_sink_boot_line(&c, &k, &b);
    assert_non_null(strstr(buf_cstr(&b), " sse=aws:kms sse_kms_key_id=...9876 "));
    assert_null(strstr(buf_cstr(&b), "abcd9876"));
    buf_free(&b);
    s3_node_knobs_free(&k);
    s3_sink_config_free(&c);
}

static void test_knobs(void **state)
{
    (void)state;
    s3_node_knobs k;
    ENV("QUEEN_S3_EMBEDDED", "true");
    assert_int_equal(knobs_load(&k, "node-1"), 0);
    assert_int_equal(k.memory_mb, 512);
    assert_int_equal(k.fetch_concurrency, 4);
    assert_int_equal(k.discovery_interval_ms, 2000);
    assert_int_equal(k.safe_guard_ms, 5000);
    assert_int_equal(k.lease_ttl_ms, 30000);
    assert_int_equal(k.multipart_threshold_mb, 64);
    assert_int_equal(k.checkpoint_every, 20);
    assert_int_equal(k.shutdown_grace_ms, 30000);
    assert_string_equal(k.instance, "node-1");
    assert_int_equal(k.instance_generated, 0);
    assert_int_equal(k.crash_at, S3_CRASH_NEVER);
    assert_int_equal(k.nignored, 0);
    s3_node_knobs_free(&k);
    /* no node id: a generated name */
    assert_int_equal(knobs_load(&k, NULL), 0);
    assert_int_equal(k.instance_generated, 1);
    assert_int_equal(strlen(k.instance), 19);
    assert_int_equal(strncmp(k.instance, "s3-", 3), 0);
    for (int i = 3; i < 19; i++)
        assert_non_null(strchr("0123456789abcdef", k.instance[i]));
    s3_node_knobs_free(&k);
    /* the variable wins over the node id */
    ENV("QUEEN_S3_INSTANCE", " pod-7 ", "QUEEN_S3_LISTEN", "0.0.0.0:8080", "QUEEN_S3_LOG_FORMAT", "json");
    assert_int_equal(knobs_load(&k, "node-1"), 0);
    assert_string_equal(k.instance, "pod-7");
    assert_int_equal(k.nignored, 2);
    assert_string_equal(k.ignored[0], "QUEEN_S3_LISTEN");
    assert_string_equal(k.ignored[1], "QUEEN_S3_LOG_FORMAT");
    s3_node_knobs_free(&k);
    ENV("QUEEN_S3_LOG_FORMAT", "json", "QUEEN_S3_LISTEN", "");
    assert_int_equal(knobs_load(&k, "node-1"), 0);
    assert_int_equal(k.nignored, 1);
    assert_string_equal(k.ignored[0], "QUEEN_S3_LOG_FORMAT");
    s3_node_knobs_free(&k);
    ENV("QUEEN_S3_INSTANCE", "pod 7");
    assert_int_equal(knobs_load(&k, "node-1"), -1);
    assert_string_equal(g_err, FATAL "QUEEN_S3_INSTANCE=pod 7 may not contain spaces, quotes, backslashes or control "
                                     "characters. It names this node in the sink's leases and presence rows");
    assert_null(k.instance);
    ENV("QUEEN_S3_INSTANCE", "pod\xc0\xaf");
    assert_int_equal(knobs_load(&k, "node-1"), -1);
    assert_string_equal(g_err, FATAL "QUEEN_S3_INSTANCE=<5 bytes, not valid UTF-8> is not valid UTF-8. It names this "
                                     "node in the sink's leases and presence rows");
    assert_null(k.instance);
    char n129[130];
    memset(n129, 'i', 129);
    n129[129] = '\0';
    ENV("QUEEN_S3_INSTANCE", n129);
    assert_int_equal(knobs_load(&k, "node-1"), -1);
    assert_non_null(strstr(g_err, "is longer than 128 bytes"));
    /* crash points */
    static const char *const crash[][2] = {{"after_intent", "1"},  {"MID_UPLOAD", "2"},   {"after_upload", "3"},
                                           {"before_commit", "4"}, {"after_commit", "5"}, {"never", "0"},
                                           {"off", "0"},           {"None", "0"}};
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) {
        ENV("QUEEN_S3_CRASH_AT", crash[i][0]);
        assert_int_equal(knobs_load(&k, "n"), 0);
        assert_int_equal(k.crash_at, atoi(crash[i][1]));
        assert_string_equal(s3_crash_name(k.crash_at), i < 5 ? crash[i][0][0] == 'M' ? "mid_upload" : crash[i][0]
                                                             : "never");
        s3_node_knobs_free(&k);
    }
    ENV("QUEEN_S3_CRASH_AT", "sometimes");
    assert_int_equal(knobs_load(&k, "n"), -1);
    assert_string_equal(g_err, FATAL "QUEEN_S3_CRASH_AT=sometimes is not one of never, after_intent, mid_upload, "
                                     "after_upload, before_commit, after_commit. It makes the sink exit at one point "
                                     "of the commit sequence, for tests");
}

static void test_boot_line(void **state)
{
    (void)state;
    MINIMAL();
    EXTRA("QUEEN_S3_PATH_STYLE", "true", "QUEEN_S3_QUEUES", "orders,a b");
    s3_sink_config c;
    sink_ok(&c);
    s3_node_knobs k;
    assert_int_equal(knobs_load(&k, "node-1"), 0);
    buf b;
    buf_init(&b, 0);
    s3_sink_boot_line(&c, &k, &b);
    assert_string_equal(buf_cstr(&b),
                        "queen-s3 2.0.0 tenant=00000000-0000-0000-0000-000000000001 sink=default instance=node-1 "
                        "queues=orders,a%20b s3=http://127.0.0.1:9000 bucket=lake prefix=queen region=us-east-1 "
                        "addressing=path-style access_key=queen sse=off format=jsonl compression=zstd "
                        "parquet_codec=zstd layout=merged align=hour target_mb=128 max_window_ms=300000 start=latest "
                        "checkpoint_every=20 memory_mb=512 fetch_concurrency=4 discovery_interval_ms=2000 "
                        "safe_guard_ms=5000 lease_ttl_ms=30000 multipart_threshold_mb=64 shutdown_grace_ms=30000 "
                        "crash_at=never");
    s3_sink_config_free(&c);
    buf_reset(&b);
    MINIMAL();
    EXTRA("QUEEN_S3_QUEUES", "*", "QUEEN_S3_FORMAT", "parquet", "QUEEN_S3_ALIGN", "day", "QUEEN_S3_SSE", "AES256");
    sink_ok(&c);
    s3_sink_boot_line(&c, &k, &b);
    assert_non_null(strstr(buf_cstr(&b), " queues=* s3="));
    assert_non_null(strstr(buf_cstr(&b), " addressing=virtual-host access_key=queen sse=AES256 format=parquet "));
    assert_non_null(strstr(buf_cstr(&b), " align=day "));
    buf_free(&b);
    s3_sink_config_free(&c);
    s3_node_knobs_free(&k);
}

static void test_names_of_enums(void **state)
{
    (void)state;
    assert_string_equal(s3_format_name(S3_FORMAT_JSONL), "jsonl");
    assert_string_equal(s3_format_name(S3_FORMAT_PARQUET), "parquet");
    assert_string_equal(s3_compression_name(S3_COMP_ZSTD), "zstd");
    assert_string_equal(s3_compression_name(S3_COMP_GZIP), "gzip");
    assert_string_equal(s3_compression_name(S3_COMP_NONE), "none");
    assert_string_equal(s3_compression_name(S3_COMP_SNAPPY), "snappy");
    assert_string_equal(s3_layout_name(S3_LAYOUT_MERGED), "merged");
    assert_string_equal(s3_layout_name(S3_LAYOUT_PER_PARTITION), "per-partition");
    assert_string_equal(s3_align_name(S3_ALIGN_HOUR), "hour");
    assert_string_equal(s3_align_name(S3_ALIGN_DAY), "day");
    assert_string_equal(s3_align_name(S3_ALIGN_NONE), "none");
    assert_string_equal(s3_start_name(S3_START_LATEST), "latest");
    assert_string_equal(s3_start_name(S3_START_EARLIEST), "earliest");
    assert_string_equal(s3_crash_name(S3_CRASH_AFTER_COMMIT), "after_commit");
    assert_string_equal(s3_crash_name((enum s3_crash_at)99), "never");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_boot_line),
        cmocka_unit_test(test_embedded_switch),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_no_env_sink),
        cmocka_unit_test(test_required),
        cmocka_unit_test(test_partitions_refused),
        cmocka_unit_test(test_int_ranges),
        cmocka_unit_test(test_enums_and_aliases),
        cmocka_unit_test(test_endpoint),
        cmocka_unit_test(test_secret_never_shown),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_queues),
        cmocka_unit_test(test_kms),
        cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_boot_line),
        cmocka_unit_test(test_names_of_enums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
