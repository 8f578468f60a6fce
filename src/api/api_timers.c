/* api_timers.c — the timer routes of the 2.x wire (docs/http-api.md, "Timers"): ops (schedule,
 * reschedule, cancel) in one transaction, the standalone cancel, peek, and a queue's keyset
 * listing. Refusals use the 2.x envelope {"error", "code", "reason", "detail"[, "index"]}.
 * Firing is the timer job's (src/timers/timer_job.c); a schedule on this node kicks it so a
 * timer due soon does not wait for the next poll. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"

/* Serialization failures and deadlocks: the ops are tried this many times in all. */
#define TIMER_OPS_MAX_ATTEMPTS 5

typedef struct timer_ctx {
    db_req dbr;
    timer_params p;
    http_req *http;
    timer_op *ops;
    int n;
    int single;   /* the cancel route: the one result object, not {results} */
    int refusals; /* QE002 answers so far (each seals one more queue) */
    int attempts;
    int64_t limit;
} timer_ctx;

static timer_ctx *ctx_new(http_req *r)
{
    timer_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    return c;
}

static void submit(timer_ctx *c, const char *sql, void (*done)(db_req *));

/* ---- ops ---- */

static void submit_ops(timer_ctx *c);

/* Seals, from now on, the payloads of every op of op k's queue (QE002 named it). -1 after
 * answering when this node has no key. */
static int seal_queue_or_respond(timer_ctx *c, int k)
{
    http_req *r = c->http;
    const timer_op *o = &c->ops[k];
    if (!seal_node_key()) {
        http_respond_refusal(r, PUSH_NO_KEY_STATUS, "encryption_key_missing", "no_node_key",
                             "queue %.*s has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY to seal "
                             "its payloads; no op was applied (send them through a node that has the key)",
                             (int)o->queue_len, o->queue);
        return -1;
    }
    app *a = r->app;
    sealq_set(pusher_sealq(a->push), r->tenant, o->queue, o->queue_len, 1, mono_ms());
    for (int i = 0; i < c->n; i++)
        if (c->ops[i].queue_len == o->queue_len && memcmp(c->ops[i].queue, o->queue, o->queue_len) == 0)
            c->ops[i].seal = 1;
    return 0;
}

static void on_ops(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    app *a = r->app;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err == DB_SQL) {
        int k = timer_ops_refused_op(d->sqlstate, d->errmsg);
        int retry = strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0;
        if (k >= 1 && k <= c->n) {
            /* plaintext for a queue with encryptionEnabled: seal that queue's and send again */
            db_req_clear(d);
            if (seal_queue_or_respond(c, k - 1) < 0)
                return;
            if (++c->refusals > c->n + 1) {
                http_respond_refusal(r, 500, "internal_error", NULL,
                                     "timer_ops_v1 kept refusing sealed records as not sealed");
                return;
            }
            submit_ops(c);
            return;
        }
        if (retry && ++c->attempts < TIMER_OPS_MAX_ATTEMPTS) {
            db_req_clear(d);
            submit_ops(c);
            return;
        }
    }
    if (d->err != DB_OK || !res) {
        api_respond_db_refusal(r, d);
        db_req_clear(d);
        return;
    }
    int rows = PQntuples(res);
    /* rows come in key order: o_index puts each result at its op's place */
    int *at = arena_alloc(&r->ar, (size_t)(c->n ? c->n : 1) * sizeof *at);
    for (int i = 0; i < c->n; i++)
        at[i] = -1;
    for (int i = 0; i < rows; i++) {
        int k = db_get_i32(res, i, TIMER_OPS_INDEX);
        if (k >= 1 && k <= c->n)
            at[k - 1] = i;
    }
    for (int i = 0; i < c->n; i++) {
        if (at[i] < 0) {
            http_respond_refusal(r, 500, "internal_error", NULL, "timer_ops_v1 answered %d rows for %d ops", rows,
                                 c->n);
            db_req_clear(d);
            return;
        }
    }
    int64_t soonest = timer_ops_account(timer_job_metrics(a->timers), res);
    buf b;
    buf_init(&b, 0);
    if (!c->single)
        buf_puts(&b, "{\"results\":[");
    for (int i = 0; i < c->n; i++) {
        if (i)
            buf_putc(&b, ',');
        timer_result_json(&b, &c->ops[i], res, at[i]);
    }
    if (!c->single)
        buf_puts(&b, "]}");
    db_req_clear(d);
    if (soonest != INT64_MAX)
        timer_job_kick(a->timers, soonest);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void submit_ops(timer_ctx *c)
{
    http_req *r = c->http;
    timer_ops_params(r->tenant, c->ops, c->n, r->subject, r->subject ? strlen(r->subject) : 0, &c->p);
    submit(c, TIMER_OPS_SQL, on_ops);
}

