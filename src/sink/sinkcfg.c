/* sinkcfg.c — the S3 sink's variables: one table row per variable, parsed by config.h's
 * cfg_parse so every refusal has the spec's boot form, plus the checks of the string values
 * (endpoint, bucket, prefix, names) that a table row cannot express.
 *
 * Enumerated rows with aliases (json = jsonl, zst = zstd, off = unset...) are resolved here
 * before cfg_parse sees the row, so the refusal of a bad value lists only the canonical
 * spellings. No value that could hold the secret key is ever printed: the secret's own
 * refusals name the variable without its value, and an endpoint with user information
 * (user:password@host) is refused without echoing it. */
#include "sinkcfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "core/uuid.h"
#include "json/json.h"
#include "sink/layout.h"

const char *s3_format_name(enum s3_format f)
{
    return f == S3_FORMAT_PARQUET ? "parquet" : "jsonl";
}

const char *s3_compression_name(enum s3_compression c)
{
    switch (c) {
    case S3_COMP_ZSTD: return "zstd";
    case S3_COMP_GZIP: return "gzip";
    case S3_COMP_NONE: return "none";
    case S3_COMP_SNAPPY: return "snappy";
    }
    return "none";
}

const char *s3_layout_name(enum s3_layout l)
{
    return l == S3_LAYOUT_PER_PARTITION ? "per-partition" : "merged";
}

const char *s3_align_name(enum s3_align a)
{
    switch (a) {
    case S3_ALIGN_HOUR: return "hour";
    case S3_ALIGN_DAY: return "day";
    case S3_ALIGN_NONE: return "none";
    }
    return "hour";
}

const char *s3_start_name(enum s3_start s)
{
    return s == S3_START_EARLIEST ? "earliest" : "latest";
}

static const char *const crash_names[] = {"never",      "after_intent",  "mid_upload",
                                          "after_upload", "before_commit", "after_commit", NULL};

const char *s3_crash_name(enum s3_crash_at c)
{
    if ((int)c < 0 || (size_t)c >= ARRAY_LEN(crash_names) - 1)
        return "never";
    return crash_names[c];
}

static const char *sse_name(enum s3_sse s)
{
    return s == S3_SSE_AES256 ? "AES256" : s == S3_SSE_KMS ? "aws:kms" : "off";
}

enum s3_compression s3_sink_object_codec(const s3_sink_config *c)
{
    return c->format == S3_FORMAT_PARQUET ? c->parquet_codec : c->compression;
}

/* ---- helpers ---------------------------------------------------------------------------- */

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Trims ASCII whitespace in place (a value copied from a file often ends in a newline). */
static void trim(char *s)
{
    if (!s)
        return;
    size_t n = strlen(s), a = 0;
    while (a < n && is_ws(s[a]))
        a++;
    while (n > a && is_ws(s[n - 1]))
        n--;
    memmove(s, s + a, n - a);
    s[n - a] = '\0';
}

/* A value as it may appear inside a one-line message: at most 200 bytes, control bytes as '?'. */
static void shown(char *dst, size_t cap, const char *v)
{
    size_t n = 0;
    for (; *v && n + 1 < cap && n < 200; v++)
        dst[n++] = ((unsigned char)*v < 0x20 || *v == 0x7f) ? '?' : *v;
    if (*v && n + 4 < cap) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}

/* "ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: <VAR>=<value> <problem>. <what>" */
static int refuse(qerr_detail *err, const char *var, const char *value, const char *problem, const char *what)
{
    char v[256];
    shown(v, sizeof v, value ? value : "");
    qerr_set(err, QERR_BAD_INPUT, NULL, "ERROR boot: FATAL: %s: %s=%s %s. %s", S3_SINK_CONTEXT, var, v, problem, what);
    return -1;
}

/* The same without the value, for the secret. */
static int refuse_hidden(qerr_detail *err, const char *var, const char *problem, const char *what)
{
    qerr_set(err, QERR_BAD_INPUT, NULL, "ERROR boot: FATAL: %s: %s %s. %s", S3_SINK_CONTEXT, var, problem, what);
    return -1;
}

