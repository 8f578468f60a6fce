/* api_ephemeral.c — /api/v1/ephemeral/... : the 2.x client's RAM queues (ephemeral/eph.h), on
 * this node only and NOT durable (docs/ephemeral.md). Refusals use the 2.x refusal envelope
 * (http_respond_refusal): code `ephemeral_invalid_request` with a reason, 404
 * `ephemeral_queue_not_found` from depth, 429 `ephemeral_queue_full` (with Retry-After) and
 * 503 `ephemeral_node_full` from push. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"

#define EPH_NAME_MAX 255
#define EPH_BATCH_MAX 10000
#define EPH_ACKS_MAX 10000

static int64_t now_ms(void)
{
    return wall_us() / 1000;
}

static void bad(http_req *r, const char *reason, const char *fmt, const char *what)
{
    http_respond_refusal(r, 400, "ephemeral_invalid_request", reason, fmt, what);
}

/* A name field of the body: 1..255 bytes, no NUL. 1 present, 0 absent (and allowed), -1 answered. */
static int name_field(http_req *r, const json_doc *d, const char *key, int required, const char **out, size_t *len)
{
    int rc = api_str_field(r, d, 0, key, out, len);
    if (rc == 0 && !required)
        return 0;
    if (rc == 1 && *len >= 1 && *len <= EPH_NAME_MAX)
        return 1;
    char msg[128];
    snprintf(msg, sizeof msg, "%s must be a string of 1 to %d bytes without NUL characters", key, EPH_NAME_MAX);
    bad(r, rc == 0 ? "missing_field" : "invalid_name", "%s", msg);
    return -1;
}

/* Refuses top-level keys outside `allowed` (NULL-terminated): nothing is dropped silently. */
static int only_keys(http_req *r, const json_doc *d, int obj, const char *const *allowed, const char *where)
{
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, json_next(d, k))) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = json_str_eq(d, k, *a);
        if (!ok) {
            buf key;
            buf_init(&key, 0);
            json_str_decode(d, k, &key);
            char msg[400];
            snprintf(msg, sizeof msg, "%s: unknown field \"%.*s\"", where, (int)(key.len > 200 ? 200 : key.len),
                     key.data ? key.data : "");
            buf_free(&key);
            http_respond_refusal(r, 400, "ephemeral_invalid_request", "unknown_field", "%s", msg);
            return -1;
        }
    }
    return 0;
}

static int parse_body(http_req *r, json_doc *d, uint32_t depth)
{
    memset(d, 0, sizeof *d);
    if (!r->body || r->body_len == 0) {
        bad(r, "invalid_body", "%s", "the request body must be a JSON object");
        return -1;
    }
    json_opts o = {.token_depth = depth};
    if (json_parse(d, r->body, r->body_len, &o) < 0 || json_type_of(d, 0) != JSON_OBJECT) {
        http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_body", "the request body must be a JSON object%s%s",
                             d->err[0] ? ": " : "", d->err);
        json_doc_free(d);
        return -1;
    }
    return 0;
}

/* An integer option in [lo, hi]: 1 set, 0 absent, -1 answered. */
static int int_opt(http_req *r, const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_NUMBER || json_int64(d, t, out) < 0 || *out < lo || *out > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "options.%s must be an integer from %lld to %lld", key, (long long)lo, (long long)hi);
        http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_option", "%s", msg);
        return -1;
    }
    return 1;
}

