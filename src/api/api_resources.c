/* api_resources.c — what the log holds: overview, queues, one queue with its partitions and
 * every consumer group's position on them, namespaces, tasks, the dashboard's
 * /api/v1/status/queues views, queue and partition deletion, and the per-queue lag gauges of
 * /metrics/prometheus.
 *
 * Counts come from offsets (the view queen.partition_counts_v1), so they are exact and need
 * no stats job: total = next_offset - start_offset; completed = records below the queue-mode
 * cursor (acked or dead-lettered); processing = records from there to the end of a live
 * queue-mode lease; pending = the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "queue/options.h"

static const uint8_t *const default_tenant = DEFAULT_TENANT;

static void counts_json(buf *b, int64_t total, int64_t pending, int64_t processing, int64_t completed, int64_t failed,
                        int64_t dead)
{
    buf_printf(b, "{\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,\"failed\":%lld,"
                  "\"deadLetter\":%lld}",
               (long long)total, (long long)pending, (long long)processing, (long long)completed, (long long)failed,
               (long long)dead);
}

/* ---- GET /api/v1/resources/overview ------------------------------------------------------ */

static void on_overview(api_query *q, PGresult *const *res)
{
    PGresult *o = res[0], *l = res[1];
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"queues\":%lld,\"partitions\":%lld,\"namespaces\":%lld,\"tasks\":%lld,\"messages\":",
               (long long)res_i64(o, 0, 0), (long long)res_i64(o, 0, 1), (long long)res_i64(o, 0, 2),
               (long long)res_i64(o, 0, 3));
    counts_json(&b, res_i64(o, 0, 4), res_i64(o, 0, 5), res_i64(o, 0, 6), res_i64(o, 0, 7), res_i64(o, 0, 8),
                res_i64(o, 0, 9));
    buf_printf(&b, ",\"lag\":{\"pairs\":%lld,\"time\":{\"avg\":%.3f,\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                   "\"offset\":{\"avg\":%.3f,\"median\":%.3f,\"min\":%lld,\"max\":%lld}}",
               (long long)res_i64(l, 0, 0), res_f64(l, 0, 1) / 1e6, res_f64(l, 0, 2) / 1e6,
               (double)res_i64(l, 0, 3) / 1e6, (double)res_i64(l, 0, 4) / 1e6, res_f64(l, 0, 5), res_f64(l, 0, 6),
               (long long)res_i64(l, 0, 7), (long long)res_i64(l, 0, 8));
    /* acks are not logged per record, so the processed rate is not known here (the node's
     * queen_acks_total counters are) */
    buf_printf(&b, ",\"throughput\":{\"ingestedPerSecond\":%.3f,\"processedPerSecond\":null},\"timestamp\":",
               (double)res_i64(o, 0, 10) / 60.0);
    admin_iso_ms_or_null(&b, res_i64(o, 0, 11));
    buf_puts(&b, ",\"statsAge\":0}");
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
    PGresult *x = res[0];
    int n = PQntuples(x);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"queues\":[");
    for (int i = 0; i < n; i++) {
        char id[37];
        res_uuid(x, i, 0, id);
        if (i)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"id\":\"%s\",\"name\":", id);
        res_json_str(&b, x, i, 1);
        buf_puts(&b, ",\"namespace\":");
        res_json_str(&b, x, i, 2);
        buf_puts(&b, ",\"task\":");
        res_json_str(&b, x, i, 3);
        buf_puts(&b, ",\"createdAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, i, 4));
        buf_printf(&b, ",\"configured\":%s,\"partitions\":%lld,\"messages\":{\"total\":%lld,\"pending\":%lld,"
                       "\"processing\":%lld,\"completed\":%lld,\"deadLetter\":%lld},\"lastActivity\":",
                   res_bool(x, i, 10) ? "true" : "false", (long long)res_i64(x, i, 5), (long long)res_i64(x, i, 6),
                   (long long)res_i64(x, i, 7), (long long)res_i64(x, i, 8), (long long)res_i64(x, i, 9),
                   (long long)res_i64(x, i, 11));
        admin_iso_us_or_null(&b, res_i64(x, i, 13));
        buf_putc(&b, '}');
    }
    buf_printf(&b, "],\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"total\":", (long long)c->limit,
               (long long)c->offset);
    if (n > 0)
        buf_printf(&b, "%lld}}", (long long)res_i64(x, 0, 12));
    else
        buf_puts(&b, "null}}");
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

