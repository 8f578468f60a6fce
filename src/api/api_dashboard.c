/* api_dashboard.c — the rest of the 2.x admin reads (docs/http-api.md, "Depth, partitions,
 * status and analytics"): a queue's depth per partition, the partition listing, the dashboard
 * status page, the analytics page, and what this node can say about itself in the shape of
 * the system and worker metrics series. Parsing and status here; the answers' JSON in
 * admin/answers_dashboard.c.
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
#include "admin/admin_answers.h"
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
    buf b;
    buf_init(&b, 0);
    answer_depth(&b, res[1], group ? res[2] : NULL, r->params[0], group);
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
    buf b;
    buf_init(&b, 0);
    answer_partitions(&b, res[0], c->limit, c->offset);
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

/* What this node says about itself, now. */
static void node_stats(app *a, admin_node *n, char host[256])
{
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    memset(host, 0, 256);
    gethostname(host, 255);
    memset(n, 0, sizeof *n);
    n->hostname = host;
    n->node_id = a->cfg->node_id;
    n->pool_size = ps.size;
    n->pool_connected = ps.connected;
    n->pool_busy = ps.busy;
    n->pool_pending = ps.pending;
    n->pool_failures = ps.failures;
    n->acks_failed = mc_get(&a->cm.acks_failed);
    n->pop_messages = mc_get(&a->cm.pop_messages);
    cpu_pct(a, &n->cpu_user_pct, &n->cpu_sys_pct);
    n->rss_mb = (double)rss_bytes() / (1024.0 * 1024.0);
}

static void on_status_page(api_query *q, PGresult *const *res)
{
    range *g = q->arg;
    http_req *r = q->http;
    admin_node node;
    char host[256];
    node_stats(r->app, &node, host);
    buf b;
    buf_init(&b, 0);
    answer_status_page(&b, g->from, g->to, g->bucket, res[0], res[1], res[2], res[3], &node);
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
    buf b;
    buf_init(&b, 0);
    answer_analytics(&b, res[0], c->interval, c->g.from, c->g.to);
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
    admin_iso_field(&b, "from", from);
    buf_putc(&b, ',');
    admin_iso_field(&b, "to", to);
    buf_printf(&b, "},\"bucketMinutes\":%lld,\"replicas\":[", (long long)(bucket_for_span(to - from) / 60000000));
    if (inc) {
        buf_puts(&b, "{\"hostname\":");
        jw_cstr(&b, host);
        buf_printf(&b, ",\"port\":%lld,\"workerId\":", (long long)a->cfg->port);
        jw_cstr(&b, a->cfg->node_id);
        buf_puts(&b, ",\"timeSeries\":[{");
        admin_iso_field(&b, "timestamp", wall_us());
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
    admin_iso_field(&b, "from", from);
    buf_putc(&b, ',');
    admin_iso_field(&b, "to", to);
    buf_puts(&b, "},\"workers\":[");
    if (inc) {
        admin_node node;
        char host[256];
        node_stats(a, &node, host);
        answer_worker(&b, &node);
        /* the worker entry with its one point */
        b.len--; /* reopen the object */
        buf_puts(&b, ",\"timeSeries\":[{");
        admin_iso_field(&b, "timestamp", wall_us());
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
