/* readreq.c — parsing the bodies of the lease-free reads (see readreq.h, docs/http-api.md). */
#include "readreq.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/timeutil.h"

static qerr fail(qerr_detail *err, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static qerr fail(qerr_detail *err, const char *id, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
        err->code = id;
    }
    return QERR_BAD_INPUT;
}

/* The first key of `obj` not in `allowed` (NULL-terminated), written quoted and cut to 64
 * bytes into out; 1 when there is one, else 0. */
static int unknown_key(const json_doc *d, int obj, const char *const *allowed, char *out, size_t cap)
{
    int k = json_unknown_key(d, obj, allowed);
    if (k >= 0) {
        buf raw, q;
        buf_init(&raw, 0);
        buf_init(&q, 0);
        json_str_decode(d, k, &raw);
        const char *s = raw.data ? raw.data : "";
        jw_string(&q, s, utf8_cut(s, raw.len, 64));
        snprintf(out, cap, "%.*s", (int)q.len, q.data ? q.data : "");
        buf_free(&q);
        buf_free(&raw);
        return 1;
    }
    return 0;
}

/* A name: a non-empty string of valid UTF-8 without NUL, decoded into the arena. 1 ok,
 * 0 absent or null, -1 anything else. */
static int name_member(const json_doc *d, int obj, const char *key, arena *ar, const char **out)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    buf b;
    buf_init(&b, 0);
    json_str_decode(d, t, &b);
    int ok = b.len > 0 && !memchr(b.data, 0, b.len) && utf8_valid((const uint8_t *)b.data, b.len) == 0;
    if (ok)
        *out = arena_strndup(ar, b.data, b.len);
    buf_free(&b);
    return ok ? 1 : -1;
}

