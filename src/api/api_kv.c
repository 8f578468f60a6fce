/* api_kv.c — the KV routes (docs/http-api.md, "KV store"). Every write, single op or batch,
 * runs as a batch through queen.kv_batch_v1 with the same parameter builder and decoder the
 * in-process callers use (src/kv/kv.h); GET of one key and listings read without locking. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/util.h"
#include "kv/kv_wire.h"

/* Serialization failures and deadlocks are retried this many times before answering 500;
 * inside the lock order neither should happen. */
#define KV_MAX_ATTEMPTS 5

typedef struct kv_ctx {
    db_req dbr;
    kv_params p;
    http_req *http;
    kv_op *ops;
    int n;
    int single;   /* a single-op route: answer the op's result object itself */
    int attempts;
    int64_t limit;
} kv_ctx;

static kv_ctx *ctx_new(http_req *r)
{
    kv_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    return c;
}

/* The path's namespace and key, checked; -1 after answering 400. */
static int path_names_or_respond(http_req *r, int with_key)
{
    qerr_detail err;
    qerr e = kv_check_name("namespace", r->params[0], r->param_lens[0], KV_NAMESPACE_MAX_BYTES, &err);
    if (e == QERR_OK && with_key)
        e = kv_check_name("key", r->params[1], r->param_lens[1], KV_KEY_MAX_BYTES, &err);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        return -1;
    }
    return 0;
}

static int submit_batch(kv_ctx *c);

static void on_batch(db_req *d)
{
    kv_ctx *c = d->arg;
    http_req *r = c->http;
    app *a = r->app;
    if (d->err != DB_OK || !d->res[0]) {
        int retry = d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0);
        if (retry && c->attempts < KV_MAX_ATTEMPTS) {
            db_req_clear(d);
            if (submit_batch(c) == 0)
                return;
        }
        kv_params_free(&c->p);
        if (d->err == DB_SQL && strcmp(d->sqlstate, "54000") == 0)
            /* the answer would pass KV_ANSWER_MAX_BYTES (kv_batch raises 54000 for it) */
            http_respond_error_code(r, 400, "answer_too_large",
                                    "the answer of this batch would carry more than %u bytes of values; split the "
                                    "batch",
                                    KV_ANSWER_MAX_BYTES);
        else
            api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    kv_params_free(&c->p);
    kv_outcome o;
    qerr_detail err;
    PGresult *res = d->res[0];
    d->res[0] = NULL; /* the outcome owns it now */
    db_req_clear(d);
    qerr e = kv_batch_decode(res, c->n, &o, &err);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        kv_outcome_clear(&o);
        return;
    }
    mc_add(&a->kvm.batches, 1);
    buf b;
    /* values are at most KV_ANSWER_MAX_BYTES (the SQL checks); 1000 names and numbers add
     * a few MiB at most */
    buf_init(&b, 2 * (size_t)KV_ANSWER_MAX_BYTES);
    if (o.fail != KV_FAIL_NONE) {
        mc_add(&a->kvm.failed[o.fail], 1);
        kv_fail_json(&b, c->ops, &o);
        http_respond_json(r, 409, &b);
        goto out;
    }
    for (int i = 0; i < c->n; i++)
        mc_add(&a->kvm.ops[kv_metric_slot(&c->ops[i])], 1);
    if (c->single) {
        kv_result_json(&b, &c->ops[0], &o.results[0]);
    } else {
        buf_puts(&b, "{\"results\":[");
        for (int i = 0; i < c->n; i++) {
            if (i)
                buf_putc(&b, ',');
            kv_result_json(&b, &c->ops[i], &o.results[i]);
        }
        buf_puts(&b, "]}");
    }
    if (b.overflow) /* values are bounded in the SQL; names and numbers cannot add this much */
        http_respond_error(r, 500, "the answer would exceed %u bytes; split the batch", KV_ANSWER_MAX_BYTES);
    else
        http_respond_json(r, 200, &b);
out:
    buf_free(&b);
    kv_outcome_clear(&o);
}

static int submit_batch(kv_ctx *c)
{
    app *a = c->http->app;
    c->attempts++;
    kv_params_free(&c->p);
    kv_batch_params(c->http->tenant, c->ops, c->n, &c->p);
    memset(&c->dbr, 0, sizeof c->dbr);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){KV_BATCH_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_batch;
    c->dbr.arg = c;
    return db_submit(a->db, &c->dbr);
}

