/* api_timers.c — the timer routes (docs/http-api.md, "Timers"): create, list, get, cancel.
 * Firing is the timer job's (src/timers/timer_job.c); a create on this node kicks it so a
 * timer due soon does not wait for the next poll. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "crypto/seal.h"
#include "storage/logread.h"

#define TIMER_LIST_DEFAULT_LIMIT 100

typedef struct timer_ctx {
    db_req dbr;
    timer_params p;
    http_req *http;
    timer_spec *specs;
    int n;
    int is_batch;
    int64_t limit;
    int refusals;
} timer_ctx;

static void submit_create(timer_ctx *c);

static timer_ctx *ctx_new(http_req *r)
{
    timer_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    return c;
}

static void spec_json(buf *b, const timer_spec *s, int64_t fire_at)
{
    char id[37];
    uuid_format(&s->id, id);
    buf_printf(b, "{\"timerId\":\"%s\",\"queue\":", id);
    jw_string(b, s->queue, s->queue_len);
    buf_puts(b, ",\"partition\":");
    jw_string(b, s->partition, s->partition_len);
    buf_puts(b, ",\"fireAt\":");
    buf_put_i64(b, fire_at);
    buf_puts(b, ",\"transactionId\":");
    jw_string(b, s->txn, s->txn_len);
    buf_puts(b, ",\"traceId\":");
    if (s->has_trace) {
        uuid t;
        memcpy(t.b, s->trace, 16);
        char ts[37];
        uuid_format(&t, ts);
        jw_cstr(b, ts);
    } else {
        buf_puts(b, "null");
    }
    buf_putc(b, '}');
}

static void on_created(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    app *a = r->app;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    /* plaintext for a queue with encryptionEnabled: nothing was created; seal those and again */
    int refused = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        if (PQgetisnull(res, i, 3))
            continue;
        int64_t k = db_get_i64(res, i, 3);
        if (k < 1 || k > c->n)
            continue;
        timer_spec *s = &c->specs[k - 1];
        if (!seal_node_key()) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "queue %.*s has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY to seal its "
                     "payloads; no timer was created (create it through a node that has the key)",
                     (int)s->queue_len, s->queue);
            db_req_clear(d);
            http_respond_error(r, PUSH_NO_KEY_STATUS, "%s", msg);
            return;
        }
        sealq_set(pusher_sealq(a->push), r->tenant, s->queue, s->queue_len, 1, mono_ms());
        s->seal = 1;
        refused = 1;
    }
    if (refused) {
        db_req_clear(d);
        if (++c->refusals > c->n + 1) {
            http_respond_error(r, 500, "the timer insert kept refusing sealed records as not sealed");
            return;
        }
        submit_create(c);
        return;
    }
    if (PQntuples(res) != c->n) {
        http_respond_error(r, 500, "timer insert returned %d rows for %d timers", PQntuples(res), c->n);
        db_req_clear(d);
        return;
    }
    timer_metrics *tm = timer_job_metrics(a->timers);
    mc_add(&tm->created, (uint64_t)c->n);
    int64_t soonest = INT64_MAX;
    buf b;
    buf_init(&b, 0);
    if (c->is_batch)
        buf_putc(&b, '[');
    for (int i = 0; i < c->n; i++) {
        /* rows come in id order, and ids were made in request order */
        const timer_spec *s = &c->specs[i];
        if (memcmp(PQgetvalue(res, i, 0), s->id.b, 16) != 0) {
            buf_free(&b);
            http_respond_error(r, 500, "timer insert returned rows out of order");
            db_req_clear(d);
            return;
        }
        int64_t in_us = db_get_i64(res, i, 2);
        if (in_us < soonest)
            soonest = in_us;
        if (i)
            buf_putc(&b, ',');
        spec_json(&b, s, db_get_i64(res, i, 1));
    }
    if (c->is_batch)
        buf_putc(&b, ']');
    db_req_clear(d);
    timer_job_kick(a->timers, soonest);
    http_respond_json(r, 201, &b);
    buf_free(&b);
}

void api_timer_create(http_req *r)
{
    app *a = r->app;
    json_doc d;
    /* root(0) → items(1) → timer(2) → field values(3); a single timer stops at depth 1 anyway */
    if (api_parse_body_or_respond(r, &d, 3) < 0)
        return;
    timer_ctx *c = ctx_new(r);
    char err[600];
    int rc = timer_parse_request(&d, &r->ar, &c->specs, &c->n, &c->is_batch, err, sizeof err);
    json_doc_free(&d);
    if (rc < 0) {
        http_respond_error(r, 400, "%s", err);
        return;
    }
    /* payloads of queues known to be encrypted are sealed here; the insert refuses the others */
    sealq *sq = pusher_sealq(a->push);
    uint64_t now = mono_ms();
    for (int i = 0; i < c->n; i++)
        c->specs[i].seal =
            seal_node_key() && sealq_wants(sq, r->tenant, c->specs[i].queue, c->specs[i].queue_len, now);
    http_async(r);
    submit_create(c);
}