void api_eph_configure(http_req *r)
{
    app *a = r->app;
    json_doc d;
    if (parse_body(r, &d, 0) < 0)
        return;
    static const char *const top[] = {"queue", "options", NULL};
    static const char *const known[] = {"maxBytes", "maxLength", "policy", "ttlSeconds", "leaseSeconds",
                                        "retryLimit", "windowBuffer", NULL};
    const char *q;
    size_t qlen;
    if (only_keys(r, &d, 0, top, "configure") < 0 || name_field(r, &d, "queue", 1, &q, &qlen) < 0)
        goto out;
    eph_opts o;
    if (eph_options(a->eph, r->tenant, q, qlen, &o) < 0)
        eph_opts_default(&o);
    int opts = json_get(&d, 0, "options");
    if (opts >= 0 && json_type_of(&d, opts) != JSON_NULL) {
        if (json_type_of(&d, opts) != JSON_OBJECT) {
            bad(r, "invalid_option", "%s", "options must be an object");
            goto out;
        }
        if (only_keys(r, &d, opts, known, "configure options") < 0)
            goto out;
        int64_t v;
        int rc;
        if ((rc = int_opt(r, &d, opts, "maxBytes", 1, 64ll << 30, &v)) < 0)
            goto out;
        if (rc)
            o.max_bytes = v;
        if ((rc = int_opt(r, &d, opts, "maxLength", 1, 1000000000ll, &v)) < 0)
            goto out;
        if (rc)
            o.max_length = v;
        if ((rc = int_opt(r, &d, opts, "ttlSeconds", 0, 31536000, &v)) < 0)
            goto out;
        if (rc)
            o.ttl_ms = v * 1000;
        if ((rc = int_opt(r, &d, opts, "leaseSeconds", 1, 86400, &v)) < 0)
            goto out;
        if (rc)
            o.lease_ms = v * 1000;
        if ((rc = int_opt(r, &d, opts, "retryLimit", 0, 1000, &v)) < 0)
            goto out;
        if (rc)
            o.retry_limit = v;
        int p = json_get(&d, opts, "policy");
        if (p >= 0 && json_type_of(&d, p) != JSON_NULL) {
            if (json_str_eq(&d, p, "reject"))
                o.policy = EPH_REJECT;
            else if (json_str_eq(&d, p, "drop_oldest") || json_str_eq(&d, p, "dropOldest"))
                o.policy = EPH_DROP_OLDEST;
            else {
                bad(r, "invalid_option", "%s", "options.policy must be \"reject\" or \"drop_oldest\"");
                goto out;
            }
        }
        int wb = json_get(&d, opts, "windowBuffer");
        if (wb >= 0 && json_type_of(&d, wb) != JSON_NULL) {
            static const char *const wbk[] = {"ms", "count", NULL};
            if (json_type_of(&d, wb) == JSON_NUMBER) {
                if ((rc = int_opt(r, &d, opts, "windowBuffer", 0, 60000, &v)) < 0)
                    goto out;
                o.window_ms = v;
                o.window_count = 0;
            } else if (json_type_of(&d, wb) == JSON_OBJECT) {
                if (only_keys(r, &d, wb, wbk, "configure options.windowBuffer") < 0)
                    goto out;
                int64_t ms = 0, cnt = 0;
                if (int_opt(r, &d, wb, "ms", 0, 60000, &ms) < 0 || int_opt(r, &d, wb, "count", 0, EPH_BATCH_MAX, &cnt) < 0)
                    goto out;
                o.window_ms = ms;
                o.window_count = cnt;
            } else {
                bad(r, "invalid_option", "%s", "options.windowBuffer must be {\"ms\": N, \"count\": N} or milliseconds");
                goto out;
            }
        }
    }
    int created = eph_configure(a->eph, r->tenant, q, qlen, &o);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"queue\":");
    jw_string(&b, q, qlen);
    buf_puts(&b, created ? ",\"created\":true" : ",\"created\":false");
    buf_puts(&b, ",\"durable\":false}");
    http_respond_json(r, 200, &b);
    buf_free(&b);
out:
    json_doc_free(&d);
}

void api_eph_reset(http_req *r)
{
    app *a = r->app;
    json_doc d;
    if (parse_body(r, &d, 1) < 0)
        return;
    static const char *const top[] = {"queue", NULL};
    const char *q;
    size_t qlen;
    if (only_keys(r, &d, 0, top, "reset") == 0 && name_field(r, &d, "queue", 1, &q, &qlen) > 0) {
        uint64_t dropped = eph_reset(a->eph, r->tenant, q, qlen);
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"queue\":");
        jw_string(&b, q, qlen);
        buf_printf(&b, ",\"dropped\":%llu}", (unsigned long long)dropped);
        http_respond_json(r, 200, &b);
        buf_free(&b);
    }
    json_doc_free(&d);
}