/* Sends the batch and answers when it returns (the client is answered either way). */
static void run_batch(kv_ctx *c)
{
    http_async(c->http);
    if (submit_batch(c) < 0) {
        kv_params_free(&c->p);
        api_respond_db_error(c->http, &c->dbr);
    }
}

/* A single-op route: the op from the body (may be empty for delete and incr) with namespace
 * and key from the path; if_version > 0 requires that version (delete's ?ifVersion=). */
static void single_op(http_req *r, int kind, int if_absent, int body_required, int64_t if_version)
{
    if (path_names_or_respond(r, 1) < 0)
        return;
    kv_ctx *c = ctx_new(r);
    c->ops = arena_alloc(&r->ar, sizeof *c->ops);
    c->n = 1;
    c->single = 1;
    kv_op *op = &c->ops[0];
    qerr_detail err;
    qerr e;
    if (r->body_len > 0 || body_required) {
        json_doc d;
        /* root(0) → field values(1): the value's insides are validated, not tokenised */
        if (api_parse_body_or_respond(r, &d, 1) < 0)
            return;
        e = kv_parse_op_fields(&d, 0, kind, if_absent, &r->ar, op, &err);
        json_doc_free(&d);
        if (e != QERR_OK) {
            http_respond_qerr(r, e, &err);
            return;
        }
        if (op->ns || op->key) {
            http_respond_error(r, 400, "namespace and key come from the path, not the body");
            return;
        }
    } else {
        memset(op, 0, sizeof *op);
        op->kind = (enum kv_kind)kind;
        if (kind == KV_INCR)
            op->by = 1;
    }
    if (if_version > 0) {
        op->expect = KV_EXPECT_VERSION;
        op->version = if_version;
    }
    op->ns = r->params[0];
    op->ns_len = r->param_lens[0];
    op->key = r->params[1];
    op->key_len = r->param_lens[1];
    e = kv_check_op(op, &err);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        return;
    }
    run_batch(c);
}

void api_kv_put(http_req *r)
{
    single_op(r, KV_PUT, 0, 1, 0);
}

void api_kv_put_if_absent(http_req *r)
{
    single_op(r, KV_PUT, 1, 1, 0);
}

void api_kv_incr(http_req *r)
{
    single_op(r, KV_INCR, 0, 0, 0);
}

void api_kv_delete(http_req *r)
{
    if (r->body_len > 0) {
        http_respond_error(r, 400, "DELETE takes no body; require a version with ?ifVersion=N");
        return;
    }
    int64_t v = 0;
    if (api_query_int(r, "ifVersion", 1, INT64_MAX, &v) < 0) {
        http_respond_error(r, 400, "ifVersion must be a positive integer (a version this store returned)");
        return;
    }
    single_op(r, KV_DELETE, 0, 0, v);
}

void api_kv_batch(http_req *r)
{
    json_doc d;
    /* root(0) → ops(1) → op(2) → field values(3) */
    if (api_parse_body_or_respond(r, &d, 3) < 0)
        return;
    kv_ctx *c = ctx_new(r);
    qerr_detail err;
    qerr e = kv_parse_batch(&d, &r->ar, &c->ops, &c->n, &err);
    json_doc_free(&d);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        return;
    }
    run_batch(c);
}

/* ---- reads without locks ---- */

static void on_get(db_req *d)
{
    kv_ctx *c = d->arg;
    http_req *r = c->http;
    kv_params_free(&c->p);
    if (d->err != DB_OK || !d->res[0]) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    app *a = r->app;
    PGresult *res = d->res[0];
    kv_op *op = &c->ops[0];
    mc_add(&a->kvm.ops[0], 1);
    if (PQntuples(res) == 0) {
        buf b;
        buf_init(&b, 0);
        http_error_open(&b, r, 404, NULL, "key not found");
        buf_puts(&b, ",\"namespace\":");
        jw_string(&b, op->ns, op->ns_len);
        buf_puts(&b, ",\"key\":");
        jw_string(&b, op->key, op->key_len);
        buf_putc(&b, '}');
        http_respond_json(r, 404, &b);
        buf_free(&b);
        db_req_clear(d);
        return;
    }
    kv_result kr = {
        .value = PQgetvalue(res, 0, KV_GET_VALUE),
        .value_len = (size_t)PQgetlength(res, 0, KV_GET_VALUE),
        .version = db_get_i64(res, 0, KV_GET_VERSION),
        .expires_at_us = db_get_i64(res, 0, KV_GET_EXPIRES_AT),
        .flag = 1,
    };
    buf b;
    buf_init(&b, 0);
    kv_result_json(&b, op, &kr);
    http_respond_json(r, 200, &b);
    buf_free(&b);
    db_req_clear(d);
}

