/* pg.c — asynchronous PostgreSQL pool (libpq pipeline mode on libuv). */
#include "pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"

/* Requests waiting for a connection beyond this are refused with DB_OVERLOADED: a queue that
 * grows without bound only turns an overload into an out-of-memory kill. */
#define DB_MAX_PENDING 100000
/* A request still in flight this long past the statement timeout means the connection is
 * wedged (a silently dropped TCP peer); it is recycled. */
#define DB_DEADLINE_SLACK_MS 5000
#define DB_RECONNECT_MIN_MS 100
#define DB_RECONNECT_MAX_MS 2000

enum conn_state { C_DOWN, C_CONNECTING, C_IDLE, C_BUSY, C_CLOSING };

typedef struct db_conn {
    db_pool *pool;
    int idx;
    enum conn_state state;
    PGconn *pg;
    uv_poll_t *poll; /* heap: closed asynchronously */
    int fd;
    int events;
    db_req *cur;
    uv_timer_t timer; /* reconnect backoff, or the in-flight deadline */
    int backoff_ms;
} db_conn;

struct db_pool {
    uv_loop_t *loop;
    char *conninfo;
    db_conn_params params;
    int64_t statement_timeout_ms;
    int size;
    db_conn *conns;
    db_req *head, *tail;
    int npending;
    int closing;
    int open_handles;
    void (*on_closed)(void *);
    void *on_closed_arg;
    uint64_t requests, failures, reconnects;
    char last_error[256];
};

static void conn_start(db_conn *c);
static void conn_dispatch(db_conn *c);
static void pool_kick(db_pool *p);

const char *db_errname(enum db_err e)
{
    switch (e) {
    case DB_OK: return "ok";
    case DB_UNAVAILABLE: return "unavailable";
    case DB_SQL: return "sql";
    case DB_OVERLOADED: return "overloaded";
    case DB_TIMEOUT: return "timeout";
    }
    return "?";
}

void db_conn_params_init(db_conn_params *cp, const char *conninfo, int64_t statement_timeout_ms,
                         int64_t connect_timeout_ms)
{
    int n = 0;
    snprintf(cp->options, sizeof cp->options, "-c statement_timeout=%lld -c TimeZone=UTC",
             (long long)statement_timeout_ms);
    long long secs = (connect_timeout_ms + 999) / 1000;
    snprintf(cp->connect_timeout, sizeof cp->connect_timeout, "%lld", secs < 2 ? 2 : secs);
    cp->keys[n] = "dbname", cp->vals[n++] = conninfo;
    cp->keys[n] = "application_name", cp->vals[n++] = "queen";
    cp->keys[n] = "options", cp->vals[n++] = cp->options;
    cp->keys[n] = "connect_timeout", cp->vals[n++] = cp->connect_timeout;
    cp->keys[n] = "keepalives", cp->vals[n++] = "1";
    cp->keys[n] = "keepalives_idle", cp->vals[n++] = "30";
    cp->keys[n] = "keepalives_interval", cp->vals[n++] = "10";
    cp->keys[n] = "keepalives_count", cp->vals[n++] = "3";
    cp->keys[n] = "tcp_user_timeout", cp->vals[n++] = "30000";
    cp->keys[n] = NULL, cp->vals[n] = NULL;
}

db_pool *db_pool_new(uv_loop_t *loop, const char *conninfo, int size, int64_t statement_timeout_ms,
                     int64_t connect_timeout_ms)
{
    db_pool *p = xcalloc(1, sizeof *p);
    p->loop = loop;
    p->conninfo = xstrdup(conninfo);
    db_conn_params_init(&p->params, p->conninfo, statement_timeout_ms, connect_timeout_ms);
    p->statement_timeout_ms = statement_timeout_ms;
    p->size = size;
    p->conns = xcalloc((size_t)size, sizeof *p->conns);
    for (int i = 0; i < size; i++) {
        db_conn *c = &p->conns[i];
        c->pool = p;
        c->idx = i;
        c->fd = -1;
        c->backoff_ms = DB_RECONNECT_MIN_MS;
        uv_timer_init(loop, &c->timer);
        c->timer.data = c;
        p->open_handles++;
        conn_start(c);
    }
    return p;
}

static void finish_req(db_pool *p, db_req *r)
{
    if (r->err != DB_OK)
        p->failures++;
    r->done(r);
}

static void req_fail(db_req *r, enum db_err e, const char *msg)
{
    r->err = e;
    snprintf(r->errmsg, sizeof r->errmsg, "%s", msg);
    r->errdetail[0] = r->errhint[0] = '\0';
}

static void poll_closed(uv_handle_t *h)
{
    free(h);
}

