/* api_dashboard.c — the rest of the 2.x admin reads (docs/http-api.md, "Depth, partitions,
 * status and analytics"): a queue's depth per partition, the partition listing, the dashboard
 * status page, the analytics page, and what this node can say about itself in the shape of
 * the system and worker metrics series.
 *
 * Counts come from offsets (queen.partition_counts_v1, cursors), as everywhere in the admin
 * surface. Time series come from what the log keeps: the records stored per segment stamp
 * (ingested), within retention. Consumption is not logged per record, so the series carry no
 * processed counts (0, documented); the node's counters are on /metrics. This broker records
 * no metrics history, so the system and worker series hold one point: now, this node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "admin/admin.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"

#define NAME_MAX_BYTES 255        /* a queue, namespace, task or group name in a query string */
#define DEPTH_MAX_PARTITIONS 100000
#define SERIES_MAX_POINTS 2000

/* A name filter from the query string: 0 (absent = NULL, or set), -1 answered. */
static int name_param(http_req *r, const char *name, const char **out)
{
    *out = api_query_str(r, name);
    if (*out && strlen(*out) > NAME_MAX_BYTES) {
        http_respond_bad_param(r, name, "%s must be at most %d bytes", name, NAME_MAX_BYTES);
        return -1;
    }
    return 0;
}

/* ---- GET /api/v1/resources/queues/:queue/depth[?group=] ---------------------------------- */