void api_kv_get(http_req *r)
{
    app *a = r->app;
    if (path_names_or_respond(r, 1) < 0)
        return;
    kv_ctx *c = ctx_new(r);
    c->ops = arena_alloc(&r->ar, sizeof *c->ops);
    memset(c->ops, 0, sizeof *c->ops);
    c->n = 1;
    c->ops[0].kind = KV_GET;
    c->ops[0].ns = r->params[0];
    c->ops[0].ns_len = r->param_lens[0];
    c->ops[0].key = r->params[1];
    c->ops[0].key_len = r->param_lens[1];
    kv_get_params(r->tenant, r->params[0], r->param_lens[0], r->params[1], r->param_lens[1], &c->p);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){KV_GET_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_get;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        kv_params_free(&c->p);
        api_respond_db_error(r, &c->dbr);
    }
}

static void on_list(db_req *d)
{
    kv_ctx *c = d->arg;
    http_req *r = c->http;
    kv_params_free(&c->p);
    if (d->err != DB_OK || !d->res[0]) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    PGresult *res = d->res[0];
    int rows = PQntuples(res);
    int64_t total = rows ? db_get_i64(res, 0, KV_LIST_TOTAL) : 0;
    if (rows > c->limit)
        rows = (int)c->limit;
    int more = total > rows;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"namespace\":");
    jw_string(&b, r->params[0], r->param_lens[0]);
    buf_puts(&b, ",\"keys\":[");
    int shown = 0;
    for (int i = 0; i < rows; i++) {
        if (shown)
            buf_putc(&b, ',');
        buf_puts(&b, "{\"key\":");
        jw_string(&b, PQgetvalue(res, i, KV_LIST_KEY), (size_t)PQgetlength(res, i, KV_LIST_KEY));
        buf_puts(&b, ",\"value\":");
        buf_append(&b, PQgetvalue(res, i, KV_LIST_VALUE), (size_t)PQgetlength(res, i, KV_LIST_VALUE));
        buf_puts(&b, ",\"version\":");
        buf_put_i64(&b, db_get_i64(res, i, KV_LIST_VERSION));
        buf_puts(&b, ",\"expiresAt\":");
        if (PQgetisnull(res, i, KV_LIST_EXPIRES_AT))
            buf_puts(&b, "null");
        else
            buf_put_i64(&b, db_get_i64(res, i, KV_LIST_EXPIRES_AT));
        buf_putc(&b, '}');
        shown++;
    }
    buf_printf(&b, "],\"more\":%s,\"after\":", more ? "true" : "false");
    if (shown)
        jw_string(&b, PQgetvalue(res, shown - 1, KV_LIST_KEY), (size_t)PQgetlength(res, shown - 1, KV_LIST_KEY));
    else
        buf_puts(&b, "null");
    buf_putc(&b, '}');
    http_respond_json(r, 200, &b);
    buf_free(&b);
    db_req_clear(d);
}

void api_kv_list(http_req *r)
{
    app *a = r->app;
    if (path_names_or_respond(r, 0) < 0)
        return;
    kv_ctx *c = ctx_new(r);
    c->limit = 100;
    if (api_query_int(r, "limit", 1, KV_LIST_LIMIT_MAX, &c->limit) < 0) {
        http_respond_error(r, 400, "limit must be an integer between 1 and %d", KV_LIST_LIMIT_MAX);
        return;
    }
    const char *prefix = http_query(r, "prefix");
    const char *after = http_query(r, "after");
    qerr_detail err;
    qerr e = QERR_OK;
    if (prefix && *prefix)
        e = kv_check_name("prefix", prefix, strlen(prefix), KV_KEY_MAX_BYTES, &err);
    if (e == QERR_OK && after && *after)
        e = kv_check_name("after", after, strlen(after), KV_KEY_MAX_BYTES, &err);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        return;
    }
    kv_list_params(r->tenant, r->params[0], r->param_lens[0], prefix, prefix ? strlen(prefix) : 0, after,
                   after ? strlen(after) : 0, c->limit, &c->p);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){KV_LIST_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_list;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        kv_params_free(&c->p);
        api_respond_db_error(r, &c->dbr);
    }
}

