/* api_common.c — route table and the helpers every handler shares. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "consume/ackreq.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "storage/logread.h"

const uint8_t DEFAULT_TENANT[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

void api_register(app *a)
{
    http_server *s = a->http;
    http_server_set_gate(s, api_auth_gate);
    api_register_data_routes(a, s, 0);
}

void api_register_data_routes(app *a, http_server *s, int proxy)
{
    (void)a;
    http_route(s, "GET", "/health", api_health, ACCESS_PUBLIC);
    if (!proxy) {
        /* the node-wide views: every tenant's sinks, queues and series */
        http_route(s, "GET", "/status", api_status, ACCESS_READ_ONLY);
        http_route(s, "GET", "/metrics/prometheus", api_metrics_prometheus, ACCESS_PUBLIC);
        http_route(s, "GET", "/metrics", api_metrics_json, ACCESS_PUBLIC);
    }
    http_route(s, "POST", "/api/v1/push", api_push, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ephemeral/configure", api_eph_configure, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ephemeral/reset", api_eph_reset, ACCESS_READ_WRITE);
    http_route(s, "DELETE", "/api/v1/ephemeral/queue/:queue", api_eph_delete, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ephemeral/push", api_eph_push, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/ephemeral/pop", api_eph_pop, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ephemeral/ack", api_eph_ack, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/ephemeral/queues", api_eph_queues, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/ephemeral/queues/:queue/depth", api_eph_depth, ACCESS_READ_ONLY);
    http_route(s, "POST", "/api/v1/configure", api_configure, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/fetch", api_fetch, ACCESS_READ_ONLY);
    http_route(s, "POST", "/api/v1/partitions/changed", api_partitions_changed, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/pop", api_pop_namespace, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/pop/queue/:queue", api_pop_queue, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/pop/queue/:queue/partition/:partition", api_pop_partition, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ack", api_ack, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ack/batch", api_ack_batch, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/lease/:leaseId/extend", api_lease_extend, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/transaction", api_transaction, ACCESS_READ_WRITE);
    /* streams (docs/streams.md): register and cycle read-write, state reads read-only, as the
     * earlier release's route table; listing and reading queries read-only, dropping one read-write
     * (as a register with reset, which wipes the same state) */
    http_route(s, "POST", "/streams/v1/queries", api_streams_register, ACCESS_READ_WRITE);
    http_route(s, "GET", "/streams/v1/queries", api_streams_list, ACCESS_READ_ONLY);
    http_route(s, "GET", "/streams/v1/queries/:name", api_streams_get, ACCESS_READ_ONLY);
    http_route(s, "DELETE", "/streams/v1/queries/:name", api_streams_drop, ACCESS_READ_WRITE);
    http_route(s, "POST", "/streams/v1/cycle", api_streams_cycle, ACCESS_READ_WRITE);
    http_route(s, "POST", "/streams/v1/state/get", api_streams_state_get, ACCESS_READ_ONLY);
    /* KV store (docs/http-api.md#kv-store) */
    http_route(s, "POST", "/api/v1/kv", api_kv_ops, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/locks", api_locks, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/kv/batch", api_kv_batch, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/kv/:namespace", api_kv_list, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/kv/:namespace/:key", api_kv_get, ACCESS_READ_ONLY);
    http_route(s, "PUT", "/api/v1/kv/:namespace/:key", api_kv_put, ACCESS_READ_WRITE);
    http_route(s, "DELETE", "/api/v1/kv/:namespace/:key", api_kv_delete, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/kv/:namespace/:key/putIfAbsent", api_kv_put_if_absent, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/kv/:namespace/:key/incr", api_kv_incr, ACCESS_READ_WRITE);
    /* timers (docs/http-api.md#timers) */
    http_route(s, "POST", "/api/v1/timers", api_timer_ops, ACCESS_READ_WRITE);
    /* before the list: "/api/v1/timers/q//" is the timer "/" of queue q */
    http_route(s, "GET", "/api/v1/timers/:queue/*timerKey", api_timer_peek, ACCESS_READ_ONLY);
    http_route(s, "DELETE", "/api/v1/timers/:queue/*timerKey", api_timer_cancel, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/timers/:queue", api_timer_list, ACCESS_READ_ONLY);

    /* the admin surface; access levels as the earlier release's route table. Fixed paths come
     * before the patterns that would also match them (lagging before :group). */
    http_route(s, "GET", "/api/v1/consumer-groups", api_groups_list, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/consumer-groups/lagging", api_groups_lagging, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/consumer-groups/:group", api_group_detail, ACCESS_READ_ONLY);
    http_route(s, "DELETE", "/api/v1/consumer-groups/:group", api_group_delete, ACCESS_ADMIN);
    http_route(s, "POST", "/api/v1/consumer-groups/:group/subscription", api_group_subscription, ACCESS_READ_WRITE);
    http_route(s, "DELETE", "/api/v1/consumer-groups/:group/queues/:queue", api_group_queue_delete, ACCESS_ADMIN);
    http_route(s, "POST", "/api/v1/consumer-groups/:group/queues/:queue/seek", api_group_seek, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek",
               api_group_partition_seek, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/dlq", api_dlq_list, ACCESS_READ_ONLY);
    http_route(s, "POST", "/api/v1/dlq/:id/requeue", api_dlq_requeue, ACCESS_READ_WRITE);
    http_route(s, "DELETE", "/api/v1/dlq/:id", api_dlq_delete, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/resources/overview", api_resources_overview, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/resources/queues", api_resources_queues, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/resources/queues/:queue", api_resources_queue, ACCESS_READ_ONLY);
    http_route(s, "DELETE", "/api/v1/resources/queues/:queue", api_resources_queue_delete, ACCESS_ADMIN);
    http_route(s, "DELETE", "/api/v1/resources/queues/:queue/partitions/:partition", api_resources_partition_delete,
               ACCESS_ADMIN);
    http_route(s, "GET", "/api/v1/resources/queues/:queue/depth", api_resources_queue_depth, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/resources/partitions", api_resources_partitions, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/resources/namespaces", api_resources_namespaces, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/resources/tasks", api_resources_tasks, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/status", api_status_page, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/status/analytics", api_status_analytics, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/analytics/system-metrics", api_analytics_system_metrics, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/analytics/worker-metrics", api_analytics_worker_metrics, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/status/queues", api_status_queues, ACCESS_READ_ONLY);
    http_route(s, "POST", "/api/v1/stats/refresh", api_stats_refresh, ACCESS_ADMIN);
    http_route(s, "GET", "/api/v1/status/queues/:queue", api_status_queue, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/messages", api_messages_list, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/messages/:partitionId/:transactionId", api_message_get, ACCESS_READ_ONLY);
    http_route(s, "DELETE", "/api/v1/messages/:partitionId/:transactionId", api_message_delete, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/messages/:partitionId/:transactionId/retry", api_message_retry, ACCESS_READ_WRITE);
    /* traces: by-name before :partitionId/:transactionId (the first match wins, url.c) */
    http_route(s, "POST", "/api/v1/traces", api_trace_add, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/traces/names", api_trace_names, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/traces/by-name/:traceName", api_traces_by_name, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/traces/:partitionId/:transactionId", api_traces_for_message, ACCESS_READ_ONLY);
}

int api_parse_body_or_respond(http_req *r, json_doc *d, uint32_t token_depth)
{
    memset(d, 0, sizeof *d);
    if (!r->body || r->body_len == 0) {
        http_respond_error(r, 400, "Empty request body");
        return -1;
    }
    json_opts o = {.max_tokens = 0, .token_depth = token_depth};
    if (json_parse(d, r->body, r->body_len, &o) < 0) {
        http_respond_error(r, 400, "Invalid JSON: %s", d->err);
        json_doc_free(d);
        return -1;
    }
    if (json_type_of(d, 0) != JSON_OBJECT) {
        http_respond_error(r, 400, "request body must be a JSON object");
        json_doc_free(d);
        return -1;
    }
    return 0;
}

int api_json_text(http_req *r, const json_doc *d, int tok, const char **out, size_t *len)
{
    return json_text_dup(&r->ar, d, tok, out, len);
}

int api_str_field(http_req *r, const json_doc *d, int obj, const char *key, const char **out, size_t *len)
{
    return json_str_field(&r->ar, d, obj, key, out, len);
}

const char *api_str_field_msg(int rc, const char *where, const char *otherwise, char *out, size_t n)
{
    return json_str_field_msg(rc, where, otherwise, out, n);
}

int api_int_field(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    return json_int_field(d, obj, key, lo, hi, out);
}

int api_query_int(http_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = http_query(r, name);
    if (!v || !*v)
        return 0;
    const char *p = v;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return -1;
    errno = 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 1;
}

int api_query_int_or_respond(http_req *r, const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = http_query(r, name);
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno || x < lo || x > hi) {
        http_respond_error(r, 400, "%s must be an integer between %lld and %lld", name, (long long)lo, (long long)hi);
        return -1;
    }
    *out = x;
    return 0;
}

int api_query_bool_or_respond(http_req *r, const char *name, int def, int *out)
{
    const char *v = http_query(r, name);
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    size_t n = strlen(v);
    if (ascii_ieq(v, n, "true") || ascii_ieq(v, n, "1") || ascii_ieq(v, n, "yes")) {
        *out = 1;
        return 0;
    }
    if (ascii_ieq(v, n, "false") || ascii_ieq(v, n, "0") || ascii_ieq(v, n, "no")) {
        *out = 0;
        return 0;
    }
    http_respond_error(r, 400, "%s must be true or false", name);
    return -1;
}

int api_query_time_or_respond(http_req *r, const char *name, int64_t *out, int *present)
{
    const char *v = http_query(r, name);
    *present = 0;
    if (!v || !*v)
        return 0;
    if (parse_iso_us(v, strlen(v), out) < 0) {
        http_respond_error(r, 400, "%s must be an ISO-8601 timestamp (for example 2026-05-06T10:00:00Z)", name);
        return -1;
    }
    *present = 1;
    return 0;
}

const char *api_query_str(http_req *r, const char *name)
{
    const char *v = http_query(r, name);
    return v && *v ? v : NULL;
}

void api_db_error_status(const db_req *d, int *status, const char **code, const char **sentence)
{
    switch (d->err) {
    case DB_SQL:
    case DB_OK: /* a statement "succeeded" without a result: as unexpected as an error */
        *status = 500;
        *code = "database_error";
        *sentence = "database error: the request failed in the database (the node's log has the details under this "
                    "requestId)";
        return;
    case DB_TIMEOUT:
        *status = 503;
        *code = "database_timeout";
        *sentence = "database timeout: the database did not answer in time; retry later";
        return;
    case DB_OVERLOADED:
        *status = 503;
        *code = "database_overloaded";
        *sentence = "database overloaded: too many requests are waiting for a database connection; retry later";
        return;
    case DB_UNAVAILABLE:
        break;
    }
    *status = 503;
    *code = "database_unavailable";
    *sentence = "database unavailable: the database cannot be reached or the connection was lost; retry later";
}

void api_log_db_error(http_req *r, const db_req *d)
{
    r->error_logged = 1;
    if (d->err == DB_SQL) {
        /* PostgreSQL's split: message, then detail and hint when it gave them */
        log_error("api", "request %s (%s %s): database error %s: %s%s%s%s%s", r->request_id, r->method,
                  http_route_pattern(r), d->sqlstate[0] ? d->sqlstate : "-----", d->errmsg,
                  d->errdetail[0] ? "; detail: " : "", d->errdetail, d->errhint[0] ? "; hint: " : "", d->errhint);
    } else if (d->err == DB_TIMEOUT) {
        log_warn("api", "request %s (%s %s): database %s: %s", r->request_id, r->method, http_route_pattern(r),
                 db_errname(d->err), d->errmsg[0] ? d->errmsg : "no detail");
    } else {
        /* an outage fails every request: the pool logs the outage itself (once), so the
         * requests' lines are debug, or an outage would flood the log */
        log_debug("api", "request %s (%s %s): database %s: %s", r->request_id, r->method, http_route_pattern(r),
                  db_errname(d->err), d->errmsg[0] ? d->errmsg : "no detail");
    }
}

void api_respond_db_error(http_req *r, const db_req *d)
{
    int status;
    const char *code, *sentence;
    api_db_error_status(d, &status, &code, &sentence);
    api_log_db_error(r, d);
    http_respond_error_code(r, status, code, "%s", sentence);
}

void api_respond_db_refusal(http_req *r, const db_req *d)
{
    int status;
    const char *code, *sentence;
    api_db_error_status(d, &status, &code, &sentence);
    api_log_db_error(r, d);
    http_respond_refusal(r, status, code, code, "%s", sentence);
}

void api_respond_failure(http_req *r, int status, const char *sqlstate, const char *log_detail)
{
    db_req d;
    memset(&d, 0, sizeof d);
    d.err = status == 503 ? DB_UNAVAILABLE : DB_SQL;
    snprintf(d.sqlstate, sizeof d.sqlstate, "%s", sqlstate ? sqlstate : "");
    snprintf(d.errmsg, sizeof d.errmsg, "%s", log_detail && *log_detail ? log_detail : "no detail");
    api_respond_db_error(r, &d);
}

/* ---- api_query --------------------------------------------------------------------------- */

/* Deadlocks, serialization failures and lock timeouts (the deletions give way to consumers
 * after a short lock wait, see src/db/functions/delete_queue_v1.sql): the statement is tried this many times in all. */
#define API_QUERY_MAX_ATTEMPTS 8

api_query *api_query_new(http_req *r, api_query_fn done, void *arg)
{
    api_query *q = arena_alloc(&r->ar, sizeof *q);
    memset(q, 0, sizeof *q);
    q->http = r;
    q->done = done;
    q->arg = arg;
    return q;
}

int api_query_stmt(api_query *q, const char *sql)
{
    int i = q->dbr.nstmt++;
    q->dbr.stmt[i].sql = sql;
    q->dbr.stmt[i].binary_result = 1;
    return i;
}

static const char **param_slot(api_query *q, int stmt, int *idx)
{
    api_stmt_params *p = &q->p[stmt];
    *idx = p->n++;
    p->lengths[*idx] = 0;
    p->formats[*idx] = 0;
    return &p->values[*idx];
}

void api_param_text(api_query *q, int stmt, const char *s)
{
    int i;
    *param_slot(q, stmt, &i) = s;
}

void api_param_null(api_query *q, int stmt)
{
    api_param_text(q, stmt, NULL);
}

void api_param_bytes(api_query *q, int stmt, const void *data, size_t len)
{
    int i;
    const char **slot = param_slot(q, stmt, &i);
    *slot = data;
    q->p[stmt].lengths[i] = (int)len;
    q->p[stmt].formats[i] = 1;
}

void api_param_i64(api_query *q, int stmt, int64_t v)
{
    int i;
    const char **slot = param_slot(q, stmt, &i);
    snprintf(q->p[stmt].text[i], sizeof q->p[stmt].text[i], "%lld", (long long)v);
    *slot = q->p[stmt].text[i];
}

void api_param_uuid(api_query *q, int stmt, const uint8_t b[16])
{
    int i;
    const char **slot = param_slot(q, stmt, &i);
    format_uuid_text(b, q->p[stmt].text[i]);
    *slot = q->p[stmt].text[i];
}

void api_param_bool(api_query *q, int stmt, int v)
{
    api_param_text(q, stmt, v ? "true" : "false");
}

static void on_query_done(db_req *d)
{
    api_query *q = d->arg;
    http_req *r = q->http;
    if (d->err != DB_OK) {
        int retry = d->err == DB_SQL &&
                    (strcmp(d->sqlstate, "40P01") == 0 || strcmp(d->sqlstate, "40001") == 0 ||
                     strcmp(d->sqlstate, "55P03") == 0) &&
                    ++q->attempts < API_QUERY_MAX_ATTEMPTS && !http_client_gone(r);
        db_req_clear(d);
        if (retry && db_submit(((app *)r->app)->db, d) == 0)
            return;
        api_respond_db_error(r, d);
        return;
    }
    /* the results leave the request (its arena dies with the answer) before `done` answers */
    PGresult *res[DB_MAX_STMTS] = {0};
    for (int i = 0; i < DB_MAX_STMTS; i++) {
        res[i] = d->res[i];
        d->res[i] = NULL;
    }
    q->done(q, res);
    for (int i = 0; i < DB_MAX_STMTS; i++)
        if (res[i])
            PQclear(res[i]);
}

void api_query_submit(api_query *q)
{
    app *a = q->http->app;
    for (int i = 0; i < q->dbr.nstmt; i++) {
        db_stmt *st = &q->dbr.stmt[i];
        st->nparams = q->p[i].n;
        st->values = q->p[i].values;
        st->lengths = q->p[i].lengths;
        st->formats = q->p[i].formats;
    }
    q->dbr.done = on_query_done;
    q->dbr.arg = q;
    http_async(q->http);
    if (db_submit(a->db, &q->dbr) < 0)
        api_respond_db_error(q->http, &q->dbr);
}

int api_partition_ref(const char *s, size_t n, uuid *out)
{
    return ack_partition_ref(s, n, out);
}
