/* api_resources.c — what the log holds: overview, queues, one queue with its partitions and
 * every consumer group's position on them, namespaces, tasks, the dashboard's
 * /api/v1/status/queues views, queue and partition deletion, and the per-queue lag gauges of
 * /metrics/prometheus: parsing, access and status here; the answers' JSON (and the gauges'
 * text) in admin/answers_resources.c.
 *
 * Counts come from offsets (the view queen.partition_counts_v1), so they are exact and need
 * no stats job: total = next_offset - start_offset; completed = records below the queue-mode
 * cursor (acked or dead-lettered); processing = records from there to the end of a live
 * queue-mode lease; pending = the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/admin_answers.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "queue/options.h"

/* ---- GET /api/v1/resources/overview ------------------------------------------------------ */

static void on_overview(api_query *q, PGresult *const *res)
{
    buf b;
    buf_init(&b, 0);
    answer_overview(&b, res[0], res[1]);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_resources_overview(http_req *r)
{
    api_query *q = api_query_new(r, on_overview, NULL);
    int s = api_query_stmt(q, ADMIN_OVERVIEW_SQL);
    api_param_uuid(q, s, r->tenant);
    s = api_query_stmt(q, ADMIN_OVERVIEW_LAG_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, ADMIN_MAX_PAIRS);
    api_query_submit(q);
}

/* ---- GET /api/v1/resources/queues, GET /api/v1/status/queues ----------------------------- */

typedef struct list_ctx {
    int64_t limit, offset;
} list_ctx;

static void on_queues(api_query *q, PGresult *const *res)
{
    list_ctx *c = q->arg;
    buf b;
    buf_init(&b, 0);
    answer_queues(&b, res[0], c->limit, c->offset);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

static void queues_route(http_req *r, int64_t def_limit)
{
    list_ctx *c = arena_alloc(&r->ar, sizeof *c);
    if (api_query_int_or_respond(r, "limit", def_limit, 1, 10000, &c->limit) < 0 ||
        api_query_int_or_respond(r, "offset", 0, 0, 1000000, &c->offset) < 0)
        return;
    api_query *q = api_query_new(r, on_queues, c);
    int s = api_query_stmt(q, ADMIN_QUEUES_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, api_query_str(r, "namespace"));
    api_param_text(q, s, api_query_str(r, "task"));
    api_param_i64(q, s, c->limit);
    api_param_i64(q, s, c->offset);
    api_query_submit(q);
}

void api_resources_queues(http_req *r)
{
    queues_route(r, 1000);
}

void api_status_queues(http_req *r)
{
    queues_route(r, 100);
}

/* ---- GET /api/v1/resources/queues/:queue, GET /api/v1/status/queues/:queue --------------- */

typedef struct queue_ctx {
    const char *queue;
    int status_view; /* the dashboard's /api/v1/status/queues/:queue shape */
} queue_ctx;

static void on_queue(api_query *q, PGresult *const *res)
{
    queue_ctx *c = q->arg;
    if (PQntuples(res[0]) == 0) {
        http_respond_error(q->http, 404, "Queue not found");
        return;
    }
    buf b;
    buf_init(&b, 0);
    answer_queue(&b, res[0], res[1], res[2], c->status_view);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

static void queue_route(http_req *r, int status_view)
{
    queue_ctx *c = arena_alloc(&r->ar, sizeof *c);
    c->queue = r->params[0];
    c->status_view = status_view;
    api_query *q = api_query_new(r, on_queue, c);
    int s = api_query_stmt(q, ADMIN_QUEUE_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->queue);
    api_param_i64(q, s, ADMIN_MAX_PARTITIONS);
    /* the status view lists no group positions, but the statements are cheap enough to keep
     * one code path */
    s = api_query_stmt(q, ADMIN_QUEUE_GROUPS_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->queue);
    api_param_i64(q, s, status_view ? 0 : ADMIN_MAX_PAIRS);
    s = api_query_stmt(q, ADMIN_QUEUE_GROUP_TOTALS_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->queue);
    api_param_i64(q, s, status_view ? 0 : ADMIN_MAX_PAIRS);
    api_query_submit(q);
}

void api_resources_queue(http_req *r)
{
    queue_route(r, 0);
}

void api_status_queue(http_req *r)
{
    queue_route(r, 1);
}

/* ---- GET /api/v1/resources/namespaces, /tasks -------------------------------------------- */

static void on_grouped(api_query *q, PGresult *const *res)
{
    buf b;
    buf_init(&b, 0);
    answer_grouped(&b, res[0], q->arg);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_resources_namespaces(http_req *r)
{
    api_query *q = api_query_new(r, on_grouped, (void *)"namespace");
    api_param_uuid(q, api_query_stmt(q, ADMIN_NAMESPACES_SQL), r->tenant);
    api_query_submit(q);
}

void api_resources_tasks(http_req *r)
{
    api_query *q = api_query_new(r, on_grouped, (void *)"task");
    api_param_uuid(q, api_query_stmt(q, ADMIN_TASKS_SQL), r->tenant);
    api_query_submit(q);
}

/* ---- DELETE /api/v1/resources/queues/:queue[/partitions/:partition] ---------------------- */

static void on_queue_deleted(api_query *q, PGresult *const *res)
{
    http_req *r = q->http;
    const char *name = r->params[0];
    if (res_bool(res[0], 0, DELETE_QUEUE_EXISTED)) {
        /* pops parked on the queue find it gone */
        app *a = r->app;
        notifier_changed(a->notify, r->tenant, name, strlen(name));
    }
    buf b;
    buf_init(&b, 0);
    answer_queue_deleted(&b, res[0], name);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_resources_queue_delete(http_req *r)
{
    api_query *q = api_query_new(r, on_queue_deleted, NULL);
    int s = api_query_stmt(q, ADMIN_DELETE_QUEUE_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, r->params[0]);
    api_query_submit(q);
}

static void on_partition_deleted(api_query *q, PGresult *const *res)
{
    http_req *r = q->http;
    const char *queue = r->params[0], *part = r->params[1];
    const char *status = res_text(res[0], 0, DELETE_PARTITION_STATUS, NULL);
    if (strcmp(status, "queue_not_found") == 0) {
        http_respond_error(r, 404, "queue not found: %s", queue);
        return;
    }
    if (strcmp(status, "partition_not_found") == 0) {
        http_respond_error(r, 404, "partition not found: %s", part);
        return;
    }
    app *a = r->app;
    notifier_changed(a->notify, r->tenant, queue, strlen(queue));
    buf b;
    buf_init(&b, 0);
    answer_partition_deleted(&b, res[0], queue, part);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_resources_partition_delete(http_req *r)
{
    api_query *q = api_query_new(r, on_partition_deleted, NULL);
    int s = api_query_stmt(q, ADMIN_DELETE_PARTITION_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, r->params[0]);
    api_param_text(q, s, r->params[1]);
    api_query_submit(q);
}

/* ---- /metrics/prometheus: lag and dead-letter gauges ------------------------------------- */

typedef struct lag_metrics_ctx {
    http_req *http;
    db_req dbr;
    buf body;
    char limit[16];
    const char *values[1];
} lag_metrics_ctx;

static void on_lag_metrics(db_req *d)
{
    lag_metrics_ctx *c = d->arg;
    buf *b = &c->body;
    PGresult *x = d->res[0];
    if (d->err == DB_OK && x)
        answer_lag_metrics(b, x, DEFAULT_TENANT);
    if (d->err == DB_OK && d->res[1])
        api_streams_prometheus_state(b, d->res[1]);
    db_req_clear(d);
    http_req *r = c->http;
    buf body = c->body;
    http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", body.data ? body.data : "", body.len);
    buf_free(&body);
}

void api_metrics_lag_finish(http_req *r, buf *body)
{
    app *a = r->app;
    lag_metrics_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->body = *body;
    buf_init(body, 0);
    snprintf(c->limit, sizeof c->limit, "%d", ADMIN_MAX_PAIRS);
    c->values[0] = c->limit;
    c->dbr.nstmt = 2;
    c->dbr.stmt[0] = (db_stmt){ADMIN_METRICS_LAG_SQL, 1, c->values, NULL, NULL, 1};
    /* every tenant's streaming queries with their state rows: queen_stream_state_rows */
    c->dbr.stmt[1] = (db_stmt){"SELECT * FROM queen.streams_state_rows_v1(NULL)", 0, NULL, NULL, NULL, 0};
    c->dbr.done = on_lag_metrics;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        buf b = c->body;
        http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data ? b.data : "", b.len);
        buf_free(&b);
    }
}