/* ---- POST /api/v1/kv: the 2.x batch (src/kv/kv_wire.h, queen.kv_ops_v1) ---- */

typedef struct kvw_ctx {
    db_req dbr;
    kvw_params p;
    http_req *http;
    kvw_op *ops;
    int n;
    int attempts;
} kvw_ctx;

/* The {"operations": [...]} body of the KV and lock routes, parsed to `depth`; -1 when refused
 * (with `code`: kv_invalid_body, lock_invalid_body). */
static int ops_body(http_req *r, json_doc *d, uint32_t depth, const char *code)
{
    memset(d, 0, sizeof *d);
    if (!r->body || r->body_len == 0) {
        http_respond_refusal(r, 400, code, "empty", "the body is empty: send {\"operations\": [op, ...]}");
        return -1;
    }
    json_opts o = {.token_depth = depth};
    if (json_parse(d, r->body, r->body_len, &o) < 0) {
        http_respond_refusal(r, 400, code, "invalid_json", "Invalid JSON: %s", d->err);
        json_doc_free(d);
        return -1;
    }
    return 0;
}

/* Nothing to do: the answer of an empty operations list. */
static void no_results(http_req *r)
{
    static const char empty[] = "{\"results\":[]}";
    http_respond(r, 200, "application/json", empty, sizeof empty - 1);
}

static int kvw_submit(kvw_ctx *c);

static void on_kvw(db_req *d)
{
    kvw_ctx *c = d->arg;
    http_req *r = c->http;
    app *a = r->app;
    if (d->err != DB_OK || !d->res[0]) {
        int retry = d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0);
        if (retry && c->attempts < KV_MAX_ATTEMPTS) {
            db_req_clear(d);
            if (kvw_submit(c) == 0)
                return;
        }
        kvw_params_free(&c->p);
        if (d->err == DB_SQL && strcmp(d->sqlstate, "54000") == 0)
            http_respond_refusal(r, 400, "kv_limit_exceeded", "answer_too_large",
                                 "the answer of this batch would carry more than %u bytes of values; split the batch",
                                 KV_ANSWER_MAX_BYTES);
        else
            api_respond_db_refusal(r, d);
        db_req_clear(d);
        return;
    }
    kvw_params_free(&c->p);
    PGresult *res = d->res[0];
    int rows = PQntuples(res);
    buf b;
    buf_init(&b, 2 * (size_t)KV_ANSWER_MAX_BYTES);
    mc_add(&a->kvm.batches, 1);
    if (rows == 1 && db_get_i32(res, 0, KV_OPS_INDEX) < 0) {
        /* a required op lost its precondition: nothing was applied. Its verdict at its place,
         * every other op rolled back. */
        int f = -db_get_i32(res, 0, KV_OPS_INDEX) - 1;
        mc_add(&a->kvm.rolled_back, 1);
        buf_puts(&b, "{\"results\":[");
        for (int i = 0; i < c->n; i++) {
            if (i)
                buf_putc(&b, ',');
            if (i == f)
                buf_append(&b, PQgetvalue(res, 0, KV_OPS_RESULT), (size_t)PQgetlength(res, 0, KV_OPS_RESULT));
            else
                buf_printf(&b, "{\"applied\":false,\"%s\":false,\"reason\":\"rolled_back\"}",
                           c->ops[i].kind == KVW_GET || c->ops[i].kind >= KVW_GET_MANY ? "found" : "rolledBack");
        }
        buf_printf(&b, "],\"rolledBack\":true,\"failedIndex\":%d}", f);
    } else if (rows != c->n) {
        http_respond_refusal(r, 500, "internal_error", NULL, "kv_ops_v1 answered %d rows for %d ops", rows, c->n);
        db_req_clear(d);
        buf_free(&b);
        return;
    } else {
        buf_puts(&b, "{\"results\":[");
        for (int i = 0; i < rows; i++) {
            if (i)
                buf_putc(&b, ',');
            buf_append(&b, PQgetvalue(res, i, KV_OPS_RESULT), (size_t)PQgetlength(res, i, KV_OPS_RESULT));
            mc_add(&a->kvm.ops[kvw_metric_slot(c->ops[i].kind)], 1);
        }
        buf_puts(&b, "]}");
    }
    db_req_clear(d);
    if (b.overflow)
        http_respond_refusal(r, 500, "internal_error", NULL, "the answer would exceed %u bytes; split the batch",
                             2 * KV_ANSWER_MAX_BYTES);
    else
        http_respond_json(r, 200, &b);
    buf_free(&b);
}

