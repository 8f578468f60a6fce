/* app.h — the node: every long-lived object the handlers reach, owned by main. */
#ifndef QUEEN_API_APP_H
#define QUEEN_API_APP_H

#include <stdint.h>
#include <uv.h>

#include "auth/auth.h"
#include "config/config.h"
#include "consume/consume.h"
#include "consume/notify.h"
#include "cp/cp.h"
#include "db/embedded.h"
#include "db/pg.h"
#include "db/res.h"
#include "ephemeral/eph.h"
#include "http/server.h"
#include "kv/kv.h"
#include "sink/sink.h"
#include "storage/maint.h"
#include "storage/retention.h"
#include "storage/push.h"
#include "timers/timers.h"

#define QUEEN_VERSION "0.2.0"

extern const uint8_t DEFAULT_TENANT[16];

/* Counters of the consumption routes (updated on the loop thread, read by /metrics). */
typedef struct consume_metrics {
    mcounter pops, pop_empty, pop_messages, pop_waits, pop_conflated;
    mcounter acks_completed, acks_failed, acks_retry, acks_dlq, acks_rejected;
    mcounter retries, dead_letters;
} consume_metrics;

typedef struct app {
    const queen_config *cfg;
    uv_loop_t *loop;
    db_pool *db;
    pusher *push;
    http_server *http;
    maint *maint;
    retention *retention;
    waitq *wq;
    eph *eph;            /* ephemeral (RAM) queues, this node only */
    waitq *eph_wq;       /* long-polls parked on them */
    notifier *notify;
    kv_metrics kvm;      /* KV counters (handlers and the reaper) */
    kv_reaper *kvr;      /* deletes expired keys */
    timer_job *timers;   /* fires due timers */
    embedded_pg *emb;    /* NULL with an external database */
    s3_node *s3;         /* the S3 sink (QUEEN_S3_EMBEDDED=true), else NULL */
    auth *auth;          /* NULL when JWT_ENABLED is off */
    const cp_config *cpcfg; /* the embedded proxy's variables */
    cp_node *cp;         /* the control plane's clusters (QUEEN_PROXY_CP_TOKEN set), else NULL */
    http_server *proxy;  /* the embedded proxy's listener, else NULL */
    int64_t started_wall_us;
    uint64_t started_mono_us;
    int shutting_down;
    consume_metrics cm;
} app;

void api_register(app *a);
/* The broker's data-plane routes on s; proxy = 1 leaves out the node-wide /status and /metrics. */
void api_register_data_routes(app *a, http_server *s, int proxy);
/* The embedded proxy's routes (api_cp.c): /api/cp/ and the data plane. */
void api_register_proxy(app *a, http_server *s);
/* The gate of every route (api_auth.c): token, access level, tenant and subject. */
void api_auth_gate(http_req *r, enum http_access access);
/* The JWT half of the gate; proxy = 1: the token is required whatever JWT_SKIP_PATHS says, and
 * its tenant must be a cluster's. */
void api_auth_jwt(http_req *r, enum http_access access, int proxy);
/* The proxy's gate (api_cp.c). */
void api_proxy_gate(http_req *r, enum http_access access);
/* Admits a request of a cluster tenant (status, quotas) and runs its handler, or refuses it
 * with the proxy's codes. Every gate ends here. */
void api_cp_admit_proceed(http_req *r);
/* For a request that turns out to push (a transaction with pushes, a stream cycle with sink
 * pushes): 1 when it was refused (push_blocked, suspended, at the storage ceiling). */
int api_cp_push_refused(http_req *r);
/* The same for a request that turns out to write: kind 1 a KV write (refused when suspended or
 * at the storage ceiling), 2 a push. */
int api_cp_refused(http_req *r, int kind);

/* Route handlers (one file per concern). */
void api_push(http_req *r);
void api_eph_configure(http_req *r);
void api_eph_reset(http_req *r);
void api_eph_delete(http_req *r);
void api_eph_push(http_req *r);
void api_eph_pop(http_req *r);
void api_eph_ack(http_req *r);
void api_eph_queues(http_req *r);
void api_eph_depth(http_req *r);
void api_fetch(http_req *r);
void api_partitions_changed(http_req *r);
void api_configure(http_req *r);
void api_health(http_req *r);
void api_status(http_req *r);
void api_metrics_prometheus(http_req *r);
void api_metrics_json(http_req *r);
void api_pop_queue(http_req *r);
void api_pop_partition(http_req *r);
void api_pop_namespace(http_req *r);
void api_ack(http_req *r);
void api_ack_batch(http_req *r);
void api_lease_extend(http_req *r);
void api_kv_get(http_req *r);
void api_kv_list(http_req *r);
void api_kv_put(http_req *r);
void api_kv_put_if_absent(http_req *r);
void api_kv_delete(http_req *r);
void api_kv_incr(http_req *r);
void api_kv_batch(http_req *r);
void api_kv_ops(http_req *r); /* POST /api/v1/kv, the 2.x batch */
void api_locks(http_req *r);  /* POST /api/v1/locks */
void api_timer_ops(http_req *r);
void api_timer_peek(http_req *r);
void api_timer_cancel(http_req *r);
void api_timer_list(http_req *r);