static void conn_drop_socket(db_conn *c)
{
    if (c->poll) {
        uv_poll_stop(c->poll);
        uv_close((uv_handle_t *)c->poll, poll_closed);
        c->poll = NULL;
    }
    c->fd = -1;
    c->events = 0;
}

static void on_poll(uv_poll_t *h, int status, int events);

static void conn_watch(db_conn *c, int events)
{
    int fd = PQsocket(c->pg);
    if (fd != c->fd) {
        conn_drop_socket(c);
        if (fd < 0)
            return;
        c->poll = xmalloc(sizeof *c->poll);
        uv_poll_init(c->pool->loop, c->poll, fd);
        c->poll->data = c;
        c->fd = fd;
        c->events = 0;
    }
    if (c->events != events) {
        uv_poll_start(c->poll, events, on_poll);
        c->events = events;
    }
}

static void on_reconnect_timer(uv_timer_t *t)
{
    db_conn *c = t->data;
    if (c->pool->closing)
        return;
    c->pool->reconnects++;
    conn_start(c);
}

/* The connection is gone: fail what it carried, tidy up, and schedule a reconnect. */
static void conn_lost(db_conn *c, const char *why_in)
{
    db_pool *p = c->pool;
    /* why_in may point into the PGconn (PQerrorMessage), which PQfinish frees below */
    char why[256];
    snprintf(why, sizeof why, "%s", why_in ? why_in : "");
    size_t wl = strlen(why);
    while (wl && (why[wl - 1] == '\n' || why[wl - 1] == ' '))
        why[--wl] = '\0';
    snprintf(p->last_error, sizeof p->last_error, "%s", why);
    if (c->state != C_CONNECTING || log_enabled(LOG_DEBUG))
        log_warn("db", "connection %d lost: %s", c->idx, why);
    uv_timer_stop(&c->timer);
    db_req *r = c->cur;
    c->cur = NULL;
    conn_drop_socket(c);
    if (c->pg) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    c->state = C_DOWN;
    if (r) {
        char msg[400];
        snprintf(msg, sizeof msg, "database connection lost: %s", why);
        req_fail(r, DB_UNAVAILABLE, msg);
        finish_req(p, r);
    }
    if (!db_pool_up(p)) {
        /* nothing can serve the queue now: fail it rather than let clients hang */
        while (p->head) {
            db_req *q = p->head;
            p->head = q->next;
            p->npending--;
            char msg[400];
            snprintf(msg, sizeof msg, "database unavailable: %s", why);
            req_fail(q, DB_UNAVAILABLE, msg);
            finish_req(p, q);
        }
        p->tail = NULL;
    }
    if (!p->closing) {
        uv_timer_start(&c->timer, on_reconnect_timer, (uint64_t)c->backoff_ms, 0);
        c->backoff_ms = MIN(c->backoff_ms * 2, DB_RECONNECT_MAX_MS);
    }
}