static int kvw_submit(kvw_ctx *c)
{
    app *a = c->http->app;
    c->attempts++;
    kvw_params_free(&c->p);
    kvw_params_build(c->http->tenant, 0, c->ops, c->n, &c->p);
    memset(&c->dbr, 0, sizeof c->dbr);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){KV_OPS_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_kvw;
    c->dbr.arg = c;
    return db_submit(a->db, &c->dbr);
}

void api_kv_ops(http_req *r)
{
    qerr_detail why;
    json_doc d;
    /* root(0) → operations(1) → op(2) → field values(3) → getMany's keys(4); a value's insides
     * below that are validated, not tokenised */
    if (ops_body(r, &d, 4, "kv_invalid_body") < 0)
        return;
    kvw_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    qerr e = kvw_parse_body(&d, &r->ar, &c->ops, &c->n, &why);
    json_doc_free(&d);
    if (e != QERR_OK) {
        http_respond_qerr_refusal(r, e, &why);
        return;
    }
    if (c->n == 0) {
        no_results(r);
        return;
    }
    http_async(r);
    if (kvw_submit(c) < 0) {
        kvw_params_free(&c->p);
        api_respond_db_refusal(r, &c->dbr);
    }
}

/* ---- POST /api/v1/locks: locks and semaphores (queen.lock_ops_v1) ---- */

typedef struct lock_ctx {
    db_req dbr;
    kvw_params p;
    http_req *http;
    lockw_op *ops;
    int n;
    int attempts;
} lock_ctx;

static int lock_submit(lock_ctx *c);

static void on_locks(db_req *d)
{
    lock_ctx *c = d->arg;
    http_req *r = c->http;
    if (d->err != DB_OK || !d->res[0]) {
        /* two calls renewing the same permits in opposite orders: one is chosen and runs again */
        int retry = d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0);
        if (retry && c->attempts < KV_MAX_ATTEMPTS) {
            db_req_clear(d);
            if (lock_submit(c) == 0)
                return;
        }
        kvw_params_free(&c->p);
        api_respond_db_refusal(r, d);
        db_req_clear(d);
        return;
    }
    kvw_params_free(&c->p);
    PGresult *res = d->res[0];
    int rows = PQntuples(res);
    if (rows != c->n) {
        http_respond_refusal(r, 500, "internal_error", NULL, "lock_ops_v1 answered %d rows for %d ops", rows, c->n);
        db_req_clear(d);
        return;
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"results\":[");
    for (int i = 0; i < rows; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_append(&b, PQgetvalue(res, i, LOCK_OPS_RESULT), (size_t)PQgetlength(res, i, LOCK_OPS_RESULT));
    }
    buf_puts(&b, "]}");
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static int lock_submit(lock_ctx *c)
{
    app *a = c->http->app;
    c->attempts++;
    kvw_params_free(&c->p);
    lockw_params_build(c->http->tenant, c->ops, c->n, &c->p);
    memset(&c->dbr, 0, sizeof c->dbr);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){LOCK_OPS_SQL, c->p.n, c->p.values, c->p.lengths, c->p.formats, 1};
    c->dbr.done = on_locks;
    c->dbr.arg = c;
    return db_submit(a->db, &c->dbr);
}

void api_locks(http_req *r)
{
    qerr_detail why;
    json_doc d;
    if (ops_body(r, &d, 3, "lock_invalid_body") < 0)
        return;
    lock_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    qerr e = lockw_parse_body(&d, &r->ar, &c->ops, &c->n, &why);
    json_doc_free(&d);
    if (e != QERR_OK) {
        http_respond_qerr_refusal(r, e, &why);
        return;
    }
    if (c->n == 0) {
        no_results(r);
        return;
    }
    http_async(r);
    if (lock_submit(c) < 0) {
        kvw_params_free(&c->p);
        api_respond_db_refusal(r, &c->dbr);
    }
}