static int name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

static int all_name_chars(const char *s)
{
    for (; *s; s++)
        if (!name_char(*s))
            return 0;
    return 1;
}

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static int has_space_or_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

/* An enumerated row's aliases: pairs (alias, canonical choice), NULL-terminated. */
typedef struct enum_aliases {
    const char *name; /* the row's variable */
    const char *const *pairs;
} enum_aliases;

/* Parses one row; an enumerated value spelled as an alias is resolved here first. */
static int parse_row(const cfg_opt *row, const char *const *aliases, void *target, config_getenv_fn get,
                     qerr_detail *err)
{
    if (row->type == CFG_ENUM && aliases) {
        const char *v = cfg_raw(row, get, NULL);
        if (v) {
            while (is_ws(*v))
                v++;
            size_t n = strlen(v);
            while (n && is_ws(v[n - 1]))
                n--;
            for (size_t i = 0; aliases[i]; i += 2) {
                if (!ascii_ieq(v, n, aliases[i]))
                    continue;
                for (int k = 0; row->choices[k]; k++)
                    if (strcmp(row->choices[k], aliases[i + 1]) == 0) {
                        *(int *)((char *)target + row->offset) = k;
                        return 0;
                    }
            }
        }
    }
    return cfg_parse(row, 1, target, S3_SINK_CONTEXT, get, err) == QERR_OK ? 0 : -1;
}

/* ---- the switch ------------------------------------------------------------------------ */

typedef struct embedded_raw {
    int64_t on;
} embedded_raw;

static const cfg_opt embedded_row = {"QUEEN_S3_EMBEDDED", NULL, CFG_BOOL, offsetof(embedded_raw, on), 0, 0, 1,
                                     NULL, NULL, 0, "It makes this node run the S3 sink"};

qerr s3_embedded_load(int *on, config_getenv_fn get, qerr_detail *err)
{
    embedded_raw r = {0};
    *on = 0;
    qerr e = cfg_parse(&embedded_row, 1, &r, "queen", get, err);
    if (e != QERR_OK)
        return e;
    *on = r.on != 0;
    return QERR_OK;
}

/* ---- node-wide knobs -------------------------------------------------------------------- */

typedef struct knobs_raw {
    int64_t memory_mb, fetch_concurrency, discovery_interval_ms, safe_guard_ms, lease_ttl_ms, multipart_threshold_mb,
        checkpoint_every, shutdown_grace_ms;
    char *instance;
    int crash_at;
} knobs_raw;

static const char *const crash_aliases[] = {"off", "never", "none", "never", NULL};
static const char *const partitions_what =
    "A static partition list cannot work: a window can only close against what discovery reports, so the sink "
    "finds every partition itself";
static const char *const instance_what = "It names this node in the sink's leases and presence rows";

