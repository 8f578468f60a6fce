/* pg.h — asynchronous PostgreSQL connection pool on the libuv loop.
 *
 * Every connection runs libpq in non-blocking pipeline mode, driven by a uv_poll_t. A request
 * (db_req) is a short list of statements sent back to back in one pipeline; each statement is
 * followed by a Sync, so each is its own implicit transaction and a failure in one does not
 * abort the next. One request occupies one connection until its last Sync arrives.
 *
 * Contract (libuv style): db_submit either accepts the request (returns 0, and `done` runs
 * exactly once later on the loop thread) or refuses it synchronously (returns -1 with
 * req->err set, and `done` never runs). Results belong to the request until db_req_clear.
 *
 * Loop-thread only. */
#ifndef QUEEN_DB_PG_H
#define QUEEN_DB_PG_H

#include <libpq-fe.h>
#include <stdint.h>
#include <uv.h>

#define DB_MAX_STMTS 6

enum db_err {
    DB_OK = 0,
    DB_UNAVAILABLE, /* no connection, or it was lost mid-request: the outcome may be unknown */
    DB_SQL,         /* a statement failed; see sqlstate/errmsg */
    DB_OVERLOADED,  /* too many requests waiting for a connection */
    DB_TIMEOUT,     /* the request outlived its deadline; the connection was recycled */
};

typedef struct db_req db_req;
typedef void (*db_done_fn)(db_req *r);

typedef struct db_stmt {
    const char *sql;
    int nparams;
    const char *const *values;
    const int *lengths;
    const int *formats;
    int binary_result;
} db_stmt;

struct db_req {
    /* public: set by the caller before db_submit; parameter memory must live until done */
    int nstmt;
    db_stmt stmt[DB_MAX_STMTS];
    db_done_fn done;
    void *arg;
    /* read-only: valid in `done` */
    PGresult *res[DB_MAX_STMTS];
    enum db_err err;
    int failed_stmt;   /* index of the first failed statement, -1 if none */
    char sqlstate[6];
    char errmsg[512];     /* PostgreSQL's primary message, or the pool's own sentence; for logs */
    char errdetail[4096]; /* PG_DIAG_MESSAGE_DETAIL of an SQL error, or "" (the KV rider's verdict: kv_ops_v1) */
    char errhint[256];
    /* private */
    db_req *next;
    int nsync;
    int ngot;
    uint64_t queued_at_us;
};

typedef struct db_pool_stats {
    int size;
    int connected;
    int busy;
    int pending;
    uint64_t requests;
    uint64_t failures;
    uint64_t reconnects;
} db_pool_stats;

typedef struct db_pool db_pool;

/* conninfo: a libpq connection string or URI. The pool connects `size` connections and keeps
 * reconnecting lost ones with backoff. statement_timeout_ms is set on every connection. */
db_pool *db_pool_new(uv_loop_t *loop, const char *conninfo, int size, int64_t statement_timeout_ms,
                     int64_t connect_timeout_ms);
int db_submit(db_pool *p, db_req *r);
void db_req_clear(db_req *r);
void db_pool_stats_get(const db_pool *p, db_pool_stats *out);
int db_pool_up(const db_pool *p);           /* at least one connection is ready */
const char *db_pool_last_error(const db_pool *p);
/* Closes every connection; pending requests complete with DB_UNAVAILABLE. on_closed runs when
 * every handle is closed; then db_pool_free may be called. */
void db_pool_close(db_pool *p, void (*on_closed)(void *), void *arg);
void db_pool_free(db_pool *p);

/* Helpers for reading binary results. */
int64_t db_get_i64(const PGresult *r, int row, int col);
int32_t db_get_i32(const PGresult *r, int row, int col);
const char *db_errname(enum db_err e);

/* Builds the keyword/value arrays for PQconnectdbParams/PQconnectStartParams. */
typedef struct db_conn_params {
    const char *keys[12];
    const char *vals[12];
    char options[128];
    char connect_timeout[24];
} db_conn_params;
void db_conn_params_init(db_conn_params *cp, const char *conninfo, int64_t statement_timeout_ms,
                         int64_t connect_timeout_ms);

#endif