void api_eph_delete(http_req *r)
{
    app *a = r->app;
    const char *q = r->params[0];
    size_t qlen = r->param_lens[0];
    if (qlen == 0 || qlen > EPH_NAME_MAX) {
        http_respond_bad_param(r, "queue", "queue must be 1 to %d bytes", EPH_NAME_MAX);
        return;
    }
    int deleted = eph_delete(a->eph, r->tenant, q, qlen);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"queue\":");
    jw_string(&b, q, qlen);
    buf_puts(&b, deleted ? ",\"deleted\":true}" : ",\"deleted\":false}");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_eph_push(http_req *r)
{
    app *a = r->app;
    json_doc d;
    /* root(0) → messages(1) → message(2) → payload(3): payload internals are not tokenised */
    if (parse_body(r, &d, 3) < 0)
        return;
    static const char *const top[] = {"queue", "partition", "messages", NULL};
    static const char *const mk[] = {"payload", NULL};
    const char *q, *p = "Default";
    size_t qlen, plen = 7;
    if (only_keys(r, &d, 0, top, "push") < 0 || name_field(r, &d, "queue", 1, &q, &qlen) < 0 ||
        name_field(r, &d, "partition", 0, &p, &plen) < 0)
        goto out;
    int ms = json_get(&d, 0, "messages");
    if (json_type_of(&d, ms) != JSON_ARRAY) {
        bad(r, "missing_field", "%s", "messages must be an array of {\"payload\": <JSON>}");
        goto out;
    }
    uint32_t n = d.toks[ms].count;
    const char **pls = arena_alloc(&r->ar, (n ? n : 1) * sizeof *pls);
    size_t *lens = arena_alloc(&r->ar, (n ? n : 1) * sizeof *lens);
    int m = json_first(&d, ms);
    for (uint32_t i = 0; i < n; i++, m = json_next(&d, m)) {
        char where[64];
        snprintf(where, sizeof where, "messages[%u]", i);
        if (json_type_of(&d, m) != JSON_OBJECT) {
            http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_message", "%s must be an object {\"payload\": <JSON>}",
                                 where);
            goto out;
        }
        if (only_keys(r, &d, m, mk, where) < 0)
            goto out;
        int pl = json_get(&d, m, "payload");
        if (pl < 0) {
            pls[i] = "null";
            lens[i] = 4;
        } else {
            pls[i] = json_raw(&d, pl, &lens[i]);
        }
    }
    qerr_detail err;
    qerr e = n ? eph_push(a->eph, r->tenant, q, qlen, p, plen, pls, lens, n, now_ms(), &err) : QERR_OK;
    if (e != QERR_OK) {
        /* both are bounds to retry after: the node's (503) is answered with its sentence too */
        r->retry_after = "1";
        if (e == QERR_UNAVAILABLE)
            http_respond_refusal(r, 503, err.code, err.reason, "%s", err.text);
        else
            http_respond_qerr_refusal(r, e, &err);
        goto out;
    }
    if (n)
        waitq_wake(a->eph_wq, r->tenant, q, qlen);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"queue\":");
    jw_string(&b, q, qlen);
    buf_puts(&b, ",\"partition\":");
    jw_string(&b, p, plen);
    buf_printf(&b, ",\"pushed\":%u}", n);
    http_respond_json(r, 200, &b);
    buf_free(&b);
out:
    json_doc_free(&d);
}

typedef struct eph_pop_ctx {
    http_req *r;
    app *a;
    waiter w;
    const char *q, *p, *g;
    size_t qlen, plen, glen;
    uint32_t batch;
    int auto_ack;
    uint64_t started_ms, window_until_ms;
} eph_pop_ctx;

static void answer_pop(eph_pop_ctx *c)
{
    app *a = c->a;
    eph_msg *out = arena_alloc(&c->r->ar, c->batch * sizeof *out);
    uint32_t n = eph_pop(a->eph, c->r->tenant, c->q, c->qlen, c->p, c->plen, c->g, c->glen, c->batch, c->auto_ack,
                         now_ms(), &c->r->ar, out);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"queue\":");
    jw_string(&b, c->q, c->qlen);
    buf_puts(&b, ",\"messages\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_puts(&b, "{\"id\":");
        jw_cstr(&b, out[i].id);
        buf_puts(&b, ",\"partition\":");
        jw_string(&b, out[i].partition, out[i].partition_len);
        buf_puts(&b, ",\"payload\":");
        buf_append(&b, out[i].payload, out[i].payload_len);
        buf_printf(&b, ",\"attempts\":%u}", out[i].attempts);
    }
    buf_puts(&b, "]}");
    http_respond_json(c->r, 200, &b);
    buf_free(&b);
}

static void park(eph_pop_ctx *c);

static void on_wake(waiter *w, int timed_out)
{
    eph_pop_ctx *c = w->arg;
    c->r->on_abandon = NULL;
    if (http_client_gone(c->r)) {
        /* nobody to hand messages to: take none (a commit at delivery would lose them) */
        http_respond(c->r, 204, NULL, "", 0);
        return;
    }
    if (timed_out || c->a->shutting_down) {
        answer_pop(c);
        return;
    }
    uint64_t avail = eph_available(c->a->eph, c->r->tenant, c->q, c->qlen, c->p, c->plen, c->g, c->glen, now_ms());
    eph_opts o;
    int64_t want = 1;
    if (eph_options(c->a->eph, c->r->tenant, c->q, c->qlen, &o) == 0 && o.window_count > 0 &&
        mono_ms() < c->window_until_ms)
        want = o.window_count < (int64_t)c->batch ? o.window_count : (int64_t)c->batch;
    if ((int64_t)avail >= want || (avail > 0 && mono_ms() >= c->window_until_ms)) {
        answer_pop(c);
        return;
    }
    park(c);
}