/* Payloads of queues this node knows to be encrypted are sealed here; the function refuses
 * the others (QE002) and on_ops seals and sends again. */
static void start_ops(timer_ctx *c)
{
    http_req *r = c->http;
    app *a = r->app;
    sealq *sq = pusher_sealq(a->push);
    uint64_t now = mono_ms();
    for (int i = 0; i < c->n; i++)
        c->ops[i].seal = c->ops[i].kind != TIMER_OP_CANCEL && seal_node_key() &&
                         sealq_wants(sq, r->tenant, c->ops[i].queue, c->ops[i].queue_len, now);
    http_async(r);
    submit_ops(c);
}

void api_timer_ops(http_req *r)
{
    qerr_detail why;
    if (!r->body || r->body_len == 0) {
        http_respond_refusal(r, 400, "timer_invalid_body", "empty", "the body is empty: send {\"operations\": [op, ...]}");
        return;
    }
    json_doc d;
    memset(&d, 0, sizeof d);
    /* root(0) → operations(1) → op(2) → field values(3) */
    json_opts o = {.token_depth = 3};
    if (json_parse(&d, r->body, r->body_len, &o) < 0) {
        http_respond_refusal(r, 400, "timer_invalid_body", "invalid_json", "Invalid JSON: %s", d.err);
        json_doc_free(&d);
        return;
    }
    timer_ctx *c = ctx_new(r);
    qerr e = timer_ops_parse_body(&d, &r->ar, &c->ops, &c->n, &why);
    json_doc_free(&d);
    if (e != QERR_OK) {
        http_respond_qerr_refusal(r, e, &why);
        return;
    }
    if (c->n == 0) {
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"results\":[]}");
        http_respond_json(r, 200, &b);
        buf_free(&b);
        return;
    }
    start_ops(c);
}

void api_timer_cancel(http_req *r)
{
    qerr_detail why;
    timer_ctx *c = ctx_new(r);
    c->ops = arena_alloc(&r->ar, sizeof *c->ops);
    c->n = 1;
    c->single = 1;
    const char *txn = http_query(r, "txn");
    qerr e = timer_cancel_op(r->params[0], r->param_lens[0], r->params[1], r->param_lens[1], txn,
                             txn ? strlen(txn) : 0, c->ops, &why);
    if (e != QERR_OK) {
        http_respond_qerr_refusal(r, e, &why);
        return;
    }
    start_ops(c);
}

/* ---- reads ---- */

static void on_peeked(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_refusal(r, d);
        db_req_clear(d);
        return;
    }
    buf b;
    buf_init(&b, 0);
    if (PQntuples(res) == 0) {
        buf_puts(&b, "{\"found\":false}");
    } else {
        buf_puts(&b, "{\"found\":true,");
        if (timer_row_members(&b, res, 0) < 0) {
            buf_free(&b);
            db_req_clear(d);
            http_respond_refusal(r, 500, "internal_error", NULL, "the stored record of this timer could not be decoded");
            return;
        }
        buf_putc(&b, '}');
    }
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_timer_peek(http_req *r)
{
    qerr_detail why;
    timer_op op;
    qerr e = timer_cancel_op(r->params[0], r->param_lens[0], r->params[1], r->param_lens[1], NULL, 0, &op, &why);
    if (e != QERR_OK) {
        http_respond_qerr_refusal(r, e, &why);
        return;
    }
    timer_ctx *c = ctx_new(r);
    timer_peek_params(r->tenant, op.queue, op.queue_len, op.key, op.key_len, &c->p);
    http_async(r);
    submit(c, TIMER_PEEK_SQL, on_peeked);
}