static void on_depth(api_query *q, PGresult *const *res)
{
    http_req *r = q->http;
    const char *group = q->arg;
    if (PQntuples(res[0]) == 0) {
        http_respond_error_code(r, 404, "queue_not_found", "Queue not found: %s", r->params[0]);
        return;
    }
    PGresult *x = res[1];
    int64_t pending = 0, parts = 0;
    buf list;
    buf_init(&list, 0);
    for (int i = 0; i < PQntuples(x); i++) {
        int64_t n = res_i64(x, i, 1);
        if (n < 0)
            n = 0;
        pending += n;
        parts += n > 0;
        if (i)
            buf_putc(&list, ',');
        buf_puts(&list, "{\"partition\":");
        res_json_str(&list, x, i, 0);
        buf_printf(&list, ",\"pending\":%lld}", (long long)n);
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"queue\":");
    jw_cstr(&b, r->params[0]);
    buf_puts(&b, ",\"group\":");
    if (group)
        jw_cstr(&b, group);
    else
        buf_puts(&b, "null");
    /* a conflating group hands out one record per partition that owes work: its work depth is
     * partitionsPending; any other's is its log depth (no group named: queue level, no policy) */
    int conf = group && PQntuples(res[2]) > 0;
    buf_printf(&b, ",\"pending\":%lld,\"partitionsPending\":%lld,\"conflation\":%s,\"effectivePending\":%lld,"
                   "\"partitions\":[",
               (long long)pending, (long long)parts, conf ? "true" : "false", (long long)(conf ? parts : pending));
    buf_append(&b, list.data, list.len);
    buf_puts(&b, "]}");
    buf_free(&list);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_resources_queue_depth(http_req *r)
{
    const char *group;
    if (name_param(r, "group", &group) < 0)
        return;
    api_query *q = api_query_new(r, on_depth, (void *)group);
    int s = api_query_stmt(q, ADMIN_QUEUE_ID_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, r->params[0]);
    if (group) {
        s = api_query_stmt(q, ADMIN_DEPTH_GROUP_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_text(q, s, r->params[0]);
        api_param_text(q, s, group);
        api_param_i64(q, s, DEPTH_MAX_PARTITIONS);
        s = api_query_stmt(q, ADMIN_DEPTH_POLICY_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_text(q, s, r->params[0]);
        api_param_text(q, s, group);
    } else {
        s = api_query_stmt(q, ADMIN_DEPTH_QUEUE_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_text(q, s, r->params[0]);
        api_param_i64(q, s, DEPTH_MAX_PARTITIONS);
    }
    api_query_submit(q);
}

/* ---- GET /api/v1/resources/partitions[?queue=&namespace=&task=&limit=&offset=] ----------- */

typedef struct page_ctx {
    int64_t limit, offset;
} page_ctx;

static void on_partitions(api_query *q, PGresult *const *res)
{
    page_ctx *c = q->arg;
    PGresult *x = res[0];
    int n = PQntuples(x);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"partitions\":[");
    for (int i = 0; i < n; i++) {
        char id[37];
        res_uuid(x, i, 0, id);
        if (i)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"id\":\"%s\",\"name\":", id);
        res_json_str(&b, x, i, 1);
        buf_puts(&b, ",\"queue\":");
        res_json_str(&b, x, i, 2);
        buf_puts(&b, ",\"namespace\":");
        res_json_str(&b, x, i, 3);
        buf_puts(&b, ",\"task\":");
        res_json_str(&b, x, i, 4);
        buf_puts(&b, ",\"createdAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, i, 5));
        buf_printf(&b, ",\"messages\":{\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,"
                       "\"deadLetter\":%lld},\"startOffset\":%lld,\"endOffset\":%lld,\"totalConsumed\":%lld,"
                       "\"lastActivity\":",
                   (long long)res_i64(x, i, 6), (long long)res_i64(x, i, 7), (long long)res_i64(x, i, 8),
                   (long long)res_i64(x, i, 9), (long long)res_i64(x, i, 10), (long long)res_i64(x, i, 11),
                   (long long)res_i64(x, i, 12), (long long)res_i64(x, i, 14));
        admin_iso_us_or_null(&b, res_i64(x, i, 13));
        buf_puts(&b, ",\"leaseExpiresAt\":");
        admin_iso_ms_or_null(&b, res_i64(x, i, 15));
        buf_putc(&b, '}');
    }
    buf_printf(&b, "],\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"total\":", (long long)c->limit,
               (long long)c->offset);
    if (n > 0)
        buf_printf(&b, "%lld}}", (long long)res_i64(x, 0, 16));
    else
        buf_puts(&b, "null}}");
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_resources_partitions(http_req *r)
{
    page_ctx *c = arena_alloc(&r->ar, sizeof *c);
    const char *queue, *ns, *task;
    if (name_param(r, "queue", &queue) < 0 || name_param(r, "namespace", &ns) < 0 || name_param(r, "task", &task) < 0 ||
        api_query_int_or_respond(r, "limit", 1000, 1, 10000, &c->limit) < 0 ||
        api_query_int_or_respond(r, "offset", 0, 0, 1000000, &c->offset) < 0)
        return;
    api_query *q = api_query_new(r, on_partitions, c);
    int s = api_query_stmt(q, ADMIN_PARTITIONS_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, queue);
    api_param_text(q, s, ns);
    api_param_text(q, s, task);
    api_param_i64(q, s, c->limit);
    api_param_i64(q, s, c->offset);
    api_query_submit(q);
}

/* ---- time ranges and series -------------------------------------------------------------- */

typedef struct range {
    int64_t from, to, bucket; /* µs */
    const char *queue, *ns, *task;
} range;

/* from/to (ISO) with a default span back from now; -1 answered. */
static int range_or_respond(http_req *r, int64_t def_span_us, range *g)
{
    int hf, ht;
    if (api_query_time_or_respond(r, "from", &g->from, &hf) < 0 || api_query_time_or_respond(r, "to", &g->to, &ht) < 0)
        return -1;
    if (!ht)
        g->to = wall_us();
    if (!hf)
        g->from = g->to - def_span_us;
    if (g->from > g->to) {
        http_respond_bad_param(r, "from", "from must not be after to");
        return -1;
    }
    if (name_param(r, "queue", &g->queue) < 0 || name_param(r, "namespace", &g->ns) < 0 ||
        name_param(r, "task", &g->task) < 0)
        return -1;
    return 0;
}

static int points_ok_or_respond(http_req *r, const range *g)
{
    int64_t points = (g->to - g->from) / g->bucket + 2;
    if (points > SERIES_MAX_POINTS) {
        http_respond_bad_param(r, "from", "the range holds %lld buckets, more than %d: narrow it or widen the interval",
                               (long long)points, SERIES_MAX_POINTS);
        return -1;
    }
    return 0;
}

static int series_stmt(api_query *q, http_req *r, const range *g)
{
    int s = api_query_stmt(q, ADMIN_SERIES_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, g->from);
    api_param_i64(q, s, g->to);
    api_param_i64(q, s, g->bucket);
    api_param_text(q, s, g->queue);
    api_param_text(q, s, g->ns);
    api_param_text(q, s, g->task);
    return s;
}

static void iso_field(buf *b, const char *key, int64_t us)
{
    buf_printf(b, "\"%s\":", key);
    admin_iso_ms_or_null(b, us);
}

/* ---- GET /api/v1/status ------------------------------------------------------------------ */

static double uptime_s(const app *a)
{
    return (double)(mono_us() - a->started_mono_us) / 1e6;
}

static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, res = 0;
    if (fscanf(f, "%lu %lu", &size, &res) != 2)
        res = 0;
    fclose(f);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* CPU of this process since it started, as a share of one core (percent). */
static void cpu_pct(const app *a, double *user, double *sys)
{
    struct rusage ru;
    double up = uptime_s(a);
    *user = *sys = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0 && up > 0) {
        *user = 100.0 * ((double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6) / up;
        *sys = 100.0 * ((double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6) / up;
    }
}

static int64_t bucket_for_span(int64_t span_us)
{
    const int64_t min = 60000000;
    if (span_us <= 60 * min)
        return min;
    if (span_us <= 6 * 60 * min)
        return 5 * min;
    if (span_us <= 24 * 60 * min)
        return 15 * min;
    if (span_us <= 7 * 24 * 60 * min)
        return 60 * min;
    return 360 * min;
}

/* This node as one entry of the dashboard's worker list. */
static void worker_json(buf *b, app *a)
{
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    buf_puts(b, "{\"hostname\":");
    jw_cstr(b, host);
    buf_puts(b, ",\"workerId\":");
    jw_cstr(b, a->cfg->node_id);
    /* the loop's lag is not measured; free slots = idle database connections */
    buf_printf(b, ",\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,\"freeSlots\":%d,\"dbConnections\":%d,"
                  "\"jobQueueSize\":%d,\"messagesProcessed\":%llu}",
               ps.connected - ps.busy < 0 ? 0 : ps.connected - ps.busy, ps.connected, ps.pending,
               (unsigned long long)mc_get(&a->cm.pop_messages));
}

static void on_status_page(api_query *q, PGresult *const *res)
{
    range *g = q->arg;
    http_req *r = q->http;
    app *a = r->app;
    PGresult *se = res[0], *qu = res[1], *ms = res[2], *dl = res[3];
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    double cu, cs;
    cpu_pct(a, &cu, &cs);
    double rss_mb = (double)rss_bytes() / (1024.0 * 1024.0);
    double bsec = (double)g->bucket / 1e6;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"timeRange\":{");
    iso_field(&b, "from", g->from);
    buf_putc(&b, ',');
    iso_field(&b, "to", g->to);
    buf_printf(&b, "},\"bucketMinutes\":%lld,\"pointCount\":%d,\"throughput\":[", (long long)(g->bucket / 60000000),
               PQntuples(se));
    for (int i = 0; i < PQntuples(se); i++) {
        int64_t n = res_i64(se, i, 1);
        if (i)
            buf_putc(&b, ',');
        buf_putc(&b, '{');
        iso_field(&b, "timestamp", res_i64(se, i, 0));
        /* processed and popped are not logged per record: 0; the process figures are now's */
        buf_printf(&b, ",\"ingested\":%lld,\"processed\":0,\"popMessages\":0,\"ingestedPerSecond\":%.3f,"
                       "\"processedPerSecond\":0,\"popPerSecond\":0,\"avgLagMs\":0,\"maxLagMs\":0,"
                       "\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,\"minFreeSlots\":0,\"dbErrors\":0,"
                       "\"ackFailed\":0,\"dlqCount\":0,\"queenCpuUserPct\":%.2f,\"queenCpuSysPct\":%.2f,"
                       "\"queenRssMb\":%.1f,\"dbPoolActive\":%d,\"dbPoolIdle\":%d,\"dbPoolSize\":%d}",
                   (long long)n, (double)n / bsec, cu, cs, rss_mb, ps.busy,
                   ps.connected - ps.busy < 0 ? 0 : ps.connected - ps.busy, ps.size);
    }
    buf_puts(&b, "],\"queues\":[");
    for (int i = 0; i < PQntuples(qu); i++) {
        char id[37];
        res_uuid(qu, i, 0, id);
        if (i)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"id\":\"%s\",\"name\":", id);
        res_json_str(&b, qu, i, 1);
        buf_puts(&b, ",\"namespace\":");
        res_json_str(&b, qu, i, 2);
        buf_puts(&b, ",\"task\":");
        res_json_str(&b, qu, i, 3);
        buf_printf(&b, ",\"partitions\":%lld,\"totalConsumed\":%lld}", (long long)res_i64(qu, i, 4),
                   (long long)res_i64(qu, i, 5));
    }
    int64_t dead = res_i64(dl, 0, 0);
    buf_printf(&b, "],\"messages\":{\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,"
                   "\"failed\":0,\"deadLetter\":%lld}",
               (long long)res_i64(ms, 0, 0), (long long)res_i64(ms, 0, 1), (long long)res_i64(ms, 0, 2),
               (long long)res_i64(ms, 0, 3), (long long)dead);
    buf_printf(&b, ",\"leases\":{\"active\":%lld,\"partitionsWithLeases\":%lld,\"totalBatchSize\":%lld,\"totalAcked\":%lld}",
               (long long)res_i64(ms, 0, 4), (long long)res_i64(ms, 0, 5), (long long)res_i64(ms, 0, 6),
               (long long)res_i64(ms, 0, 7));
    buf_printf(&b, ",\"deadLetterQueue\":{\"totalMessages\":%lld,\"affectedPartitions\":%lld,\"topErrors\":",
               (long long)dead, (long long)res_i64(dl, 0, 1));
    size_t tl;
    const char *top = res_text(dl, 0, 2, &tl);
    if (tl)
        buf_append(&b, top, tl);
    else
        buf_puts(&b, "[]");
    buf_puts(&b, "},\"workers\":[");
    worker_json(&b, a);
    buf_printf(&b, "],\"errors\":{\"dbErrors\":%llu,\"ackFailed\":%llu,\"dlqMessages\":%lld},\"statsAge\":0}",
               (unsigned long long)ps.failures, (unsigned long long)mc_get(&a->cm.acks_failed), (long long)dead);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void filter_params(api_query *q, int s, http_req *r, const range *g)
{
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, g->queue);
    api_param_text(q, s, g->ns);
    api_param_text(q, s, g->task);
}

void api_status_page(http_req *r)
{
    range *g = arena_alloc(&r->ar, sizeof *g);
    memset(g, 0, sizeof *g);
    if (range_or_respond(r, 3600LL * 1000000, g) < 0)
        return;
    g->bucket = bucket_for_span(g->to - g->from);
    if (points_ok_or_respond(r, g) < 0)
        return;
    api_query *q = api_query_new(r, on_status_page, g);
    series_stmt(q, r, g);
    filter_params(q, api_query_stmt(q, ADMIN_DASH_QUEUES_SQL), r, g);
    filter_params(q, api_query_stmt(q, ADMIN_DASH_COUNTS_SQL), r, g);
    filter_params(q, api_query_stmt(q, ADMIN_DASH_DLQ_SQL), r, g);
    api_query_submit(q);
}

/* ---- GET /api/v1/status/analytics -------------------------------------------------------- */

typedef struct analytics_ctx {
    range g;
    const char *interval;
} analytics_ctx;

static void on_analytics(api_query *q, PGresult *const *res)
{
    analytics_ctx *c = q->arg;
    PGresult *se = res[0];
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"dataPoints\":[");
    for (int i = 0; i < PQntuples(se); i++) {
        if (i)
            buf_putc(&b, ',');
        buf_putc(&b, '{');
        iso_field(&b, "timestamp", res_i64(se, i, 0));
        buf_printf(&b, ",\"messages\":%lld}", (long long)res_i64(se, i, 1));
    }
    buf_printf(&b, "],\"interval\":\"%s\",", c->interval);
    iso_field(&b, "from", c->g.from);
    buf_putc(&b, ',');
    iso_field(&b, "to", c->g.to);
    buf_putc(&b, '}');
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_status_analytics(http_req *r)
{
    analytics_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    if (range_or_respond(r, 24 * 3600LL * 1000000, &c->g) < 0)
        return;
    const char *iv = api_query_str(r, "interval");
    if (!iv || strcmp(iv, "hour") == 0) {
        c->interval = "hour";
        c->g.bucket = 3600LL * 1000000;
    } else if (strcmp(iv, "minute") == 0) {
        c->interval = "minute";
        c->g.bucket = 60LL * 1000000;
    } else if (strcmp(iv, "day") == 0) {
        c->interval = "day";
        c->g.bucket = 24 * 3600LL * 1000000;
    } else {
        http_respond_bad_param(r, "interval", "interval must be minute, hour or day");
        return;
    }
    if (points_ok_or_respond(r, &c->g) < 0)
        return;
    api_query *q = api_query_new(r, on_analytics, c);
    series_stmt(q, r, &c->g);
    api_query_submit(q);
}

/* ---- GET /api/v1/analytics/system-metrics, /analytics/worker-metrics --------------------- */

/* No history is recorded: one point, now, for this node, when it is inside the range and
 * matches the hostname/workerId filters. */
static int node_point_or_respond(http_req *r, int64_t *from, int64_t *to, int *include)
{
    int hf, ht;
    if (api_query_time_or_respond(r, "from", from, &hf) < 0 || api_query_time_or_respond(r, "to", to, &ht) < 0)
        return -1;
    int64_t now = wall_us();
    if (!ht)
        *to = now;
    if (!hf)
        *from = *to - 3600LL * 1000000;
    if (*from > *to) {
        http_respond_bad_param(r, "from", "from must not be after to");
        return -1;
    }
    app *a = r->app;
    const char *host, *wid;
    if (name_param(r, "hostname", &host) < 0 || name_param(r, "workerId", &wid) < 0)
        return -1;
    char me[256] = "";
    gethostname(me, sizeof me - 1);
    *include = now >= *from && now <= *to + 60000000 && (!host || strcmp(host, me) == 0) &&
               (!wid || strcmp(wid, a->cfg->node_id) == 0);
    return 0;
}

void api_analytics_system_metrics(http_req *r)
{
    int64_t from, to;
    int inc;
    if (node_point_or_respond(r, &from, &to, &inc) < 0)
        return;
    app *a = r->app;
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    double cu, cs;
    cpu_pct(a, &cu, &cs);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"timeRange\":{");
    iso_field(&b, "from", from);
    buf_putc(&b, ',');
    iso_field(&b, "to", to);
    buf_printf(&b, "},\"bucketMinutes\":%lld,\"replicas\":[", (long long)(bucket_for_span(to - from) / 60000000));
    if (inc) {
        buf_puts(&b, "{\"hostname\":");
        jw_cstr(&b, host);
        buf_printf(&b, ",\"port\":%lld,\"workerId\":", (long long)a->cfg->port);
        jw_cstr(&b, a->cfg->node_id);
        buf_puts(&b, ",\"timeSeries\":[{");
        iso_field(&b, "timestamp", wall_us());
        /* one sample: avg = min = max = last */
        double rss = (double)rss_bytes() / (1024.0 * 1024.0);
        int idle = ps.connected - ps.busy < 0 ? 0 : ps.connected - ps.busy;
#define STAT(name, fmt) "\"" name "\":{\"avg\":" fmt ",\"min\":" fmt ",\"max\":" fmt ",\"last\":" fmt "}"
        buf_printf(&b, ",\"metrics\":{\"cpu\":{" STAT("user_pct", "%.2f") "," STAT("system_pct", "%.2f") "},"
                       "\"memory\":{" STAT("rss_mb", "%.1f") "},"
                       "\"database\":{" STAT("pool_size", "%d") "," STAT("pool_active", "%d") ","
                       STAT("pool_idle", "%d") "," STAT("pending", "%d") "},"
                       "\"uptimeSeconds\":%.3f}}]}",
                   cu, cu, cu, cu, cs, cs, cs, cs, rss, rss, rss, rss, ps.size, ps.size, ps.size, ps.size, ps.busy,
                   ps.busy, ps.busy, ps.busy, idle, idle, idle, idle, ps.pending, ps.pending, ps.pending, ps.pending,
                   uptime_s(a));
#undef STAT
    }
    buf_puts(&b, "]}");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_analytics_worker_metrics(http_req *r)
{
    int64_t from, to;
    int inc;
    if (node_point_or_respond(r, &from, &to, &inc) < 0)
        return;
    app *a = r->app;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"timeRange\":{");
    iso_field(&b, "from", from);
    buf_putc(&b, ',');
    iso_field(&b, "to", to);
    buf_puts(&b, "},\"workers\":[");
    if (inc) {
        worker_json(&b, a);
        /* the worker entry with its one point */
        b.len--; /* reopen the object */
        buf_puts(&b, ",\"timeSeries\":[{");
        iso_field(&b, "timestamp", wall_us());
        buf_printf(&b, ",\"pops\":%llu,\"popMessages\":%llu,\"acksCompleted\":%llu,\"acksFailed\":%llu,"
                       "\"deadLetters\":%llu}]}",
                   (unsigned long long)mc_get(&a->cm.pops), (unsigned long long)mc_get(&a->cm.pop_messages),
                   (unsigned long long)mc_get(&a->cm.acks_completed), (unsigned long long)mc_get(&a->cm.acks_failed),
                   (unsigned long long)mc_get(&a->cm.dead_letters));
    }
    buf_puts(&b, "]}");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}