#define KOFF(f) offsetof(knobs_raw, f)
static const cfg_opt knob_rows[] = {
    {"QUEEN_S3_MEMORY_MB", NULL, CFG_INT, KOFF(memory_mb), 512, 1, 1048576, NULL, NULL, 0,
     "It is how many megabytes of records this node's sinks buffer before the queue holding the most closes its "
     "window"},
    {"QUEEN_S3_FETCH_CONCURRENCY", NULL, CFG_INT, KOFF(fetch_concurrency), 4, 1, 256, NULL, NULL, 0,
     "It is how many log reads this node's sinks run at once"},
    {"QUEEN_S3_DISCOVERY_INTERVAL_MS", NULL, CFG_INT, KOFF(discovery_interval_ms), 2000, 10, 3600000, NULL, NULL, 0,
     "It is how often in milliseconds the sink asks which partitions of a queue changed"},
    {"QUEEN_S3_SAFE_GUARD_MS", NULL, CFG_INT, KOFF(safe_guard_ms), 5000, 0, 3600000, NULL, NULL, 0,
     "It is how far in milliseconds a window's end stays below safeTime"},
    {"QUEEN_S3_LEASE_TTL_MS", NULL, CFG_INT, KOFF(lease_ttl_ms), 30000, 1000, 3600000, NULL, NULL, 0,
     "It is how long in milliseconds a queue's lease lives without a refresh before another node may take it"},
    {"QUEEN_S3_MULTIPART_THRESHOLD_MB", NULL, CFG_INT, KOFF(multipart_threshold_mb), 64, 5, 5120, NULL, NULL, 0,
     "It is the object size in megabytes above which an upload goes in parts"},
    {"QUEEN_S3_CHECKPOINT_EVERY", NULL, CFG_INT, KOFF(checkpoint_every), 20, 1, 100000, NULL, NULL, 0,
     "It is how many committed windows of a queue pass between two checkpoints"},
    {"QUEEN_S3_SHUTDOWN_GRACE_MS", NULL, CFG_INT, KOFF(shutdown_grace_ms), 30000, 0, 3600000, NULL, NULL, 0,
     "It is how long in milliseconds SIGTERM waits for the sink to drain"},
    {"QUEEN_S3_INSTANCE", NULL, CFG_STRING, KOFF(instance), 0, 0, 0, NULL, NULL, 0, instance_what},
    {"QUEEN_S3_CRASH_AT", NULL, CFG_ENUM, KOFF(crash_at), 0, 0, 0, NULL, crash_names, 0,
     "It makes the sink exit at one point of the commit sequence, for tests"},
};
#undef KOFF

static int check_partitions(config_getenv_fn get, qerr_detail *err)
{
    static const cfg_opt row = {"QUEEN_S3_PARTITIONS", NULL, CFG_STRING, 0, 0, 0, 0, NULL, NULL, 0, NULL};
    const char *v = cfg_raw(&row, get, NULL);
    if (v)
        return refuse(err, "QUEEN_S3_PARTITIONS", v, "is not supported", partitions_what);
    return 0;
}

static int knobs_load(s3_node_knobs *k, config_getenv_fn get, const char *node_id, qerr_detail *err)
{
    memset(k, 0, sizeof *k);
    knobs_raw r;
    memset(&r, 0, sizeof r);
    int rc = -1;
    if (check_partitions(get, err) < 0)
        goto out;
    for (size_t i = 0; i < ARRAY_LEN(knob_rows); i++)
        if (parse_row(&knob_rows[i], knob_rows[i].type == CFG_ENUM ? crash_aliases : NULL, &r, get, err) <
            0)
            goto out;
    trim(r.instance);
    if (r.instance && r.instance[0]) {
        if (strlen(r.instance) > 128) {
            refuse(err, "QUEEN_S3_INSTANCE", r.instance, "is longer than 128 bytes", instance_what);
            goto out;
        }
        if (utf8_valid((const uint8_t *)r.instance, strlen(r.instance)) < 0) {
            char shown[48];
            snprintf(shown, sizeof shown, "<%zu bytes, not valid UTF-8>", strlen(r.instance));
            refuse(err, "QUEEN_S3_INSTANCE", shown, "is not valid UTF-8", instance_what);
            goto out;
        }
        for (const char *p = r.instance; *p; p++)
            if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '"' || *p == '\\') {
                refuse(err, "QUEEN_S3_INSTANCE", r.instance,
                       "may not contain spaces, quotes, backslashes or control characters", instance_what);
                goto out;
            }
        k->instance = r.instance;
        r.instance = NULL;
    } else if (node_id && node_id[0]) {
        k->instance = xstrdup(node_id);
    } else {
        char tmp[24];
        snprintf(tmp, sizeof tmp, "s3-%016llx", (unsigned long long)rand_u64());
        k->instance = xstrdup(tmp);
        k->instance_generated = 1;
    }
    k->memory_mb = r.memory_mb;
    k->fetch_concurrency = r.fetch_concurrency;
    k->discovery_interval_ms = r.discovery_interval_ms;
    k->safe_guard_ms = r.safe_guard_ms;
    k->lease_ttl_ms = r.lease_ttl_ms;
    k->multipart_threshold_mb = r.multipart_threshold_mb;
    k->checkpoint_every = r.checkpoint_every;
    k->shutdown_grace_ms = r.shutdown_grace_ms;
    k->crash_at = (enum s3_crash_at)r.crash_at;
    static const char *const leftovers[2] = {"QUEEN_S3_LISTEN", "QUEEN_S3_LOG_FORMAT"};
    for (int i = 0; i < 2; i++) {
        const cfg_opt row = {leftovers[i], NULL, CFG_STRING, 0, 0, 0, 0, NULL, NULL, 0, NULL};
        if (cfg_raw(&row, get, NULL))
            k->ignored[k->nignored++] = leftovers[i];
    }
    rc = 0;