static void conn_start(db_conn *c)
{
    db_pool *p = c->pool;
    c->pg = PQconnectStartParams(p->params.keys, p->params.vals, 1);
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
        conn_lost(c, c->pg ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    c->state = C_CONNECTING;
    conn_watch(c, UV_WRITABLE);
}

static void conn_connect_step(db_conn *c)
{
    PostgresPollingStatusType st = PQconnectPoll(c->pg);
    switch (st) {
    case PGRES_POLLING_READING:
        conn_watch(c, UV_READABLE);
        return;
    case PGRES_POLLING_WRITING:
        conn_watch(c, UV_WRITABLE);
        return;
    case PGRES_POLLING_OK:
        break;
    default: {
        char why[300];
        snprintf(why, sizeof why, "%s", PQerrorMessage(c->pg));
        size_t n = strlen(why);
        while (n && (why[n - 1] == '\n' || why[n - 1] == ' '))
            why[--n] = '\0';
        conn_lost(c, why);
        return;
    }
    }
    if (PQsetnonblocking(c->pg, 1) != 0 || PQenterPipelineMode(c->pg) != 1) {
        conn_lost(c, "cannot enter pipeline mode");
        return;
    }
    c->state = C_IDLE;
    c->backoff_ms = DB_RECONNECT_MIN_MS;
    conn_watch(c, UV_READABLE);
    log_debug("db", "connection %d ready", c->idx);
    pool_kick(c->pool);
}

static void on_deadline(uv_timer_t *t)
{
    db_conn *c = t->data;
    if (c->state != C_BUSY || !c->cur)
        return;
    db_req *r = c->cur;
    c->cur = NULL;
    req_fail(r, DB_TIMEOUT, "database request timed out; connection recycled");
    finish_req(c->pool, r);
    conn_lost(c, "request deadline passed");
}

static void conn_send(db_conn *c, db_req *r)
{
    c->cur = r;
    c->state = C_BUSY;
    r->nsync = r->ngot = 0;
    r->err = DB_OK;
    r->failed_stmt = -1;
    r->sqlstate[0] = r->errmsg[0] = r->errdetail[0] = r->errhint[0] = '\0';
    for (int i = 0; i < r->nstmt; i++) {
        db_stmt *s = &r->stmt[i];
        r->res[i] = NULL;
        if (!PQsendQueryParams(c->pg, s->sql, s->nparams, NULL, s->values, s->lengths, s->formats,
                               s->binary_result) ||
            !PQpipelineSync(c->pg)) {
            conn_lost(c, PQerrorMessage(c->pg));
            return;
        }
    }
    if (c->pool->statement_timeout_ms > 0)
        uv_timer_start(&c->timer, on_deadline, (uint64_t)(c->pool->statement_timeout_ms + DB_DEADLINE_SLACK_MS), 0);
    int f = PQflush(c->pg);
    if (f < 0) {
        conn_lost(c, PQerrorMessage(c->pg));
        return;
    }
    conn_watch(c, f ? (UV_READABLE | UV_WRITABLE) : UV_READABLE);
}

static int is_conn_sqlstate(const char *s)
{
    return strncmp(s, "08", 2) == 0 || strcmp(s, "57P01") == 0 || strcmp(s, "57P02") == 0 ||
           strcmp(s, "57P03") == 0;
}

static void conn_read(db_conn *c)
{
    if (!PQconsumeInput(c->pg)) {
        conn_lost(c, PQerrorMessage(c->pg));
        return;
    }
    while (c->cur && !PQisBusy(c->pg)) {
        PGresult *res = PQgetResult(c->pg);
        db_req *r = c->cur;
        if (!res) {
            /* between two statements of the pipeline: not the end */
            if (PQstatus(c->pg) == CONNECTION_BAD) {
                conn_lost(c, PQerrorMessage(c->pg));
                return;
            }
            continue;
        }
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            if (++r->nsync == r->nstmt) {
                uv_timer_stop(&c->timer);
                c->cur = NULL;
                c->state = C_IDLE;
                finish_req(c->pool, r);
                if (c->state == C_IDLE && !c->pool->closing)
                    conn_dispatch(c);
                return;
            }
            continue;
        }
        int idx = r->nsync;
        if (st == PGRES_FATAL_ERROR || st == PGRES_PIPELINE_ABORTED || st == PGRES_BAD_RESPONSE) {
            if (r->failed_stmt < 0) {
                const char *ss = PQresultErrorField(res, PG_DIAG_SQLSTATE);
                const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
                const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
                const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
                snprintf(r->sqlstate, sizeof r->sqlstate, "%s", ss ? ss : "");
                snprintf(r->errmsg, sizeof r->errmsg, "%s", msg ? msg : PQresultErrorMessage(res));
                snprintf(r->errdetail, sizeof r->errdetail, "%s", detail ? detail : "");
                snprintf(r->errhint, sizeof r->errhint, "%s", hint ? hint : "");
                r->failed_stmt = idx;
                r->err = (ss && is_conn_sqlstate(ss)) ? DB_UNAVAILABLE : DB_SQL;
            }
            PQclear(res);
            continue;
        }
        if (idx < r->nstmt && !r->res[idx])
            r->res[idx] = res;
        else
            PQclear(res);
    }
    if (PQstatus(c->pg) == CONNECTION_BAD)
        conn_lost(c, PQerrorMessage(c->pg));
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    db_conn *c = h->data;
    if (c->poll != h)
        return;
    if (c->state == C_CONNECTING) {
        conn_connect_step(c);
        return;
    }
    if (status < 0) {
        conn_lost(c, uv_strerror(status));
        return;
    }
    if (events & UV_WRITABLE) {
        int f = PQflush(c->pg);
        if (f < 0) {
            conn_lost(c, PQerrorMessage(c->pg));
            return;
        }
        if (f == 0)
            conn_watch(c, UV_READABLE);
    }
    if (events & UV_READABLE) {
        if (c->state == C_IDLE) {
            /* an idle connection only becomes readable when the server closes it (or sends a
             * notice); consuming tells which */
            if (!PQconsumeInput(c->pg) || PQstatus(c->pg) == CONNECTION_BAD) {
                conn_lost(c, PQerrorMessage(c->pg));
                return;
            }
            PGresult *junk;
            while (!PQisBusy(c->pg) && (junk = PQgetResult(c->pg)) != NULL)
                PQclear(junk);
            return;
        }
        conn_read(c);
    }
}