/* An integer member in [lo, hi]: 1 present, 0 absent or null, -1 anything else. */
static int int_member(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    int64_t v;
    if (json_type_of(d, t) != JSON_NUMBER || json_int64(d, t, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 1;
}

/* A byte budget: absent → the default; a positive integer, clamped to `max` (one too large for
 * int64 is the most there is). 0 ok, -1 bad. */
static int budget_member(const json_doc *d, int obj, const char *key, int64_t max, int64_t *out)
{
    int t = json_get(d, obj, key);
    *out = FETCH_DEFAULT_MAX_BYTES < max ? FETCH_DEFAULT_MAX_BYTES : max;
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_NUMBER)
        return -1;
    int64_t v;
    double x;
    if (json_int64(d, t, &v) == 0) {
        if (v < 1)
            return -1;
        *out = v < max ? v : max;
        return 0;
    }
    if (json_double(d, t, &x) == 0 && x > 9.2e18) {
        *out = max;
        return 0;
    }
    return -1;
}

/* The top level: only `allowed` keys, and an `entries` array of at most max. */
static qerr entries_member(const json_doc *d, const char *const *allowed, uint32_t max, int *arr, uint32_t *n,
                          qerr_detail *err)
{
    char key[80];
    if (json_type_of(d, 0) != JSON_OBJECT)
        return fail(err, "invalid_request", "the body must be a JSON object");
    if (unknown_key(d, 0, allowed, key, sizeof key))
        return fail(err, "invalid_request",
                    "unknown field %s: the body is {\"entries\": [...]} (docs/http-api.md)", key);
    *arr = json_get(d, 0, "entries");
    if (json_type_of(d, *arr) != JSON_ARRAY)
        return fail(err, "invalid_request", "entries is required (an array)");
    *n = d->toks[*arr].count;
    if (*n > max)
        return fail(err, "too_many_entries", "%u entries: at most %u in one call", *n, max);
    return QERR_OK;
}

qerr fetch_parse_request(const json_doc *d, arena *ar, fetch_args *a, qerr_detail *err)
{
    static const char *const top[] = {"entries", "maxBytes", NULL};
    static const char *const fields[] = {"queue", "partition", "offset", "maxBytes", NULL};
    int arr;
    uint32_t n;
    a->entries = NULL;
    a->n = 0;
    a->max_records = FETCH_CALL_MAX_RECORDS;
    qerr q = entries_member(d, top, FETCH_MAX_ENTRIES, &arr, &n, err);
    if (q != QERR_OK)
        return q;
    if (budget_member(d, 0, "maxBytes", FETCH_CALL_MAX_BYTES, &a->max_bytes) < 0)
        return fail(err, "invalid_request", "maxBytes must be a positive integer (bytes of payload)");
    fetch_entry *es = arena_alloc(ar, (n + 1) * sizeof *es);
    int t = json_first(d, arr);
    char key[80];
    for (uint32_t i = 0; i < n; i++, t = json_next(d, t)) {
        fetch_entry *e = &es[i];
        memset(e, 0, sizeof *e);
        if (json_type_of(d, t) != JSON_OBJECT)
            return fail(err, "invalid_request", "entries[%u] must be an object", i);
        if (unknown_key(d, t, fields, key, sizeof key))
            return fail(err, "invalid_request",
                        "entries[%u]: unknown field %s (an entry is {queue, partition, offset, maxBytes})", i, key);
        if (name_member(d, t, "queue", ar, &e->queue) <= 0)
            return fail(err, "invalid_request",
                        "entries[%u].queue is required: a non-empty string of valid UTF-8 without NUL", i);
        if (name_member(d, t, "partition", ar, &e->partition) <= 0)
            return fail(err, "invalid_request",
                        "entries[%u].partition is required: a non-empty string of valid UTF-8 without NUL", i);
        if (int_member(d, t, "offset", 0, INT64_MAX, &e->offset) < 0)
            return fail(err, "invalid_request", "entries[%u].offset must be an integer >= 0", i);
        if (budget_member(d, t, "maxBytes", FETCH_ENTRY_MAX_BYTES, &e->max_bytes) < 0)
            return fail(err, "invalid_request",
                        "entries[%u].maxBytes must be a positive integer (bytes of payload)", i);
    }
    a->entries = es;
    a->n = n;
    return QERR_OK;
}

/* The page cursor: a partition id as the decimal string `next` gave. 1 present, 0 absent or
 * null, -1 bad. */
static int cursor_member(const json_doc *d, int obj, int64_t *out)
{
    int t = json_get(d, obj, "after");
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    const char *s;
    size_t len;
    if (json_type_of(d, t) != JSON_STRING || json_str_span(d, t, &s, &len) < 0 || len == 0 || len > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

qerr changed_parse_request(const json_doc *d, arena *ar, changed_args *a, qerr_detail *err)
{
    static const char *const top[] = {"entries", NULL};
    static const char *const fields[] = {"queue", "limit", "since", "after", NULL};
    int arr;
    uint32_t n;
    a->entries = NULL;
    a->n = 0;
    qerr q = entries_member(d, top, CHANGED_MAX_ENTRIES, &arr, &n, err);
    if (q != QERR_OK)
        return q;
    changed_entry *es = arena_alloc(ar, (n + 1) * sizeof *es);
    int t = json_first(d, arr);
    char key[80];
    for (uint32_t i = 0; i < n; i++, t = json_next(d, t)) {
        changed_entry *e = &es[i];
        memset(e, 0, sizeof *e);
        e->limit = CHANGED_DEFAULT_LIMIT;
        if (json_type_of(d, t) != JSON_OBJECT)
            return fail(err, "invalid_request", "entries[%u] must be an object", i);
        if (unknown_key(d, t, fields, key, sizeof key))
            return fail(err, "invalid_request",
                        "entries[%u]: unknown field %s (an entry is {queue, limit, since, after})", i, key);
        if (name_member(d, t, "queue", ar, &e->queue) <= 0)
            return fail(err, "invalid_request",
                        "entries[%u].queue is required: a non-empty string of valid UTF-8 without NUL", i);
        /* the page size is clamped to the most a page holds, never refused for being large */
        int64_t limit;
        int lr = int_member(d, t, "limit", 1, INT64_MAX, &limit);
        if (lr < 0)
            return fail(err, "invalid_request", "entries[%u].limit must be a positive integer", i);
        if (lr > 0)
            e->limit = limit < CHANGED_MAX_LIMIT ? limit : CHANGED_MAX_LIMIT;
        int st = json_get(d, t, "since");
        if (st >= 0 && json_type_of(d, st) != JSON_NULL) {
            const char *s;
            size_t len;
            if (json_type_of(d, st) != JSON_STRING || json_str_span(d, st, &s, &len) < 0 ||
                parse_iso_us(s, len, &e->since) < 0)
                return fail(err, "invalid_time",
                            "entries[%u].since must be an ISO-8601 time, e.g. 2026-12-01T10:00:00.000000Z", i);
            e->has_since = 1;
        }
        if (cursor_member(d, t, &e->after) < 0)
            return fail(err, "invalid_cursor", "entries[%u].after must be a cursor a page answered as next",
                        i);
    }
    a->entries = es;
    a->n = n;
    return QERR_OK;
}