out:
    free(r.instance);
    if (rc < 0)
        s3_node_knobs_free(k);
    return rc;
}

qerr s3_node_knobs_load(s3_node_knobs *k, config_getenv_fn get, const char *node_id, qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    d->text[0] = '\0';
    return knobs_load(k, get, node_id, d) < 0 ? QERR_BAD_INPUT : QERR_OK;
}

void s3_node_knobs_free(s3_node_knobs *k)
{
    free(k->instance);
    memset(k, 0, sizeof *k);
}

/* ---- per sink --------------------------------------------------------------------------- */

typedef struct sink_raw {
    char *queues, *endpoint, *region, *bucket, *access_key, *secret_key, *prefix, *sse_kms_key_id, *sink;
    int64_t path_style, target_mb, max_window_ms;
    int sse, format, compression, parquet_codec, layout, align, start;
} sink_raw;

static const char *const sse_choices[] = {"off", "AES256", "aws:kms", NULL};
static const char *const sse_aliases[] = {"none", "off", NULL};
static const char *const format_choices[] = {"jsonl", "parquet", NULL};
static const char *const format_aliases[] = {"json", "jsonl", "ndjson", "jsonl", NULL};
static const char *const comp_choices[] = {"zstd", "gzip", "none", NULL};
static const char *const comp_aliases[] = {"zst", "zstd", "gz", "gzip", "off", "none", NULL};
static const char *const pq_codec_choices[] = {"zstd", "snappy", NULL};
static const char *const layout_choices[] = {"merged", "per-partition", NULL};
static const char *const align_choices[] = {"hour", "day", "none", NULL};
static const char *const start_choices[] = {"latest", "earliest", NULL};

static const char *const queues_what =
    "It names the queues the sink mirrors, as a comma-separated list or * for every queue";
static const char *const endpoint_what =
    "It is the URL of the S3 service: http:// or https://, a host and an optional port, no path";
static const char *const region_what = "It is the region the S3 requests are signed for";
static const char *const bucket_what = "It is the bucket the sink writes into";
static const char *const access_what = "It is the access key id the S3 requests are signed with";
static const char *const secret_what = "It is the secret key the S3 requests are signed with";
static const char *const prefix_what = "It is the key prefix every object of the sink starts with";
static const char *const kms_what = "It is the KMS key the bucket encrypts the objects with under aws:kms";
static const char *const sink_what = "It names the sink in its KV documents, its manifests and the retention hold";