/* The admin surface (api_groups.c, api_dlq.c, api_resources.c, api_messages.c). */
void api_groups_list(http_req *r);
void api_groups_lagging(http_req *r);
void api_group_detail(http_req *r);
void api_group_delete(http_req *r);
void api_group_queue_delete(http_req *r);
void api_group_subscription(http_req *r);
void api_group_seek(http_req *r);
void api_group_partition_seek(http_req *r);
void api_dlq_list(http_req *r);
void api_dlq_requeue(http_req *r);
void api_dlq_delete(http_req *r);
void api_resources_overview(http_req *r);
void api_resources_queues(http_req *r);
void api_resources_queue(http_req *r);
void api_resources_queue_delete(http_req *r);
void api_resources_partition_delete(http_req *r);
void api_resources_namespaces(http_req *r);
void api_resources_tasks(http_req *r);
void api_status_queues(http_req *r);
void api_stats_refresh(http_req *r);
void api_status_queue(http_req *r);
void api_messages_list(http_req *r);
void api_message_get(http_req *r);
void api_message_delete(http_req *r);
/* Finds one record of a partition (its UUID as stored) as GET /api/v1/messages/:p/:t does:
 * done(r, arg, off) with its offset, -1 when it is not there (neither in the log nor as a dead
 * letter), -2 when the partition is not the tenant's. A database failure or a corrupt segment
 * is answered on r and done does not run. */
typedef void (*api_locate_fn)(http_req *r, void *arg, int64_t off);
void api_message_locate(http_req *r, const uint8_t part[16], const char *txn, size_t txn_len, api_locate_fn done,
                        void *arg);
/* POST /api/v1/messages/:partitionId/:transactionId/retry: requeues the record's newest
 * dead letter (api_dlq.c; docs/http-api.md). */
void api_message_retry(http_req *r);
/* Depth, partitions, the status and analytics pages, this node's metrics (api_dashboard.c). */
void api_resources_queue_depth(http_req *r);
void api_resources_partitions(http_req *r);
void api_status_page(http_req *r);
void api_status_analytics(http_req *r);
void api_analytics_system_metrics(http_req *r);
void api_analytics_worker_metrics(http_req *r);
/* Traces (api_traces.c). */
void api_trace_add(http_req *r);
void api_trace_names(http_req *r);
void api_traces_by_name(http_req *r);
void api_traces_for_message(http_req *r);
/* Appends the per-queue lag and dead-letter gauges to a Prometheus body and answers; `body`
 * is taken over. Without the database the gauges are left out (the rest still answers). */
void api_metrics_lag_finish(http_req *r, buf *body);

/* Shared request-body helpers: parse the body as a JSON object or answer 400 (the _or_respond
 * suffix: on -1 the client has been answered). */
#include "json/json.h"
int api_parse_body_or_respond(http_req *r, json_doc *d, uint32_t token_depth);
/* A string field of an object: 1 present (decoded into the request arena, NUL-terminated),
 * 0 absent or null, -1 wrong type, API_STR_NUL when it holds a NUL character (\u0000): such a
 * string cannot be stored as PostgreSQL text, nor be a C string, so every caller refuses it. The
 * JSON reader has already checked that it is valid UTF-8. Use api_str_field_msg for the 400. */
#define API_STR_NUL JSON_STR_NUL /* json.h: json_str_field, json_text_dup */
int api_str_field(http_req *r, const json_doc *d, int obj, const char *key, const char **out, size_t *len);
/* Decodes any string token (an object key too) into the arena: 0, or API_STR_NUL. */
int api_json_text(http_req *r, const json_doc *d, int tok, const char **out, size_t *len);
/* The message for a refused string field: for API_STR_NUL "<where> must not hold a NUL
 * character (\u0000)", else `otherwise` (the route's own message for a missing or mistyped
 * field). Returns buf, filled. */
const char *api_str_field_msg(int rc, const char *where, const char *otherwise, char *out, size_t n);

/* An ack's partitionId: a partition UUID (the JSON answers'), or the decimal u64 partition id a
 * framed pop (QPF1) gave, 1..2^63-1, passed on as the uuid 00000000-0000-0000-<id, 16 hex digits>
 * that queen.ack_v1 resolves by id. 0, or -1 when it is neither. */
int api_partition_ref(const char *s, size_t n, uuid *out);
/* An integer field: 1 present, 0 absent/null, -1 wrong type or out of [lo, hi]. */
int api_int_field(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out);
int push_item_parse_or_respond(http_req *r, const json_doc *d, int it, uint32_t i, push_item *pi);
/* Answers a push that failed (pr->err_status set): the database's failure without its text
 * (api_respond_failure), or the push's own refusal (409 queue_full, 503 encryption_key_missing)
 * with its message after `prefix`. */
void api_respond_push_failure(http_req *r, const push_req *pr, const char *prefix);
/* A push on its way through the group commit: the request and the HTTP request to answer. */
typedef struct api_push_ctx {
    push_req req;
    http_req *http;
} api_push_ctx;
/* The push's answer, one object per item in request order (the done callback of a push whose
 * arg is its api_push_ctx). */
