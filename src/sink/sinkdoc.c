/* sinkdoc.c — see sinkdoc.h. The document's fields are handed to the environment loader
 * (s3_sink_config_from_env) through a getenv that answers from the document, so a tenant's sink
 * is checked by exactly the rules and ranges of the default tenant's; its boot-form sentences
 * are turned into field-named ones. */
#include "sinkdoc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "json/json.h"

typedef struct doc_field {
    const char *field;
    const char *env;
} doc_field;

/* per-sink settings, in the order the canonical settings list them */
static const doc_field FIELDS[] = {
    {"queues", "QUEEN_S3_QUEUES"},           {"endpoint", "QUEEN_S3_ENDPOINT"},
    {"region", "QUEEN_S3_REGION"},           {"bucket", "QUEEN_S3_BUCKET"},
    {"accessKey", "QUEEN_S3_ACCESS_KEY"},    {"pathStyle", "QUEEN_S3_PATH_STYLE"},
    {"prefix", "QUEEN_S3_PREFIX"},           {"sse", "QUEEN_S3_SSE"},
    {"sseKmsKeyId", "QUEEN_S3_SSE_KMS_KEY_ID"}, {"format", "QUEEN_S3_FORMAT"},
    {"compression", "QUEEN_S3_COMPRESSION"}, {"parquetCodec", "QUEEN_S3_PARQUET_CODEC"},
    {"layout", "QUEEN_S3_LAYOUT"},           {"align", "QUEEN_S3_ALIGN"},
    {"start", "QUEEN_S3_START"},             {"targetMb", "QUEEN_S3_TARGET_MB"},
    {"maxWindowMs", "QUEEN_S3_MAX_WINDOW_MS"}, {"sink", "QUEEN_S3_SINK"},
};
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

static const char *const NODE_WIDE[] = {
    "memoryMb",    "fetchConcurrency", "discoveryIntervalMs", "safeGuardMs", "leaseTtlMs", "multipartThresholdMb",
    "checkpointEvery", "shutdownGraceMs", "instance",         "crashAt",     "partitions", "listen",
    "logFormat",   NULL,
};

/* the loader's getenv answers from these (one document at a time per thread) */
static _Thread_local const char *t_values[NFIELDS + 1]; /* + the secret */

static const char *doc_getenv(const char *name)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(name, FIELDS[i].env) == 0)
            return t_values[i];
    if (strcmp(name, "QUEEN_S3_SECRET_KEY") == 0)
        return t_values[NFIELDS];
    return NULL;
}

static int ieq_contains(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (strncasecmp(s + i, word, w) == 0)
            return 1;
    return 0;
}

static int secret_like(const char *k, size_t n)
{
    static const char *const words[] = {"secret", "password", "passwd", "token", "credential", "privatekey",
                                        "private_key", "sessionkey", "session_key", NULL};
    for (const char *const *w = words; *w; w++)
        if (ieq_contains(k, n, *w))
            return 1;
    return 0;
}