#define SOFF(f) offsetof(sink_raw, f)
/* In the order of sinkcfg.h; the first refusal wins. */
static const cfg_opt sink_rows[] = {
    {"QUEEN_S3_QUEUES", NULL, CFG_STRING, SOFF(queues), 0, 0, 0, NULL, NULL, 1, queues_what},
    {"QUEEN_S3_ENDPOINT", NULL, CFG_STRING, SOFF(endpoint), 0, 0, 0, NULL, NULL, 1, endpoint_what},
    {"QUEEN_S3_REGION", NULL, CFG_STRING, SOFF(region), 0, 0, 0, NULL, NULL, 1, region_what},
    {"QUEEN_S3_BUCKET", NULL, CFG_STRING, SOFF(bucket), 0, 0, 0, NULL, NULL, 1, bucket_what},
    {"QUEEN_S3_ACCESS_KEY", NULL, CFG_STRING, SOFF(access_key), 0, 0, 0, NULL, NULL, 1, access_what},
    {"QUEEN_S3_SECRET_KEY", NULL, CFG_STRING, SOFF(secret_key), 0, 0, 0, NULL, NULL, 1, secret_what},
    {"QUEEN_S3_PATH_STYLE", NULL, CFG_BOOL, SOFF(path_style), 0, 0, 1, NULL, NULL, 0,
     "It puts the bucket in the URL path instead of the host name"},
    {"QUEEN_S3_PREFIX", NULL, CFG_STRING, SOFF(prefix), 0, 0, 0, S3_DEFAULT_PREFIX, NULL, 0, prefix_what},
    {"QUEEN_S3_SSE", NULL, CFG_ENUM, SOFF(sse), S3_SSE_OFF, 0, 0, NULL, sse_choices, 0,
     "It is the server-side encryption every upload asks the bucket for"},
    {"QUEEN_S3_SSE_KMS_KEY_ID", NULL, CFG_STRING, SOFF(sse_kms_key_id), 0, 0, 0, NULL, NULL, 0, kms_what},
    {"QUEEN_S3_FORMAT", NULL, CFG_ENUM, SOFF(format), 0, 0, 0, NULL, format_choices, 0,
     "It is the file format of the data objects"},
    {"QUEEN_S3_COMPRESSION", NULL, CFG_ENUM, SOFF(compression), 0, 0, 0, NULL, comp_choices, 0,
     "It is how JSONL objects are compressed"},
    {"QUEEN_S3_PARQUET_CODEC", NULL, CFG_ENUM, SOFF(parquet_codec), 0, 0, 0, NULL, pq_codec_choices, 0,
     "It is how the pages of Parquet objects are compressed"},
    {"QUEEN_S3_LAYOUT", NULL, CFG_ENUM, SOFF(layout), 0, 0, 0, NULL, layout_choices, 0,
     "It is whether a window writes one object or one per partition"},
    {"QUEEN_S3_ALIGN", NULL, CFG_ENUM, SOFF(align), 0, 0, 0, NULL, align_choices, 0,
     "It is the time boundary no window crosses, which the dt= and hour= of its key come from"},
    {"QUEEN_S3_START", NULL, CFG_ENUM, SOFF(start), 0, 0, 0, NULL, start_choices, 0,
     "It is where the sink starts reading a queue it has never committed"},
    {"QUEEN_S3_TARGET_MB", NULL, CFG_INT, SOFF(target_mb), 128, 1, 5120, NULL, NULL, 0,
     "It is how many megabytes of uncompressed records close a window"},
    {"QUEEN_S3_MAX_WINDOW_MS", NULL, CFG_INT, SOFF(max_window_ms), 300000, 100, 86400000, NULL, NULL, 0,
     "It is how long a window may stay open; the lag SLO is about this plus the safe lag"},
    {"QUEEN_S3_SINK", NULL, CFG_STRING, SOFF(sink), 0, 0, 0, S3_DEFAULT_SINK, NULL, 0, sink_what},
};
#undef SOFF

static const char *const *row_aliases(const cfg_opt *row)
{
    if (strcmp(row->name, "QUEEN_S3_SSE") == 0)
        return sse_aliases;
    if (strcmp(row->name, "QUEEN_S3_FORMAT") == 0)
        return format_aliases;
    if (strcmp(row->name, "QUEEN_S3_COMPRESSION") == 0)
        return comp_aliases;
    return NULL;
}

