/* fuzz_sinkcfg — the sink's node knobs and environment sink read from an environment made
 * from the input.
 *
 * Input: lines "NAME=VALUE" separated by '\n' (a line without '=' is ignored); the injected
 * getenv answers from them (first match wins). The secret key's value is given a marker
 * prefix, so it can be recognised in any line. Checks: no crash; a refusal is one line in the
 * boot form that never holds the marker (unless another variable's value holds it too); an
 * accepted sink satisfies every documented rule (ranges, endpoint, prefix, names, queues),
 * and its start line is one line without the secret. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_sinkcfg: check failed at line %d: %s\n", __LINE__, #c);                    \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

#define MAX_VARS 64
#define MARK "Zq9XsEcReTmArK7"
#define FATAL "ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: "

static char *g_names[MAX_VARS];
static char *g_values[MAX_VARS];
static size_t g_n;
static char *g_secret; /* the marked secret value, owned */

static const char *fuzz_getenv(const char *name)
{
    for (size_t i = 0; i < g_n; i++)
        if (strcmp(g_names[i], name) == 0)
            return strcmp(name, "QUEEN_S3_SECRET_KEY") == 0 ? g_secret : g_values[i];
    return NULL;
}

/* Whether a variable other than the secret carries the marker (then it may be shown). */
static int marker_elsewhere(void)
{
    for (size_t i = 0; i < g_n; i++)
        if (strcmp(g_names[i], "QUEEN_S3_SECRET_KEY") != 0 && strstr(g_values[i], MARK))
            return 1;
    return 0;
}

static int name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

static void check_refusal(const char *err)
{
    CHECK(strncmp(err, FATAL, strlen(FATAL)) == 0);
    CHECK(strchr(err, '\n') == NULL);
    if (!marker_elsewhere())
        CHECK(strstr(err, MARK) == NULL);
}