static void on_listed(db_req *d)
{
    timer_ctx *c = d->arg;
    http_req *r = c->http;
    timer_params_free(&c->p);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_refusal(r, d);
        db_req_clear(d);
        return;
    }
    int rows = PQntuples(res);
    int64_t total = rows ? db_get_i64(res, 0, TIMER_ROW_TOTAL) : 0;
    if (rows > c->limit)
        rows = (int)c->limit;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"rows\":[");
    for (int i = 0; i < rows; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_putc(&b, '{');
        if (timer_row_members(&b, res, i) < 0) {
            buf_free(&b);
            db_req_clear(d);
            http_respond_refusal(r, 500, "internal_error", NULL, "the stored record of a timer could not be decoded");
            return;
        }
        buf_putc(&b, '}');
    }
    /* the cursor is the last key shown: exclusive, so the next page starts after it */
    buf_printf(&b, "],\"truncated\":%s,\"nextAfter\":", total > rows ? "true" : "false");
    if (total > rows && rows > 0)
        jw_string(&b, PQgetvalue(res, rows - 1, TIMER_ROW_KEY), (size_t)PQgetlength(res, rows - 1, TIMER_ROW_KEY));
    else
        buf_puts(&b, "null");
    buf_putc(&b, '}');
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_timer_list(http_req *r)
{
    qerr_detail why;
    timer_op op;
    const char *after = http_query(r, "after");
    size_t alen = after ? strlen(after) : 0;
    /* the queue is checked like an op's; the cursor like a timerKey (any, "" = from the start) */
    qerr e = timer_cancel_op(r->params[0], r->param_lens[0], alen ? after : "-", alen ? alen : 1, NULL, 0, &op, &why);
    if (e != QERR_OK) {
        if (why.reason && strncmp(why.reason, "key_", 4) == 0)
            http_respond_refusal(r, 400, "timer_invalid_cursor", "after_too_long",
                                 "after must be a timerKey from a previous page (at most %d bytes)",
                                 TIMER_KEY_MAX_BYTES);
        else
            http_respond_qerr_refusal(r, e, &why);
        return;
    }
    timer_ctx *c = ctx_new(r);
    /* clamped, never refused (as the 2.x client expects); only a non-number is refused */
    c->limit = TIMER_LIST_LIMIT_DEFAULT;
    const char *ls = http_query(r, "limit");
    if (ls && *ls) {
        char *end = NULL;
        long long v = strtoll(ls, &end, 10);
        if (!end || *end || end == ls) {
            http_respond_refusal(r, 400, "timer_invalid_limit", "not_integer", "limit must be an integer (it is clamped to 1..%d)",
                                 TIMER_LIST_LIMIT_MAX);
            return;
        }
        c->limit = v < 1 ? 1 : v > TIMER_LIST_LIMIT_MAX ? TIMER_LIST_LIMIT_MAX : v;
    }
    timer_list_params(r->tenant, op.queue, op.queue_len, after, alen, c->limit, &c->p);
    http_async(r);
    submit(c, TIMER_LIST_SQL, on_listed);
}

/* One statement of c->p with binary results; a refused submission is answered 503. */
static void submit(timer_ctx *c, const char *sql, void (*done)(db_req *))
{
    http_req *r = c->http;
    app *a = r->app;
    memset(&c->dbr, 0, sizeof c->dbr);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){sql, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = done;
    c->dbr.arg = c;
    if (db_submit(a->db, &c->dbr) < 0) {
        timer_params_free(&c->p);
        api_respond_db_refusal(r, &c->dbr);
    }
}