/* Checks an endpoint (trimmed) and drops its trailing slashes. Returns the problem or NULL. */
static const char *endpoint_problem(char *e)
{
    size_t sl;
    if (strncasecmp(e, "http://", 7) == 0)
        sl = 7;
    else if (strncasecmp(e, "https://", 8) == 0)
        sl = 8;
    else
        return "is not an http:// or https:// URL";
    size_t n = strlen(e);
    while (n > sl && e[n - 1] == '/')
        e[--n] = '\0';
    const char *h = e + sl;
    if (!*h)
        return "has no host";
    if (strpbrk(h, "/?#"))
        return "has a path; the bucket goes in QUEEN_S3_BUCKET and the key prefix in QUEEN_S3_PREFIX";
    const char *port;
    if (*h == '[') {
        const char *close = strchr(h, ']');
        if (!close || close == h + 1)
            return "has an invalid IPv6 host";
        for (const char *p = h + 1; p < close; p++)
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F') || *p == ':' ||
                  *p == '.'))
                return "has an invalid IPv6 host";
        port = close + 1;
        if (*port && *port != ':')
            return "has an invalid host";
    } else {
        port = strchr(h, ':');
        if (!port)
            port = h + strlen(h);
        if (port == h)
            return "has no host";
        for (const char *p = h; p < port; p++)
            if (!name_char(*p))
                return "has an invalid host (letters, digits, '.', '-' and '_' only)";
    }
    if (*port == ':') {
        port++;
        size_t nd = strlen(port);
        long v = 0;
        if (nd == 0 || nd > 5)
            return "has a port outside 1..=65535";
        for (const char *p = port; *p; p++) {
            if (*p < '0' || *p > '9')
                return "has a port outside 1..=65535";
            v = v * 10 + (*p - '0');
        }
        if (v < 1 || v > 65535)
            return "has a port outside 1..=65535";
    }
    return NULL;
}

/* Trims slashes off both ends, then checks every segment. Returns the problem or NULL. */
static const char *prefix_problem(char *p)
{
    size_t n = strlen(p), a = 0;
    while (a < n && p[a] == '/')
        a++;
    while (n > a && p[n - 1] == '/')
        n--;
    memmove(p, p + a, n - a);
    p[n - a] = '\0';
    if (!p[0])
        return "has no segment";
    if (strlen(p) > 512)
        return "is longer than 512 bytes";
    if (has_control(p))
        return "may not contain control characters";
    for (const char *s = p;;) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 0)
            return "has an empty segment";
        if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return "has a . or .. segment";
        if (!e)
            break;
        s = e + 1;
    }
    return NULL;
}

/* Splits the queue list; "*" alone means every queue. */
static int parse_queues(s3_sink_config *c, const char *v, qerr_detail *err)
{
    if (strcmp(v, "*") == 0) {
        c->queues_all = 1;
        return 0;
    }
    const char *s = v;
    for (;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        const char *a = s;
        while (len && is_ws(*a)) {
            a++;
            len--;
        }
        while (len && is_ws(a[len - 1]))
            len--;
        if (len == 0)
            return refuse(err, "QUEEN_S3_QUEUES", v, "has an empty queue name", queues_what);
        if (len == 1 && a[0] == '*')
            return refuse(err, "QUEEN_S3_QUEUES", v, "mixes * with queue names", queues_what);
        if (len > 255)
            return refuse(err, "QUEEN_S3_QUEUES", v, "names a queue longer than 255 bytes", queues_what);
        int dup = 0;
        for (int i = 0; i < c->nqueues && !dup; i++)
            dup = strlen(c->queues[i]) == len && memcmp(c->queues[i], a, len) == 0;
        if (!dup) {
            c->queues = xrealloc(c->queues, sizeof(char *) * (size_t)(c->nqueues + 1));
            c->queues[c->nqueues++] = xstrndup(a, len);
        }
        if (!e)
            break;
        s = e + 1;
    }
    return 0;
}