/* First row of the sorted (by partition id) group rows for pid, or n. */
static int group_rows_from(const PGresult *g, int64_t pid)
{
    int lo = 0, hi = PQntuples(g);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (res_i64(g, mid, 0) < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void on_queue(api_query *q, PGresult *const *res)
{
    queue_ctx *c = q->arg;
    PGresult *x = res[0], *g = res[1], *gt = res[2];
    int n = PQntuples(x);
    if (n == 0) {
        http_respond_error(q->http, 404, "Queue not found");
        return;
    }
    char qid[37];
    res_uuid(x, 0, QC_UUID, qid);
    size_t optlen;
    const char *opts = res_text(x, 0, QC_OPTIONS, &optlen);
    json_doc od;
    memset(&od, 0, sizeof od);
    int ok = json_parse(&od, opts, optlen, NULL) == 0 && json_type_of(&od, 0) == JSON_OBJECT;
    buf b;
    buf_init(&b, 0);
    if (c->status_view) {
        buf_printf(&b, "{\"queue\":{\"id\":\"%s\",\"name\":", qid);
        res_json_str(&b, x, 0, QC_NAME);
        buf_puts(&b, ",\"namespace\":");
        res_json_str(&b, x, 0, QC_NS);
        buf_puts(&b, ",\"task\":");
        res_json_str(&b, x, 0, QC_TASK);
        buf_puts(&b, ",\"priority\":");
        queue_option_raw(&b, &od, ok, "priority");
        buf_puts(&b, ",\"createdAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, 0, QC_CREATED));
        buf_puts(&b, ",\"config\":{\"leaseTime\":");
        queue_option_raw(&b, &od, ok, "leaseTime");
        buf_puts(&b, ",\"retryLimit\":");
        queue_option_raw(&b, &od, ok, "retryLimit");
        buf_puts(&b, ",\"retryDelay\":");
        queue_option_raw(&b, &od, ok, "retryDelay");
        buf_puts(&b, ",\"ttl\":");
        queue_option_raw(&b, &od, ok, "ttl");
        buf_puts(&b, ",\"maxQueueSize\":");
        queue_option_raw(&b, &od, ok, "maxSize");
        buf_puts(&b, ",\"deadLetterQueue\":");
        queue_option_raw(&b, &od, ok, "deadLetterQueue");
        buf_puts(&b, "}},\"partitions\":[");
    } else {
        buf_printf(&b, "{\"id\":\"%s\",\"name\":", qid);
        res_json_str(&b, x, 0, QC_NAME);
        buf_puts(&b, ",\"namespace\":");
        res_json_str(&b, x, 0, QC_NS);
        buf_puts(&b, ",\"task\":");
        res_json_str(&b, x, 0, QC_TASK);
        buf_puts(&b, ",\"createdAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, 0, QC_CREATED));
        buf_printf(&b, ",\"configured\":%s,\"options\":", res_bool(x, 0, QC_CONFIGURED) ? "true" : "false");
        if (ok)
            buf_append(&b, opts, optlen);
        else
            buf_puts(&b, "{}");
        buf_puts(&b, ",\"partitions\":[");
    }
    json_doc_free(&od);
    int64_t t_total = 0, t_pending = 0, t_processing = 0, t_completed = 0, t_failed = 0, t_dead = 0;
    int np = 0;
    for (int i = 0; i < n; i++) {
        if (res_null(x, i, PC_ID))
            continue; /* a queue without partitions */
        char pu[37];
        res_uuid(x, i, PC_UUID, pu);
        int64_t total = res_i64(x, i, PC_TOTAL), completed = res_i64(x, i, PC_COMPLETED);
        int64_t processing = res_i64(x, i, PC_PROCESSING), pending = res_i64(x, i, PC_PENDING);
        int64_t failed = res_i64(x, i, PC_FAILED), dead = res_i64(x, i, PC_DEAD);
        t_total += total;
        t_completed += completed;
        t_processing += processing;
        t_pending += pending;
        t_failed += failed;
        t_dead += dead;
        if (np++)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"id\":\"%s\",\"name\":", pu);
        res_json_str(&b, x, i, PC_NAME);
        buf_puts(&b, ",\"createdAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, i, PC_CREATED));
        buf_printf(&b, ",\"startOffset\":%lld,\"endOffset\":%lld", (long long)res_i64(x, i, PC_START),
                   (long long)res_i64(x, i, PC_NEXT));
        if (c->status_view) {
            buf_puts(&b, ",\"messages\":");
            counts_json(&b, total, pending, processing, completed, failed, dead);
        }
        buf_puts(&b, ",\"stats\":");
        counts_json(&b, total, pending, processing, completed, failed, dead);
        if (c->status_view) {
            buf_printf(&b, ",\"cursor\":{\"totalConsumed\":%lld,\"nextOffset\":", (long long)res_i64(x, i, PC_CONSUMED));
            if (res_bool(x, i, PC_HAS_QM))
                buf_printf(&b, "%lld}", (long long)(res_i64(x, i, PC_START) + completed));
            else
                buf_puts(&b, "null}");
            buf_puts(&b, ",\"lastActivity\":");
            admin_iso_us_or_null(&b, res_i64(x, i, PC_LAST_TS));
        }
        buf_puts(&b, ",\"leaseExpiresAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, i, PC_LEASE_EXP));
        buf_puts(&b, ",\"oldestMessage\":");
        admin_iso_us_or_null(&b, total > 0 ? res_i64(x, i, PC_OLDEST) : 0);
        buf_puts(&b, ",\"newestMessage\":");
        admin_iso_us_or_null(&b, total > 0 ? res_i64(x, i, PC_LAST_TS) : 0);
        if (!c->status_view) {
            /* every consumer group's position on this partition */
            buf_puts(&b, ",\"consumerGroups\":[");
            int64_t pid = res_i64(x, i, PC_ID);
            int k = 0;
            for (int j = group_rows_from(g, pid); j < PQntuples(g) && res_i64(g, j, 0) == pid; j++) {
                if (k++)
                    buf_putc(&b, ',');
                int64_t lag_us = res_i64(g, j, 5);
                buf_puts(&b, "{\"name\":");
                res_json_str(&b, g, j, 1);
                buf_printf(&b, ",\"hasCursor\":%s,\"nextOffset\":%lld,\"offsetLag\":%lld,\"timeLagSeconds\":%lld,"
                               "\"timeLagMs\":%lld,\"leaseActive\":%s}",
                           res_bool(g, j, 2) ? "true" : "false", (long long)res_i64(g, j, 3),
                           (long long)res_i64(g, j, 4), (long long)(lag_us / 1000000), (long long)(lag_us / 1000),
                           res_bool(g, j, 6) ? "true" : "false");
            }
            buf_putc(&b, ']');
        }
        buf_putc(&b, '}');
    }
    buf_puts(&b, "],\"totals\":");
    if (c->status_view) {
        buf_puts(&b, "{\"messages\":");
        counts_json(&b, t_total, t_pending, t_processing, t_completed, t_failed, t_dead);
        buf_printf(&b, ",\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,\"failed\":%lld,"
                       "\"deadLetter\":%lld}",
                   (long long)t_total, (long long)t_pending, (long long)t_processing, (long long)t_completed,
                   (long long)t_failed, (long long)t_dead);
    } else {
        counts_json(&b, t_total, t_pending, t_processing, t_completed, t_failed, t_dead);
        buf_puts(&b, ",\"consumerGroups\":[");
        int ng = PQntuples(gt);
        for (int j = 0; j < ng; j++) {
            if (j)
                buf_putc(&b, ',');
            int64_t max_us = res_i64(gt, j, 4);
            buf_puts(&b, "{\"name\":");
            res_json_str(&b, gt, j, 0);
            buf_printf(&b, ",\"members\":%lld,\"partitionsWithLag\":%lld,\"totalLag\":%lld,\"maxTimeLag\":%lld,"
                           "\"state\":\"%s\",\"subscriptionMode\":",
                       (long long)res_i64(gt, j, 1), (long long)res_i64(gt, j, 2), (long long)res_i64(gt, j, 3),
                       (long long)(max_us / 1000000), admin_group_state(max_us, res_bool(gt, j, 5)));
            res_json_str(&b, gt, j, 6);
            buf_puts(&b, ",\"subscriptionTimestamp\":");
            admin_iso_ms_or_null(&b, res_null(gt, j, 7) ? 0 : res_i64(gt, j, 7));
            buf_putc(&b, '}');
        }
        buf_putc(&b, ']');
    }
    buf_putc(&b, '}');
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
    const char *key = q->arg;
    PGresult *x = res[0];
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"%ss\":[", key);
    for (int i = 0; i < PQntuples(x); i++) {
        if (i)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"%s\":", key);
        res_json_str(&b, x, i, 0);
        buf_printf(&b, ",\"queues\":%lld,\"partitions\":%lld,\"messages\":{\"total\":%lld,\"pending\":%lld,"
                       "\"processing\":%lld,\"completed\":%lld}}",
                   (long long)res_i64(x, i, 1), (long long)res_i64(x, i, 2), (long long)res_i64(x, i, 3),
                   (long long)res_i64(x, i, 4), (long long)res_i64(x, i, 5), (long long)res_i64(x, i, 6));
    }
    buf_puts(&b, "]}");
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
    PGresult *x = res[0];
    int existed = res_bool(x, 0, DELETE_QUEUE_EXISTED);
    if (existed) {
        /* pops parked on the queue find it gone */
        app *a = r->app;
        notifier_changed(a->notify, r->tenant, name, strlen(name));
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"deleted\":true,\"queue\":");
    jw_cstr(&b, name);
    buf_printf(&b, ",\"existed\":%s,\"partitions\":%lld,\"records\":%lld}", existed ? "true" : "false",
               (long long)res_i64(x, 0, DELETE_QUEUE_PARTITIONS), (long long)res_i64(x, 0, DELETE_QUEUE_RECORDS));
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
    PGresult *x = res[0];
    const char *status = res_text(x, 0, DELETE_PARTITION_STATUS, NULL);
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
    char pu[37];
    res_uuid(x, 0, DELETE_PARTITION_UUID, pu);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"deleted\":true,\"queue\":");
    jw_cstr(&b, queue);
    buf_puts(&b, ",\"partition\":");
    jw_cstr(&b, part);
    buf_printf(&b, ",\"partitionId\":\"%s\",\"records\":%lld}", pu, (long long)res_i64(x, 0, DELETE_PARTITION_RECORDS));
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

/* queue="…",group="…"[,tenant="…"]: the tenant only when it is not the default one */
static void lag_labels(buf *l, const PGresult *x, int i, int with_group)
{
    size_t n;
    const char *s = res_text(x, i, METRICS_LAG_QUEUE, &n);
    buf_puts(l, "queue=\"");
    metric_label_escape(l, s, n);
    buf_putc(l, '"');
    if (with_group) {
        s = res_text(x, i, METRICS_LAG_GROUP, &n);
        buf_puts(l, ",group=\"");
        metric_label_escape(l, s, n);
        buf_putc(l, '"');
    }
    if (PQgetlength(x, i, METRICS_LAG_TENANT) == 16 &&
        memcmp(PQgetvalue(x, i, METRICS_LAG_TENANT), default_tenant, 16) != 0) {
        char t[37];
        res_uuid(x, i, METRICS_LAG_TENANT, t);
        buf_printf(l, ",tenant=\"%s\"", t);
    }
}

static void on_lag_metrics(db_req *d)
{
    lag_metrics_ctx *c = d->arg;
    buf *b = &c->body;
    PGresult *x = d->res[0];
    if (d->err == DB_OK && x) {
        int n = PQntuples(x);
        buf l;
        buf_init(&l, 0);
        /* one family at a time: a family's samples must be contiguous */
        for (int fam = 0; fam < 3; fam++) {
            static const char *const names[] = {"queen_queue_lag_records", "queen_queue_lag_seconds",
                                                "queen_dead_letters"};
            static const char *const helps[] = {
                "Records not yet done by a consumer group (queue mode: __QUEUE_MODE__), from offsets",
                "Age of the oldest record a consumer group has not done",
                "Dead letters of a queue not requeued"};
            metric_help(b, names[fam], "gauge", helps[fam]);
            for (int i = 0; i < n; i++) {
                int kind = (int)res_i64(x, i, METRICS_LAG_KIND);
                if ((fam < 2) != (kind == METRICS_LAG_ROW_GROUP))
                    continue;
                buf_reset(&l);
                lag_labels(&l, x, i, fam < 2);
                if (fam == 1)
                    metric_f64(b, names[fam], buf_cstr(&l), (double)res_i64(x, i, METRICS_LAG_US) / 1e6);
                else
                    metric_u64(b, names[fam], buf_cstr(&l), (uint64_t)res_i64(x, i, METRICS_LAG_VAL));
            }
        }
        buf_free(&l);
    }
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