static void check_sink(const s3_sink_config *c, const s3_node_knobs *k)
{
    CHECK(c->sink && c->endpoint && c->region && c->bucket && c->prefix && c->access_key && c->secret_key);
    CHECK(strncmp(c->secret_key, MARK, strlen(MARK)) == 0);
    CHECK(c->queues_all ? c->nqueues == 0 : c->nqueues >= 1);
    for (int i = 0; i < c->nqueues; i++) {
        size_t n = strlen(c->queues[i]);
        CHECK(n >= 1 && n <= 255);
        CHECK(c->queues[i][0] != ' ' && c->queues[i][n - 1] != ' ');
        for (int j = 0; j < i; j++)
            CHECK(strcmp(c->queues[i], c->queues[j]) != 0);
    }
    CHECK(strncasecmp(c->endpoint, "http://", 7) == 0 || strncasecmp(c->endpoint, "https://", 8) == 0);
    const char *host = strstr(c->endpoint, "//") + 2;
    CHECK(*host && !strpbrk(host, "/?#@ "));
    size_t n = strlen(c->prefix);
    CHECK(n >= 1 && c->prefix[0] != '/' && c->prefix[n - 1] != '/' && !strstr(c->prefix, "//"));
    for (const char *s = c->prefix;;) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        CHECK(!(len == 1 && s[0] == '.') && !(len == 2 && s[0] == '.' && s[1] == '.'));
        if (!e)
            break;
        s = e + 1;
    }
    n = strlen(c->sink);
    CHECK(n >= 1 && n <= S3_SINK_NAME_MAX);
    for (const char *s = c->sink; *s; s++)
        CHECK(name_char(*s));
    CHECK(c->bucket[0]);
    for (const char *s = c->bucket; *s; s++)
        CHECK(name_char(*s));
    CHECK(c->target_mb >= 1 && c->target_mb <= 5120);
    CHECK(c->max_window_ms >= 100 && c->max_window_ms <= 86400000);
    CHECK(c->format == S3_FORMAT_JSONL || c->format == S3_FORMAT_PARQUET);
    CHECK(c->compression == S3_COMP_ZSTD || c->compression == S3_COMP_GZIP || c->compression == S3_COMP_NONE);
    CHECK(c->parquet_codec == S3_COMP_ZSTD || c->parquet_codec == S3_COMP_SNAPPY);
    CHECK(c->sse_kms_key_id == NULL || c->sse == S3_SSE_KMS);
    CHECK(c->path_style == 0 || c->path_style == 1);
    buf b;
    buf_init(&b, 0);
    s3_sink_boot_line(c, k, &b);
    const char *line = buf_cstr(&b);
    CHECK(strncmp(line, "queen-s3 2.0.0 tenant=", 22) == 0);
    CHECK(strchr(line, '\n') == NULL);
    if (!marker_elsewhere())
        CHECK(strstr(line, MARK) == NULL);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    copy[size] = '\0';
    g_n = 0;
    g_secret = NULL;
    char *line = copy;
    while (line && g_n < MAX_VARS) {
        char *nl = memchr(line, '\n', (size_t)(copy + size - line));
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            g_names[g_n] = line;
            g_values[g_n] = eq + 1;
            if (!g_secret && strcmp(line, "QUEEN_S3_SECRET_KEY") == 0) {
                g_secret = malloc(strlen(MARK) + strlen(eq + 1) + 1);
                strcpy(g_secret, MARK);
                strcat(g_secret, eq + 1);
            }
            g_n++;
        }
        line = nl ? nl + 1 : NULL;
    }

    qerr_detail d;
    const char *err = d.text;
    /* the switch: on or off, or one line in the broker's own context */
    int on = -1;
    memset(&d, 0, sizeof d);
    qerr oe = s3_embedded_load(&on, fuzz_getenv, &d);
    CHECK(oe == QERR_OK || oe == QERR_BAD_INPUT);
    if (oe == QERR_OK) {
        CHECK(on == 0 || on == 1);
    } else {
        CHECK(on == 0);
        CHECK(strncmp(err, "ERROR boot: FATAL: queen: QUEEN_S3_EMBEDDED=", 44) == 0);
        CHECK(strchr(err, '\n') == NULL);
    }
    s3_node_knobs k;
    memset(&d, 0, sizeof d);
    qerr ke = s3_node_knobs_load(&k, fuzz_getenv, size % 3 ? "node-1" : NULL, &d);
    int kr = ke == QERR_OK ? 0 : -1;
    if (kr != 0) {
        CHECK(ke == QERR_BAD_INPUT);
        check_refusal(err);
        CHECK(k.instance == NULL);
    } else {
        CHECK(k.instance && k.instance[0]);
        CHECK(k.memory_mb >= 1 && k.memory_mb <= 1048576);
        CHECK(k.fetch_concurrency >= 1 && k.fetch_concurrency <= 256);
        CHECK(k.discovery_interval_ms >= 10 && k.discovery_interval_ms <= 3600000);
        CHECK(k.safe_guard_ms >= 0 && k.safe_guard_ms <= 3600000);
        CHECK(k.lease_ttl_ms >= 1000 && k.lease_ttl_ms <= 3600000);
        CHECK(k.multipart_threshold_mb >= 5 && k.multipart_threshold_mb <= 5120);
        CHECK(k.checkpoint_every >= 1 && k.checkpoint_every <= 100000);
        CHECK(k.shutdown_grace_ms >= 0 && k.shutdown_grace_ms <= 3600000);
        CHECK((int)k.crash_at >= S3_CRASH_NEVER && k.crash_at <= S3_CRASH_AFTER_COMMIT);
        CHECK(k.nignored >= 0 && k.nignored <= 2);
    }
    static const uint8_t tenant[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    s3_sink_config c;
    memset(&d, 0, sizeof d);
    int configured = -1;
    qerr se = s3_sink_config_from_env(&c, tenant, fuzz_getenv, &configured, &d);
    CHECK(se == QERR_OK || se == QERR_BAD_INPUT);
    CHECK(configured == 0 || configured == 1);
    CHECK(se == QERR_OK || configured == 0);
    int r = se != QERR_OK ? -1 : configured;
    if (r == -1) {
        check_refusal(err);
        CHECK(c.sink == NULL && c.secret_key == NULL);
    } else if (r == 1) {
        if (kr == 0)
            check_sink(&c, &k);
    } else {
        CHECK(r == 0 && c.sink == NULL);
    }
    s3_sink_config_free(&c);
    if (kr == 0)
        s3_node_knobs_free(&k);
    free(g_secret);
    free(copy);
    return 0;
}