static int validate(s3_sink_config *c, sink_raw *r, qerr_detail *err)
{
    if (parse_queues(c, r->queues, err) < 0)
        return -1;
    /* an endpoint with user:password@ could carry the secret: never echo it */
    if (strchr(r->endpoint, '@'))
        return refuse_hidden(err, "QUEEN_S3_ENDPOINT",
                             "carries user information (not shown); the keys go in QUEEN_S3_ACCESS_KEY and "
                             "QUEEN_S3_SECRET_KEY",
                             endpoint_what);
    /* the checks trim slashes in place; a refusal shows the value as given */
    char *given = xstrdup(r->endpoint);
    const char *p = endpoint_problem(r->endpoint);
    if (p)
        refuse(err, "QUEEN_S3_ENDPOINT", given, p, endpoint_what);
    free(given);
    if (p)
        return -1;
    if (strlen(r->region) > 64 || !all_name_chars(r->region))
        return refuse(err, "QUEEN_S3_REGION", r->region,
                      "is not 1 to 64 letters, digits, '.', '-' or '_'", region_what);
    if (strlen(r->bucket) > 255 || !all_name_chars(r->bucket))
        return refuse(err, "QUEEN_S3_BUCKET", r->bucket,
                      "is not a bucket name (letters, digits, '.', '-' and '_'; no '/', no space)", bucket_what);
    if (strlen(r->access_key) > 256 || has_space_or_control(r->access_key))
        return refuse(err, "QUEEN_S3_ACCESS_KEY", r->access_key,
                      "is not 1 to 256 bytes without spaces or control characters", access_what);
    if (strlen(r->secret_key) > 4096)
        return refuse_hidden(err, "QUEEN_S3_SECRET_KEY", "is longer than 4096 bytes (not shown)",
                             secret_what);
    if (has_space_or_control(r->secret_key))
        return refuse_hidden(err, "QUEEN_S3_SECRET_KEY",
                             "contains spaces or control characters (not shown)", secret_what);
    given = xstrdup(r->prefix);
    p = prefix_problem(r->prefix);
    if (p)
        refuse(err, "QUEEN_S3_PREFIX", given, p, prefix_what);
    free(given);
    if (p)
        return -1;
    if (r->sse_kms_key_id) {
        if (r->sse != S3_SSE_KMS)
            return refuse(err, "QUEEN_S3_SSE_KMS_KEY_ID", r->sse_kms_key_id,
                          "is set while QUEEN_S3_SSE is not aws:kms", kms_what);
        if (strlen(r->sse_kms_key_id) > 2048 || has_space_or_control(r->sse_kms_key_id))
            return refuse(err, "QUEEN_S3_SSE_KMS_KEY_ID", r->sse_kms_key_id,
                          "is not 1 to 2048 bytes without spaces or control characters", kms_what);
    }
    if (strlen(r->sink) > S3_SINK_NAME_MAX || !r->sink[0] || !all_name_chars(r->sink))
        return refuse(err, "QUEEN_S3_SINK", r->sink, "is not 1 to 64 letters, digits, '.', '-' or '_'",
                      sink_what);
    return 0;
}

static int from_env(s3_sink_config *c, const uint8_t tenant[16], config_getenv_fn get, qerr_detail *err)
{
    memset(c, 0, sizeof *c);
    memcpy(c->tenant, tenant, 16);
    uuid u;
    memcpy(u.b, tenant, 16);
    uuid_format(&u, c->tenant_text);
    if (check_partitions(get, err) < 0)
        return -1;
    int any = 0;
    for (size_t i = 0; i < ARRAY_LEN(sink_rows) && !any; i++)
        any = cfg_raw(&sink_rows[i], get, NULL) != NULL;
    if (!any)
        return 0;
    sink_raw r;
    memset(&r, 0, sizeof r);
    int rc = -1;
    for (size_t i = 0; i < ARRAY_LEN(sink_rows); i++)
        if (parse_row(&sink_rows[i], row_aliases(&sink_rows[i]), &r, get, err) < 0)
            goto out;
    char **strs[] = {&r.queues, &r.endpoint, &r.region,         &r.bucket, &r.access_key,
                     &r.secret_key, &r.prefix, &r.sse_kms_key_id, &r.sink};
    for (size_t i = 0; i < ARRAY_LEN(strs); i++)
        trim(*strs[i]);
    if (validate(c, &r, err) < 0)
        goto out;
    c->sink = r.sink;
    c->endpoint = r.endpoint;
    c->region = r.region;
    c->bucket = r.bucket;
    c->prefix = r.prefix;
    c->access_key = r.access_key;
    c->secret_key = r.secret_key;
    c->sse_kms_key_id = r.sse_kms_key_id;
    r.sink = r.endpoint = r.region = r.bucket = r.prefix = r.access_key = r.secret_key = r.sse_kms_key_id = NULL;
    c->path_style = (int)r.path_style;
    c->sse = (enum s3_sse)r.sse;
    c->format = (enum s3_format)r.format;
    c->compression = (enum s3_compression)r.compression;
    c->parquet_codec = r.parquet_codec == 1 ? S3_COMP_SNAPPY : S3_COMP_ZSTD;
    c->layout = (enum s3_layout)r.layout;
    c->align = (enum s3_align)r.align;
    c->start = (enum s3_start)r.start;
    c->target_mb = r.target_mb;
    c->max_window_ms = r.max_window_ms;
    rc = 1;
out:
    free(r.queues);
    free(r.endpoint);
    free(r.region);
    free(r.bucket);
    free(r.access_key);
    if (r.secret_key) /* wipe what we drop */
        memset(r.secret_key, 0, strlen(r.secret_key));
    free(r.secret_key);
    free(r.prefix);
    free(r.sse_kms_key_id);
    free(r.sink);
    if (rc < 0)
        s3_sink_config_free(c);
    return rc;
}