void api_push_answer(push_req *pr);
/* POST /api/v1/push with the 2.x binary body (QPB1, api_push_bin.c): a Content-Type of
 * application/x-queen-push, or a body that starts with the QPB1 magic. */
int api_push_is_binary(http_req *r);
void api_push_binary(http_req *r);
/* POST /api/v1/transaction with the binary body (QTB1): replaces the request's body by the
 * JSON transaction it stands for (0), or answers a refusal (-1). */
int api_txn_is_binary(http_req *r);
int api_txn_binary_to_json(http_req *r);
void api_transaction(http_req *r);
/* Streams: the /streams/v1 routes (api_streams.c, docs/streams.md). */
void api_streams_register(http_req *r);
void api_streams_list(http_req *r);
void api_streams_get(http_req *r);
void api_streams_drop(http_req *r);
void api_streams_cycle(http_req *r);
void api_streams_state_get(http_req *r);
/* The per-query counters of this node: a JSON object for /status (rows: the tenant's queries
 * from queen.streams_state_rows_v1, read as text, or NULL without the database; tenant then
 * filters this node's counters, NULL = all), and Prometheus text (the counters; the state-row
 * gauge from the same function's rows for every tenant). */
void api_streams_status_json(buf *b, const uint8_t tenant[16], const PGresult *rows);
void api_streams_prometheus(buf *b);
void api_streams_prometheus_state(buf *b, const PGresult *rows);
/* An integer query parameter (decimal, optional '-'): 1 present, 0 absent or empty, -1 not an
 * integer in [lo, hi]. */
int api_query_int(http_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out);
/* Failed database requests. Clients never see PostgreSQL's text: they get a stable code and
 * sentence (500 database_error for an SQL error; 503 database_unavailable when the database
 * was unreachable or the connection was lost, database_timeout, database_overloaded) and the
 * request id; the log line with that id has PostgreSQL's message, detail, hint and SQLSTATE. */
void api_db_error_status(const db_req *d, int *status, const char **code, const char **sentence);
void api_log_db_error(http_req *r, const db_req *d); /* sets r->error_logged */
void api_respond_db_error(http_req *r, const db_req *d);
/* The same in the 2.x refusal envelope (http_respond_refusal): error, code and reason the code. */
void api_respond_db_refusal(http_req *r, const db_req *d);
/* The same for a failure another layer reported as a status and a message that may hold the
 * database's text (the push path): the message goes to the log only. */
void api_respond_failure(http_req *r, int status, const char *sqlstate, const char *log_detail);

/* Query-string helpers; on bad input they answer 400 naming the parameter and return -1.
 * Integers: decimal in [lo, hi], absent or empty → def. Booleans: true/1/yes, false/0/no (any
 * case), absent → def. Timestamps: ISO-8601 (µs since the epoch); absent → *present = 0. */
int api_query_int_or_respond(http_req *r, const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out);
int api_query_bool_or_respond(http_req *r, const char *name, int def, int *out);
int api_query_time_or_respond(http_req *r, const char *name, int64_t *out, int *present);
/* A query string parameter, NULL when absent or empty. */
const char *api_query_str(http_req *r, const char *name);

/* api_query: a database request made for one HTTP request — up to DB_MAX_STMTS statements,
 * each with its own text parameters, results in binary. Allocated in the request arena.
 * `done` runs once when every statement succeeded, with the results (freed after it returns);
 * it must answer the client. Any failure is answered here (500/503) and `done` does not run.
 * Deadlocks and serialization failures are retried a few times: the admin writes (seek,
 * deletion) may meet a pop or an ack taking the same rows. */
#define API_QUERY_MAX_PARAMS 12
typedef struct api_query api_query;
typedef void (*api_query_fn)(api_query *q, PGresult *const *res);
typedef struct api_stmt_params {
    const char *values[API_QUERY_MAX_PARAMS];
    int lengths[API_QUERY_MAX_PARAMS];
    int formats[API_QUERY_MAX_PARAMS];
    char text[API_QUERY_MAX_PARAMS][48];
    int n;
} api_stmt_params;
struct api_query {
    http_req *http;
    void *arg;
    api_query_fn done;
    db_req dbr;
    api_stmt_params p[DB_MAX_STMTS];
    int attempts;
};
api_query *api_query_new(http_req *r, api_query_fn done, void *arg);
/* Adds a statement; returns its index. Parameters follow with api_param_* on that index. */
int api_query_stmt(api_query *q, const char *sql);
void api_param_text(api_query *q, int stmt, const char *s); /* NULL = SQL NULL; s must outlive q */
void api_param_i64(api_query *q, int stmt, int64_t v);
void api_param_uuid(api_query *q, int stmt, const uint8_t b[16]);
void api_param_bool(api_query *q, int stmt, int v);
void api_param_null(api_query *q, int stmt);
/* A binary parameter (bytea): data must outlive q */
void api_param_bytes(api_query *q, int stmt, const void *data, size_t len);
/* Goes async and submits; a refusal is answered 503 at once. */
void api_query_submit(api_query *q);

/* Binary result readers: db/res.h. */

#endif