static void conn_dispatch(db_conn *c)
{
    db_pool *p = c->pool;
    if (!p->head)
        return;
    db_req *r = p->head;
    p->head = r->next;
    if (!p->head)
        p->tail = NULL;
    p->npending--;
    conn_send(c, r);
}

static void pool_kick(db_pool *p)
{
    for (int i = 0; i < p->size && p->head; i++)
        if (p->conns[i].state == C_IDLE)
            conn_dispatch(&p->conns[i]);
}

int db_pool_up(const db_pool *p)
{
    for (int i = 0; i < p->size; i++)
        if (p->conns[i].state == C_IDLE || p->conns[i].state == C_BUSY)
            return 1;
    return 0;
}

int db_submit(db_pool *p, db_req *r)
{
    r->err = DB_OK;
    r->failed_stmt = -1;
    r->next = NULL;
    memset(r->res, 0, sizeof r->res);
    if (p->closing) {
        req_fail(r, DB_UNAVAILABLE, "database pool is shutting down");
        return -1;
    }
    if (!db_pool_up(p)) {
        int connecting = 0;
        for (int i = 0; i < p->size; i++)
            connecting |= p->conns[i].state == C_CONNECTING && p->reconnects == 0;
        if (!connecting) {
            char msg[400];
            snprintf(msg, sizeof msg, "database unavailable: %s", p->last_error[0] ? p->last_error : "not connected");
            req_fail(r, DB_UNAVAILABLE, msg);
            p->failures++;
            return -1;
        }
    }
    if (p->npending >= DB_MAX_PENDING) {
        req_fail(r, DB_OVERLOADED, "too many database requests waiting");
        p->failures++;
        return -1;
    }
    p->requests++;
    r->queued_at_us = mono_us();
    for (int i = 0; i < p->size; i++) {
        if (p->conns[i].state == C_IDLE && !p->head) {
            conn_send(&p->conns[i], r);
            return 0;
        }
    }
    if (p->tail)
        p->tail->next = r;
    else
        p->head = r;
    p->tail = r;
    p->npending++;
    return 0;
}

void db_req_clear(db_req *r)
{
    for (int i = 0; i < DB_MAX_STMTS; i++) {
        if (r->res[i])
            PQclear(r->res[i]);
        r->res[i] = NULL;
    }
}

void db_pool_stats_get(const db_pool *p, db_pool_stats *out)
{
    memset(out, 0, sizeof *out);
    out->size = p->size;
    for (int i = 0; i < p->size; i++) {
        if (p->conns[i].state == C_IDLE || p->conns[i].state == C_BUSY)
            out->connected++;
        if (p->conns[i].state == C_BUSY)
            out->busy++;
    }
    out->pending = p->npending;
    out->requests = p->requests;
    out->failures = p->failures;
    out->reconnects = p->reconnects;
}

const char *db_pool_last_error(const db_pool *p)
{
    return p->last_error;
}

static void timer_closed(uv_handle_t *h)
{
    db_conn *c = h->data;
    db_pool *p = c->pool;
    if (--p->open_handles == 0 && p->on_closed)
        p->on_closed(p->on_closed_arg);
}

void db_pool_close(db_pool *p, void (*on_closed)(void *), void *arg)
{
    p->closing = 1;
    p->on_closed = on_closed;
    p->on_closed_arg = arg;
    while (p->head) {
        db_req *q = p->head;
        p->head = q->next;
        p->npending--;
        req_fail(q, DB_UNAVAILABLE, "database pool is shutting down");
        finish_req(p, q);
    }
    p->tail = NULL;
    for (int i = 0; i < p->size; i++) {
        db_conn *c = &p->conns[i];
        uv_timer_stop(&c->timer);
        db_req *r = c->cur;
        c->cur = NULL;
        conn_drop_socket(c);
        if (c->pg) {
            PQfinish(c->pg);
            c->pg = NULL;
        }
        c->state = C_CLOSING;
        if (r) {
            req_fail(r, DB_UNAVAILABLE, "database pool is shutting down");
            finish_req(p, r);
        }
        uv_close((uv_handle_t *)&c->timer, timer_closed);
    }
}

void db_pool_free(db_pool *p)
{
    if (!p)
        return;
    free(p->conns);
    free(p->conninfo);
    free(p);
}

int64_t db_get_i64(const PGresult *r, int row, int col)
{
    const uint8_t *v = (const uint8_t *)PQgetvalue(r, row, col);
    if (PQgetisnull(r, row, col))
        return 0;
    if (PQgetlength(r, row, col) == 4)
        return (int32_t)be_get32(v);
    return (int64_t)be_get64(v);
}

int32_t db_get_i32(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return (int32_t)be_get32((const uint8_t *)PQgetvalue(r, row, col));
}