qerr s3_sink_config_from_env(s3_sink_config *c, const uint8_t tenant[16], config_getenv_fn get, int *configured,
                             qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    d->text[0] = '\0';
    int rc = from_env(c, tenant, get, d);
    *configured = rc > 0;
    return rc < 0 ? QERR_BAD_INPUT : QERR_OK;
}

void s3_sink_config_free(s3_sink_config *c)
{
    free(c->sink);
    for (int i = 0; i < c->nqueues; i++)
        free(c->queues[i]);
    free(c->queues);
    free(c->endpoint);
    free(c->region);
    free(c->bucket);
    free(c->prefix);
    free(c->access_key);
    if (c->secret_key)
        memset(c->secret_key, 0, strlen(c->secret_key));
    free(c->secret_key);
    free(c->sse_kms_key_id);
    memset(c, 0, sizeof *c);
}

void s3_sink_boot_line(const s3_sink_config *c, const s3_node_knobs *k, buf *out)
{
    buf_printf(out, "queen-s3 %s tenant=%s sink=%s instance=%s queues=", S3_WRITER_VERSION, c->tenant_text,
               c->sink ? c->sink : "", k->instance ? k->instance : "");
    if (c->queues_all)
        buf_putc(out, '*');
    for (int i = 0; i < c->nqueues; i++) {
        if (i)
            buf_putc(out, ',');
        /* percent-encoded as in the keys, so the line stays one space-separated list */
        s3_name_escape(out, c->queues[i], strlen(c->queues[i]));
    }
    buf_printf(out, " s3=%s bucket=%s prefix=%s region=%s addressing=%s access_key=%s sse=%s", c->endpoint,
               c->bucket, c->prefix, c->region, c->path_style ? "path-style" : "virtual-host", c->access_key,
               sse_name(c->sse));
    if (c->sse == S3_SSE_KMS && c->sse_kms_key_id) {
        size_t n = strlen(c->sse_kms_key_id);
        buf_printf(out, " sse_kms_key_id=...%s", c->sse_kms_key_id + (n > 4 ? n - 4 : 0));
    }
    buf_printf(out,
               " format=%s compression=%s parquet_codec=%s layout=%s align=%s target_mb=%lld max_window_ms=%lld "
               "start=%s checkpoint_every=%lld memory_mb=%lld fetch_concurrency=%lld discovery_interval_ms=%lld "
               "safe_guard_ms=%lld lease_ttl_ms=%lld multipart_threshold_mb=%lld shutdown_grace_ms=%lld "
               "crash_at=%s",
               s3_format_name(c->format), s3_compression_name(c->compression), s3_compression_name(c->parquet_codec),
               s3_layout_name(c->layout), s3_align_name(c->align), (long long)c->target_mb,
               (long long)c->max_window_ms, s3_start_name(c->start), (long long)k->checkpoint_every,
               (long long)k->memory_mb, (long long)k->fetch_concurrency, (long long)k->discovery_interval_ms,
               (long long)k->safe_guard_ms, (long long)k->lease_ttl_ms, (long long)k->multipart_threshold_mb,
               (long long)k->shutdown_grace_ms, s3_crash_name(k->crash_at));
}