static void refuse(s3_doc_refusal *why, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void refuse(s3_doc_refusal *why, const char *code, const char *field, const char *fmt, ...)
{
    why->code = code;
    snprintf(why->field, sizeof why->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->msg, sizeof why->msg, fmt, ap);
    va_end(ap);
}

/* The loader's boot line, as a sentence about fields: the prefix dropped, every variable
 * replaced by its field (longest names first, so QUEEN_S3_SSE_KMS_KEY_ID is not read as
 * QUEEN_S3_SSE), and the first field named is the one at fault. */
static void translate(const char *line, s3_doc_refusal *why)
{
    static const char PREFIX[] = "ERROR boot: FATAL: " S3_SINK_CONTEXT ": ";
    const char *s = line;
    if (strncmp(s, PREFIX, sizeof PREFIX - 1) == 0)
        s += sizeof PREFIX - 1;
    buf out;
    buf_init(&out, 0);
    const char *first = NULL;
    while (*s) {
        const doc_field *best = NULL;
        size_t blen = 0;
        if (strncmp(s, "QUEEN_S3_", 9) == 0) {
            for (size_t i = 0; i < NFIELDS; i++) {
                size_t l = strlen(FIELDS[i].env);
                if (l > blen && strncmp(s, FIELDS[i].env, l) == 0 && !(s[l] == '_' || (s[l] >= 'A' && s[l] <= 'Z'))) {
                    best = &FIELDS[i];
                    blen = l;
                }
            }
            if (!best && strncmp(s, "QUEEN_S3_SECRET_KEY", 19) == 0) {
                static const doc_field secret = {"secretKey", "QUEEN_S3_SECRET_KEY"};
                best = &secret;
                blen = 19;
            }
        }
        if (best) {
            buf_puts(&out, best->field);
            if (!first)
                first = best->field;
            s += blen;
        } else {
            buf_putc(&out, *s++);
        }
    }
    why->code = "s3_invalid_setting";
    snprintf(why->field, sizeof why->field, "%s", first ? first : "");
    snprintf(why->msg, sizeof why->msg, "%s", buf_cstr(&out));
    buf_free(&out);
}

void s3_sink_doc_free(s3_sink_doc *d)
{
    s3_sink_config_free(&d->cfg);
    buf_free(&d->settings);
}

int s3_sink_doc_parse(const char *json, size_t len, const uint8_t tenant[16], int keep_secret, s3_sink_doc *out,
                      s3_doc_refusal *why)
{
    memset(out, 0, sizeof *out);
    buf_init(&out->settings, 0);
    out->enabled = 1;
    memset(why, 0, sizeof *why);
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts o = {.max_tokens = 16384, .token_depth = 3};
    if (json_parse(&d, json, len, &o) < 0) {
        refuse(why, "invalid_request", NULL, "the settings are not JSON: %s", d.err);
        json_doc_free(&d);
        return -1;
    }
    int rc = -1;
    buf vals[NFIELDS];
    int given[NFIELDS] = {0};
    for (size_t i = 0; i < NFIELDS; i++)
        buf_init(&vals[i], 0);
    buf secret, key;
    buf_init(&secret, 0);
    buf_init(&key, 0);
    size_t secret_raw = 0;
    if (json_type_of(&d, 0) != JSON_OBJECT) {
        refuse(why, "invalid_request", NULL, "the settings must be a JSON object");
        goto out;
    }
    uint32_t cnt = d.toks[0].count;
    int k = json_first(&d, 0);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(&d, k + 1)) {
        int v = k + 1;
        buf_reset(&key);
        if (json_str_decode(&d, k, &key) < 0 || memchr(key.data, 0, key.len)) {
            refuse(why, "unknown_field", NULL, "a field name holds a NUL character");
            goto out;
        }
        const char *kn = buf_cstr(&key);
        size_t kl = key.len;
        int t = json_type_of(&d, v);
        if (strcmp(kn, "secretKey") == 0) {
            if (t != JSON_STRING || json_str_decode(&d, v, &secret) < 0 || secret.len == 0 ||
                secret.len > S3_DOC_MAX_SECRET || memchr(secret.data, 0, secret.len)) {
                refuse(why, "s3_invalid_secret", "secretKey",
                       "secretKey must be a string of 1..=%d bytes without NUL characters", S3_DOC_MAX_SECRET);
                goto out;
            }
            secret_raw = d.toks[v].end - d.toks[v].start;
            out->has_secret = 1;
            continue;
        }
        if (strcmp(kn, "enabled") == 0) {
            if (t != JSON_TRUE && t != JSON_FALSE) {
                refuse(why, "s3_invalid_setting", "enabled", "enabled must be true or false");
                goto out;
            }
            out->enabled = t == JSON_TRUE;
            continue;
        }
        size_t f = NFIELDS;
        for (size_t j = 0; j < NFIELDS; j++)
            if (strcmp(kn, FIELDS[j].field) == 0)
                f = j;
        if (f == NFIELDS) {
            int nw = 0;
            for (const char *const *p = NODE_WIDE; *p; p++)
                if (strcmp(kn, *p) == 0)
                    nw = 1;
            if (nw)
                refuse(why, "s3_node_wide_setting", kn,
                       "%.64s is a node-wide setting: it comes from each node's environment, never from a tenant's "
                       "document", kn);
            else if (secret_like(kn, kl))
                refuse(why, "s3_secret_field", kn,
                       "%.64s is named like a secret: the one secret a tenant's sink holds is secretKey", kn);
            else
                refuse(why, "unknown_field", kn, "Unknown field: %.64s", kn);
            goto out;
        }
        if (t == JSON_NULL)
            continue;
        buf *b = &vals[f];
        buf_reset(b);
        if (t == JSON_STRING) {
            if (json_str_decode(&d, v, b) < 0 || memchr(b->data, 0, b->len) || b->len == 0) {
                refuse(why, "s3_invalid_setting", kn, "%s must be a non-empty string without NUL characters", kn);
                goto out;
            }
        } else if (t == JSON_NUMBER || t == JSON_TRUE || t == JSON_FALSE) {
            size_t rl;
            const char *raw = json_raw(&d, v, &rl);
            buf_append(b, raw, rl);
        } else if (t == JSON_ARRAY && f == 0) {
            /* queues: ["a", "b"] */
            uint32_t n = d.toks[v].count;
            int e = json_first(&d, v);
            if (n == 0) {
                refuse(why, "s3_invalid_setting", "queues", "queues must name at least one queue, or be \"*\"");
                goto out;
            }
            for (uint32_t q = 0; q < n; q++, e = json_next(&d, e)) {
                buf one;
                buf_init(&one, 0);
                int bad = json_type_of(&d, e) != JSON_STRING || json_str_decode(&d, e, &one) < 0 || one.len == 0 ||
                          memchr(one.data, ',', one.len) || memchr(one.data, 0, one.len);
                if (!bad) {
                    if (q)
                        buf_putc(b, ',');
                    buf_append(b, one.data, one.len);
                }
                buf_free(&one);
                if (bad) {
                    refuse(why, "s3_invalid_setting", "queues",
                           "queues[%u] must be a non-empty queue name without ','", q);
                    goto out;
                }
            }
        } else {
            refuse(why, "s3_invalid_setting", kn, "%s must be a %s", kn,
                   f == 0 ? "string or an array of strings" : "string, number or boolean");
            goto out;
        }
        given[f] = 1;
    }
    if (len - secret_raw > S3_DOC_MAX_SETTINGS) {
        refuse(why, "s3_too_large", NULL, "the settings are %zu bytes, past the limit of %d", len - secret_raw,
               S3_DOC_MAX_SETTINGS);
        goto out;
    }
    if (!out->has_secret && !keep_secret) {
        refuse(why, "s3_invalid_secret", "secretKey", "secretKey is required the first time");
        goto out;
    }
    for (size_t i = 0; i < NFIELDS; i++)
        t_values[i] = given[i] ? buf_cstr(&vals[i]) : NULL;
    /* a kept secret is the caller's to fill in: the loader needs a value to check the rest */
    t_values[NFIELDS] = out->has_secret ? buf_cstr(&secret) : "kept";
    qerr_detail lerr;
    int configured = 0;
    qerr le = s3_sink_config_from_env(&out->cfg, tenant, doc_getenv, &configured, &lerr);
    for (size_t i = 0; i <= NFIELDS; i++)
        t_values[i] = NULL;
    if (le != QERR_OK) {
        char err[700]; /* the refusal as it always was: the loader's line cut at 699 bytes */
        size_t n = strnlen(lerr.text, sizeof err - 1);
        memcpy(err, lerr.text, n);
        err[n] = '\0';
        translate(err, why);
        memset(err, 0, sizeof err);
        memset(&lerr, 0, sizeof lerr);
        goto out;
    }
    if (!configured) {
        refuse(why, "s3_invalid_setting", "queues", "queues is required: the queues the sink mirrors, or \"*\"");
        goto out;
    }
    if (!out->has_secret) {
        free(out->cfg.secret_key);
        out->cfg.secret_key = NULL;
    }
    /* the canonical settings: the given fields as their JSON values, in the fixed order */
    buf_putc(&out->settings, '{');
    int first = 1;
    for (size_t i = 0; i < NFIELDS; i++) {
        if (!given[i])
            continue;
        if (!first)
            buf_putc(&out->settings, ',');
        first = 0;
        jw_key(&out->settings, FIELDS[i].field);
        int v = json_get(&d, 0, FIELDS[i].field);
        size_t rl;
        const char *raw = json_raw(&d, v, &rl);
        buf_append(&out->settings, raw, rl);
    }
    buf_putc(&out->settings, '}');
    rc = 0;
out:
    if (rc < 0)
        s3_sink_doc_free(out);
    for (size_t i = 0; i < NFIELDS; i++)
        buf_free(&vals[i]);
    if (secret.data)
        memset(secret.data, 0, secret.cap);
    buf_free(&secret);
    buf_free(&key);
    json_doc_free(&d);
    return rc;
}