static void submit_create(timer_ctx *c)
{
    http_req *r = c->http;
    app *a = r->app;
    timer_create_params(r->tenant, c->specs, c->n, r->subject, r->subject ? strlen(r->subject) : 0, &c->p);
    memset(&c->dbr, 0, sizeof c->dbr);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){TIMER_CREATE_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_created;
    c->dbr.arg = c;
    if (db_submit(a->db, &c->dbr) < 0) {
        timer_params_free(&c->p);
        api_respond_db_error(r, &c->dbr);
    }
}

/* The path's timer id; -1 after answering 400. */
static int path_id_or_respond(http_req *r, uuid *out)
{
    if (uuid_parse(r->params[0], r->param_lens[0], out) < 0) {
        http_respond_error(r, 400, "timer id must be a UUID (the timerId a create answered)");
        return -1;
    }
    return 0;
}

static void on_got(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    if (PQntuples(res) == 0) {
        http_respond_error(r, 404, "timer not found (it fired, was cancelled, or never existed)");
        db_req_clear(d);
        return;
    }
    buf b;
    buf_init(&b, 0);
    if (timer_row_json(&b, res, 0) < 0)
        http_respond_error(r, 500, "the stored record of this timer could not be decoded");
    else
        http_respond_json(r, 200, &b);
    buf_free(&b);
    db_req_clear(d);
}

void api_timer_get(http_req *r)
{
    app *a = r->app;
    uuid id;
    if (path_id_or_respond(r, &id) < 0)
        return;
    timer_ctx *c = ctx_new(r);
    timer_get_params(r->tenant, &id, &c->p);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){TIMER_GET_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_got;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        timer_params_free(&c->p);
        api_respond_db_error(r, &c->dbr);
    }
}

static void on_listed(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    int rows = PQntuples(res);
    int64_t total = rows ? db_get_i64(res, 0, TIMER_ROW_TOTAL) : 0;
    if (rows > c->limit)
        rows = (int)c->limit;
    int more = total > rows;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"timers\":[");
    int shown = 0;
    for (int i = 0; i < rows; i++) {
        if (shown)
            buf_putc(&b, ',');
        if (timer_row_json(&b, res, i) < 0) {
            buf_free(&b);
            http_respond_error(r, 500, "the stored record of a timer could not be decoded");
            db_req_clear(d);
            return;
        }
        shown++;
    }
    buf_printf(&b, "],\"more\":%s,\"after\":", more ? "true" : "false");
    if (shown) {
        char id[37];
        format_uuid_text((const uint8_t *)PQgetvalue(res, shown - 1, TIMER_ROW_ID), id);
        jw_cstr(&b, id);
    } else {
        buf_puts(&b, "null");
    }
    buf_putc(&b, '}');
    http_respond_json(r, 200, &b);
    buf_free(&b);
    db_req_clear(d);
}

void api_timer_list(http_req *r)
{
    app *a = r->app;
    timer_ctx *c = ctx_new(r);
    c->limit = TIMER_LIST_DEFAULT_LIMIT;
    if (api_query_int(r, "limit", 1, TIMER_LIST_LIMIT_MAX, &c->limit) < 0) {
        http_respond_error(r, 400, "limit must be an integer between 1 and %d", TIMER_LIST_LIMIT_MAX);
        return;
    }
    uuid after;
    memset(&after, 0, sizeof after);
    const char *as = http_query(r, "after");
    if (as && *as && uuid_parse(as, strlen(as), &after) < 0) {
        http_respond_error(r, 400, "after must be a timer id (a UUID) from a previous page");
        return;
    }
    const char *queue = http_query(r, "queue");
    size_t qlen = queue ? strlen(queue) : 0;
    if (queue && qlen == 0)
        queue = NULL;
    if (queue && qlen > TIMER_NAME_MAX_BYTES) {
        http_respond_error(r, 400, "queue must be at most %d bytes", TIMER_NAME_MAX_BYTES);
        return;
    }
    if (queue && utf8_valid((const uint8_t *)queue, qlen) < 0) {
        http_respond_error(r, 400, "queue must be valid UTF-8");
        return;
    }
    timer_list_params(r->tenant, queue, qlen, &after, c->limit, &c->p);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){TIMER_LIST_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_listed;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        timer_params_free(&c->p);
        api_respond_db_error(r, &c->dbr);
    }
}

static void on_cancelled(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    app *a = r->app;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    if (PQntuples(res) == 0) {
        http_respond_error(r, 404, "timer not found (it fired, was cancelled, or never existed)");
        db_req_clear(d);
        return;
    }
    mc_add(&timer_job_metrics(a->timers)->cancelled, 1);
    char id[37];
    format_uuid_text((const uint8_t *)PQgetvalue(res, 0, 0), id);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"timerId\":\"%s\",\"cancelled\":true}", id);
    http_respond_json(r, 200, &b);
    buf_free(&b);
    db_req_clear(d);
}

void api_timer_cancel(http_req *r)
{
    app *a = r->app;
    uuid id;
    if (path_id_or_respond(r, &id) < 0)
        return;
    timer_ctx *c = ctx_new(r);
    timer_get_params(r->tenant, &id, &c->p);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){TIMER_CANCEL_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_cancelled;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        timer_params_free(&c->p);
        api_respond_db_error(r, &c->dbr);
    }
}