static void on_abandon(http_req *r)
{
    eph_pop_ctx *c = r->abandon_arg;
    if (c->w.parked)
        waitq_unpark(c->a->eph_wq, &c->w);
    http_respond(r, 204, NULL, "", 0);
}

static void park(eph_pop_ctx *c)
{
    c->w.wake = on_wake;
    c->w.arg = c;
    /* a lease running out makes a message poppable again: look then (and at least every 1 s) */
    uint64_t now = mono_ms();
    uint64_t recheck = now + 1000;
    int64_t exp = eph_next_expiry(c->a->eph, c->r->tenant, c->q, c->qlen);
    if (exp > 0) {
        int64_t in = exp - now_ms();
        uint64_t at = now + (uint64_t)(in > 0 ? in : 0) + 1;
        if (at < recheck)
            recheck = at;
    }
    if (c->window_until_ms > now && c->window_until_ms < recheck)
        recheck = c->window_until_ms;
    c->w.recheck_ms = recheck;
    c->r->on_abandon = on_abandon;
    c->r->abandon_arg = c;
    waitq_park(c->a->eph_wq, &c->w, c->r->tenant, c->q, c->qlen);
}

void api_eph_pop(http_req *r)
{
    app *a = r->app;
    eph_pop_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->r = r;
    c->a = a;
    c->q = http_query(r, "queue");
    if (!c->q || !*c->q || strlen(c->q) > EPH_NAME_MAX) {
        http_respond_bad_param(r, "queue", "queue is required: 1 to %d bytes", EPH_NAME_MAX);
        return;
    }
    c->qlen = strlen(c->q);
    c->p = http_query(r, "partition");
    if (c->p && (!*c->p || strlen(c->p) > EPH_NAME_MAX)) {
        http_respond_bad_param(r, "partition", "partition must be 1 to %d bytes", EPH_NAME_MAX);
        return;
    }
    c->plen = c->p ? strlen(c->p) : 0;
    c->g = http_query(r, "group");
    if (c->g && strlen(c->g) > EPH_NAME_MAX) {
        http_respond_bad_param(r, "group", "group must be at most %d bytes", EPH_NAME_MAX);
        return;
    }
    if (c->g && !*c->g)
        c->g = NULL;
    c->glen = c->g ? strlen(c->g) : 0;
    int64_t batch = 1, timeout = 30000;
    int wait = 0;
    if (api_query_int(r, "batch", 1, EPH_BATCH_MAX, &batch) < 0) {
        http_respond_bad_param(r, "batch", "batch must be an integer from 1 to %d", EPH_BATCH_MAX);
        return;
    }
    if (api_query_int(r, "timeout", 0, 3600000, &timeout) < 0) {
        http_respond_bad_param(r, "timeout", "timeout must be milliseconds from 0 to 3600000");
        return;
    }
    if (api_query_bool_or_respond(r, "wait", 0, &wait) < 0 || api_query_bool_or_respond(r, "autoAck", 0, &c->auto_ack) < 0)
        return;
    c->batch = (uint32_t)batch;
    uint64_t avail = eph_available(a->eph, r->tenant, c->q, c->qlen, c->p, c->plen, c->g, c->glen, now_ms());
    eph_opts o;
    /* windowBuffer: a waiting pop that finds fewer than `count` waits up to `ms` for more */
    int windowing = wait && eph_options(a->eph, r->tenant, c->q, c->qlen, &o) == 0 && o.window_count > 0 &&
                    o.window_ms > 0;
    uint64_t enough = windowing ? (uint64_t)(o.window_count < batch ? o.window_count : batch) : 1;
    if (!wait || timeout == 0 || a->shutting_down || avail >= enough) {
        answer_pop(c);
        return;
    }
    c->started_ms = mono_ms();
    c->w.deadline_ms = c->started_ms + (uint64_t)timeout;
    c->window_until_ms = c->started_ms + (windowing ? (uint64_t)o.window_ms : 0);
    http_async(r);
    park(c);
}

