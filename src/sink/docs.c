/* docs.c — the sink's documents as JSON (forms in docs.h). Writers emit a fixed field order;
 * parsers use the project's strict JSON reader, accept any order, skip unknown fields, and
 * name the first field they need and cannot use: "<document>: <field> ...". */
#include "docs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "json/json.h"

/* A copy of n bytes that may hold NULs, NUL-terminated. */
static char *dup_bytes(const char *p, size_t n)
{
    char *s = xmalloc(n + 1);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct rd {
    json_doc d;
    const char *doc; /* "lease", "intent", ... for messages */
    char *err;
    size_t errlen;
} rd;

static int rd_fail(rd *r, const char *field, const char *problem)
{
    snprintf(r->err, r->errlen, "%s: %s %s", r->doc, field, problem);
    return -1;
}

static int rd_open(rd *r, const char *doc, const char *json, size_t n, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->doc = doc;
    r->err = err;
    r->errlen = errlen;
    if (json_parse(&r->d, json ? json : "", json ? n : 0, NULL) < 0) {
        snprintf(err, errlen, "%s: not JSON: %s", doc, r->d.err);
        return -1;
    }
    if (json_type_of(&r->d, 0) != JSON_OBJECT) {
        snprintf(err, errlen, "%s: not a JSON object", doc);
        return -1;
    }
    return 0;
}

static void rd_close(rd *r)
{
    json_doc_free(&r->d);
}

/* The value of key in obj; null counts as absent. -1 and err when required and absent. */
static int field(rd *r, int obj, const char *key, int required)
{
    int t = json_get(&r->d, obj, key);
    if (json_type_of(&r->d, t) == JSON_NULL)
        t = -1;
    if (t < 0 && required)
        rd_fail(r, key, "is missing");
    return t;
}

/* An integer >= lo. Returns 1 read, 0 absent (optional), -1 err. */
static int get_i64(rd *r, int obj, const char *key, int required, int64_t lo, int64_t *out)
{
    int t = field(r, obj, key, required);
    if (t < 0)
        return required ? -1 : 0;
    int64_t v;
    if (json_int64(&r->d, t, &v) < 0)
        return rd_fail(r, key, "is not an integer");
    if (v < lo)
        return rd_fail(r, key, lo == 0 ? "is negative" : "is out of range");
    *out = v;
    return 1;
}

static int get_u64(rd *r, int obj, const char *key, int required, uint64_t *out)
{
    int64_t v = 0;
    int rc = get_i64(r, obj, key, required, 0, &v);
    if (rc > 0)
        *out = (uint64_t)v;
    return rc;
}

/* A string decoded into out (cleared first), at most max bytes, no NUL. */
static int get_str(rd *r, int obj, const char *key, int required, size_t max, buf *out)
{
    buf_reset(out);
    int t = field(r, obj, key, required);
    if (t < 0)
        return required ? -1 : 0;
    if (json_type_of(&r->d, t) != JSON_STRING)
        return rd_fail(r, key, "is not a string");
    if (json_str_decoded_len(&r->d, t) > max)
        return rd_fail(r, key, "is too long");
    json_str_decode(&r->d, t, out);
    if (memchr(out->data ? out->data : "", '\0', out->len))
        return rd_fail(r, key, "holds a NUL character");
    buf_cstr(out);
    return 1;
}

/* A string into a fixed array of cap bytes (cap - 1 at most). */
static int get_fixed(rd *r, int obj, const char *key, int required, char *dst, size_t cap)
{
    buf b;
    buf_init(&b, 0);
    dst[0] = '\0';
    int rc = get_str(r, obj, key, required, cap - 1, &b);
    if (rc > 0)
        memcpy(dst, buf_cstr(&b), b.len + 1);
    buf_free(&b);
    return rc;
}

/* One of names (NULL-terminated, index = value). */
static int get_enum(rd *r, int obj, const char *key, const char *const *names, int *out)
{
    int t = field(r, obj, key, 1);
    if (t < 0)
        return -1;
    if (json_type_of(&r->d, t) != JSON_STRING)
        return rd_fail(r, key, "is not a string");
    for (int i = 0; names[i]; i++)
        if (json_str_eq(&r->d, t, names[i])) {
            *out = i;
            return 1;
        }
    return rd_fail(r, key, "is not a known value");
}

static const char *const format_names[] = {"jsonl", "parquet", NULL};
static const char *const comp_names[] = {"zstd", "gzip", "none", "snappy", NULL};
static const char *const layout_names[] = {"merged", "per-partition", NULL};

/* format, compression and layout, and whether the codec fits the format */
static int get_kind(rd *r, enum s3_format *f, enum s3_compression *c, enum s3_layout *l)
{
    int fi, ci, li;
    if (get_enum(r, 0, "format", format_names, &fi) < 0 || get_enum(r, 0, "compression", comp_names, &ci) < 0 ||
        get_enum(r, 0, "layout", layout_names, &li) < 0)
        return -1;
    *f = (enum s3_format)fi;
    *c = (enum s3_compression)ci;
    *l = (enum s3_layout)li;
    int fits = *f == S3_FORMAT_PARQUET ? (*c == S3_COMP_ZSTD || *c == S3_COMP_SNAPPY) : *c != S3_COMP_SNAPPY;
    if (!fits)
        return rd_fail(r, "compression", "does not fit the format");
    return 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

static void put_iso(buf *out, int64_t us)
{
    char iso[32];
    format_iso_us(us, iso);
    buf_putc(out, '"');
    buf_puts(out, iso);
    buf_putc(out, '"');
}

/* ---- lease ------------------------------------------------------------------------------ */

void s3_lease_doc_json(buf *out, const s3_lease_doc *d)
{
    buf_puts(out, "{\"instance\":");
    jw_cstr(out, d->instance);
    buf_puts(out, ",\"incarnation\":");
    jw_cstr(out, d->incarnation);
    buf_puts(out, ",\"sinceMs\":");
    buf_put_i64(out, d->since_ms);
    buf_putc(out, '}');
}

int s3_lease_doc_parse(const char *json, size_t n, s3_lease_doc *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    rd r;
    int rc = -1;
    if (rd_open(&r, "lease", json, n, err, errlen) < 0)
        goto out;
    if (get_fixed(&r, 0, "instance", 1, out->instance, sizeof out->instance) < 0 ||
        get_fixed(&r, 0, "incarnation", 0, out->incarnation, sizeof out->incarnation) < 0 ||
        get_i64(&r, 0, "sinceMs", 0, INT64_MIN, &out->since_ms) < 0)
        goto out;
    if (!out->instance[0]) {
        rd_fail(&r, "instance", "is empty");
        goto out;
    }
    rc = 0;
out:
    rd_close(&r);
    return rc;
}

/* ---- intent ----------------------------------------------------------------------------- */

void s3_intent_json(buf *out, const s3_intent *d)
{
    buf_puts(out, "{\"k\":");
    buf_put_u64(out, d->k);
    buf_puts(out, ",\"tStart\":");
    buf_put_i64(out, d->t_start);
    buf_puts(out, ",\"tEnd\":");
    buf_put_i64(out, d->t_end);
    buf_printf(out, ",\"format\":\"%s\",\"compression\":\"%s\",\"layout\":\"%s\",\"writer\":",
               s3_format_name(d->format), s3_compression_name(d->compression), s3_layout_name(d->layout));
    jw_cstr(out, d->writer);
    buf_putc(out, '}');
}

int s3_intent_parse(const char *json, size_t n, s3_intent *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    rd r;
    int rc = -1;
    if (rd_open(&r, "intent", json, n, err, errlen) < 0)
        goto out;
    if (get_u64(&r, 0, "k", 1, &out->k) < 0 || get_i64(&r, 0, "tStart", 1, 0, &out->t_start) < 0 ||
        get_i64(&r, 0, "tEnd", 1, 0, &out->t_end) < 0 ||
        get_kind(&r, &out->format, &out->compression, &out->layout) < 0 ||
        get_fixed(&r, 0, "writer", 0, out->writer, sizeof out->writer) < 0)
        goto out;
    if (out->t_end <= out->t_start) {
        rd_fail(&r, "tEnd", "is not above tStart");
        goto out;
    }
    rc = 0;
out:
    rd_close(&r);
    return rc;
}

/* ---- commit pointer --------------------------------------------------------------------- */

void s3_committed_json(buf *out, const s3_committed *d)
{
    buf_puts(out, "{\"k\":");
    buf_put_u64(out, d->k);
    buf_puts(out, ",\"tEnd\":");
    put_iso(out, d->t_end);
    buf_puts(out, ",\"tEndUs\":");
    buf_put_i64(out, d->t_end);
    buf_puts(out, ",\"manifest\":");
    jw_cstr(out, d->manifest);
    buf_puts(out, ",\"records\":");
    buf_put_u64(out, d->records);
    buf_puts(out, ",\"bytes\":");
    buf_put_u64(out, d->bytes);
    buf_puts(out, ",\"committedAtMs\":");
    buf_put_i64(out, d->committed_at_ms);
    if (d->k_base) {
        buf_puts(out, ",\"kBase\":");
        buf_put_u64(out, d->k_base);
    }
    buf_putc(out, '}');
}

int s3_committed_parse(const char *json, size_t n, s3_committed *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    rd r;
    int rc = -1;
    if (rd_open(&r, "committed", json, n, err, errlen) < 0)
        goto out;
    if (get_u64(&r, 0, "k", 1, &out->k) < 0)
        goto out;
    int got = get_i64(&r, 0, "tEndUs", 0, 0, &out->t_end);
    if (got < 0)
        goto out;
    if (got == 0) {
        /* the ISO text, or an integer as 1.5.0 wrote */
        int t = field(&r, 0, "tEnd", 1);
        if (t < 0)
            goto out;
        if (json_type_of(&r.d, t) == JSON_STRING) {
            buf b;
            buf_init(&b, 64);
            int ok = json_str_decode(&r.d, t, &b) == 0 && parse_iso_us(b.data ? b.data : "", b.len, &out->t_end) == 0;
            buf_free(&b);
            if (!ok) {
                rd_fail(&r, "tEnd", "is not an ISO-8601 time");
                goto out;
            }
        } else if (json_int64(&r.d, t, &out->t_end) < 0) {
            rd_fail(&r, "tEnd", "is not a time");
            goto out;
        }
        if (out->t_end < 0) {
            rd_fail(&r, "tEnd", "is negative");
            goto out;
        }
    }
    if (get_fixed(&r, 0, "manifest", 0, out->manifest, sizeof out->manifest) < 0 ||
        get_u64(&r, 0, "records", 0, &out->records) < 0 || get_u64(&r, 0, "bytes", 0, &out->bytes) < 0 ||
        get_i64(&r, 0, "committedAtMs", 0, INT64_MIN, &out->committed_at_ms) < 0 ||
        get_u64(&r, 0, "kBase", 0, &out->k_base) < 0)
        goto out;
    if (out->k_base > out->k) {
        rd_fail(&r, "kBase", "is above k");
        goto out;
    }
    rc = 0;
out:
    rd_close(&r);
    return rc;
}

/* ---- manifest --------------------------------------------------------------------------- */

static void kv_str(buf *out, const char *indent, const char *key, const char *s, size_t n, int comma)
{
    buf_printf(out, "%s\"%s\": ", indent, key);
    jw_string(out, s, n);
    buf_puts(out, comma ? ",\n" : "\n");
}

static void kv_u64(buf *out, const char *indent, const char *key, uint64_t v, int comma)
{
    buf_printf(out, "%s\"%s\": %llu%s", indent, key, (unsigned long long)v, comma ? ",\n" : "\n");
}

static void kv_i64(buf *out, const char *indent, const char *key, int64_t v, int comma)
{
    buf_printf(out, "%s\"%s\": %lld%s", indent, key, (long long)v, comma ? ",\n" : "\n");
}

void s3_manifest_json(buf *out, const s3_manifest *m)
{
    const char *I = "  ", *I3 = "      ";
    buf_puts(out, "{\n");
    kv_str(out, I, "sink", m->sink ? m->sink : "", m->sink ? strlen(m->sink) : 0, 1);
    kv_str(out, I, "tenant", m->tenant ? m->tenant : "", m->tenant ? strlen(m->tenant) : 0, 1);
    kv_str(out, I, "queue", m->queue ? m->queue : "", m->queue ? m->queue_len : 0, 1);
    kv_u64(out, I, "k", m->k, 1);
    kv_i64(out, I, "tStart", m->t_start, 1);
    kv_i64(out, I, "tEnd", m->t_end, 1);
    buf_printf(out, "  \"format\": \"%s\",\n  \"compression\": \"%s\",\n  \"layout\": \"%s\",\n",
               s3_format_name(m->format), s3_compression_name(m->compression), s3_layout_name(m->layout));
    buf_puts(out, m->nobjects ? "  \"objects\": [\n" : "  \"objects\": [],\n");
    for (int i = 0; i < m->nobjects; i++) {
        const s3_manifest_object *o = &m->objects[i];
        buf_puts(out, "    {\n");
        kv_str(out, I3, "key", o->key ? o->key : "", o->key ? strlen(o->key) : 0, 1);
        kv_u64(out, I3, "bytes", o->bytes, 1);
        kv_u64(out, I3, "records", o->records, 1);
        kv_str(out, I3, "sha256", o->sha256, strlen(o->sha256), o->partition != NULL);
        if (o->partition) {
            kv_str(out, I3, "partition", o->partition, o->partition_len, 1);
            kv_i64(out, I3, "firstOffset", o->first_offset, 1);
            kv_i64(out, I3, "lastOffset", o->last_offset, 0);
        }
        buf_puts(out, i + 1 < m->nobjects ? "    },\n" : "    }\n  ],\n");
    }
    kv_u64(out, I, "records", m->records, 1);
    kv_u64(out, I, "bytes", m->bytes, 1);
    kv_u64(out, I, "partitions", m->partitions, 1);
    if (m->records == 0) {
        buf_puts(out, "  \"minTs\": null,\n  \"maxTs\": null,\n");
    } else {
        kv_i64(out, I, "minTs", m->min_ts, 1);
        kv_i64(out, I, "maxTs", m->max_ts, 1);
    }
    buf_puts(out, m->nlost ? "  \"lost\": [\n" : "  \"lost\": [],\n");
    for (int i = 0; i < m->nlost; i++) {
        const s3_lost_range *l = &m->lost[i];
        buf_puts(out, "    {\n");
        kv_str(out, I3, "partition", l->partition ? l->partition : "", l->partition ? l->partition_len : 0, 1);
        kv_i64(out, I3, "from", l->from, 1);
        kv_i64(out, I3, "to", l->to, 0);
        buf_puts(out, i + 1 < m->nlost ? "    },\n" : "    }\n  ],\n");
    }
    kv_str(out, I, "writer", m->writer, strlen(m->writer), 1);
    buf_puts(out, "  \"committedAt\": ");
    put_iso(out, m->committed_at_us);
    buf_puts(out, "\n}\n");
}

static int is_sha256_hex(const char *s)
{
    size_t n = strlen(s);
    if (n != 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* Elements of an array field, one by one; returns the array token or -1 with err. */
static int get_array(rd *r, const char *key, int required)
{
    int t = field(r, 0, key, required);
    if (t < 0)
        return required ? -1 : -2;
    if (json_type_of(&r->d, t) != JSON_ARRAY)
        return rd_fail(r, key, "is not an array");
    return t;
}

static int parse_object_entry(rd *r, int t, s3_manifest_object *o, buf *tmp)
{
    if (json_type_of(&r->d, t) != JSON_OBJECT)
        return rd_fail(r, "objects", "holds something that is not an object");
    if (get_str(r, t, "key", 1, 4096, tmp) < 0)
        return -1;
    if (tmp->len == 0)
        return rd_fail(r, "key", "is empty");
    o->key = xstrndup(tmp->data, tmp->len);
    if (get_u64(r, t, "bytes", 1, &o->bytes) < 0 || get_u64(r, t, "records", 1, &o->records) < 0 ||
        get_fixed(r, t, "sha256", 1, o->sha256, sizeof o->sha256) < 0)
        return -1;
    if (!is_sha256_hex(o->sha256))
        return rd_fail(r, "sha256", "is not 64 lowercase hex digits");
    int has = get_str(r, t, "partition", 0, S3_DOC_STR_MAX, tmp);
    if (has < 0)
        return -1;
    if (has) {
        o->partition = xstrndup(tmp->data ? tmp->data : "", tmp->len);
        o->partition_len = tmp->len;
        if (get_i64(r, t, "firstOffset", 1, 0, &o->first_offset) < 0 ||
            get_i64(r, t, "lastOffset", 1, 0, &o->last_offset) < 0)
            return -1;
        if (o->last_offset < o->first_offset)
            return rd_fail(r, "lastOffset", "is below firstOffset");
    }
    return 0;
}

static int parse_lost_entry(rd *r, int t, s3_lost_range *l, buf *tmp)
{
    if (json_type_of(&r->d, t) != JSON_OBJECT)
        return rd_fail(r, "lost", "holds something that is not an object");
    if (get_str(r, t, "partition", 1, S3_DOC_STR_MAX, tmp) < 0)
        return -1;
    l->partition = xstrndup(tmp->data ? tmp->data : "", tmp->len);
    l->partition_len = tmp->len;
    if (get_i64(r, t, "from", 1, 0, &l->from) < 0 || get_i64(r, t, "to", 1, 0, &l->to) < 0)
        return -1;
    if (l->to < l->from)
        return rd_fail(r, "to", "is below from");
    return 0;
}

int s3_manifest_parse(const char *json, size_t n, s3_manifest *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->owned = 1;
    rd r;
    buf tmp;
    buf_init(&tmp, 0);
    int rc = -1;
    if (rd_open(&r, "manifest", json, n, err, errlen) < 0)
        goto out;
    if (get_str(&r, 0, "sink", 1, S3_SINK_NAME_MAX, &tmp) < 0)
        goto out;
    m->sink = xstrndup(tmp.data ? tmp.data : "", tmp.len);
    if (get_str(&r, 0, "tenant", 1, 64, &tmp) < 0)
        goto out;
    m->tenant = xstrndup(tmp.data ? tmp.data : "", tmp.len);
    if (get_str(&r, 0, "queue", 1, S3_DOC_STR_MAX, &tmp) < 0)
        goto out;
    m->queue = xstrndup(tmp.data ? tmp.data : "", tmp.len);
    m->queue_len = tmp.len;
    if (get_u64(&r, 0, "k", 1, &m->k) < 0 || get_i64(&r, 0, "tStart", 1, 0, &m->t_start) < 0 ||
        get_i64(&r, 0, "tEnd", 1, 0, &m->t_end) < 0 || get_kind(&r, &m->format, &m->compression, &m->layout) < 0)
        goto out;
    if (m->t_end <= m->t_start) {
        rd_fail(&r, "tEnd", "is not above tStart");
        goto out;
    }
    int arr = get_array(&r, "objects", 1);
    if (arr < 0)
        goto out;
    uint32_t cnt = r.d.toks[arr].count;
    if (cnt) {
        m->objects = xcalloc(cnt, sizeof *m->objects);
        int t = json_first(&r.d, arr);
        for (uint32_t i = 0; i < cnt; i++, t = json_next(&r.d, t)) {
            m->nobjects = (int)i + 1;
            if (parse_object_entry(&r, t, &m->objects[i], &tmp) < 0)
                goto out;
        }
    }
    if (get_u64(&r, 0, "records", 1, &m->records) < 0 || get_u64(&r, 0, "bytes", 1, &m->bytes) < 0 ||
        get_u64(&r, 0, "partitions", 0, &m->partitions) < 0 ||
        get_i64(&r, 0, "minTs", 0, INT64_MIN, &m->min_ts) < 0 ||
        get_i64(&r, 0, "maxTs", 0, INT64_MIN, &m->max_ts) < 0)
        goto out;
    arr = get_array(&r, "lost", 0);
    if (arr == -1)
        goto out;
    if (arr >= 0 && (cnt = r.d.toks[arr].count) > 0) {
        m->lost = xcalloc(cnt, sizeof *m->lost);
        int t = json_first(&r.d, arr);
        for (uint32_t i = 0; i < cnt; i++, t = json_next(&r.d, t)) {
            m->nlost = (int)i + 1;
            if (parse_lost_entry(&r, t, &m->lost[i], &tmp) < 0)
                goto out;
        }
    }
    if (get_fixed(&r, 0, "writer", 0, m->writer, sizeof m->writer) < 0 ||
        get_str(&r, 0, "committedAt", 0, 64, &tmp) < 0)
        goto out;
    if (tmp.len && parse_iso_us(tmp.data, tmp.len, &m->committed_at_us) < 0) {
        rd_fail(&r, "committedAt", "is not an ISO-8601 time");
        goto out;
    }
    rc = 0;
out:
    rd_close(&r);
    buf_free(&tmp);
    if (rc < 0)
        s3_manifest_free(m);
    return rc;
}

void s3_manifest_free(s3_manifest *m)
{
    if (!m->owned)
        return;
    free((char *)m->sink);
    free((char *)m->tenant);
    free((char *)m->queue);
    for (int i = 0; i < m->nobjects; i++) {
        free(m->objects[i].key);
        free(m->objects[i].partition);
    }
    free(m->objects);
    for (int i = 0; i < m->nlost; i++)
        free(m->lost[i].partition);
    free(m->lost);
    memset(m, 0, sizeof *m);
}

/* ---- checkpoint ------------------------------------------------------------------------- */

static int cmp_name(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : an < bn ? -1 : an > bn;
}

static int cmp_position(const void *pa, const void *pb)
{
    const s3_position *a = *(const s3_position *const *)pa, *b = *(const s3_position *const *)pb;
    return cmp_name(a->partition, a->partition_len, b->partition, b->partition_len);
}

static int cmp_position_v(const void *pa, const void *pb)
{
    const s3_position *a = pa, *b = pb;
    return cmp_name(a->partition, a->partition_len, b->partition, b->partition_len);
}

void s3_checkpoint_json(buf *out, const s3_checkpoint *c)
{
    /* sorted here as well, so the bytes never depend on the caller's order */
    const s3_position **v = xmalloc(sizeof *v * (size_t)(c->npositions ? c->npositions : 1));
    for (int i = 0; i < c->npositions; i++)
        v[i] = &c->positions[i];
    if (c->npositions > 1)
        qsort(v, (size_t)c->npositions, sizeof *v, cmp_position);
    buf_puts(out, "{\"k\":");
    buf_put_u64(out, c->k);
    buf_puts(out, ",\"tEnd\":");
    buf_put_i64(out, c->t_end);
    buf_puts(out, ",\"positions\":[");
    for (int i = 0; i < c->npositions; i++) {
        const s3_position *p = v[i];
        buf_puts(out, i ? ",[" : "[");
        jw_string(out, p->partition ? p->partition : "", p->partition ? p->partition_len : 0);
        buf_putc(out, ',');
        buf_put_i64(out, p->offset);
        if (p->has_uuid) {
            uuid u;
            char s[UUID_STR_LEN + 1];
            memcpy(u.b, p->uuid, 16);
            uuid_format(&u, s);
            buf_printf(out, ",\"%s\"", s);
        }
        buf_putc(out, ']');
    }
    buf_puts(out, "]}");
    free(v);
}

int s3_checkpoint_parse(const char *json, size_t n, s3_checkpoint *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    rd r;
    buf tmp;
    buf_init(&tmp, 0);
    int rc = -1;
    if (rd_open(&r, "checkpoint", json, n, err, errlen) < 0)
        goto out;
    if (get_u64(&r, 0, "k", 1, &c->k) < 0 || get_i64(&r, 0, "tEnd", 1, 0, &c->t_end) < 0)
        goto out;
    int arr = get_array(&r, "positions", 1);
    if (arr < 0)
        goto out;
    uint32_t cnt = r.d.toks[arr].count;
    if (cnt)
        c->positions = xcalloc(cnt, sizeof *c->positions);
    int t = json_first(&r.d, arr);
    for (uint32_t i = 0; i < cnt; i++, t = json_next(&r.d, t)) {
        s3_position *p = &c->positions[i];
        c->npositions = (int)i + 1;
        uint32_t el = r.d.toks[t].count;
        if (json_type_of(&r.d, t) != JSON_ARRAY || el < 2 || el > 3) {
            rd_fail(&r, "positions", "holds an entry that is not [partition, offset(, uuid)]");
            goto out;
        }
        int e = json_first(&r.d, t);
        if (json_type_of(&r.d, e) != JSON_STRING ||
            json_str_decoded_len(&r.d, e) > S3_DOC_STR_MAX) {
            rd_fail(&r, "positions", "holds a partition that is not a string of at most 1024 bytes");
            goto out;
        }
        buf_reset(&tmp);
        json_str_decode(&r.d, e, &tmp);
        p->partition = dup_bytes(tmp.data, tmp.len);
        p->partition_len = tmp.len;
        e = json_next(&r.d, e);
        if (json_int64(&r.d, e, &p->offset) < 0 || p->offset < 0) {
            rd_fail(&r, "positions", "holds an offset that is not a non-negative integer");
            goto out;
        }
        if (el == 3) {
            e = json_next(&r.d, e);
            if (json_type_of(&r.d, e) != JSON_NULL) {
                const char *s;
                size_t sl;
                uuid u;
                if (json_type_of(&r.d, e) != JSON_STRING || json_str_span(&r.d, e, &s, &sl) < 0 ||
                    uuid_parse(s, sl, &u) < 0) {
                    rd_fail(&r, "positions", "holds a partition id that is not a UUID");
                    goto out;
                }
                memcpy(p->uuid, u.b, 16);
                p->has_uuid = 1;
            }
        }
    }
    if (c->npositions > 1) {
        qsort(c->positions, (size_t)c->npositions, sizeof *c->positions, cmp_position_v);
        for (int i = 1; i < c->npositions; i++)
            if (cmp_position_v(&c->positions[i - 1], &c->positions[i]) == 0) {
                rd_fail(&r, "positions", "names a partition twice");
                goto out;
            }
    }
    rc = 0;
out:
    rd_close(&r);
    buf_free(&tmp);
    if (rc < 0)
        s3_checkpoint_free(c);
    return rc;
}

void s3_checkpoint_free(s3_checkpoint *c)
{
    for (int i = 0; i < c->npositions; i++)
        free(c->positions[i].partition);
    free(c->positions);
    memset(c, 0, sizeof *c);
}