void api_eph_ack(http_req *r)
{
    app *a = r->app;
    json_doc d;
    if (parse_body(r, &d, 0) < 0)
        return;
    static const char *const top[] = {"queue", "group", "acks", NULL};
    static const char *const ak[] = {"id", "status", "error", NULL};
    const char *q, *g = NULL;
    size_t qlen, glen = 0;
    if (only_keys(r, &d, 0, top, "ack") < 0 || name_field(r, &d, "queue", 1, &q, &qlen) < 0 ||
        name_field(r, &d, "group", 0, &g, &glen) < 0)
        goto out;
    int acks = json_get(&d, 0, "acks");
    if (json_type_of(&d, acks) != JSON_ARRAY || d.toks[acks].count > EPH_ACKS_MAX) {
        bad(r, "missing_field", "%s", "acks must be an array of {\"id\", \"status\"?, \"error\"?} (at most 10000)");
        goto out;
    }
    uint32_t n = d.toks[acks].count;
    /* every entry is checked before any is applied */
    int e = json_first(&d, acks);
    for (uint32_t i = 0; i < n; i++, e = json_next(&d, e)) {
        char where[64];
        snprintf(where, sizeof where, "acks[%u]", i);
        if (json_type_of(&d, e) != JSON_OBJECT) {
            http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_ack", "%s must be an object {\"id\", \"status\"?}", where);
            goto out;
        }
        if (only_keys(r, &d, e, ak, where) < 0)
            goto out;
        int id = json_get(&d, e, "id");
        size_t il;
        const char *is;
        if (json_type_of(&d, id) != JSON_STRING || json_str_span(&d, id, &is, &il) < 0 || il == 0) {
            http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_ack", "%s.id must be the popped message's id", where);
            goto out;
        }
        int st = json_get(&d, e, "status");
        if (st >= 0 && json_type_of(&d, st) != JSON_NULL && !json_str_eq(&d, st, "completed") &&
            !json_str_eq(&d, st, "failed") && !json_str_eq(&d, st, "retry")) {
            http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_status",
                                 "%s.status must be \"completed\", \"failed\" or \"retry\"", where);
            goto out;
        }
        int er = json_get(&d, e, "error");
        if (er >= 0 && json_type_of(&d, er) != JSON_NULL && json_type_of(&d, er) != JSON_STRING) {
            http_respond_refusal(r, 400, "ephemeral_invalid_request", "invalid_ack", "%s.error must be a string", where);
            goto out;
        }
    }
    static const char *const names[] = {"acked", "redelivered", "stale", "unknown"};
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"results\":[");
    int64_t now = now_ms();
    int woke = 0;
    e = json_first(&d, acks);
    for (uint32_t i = 0; i < n; i++, e = json_next(&d, e)) {
        const char *is;
        size_t il;
        json_str_span(&d, json_get(&d, e, "id"), &is, &il);
        int st = json_get(&d, e, "status");
        int status = st < 0 || json_type_of(&d, st) == JSON_NULL || json_str_eq(&d, st, "completed") ? EPH_COMPLETED
                     : json_str_eq(&d, st, "failed")                                               ? EPH_FAILED
                                                                                                   : EPH_RETRY;
        int oc = eph_ack(a->eph, r->tenant, q, qlen, g, glen, is, il, status, now);
        woke |= oc == EPH_REDELIVERED;
        if (i)
            buf_putc(&b, ',');
        buf_puts(&b, "{\"id\":");
        jw_string(&b, is, il);
        buf_puts(&b, ",\"outcome\":");
        jw_cstr(&b, names[oc]);
        buf_putc(&b, '}');
    }
    buf_puts(&b, "]}");
    if (woke)
        waitq_wake(a->eph_wq, r->tenant, q, qlen);
    http_respond_json(r, 200, &b);
    buf_free(&b);
out:
    json_doc_free(&d);
}

void api_eph_queues(http_req *r)
{
    app *a = r->app;
    buf b;
    buf_init(&b, 0);
    eph_list_json(a->eph, r->tenant, now_ms(), &b);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_eph_depth(http_req *r)
{
    app *a = r->app;
    buf b;
    buf_init(&b, 0);
    if (eph_depth_json(a->eph, r->tenant, r->params[0], r->param_lens[0], now_ms(), &b) < 0) {
        buf_free(&b);
        http_respond_refusal(r, 404, "ephemeral_queue_not_found", "ephemeral_queue_not_found",
                             "ephemeral queue %.*s does not exist on this node",
                             (int)(r->param_lens[0] > 200 ? 200 : r->param_lens[0]), r->params[0]);
        return;
    }
    http_respond_json(r, 200, &b);
    buf_free(&b);
}
