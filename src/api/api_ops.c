/* api_ops.c — GET /health, GET /status, GET /metrics/prometheus, GET /metrics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "storage/logread.h"

typedef struct ops_ctx {
    db_req dbr;
    http_req *http;
    char tenant[37];
    const char *values[1];
} ops_ctx;

static double uptime_s(const app *a)
{
    return (double)(mono_us() - a->started_mono_us) / 1e6;
}

/* err: a sentence of ours (never the database's text: the route is public) */
static void health_body(http_req *r, int ok, const char *code, const char *err)
{
    app *a = r->app;
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"status\":\"%s\",\"database\":\"%s\",\"server\":\"queen\",\"version\":\"%s\",\"node\":",
               ok ? "healthy" : "unhealthy", ok ? "connected" : "disconnected", QUEEN_VERSION);
    jw_cstr(&b, a->cfg->node_id);
    buf_printf(&b, ",\"uptimeSeconds\":%.3f", uptime_s(a));
    if (!ok && err) {
        buf_puts(&b, ",\"error\":");
        jw_cstr(&b, err);
        buf_puts(&b, ",\"code\":");
        jw_cstr(&b, code);
        buf_puts(&b, ",\"requestId\":");
        jw_cstr(&b, r->request_id);
    }
    buf_putc(&b, '}');
    http_respond_json(r, ok ? 200 : 503, &b);
    buf_free(&b);
}

static void on_health(db_req *d)
{
    ops_ctx *c = d->arg;
    int ok = d->err == DB_OK && d->res[0] && PQresultStatus(d->res[0]) == PGRES_TUPLES_OK;
    int status;
    const char *code = NULL, *sentence = NULL;
    if (!ok) {
        api_db_error_status(d, &status, &code, &sentence);
        api_log_db_error(c->http, d);
    }
    health_body(c->http, ok, code, sentence);
    db_req_clear(d);
}

/* POST /api/v1/stats/refresh — the earlier release recomputed its stats tables on demand; here
 * every count, lag and depth is computed from the log and the cursors when it is read, so there
 * is nothing to refresh. Answered in that release's "skipped" shape (the 2.x client passes the
 * answer through). */
void api_stats_refresh(http_req *r)
{
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"skipped\":true,\"reason\":\"stats_are_live\"}");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_health(http_req *r)
{
    app *a = r->app;
    if (a->shutting_down) {
        health_body(r, 0, "shutting_down", "server is shutting down");
        return;
    }
    ops_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){"SELECT 1", 0, NULL, NULL, NULL, 0};
    c->dbr.done = on_health;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        int status;
        const char *code, *sentence;
        api_db_error_status(&c->dbr, &status, &code, &sentence);
        api_log_db_error(r, &c->dbr);
        health_body(r, 0, code, sentence);
    }
}

static void status_body(http_req *r, PGresult *queues, PGresult *streams, const char *dberr)
{
    app *a = r->app;
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    buf b;
    buf_init(&b, 0);
    char started[32];
    format_iso_us(a->started_wall_us, started);
    buf_puts(&b, "{\"node\":");
    jw_cstr(&b, a->cfg->node_id);
    buf_printf(&b, ",\"version\":\"%s\",\"startedAt\":\"%s\",\"uptimeSeconds\":%.3f,\"pid\":%d", QUEEN_VERSION,
               started, uptime_s(a), (int)getpid());
    buf_printf(&b, ",\"database\":{\"state\":\"%s\",\"embedded\":%s,\"pool\":{\"size\":%d,\"connected\":%d,"
                   "\"busy\":%d,\"pending\":%d,\"reconnects\":%llu}",
               db_pool_up(a->db) ? "connected" : "disconnected", a->emb ? "true" : "false", ps.size, ps.connected,
               ps.busy, ps.pending, (unsigned long long)ps.reconnects);
    buf_puts(&b, ",\"lastError\":");
    const char *le = db_pool_last_error(a->db);
    if (dberr)
        jw_cstr(&b, dberr);
    else if (le && *le && !db_pool_up(a->db))
        jw_cstr(&b, le);
    else
        buf_puts(&b, "null");
    buf_printf(&b, "},\"push\":{\"inflight\":%d,\"queued\":%d}", pusher_inflight(a->push), pusher_queued(a->push));
    buf_puts(&b, ",\"queues\":");
    if (!queues) {
        buf_puts(&b, "null");
    } else {
        status_queues_json(&b, queues, wall_us());
    }
    if (a->s3) {
        buf_puts(&b, ",\"s3\":");
        s3_node_status_json(a->s3, &b, a->auth ? r->tenant : NULL);
    }
    /* this node's stream counters, of the request's tenant under auth (docs/streams.md) */
    buf_puts(&b, ",\"streams\":");
    api_streams_status_json(&b, a->auth ? r->tenant : NULL, streams);
    buf_putc(&b, '}');
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

/* the statements of GET /status, in order: the tenant's clocks ticked, its queues
 * (STATUS_QUEUES_COLUMNS, text), its streaming queries with their state rows (docs/streams.md) */
enum { STATUS_STMT_TICK, STATUS_STMT_QUEUES, STATUS_STMT_STREAMS, STATUS_NSTMT };
static const char STATUS_STREAMS_SQL[] = "SELECT * FROM queen.streams_state_rows_v1($1::uuid)";

static void on_status(db_req *d)
{
    ops_ctx *c = d->arg;
    PGresult *q = d->res[STATUS_STMT_QUEUES];
    const char *dberr = NULL;
    if (d->err != DB_OK && !q) {
        int status;
        const char *code;
        api_db_error_status(d, &status, &code, &dberr);
        api_log_db_error(c->http, d);
    }
    PGresult *sq = d->res[STATUS_STMT_STREAMS];
    status_body(c->http, q && PQresultStatus(q) == PGRES_TUPLES_OK ? q : NULL,
                sq && PQresultStatus(sq) == PGRES_TUPLES_OK ? sq : NULL, dberr);
    db_req_clear(d);
}

void api_status(http_req *r)
{
    app *a = r->app;
    ops_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    /* the queues of the request's tenant only (another tenant's names are its data) */
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->dbr.nstmt = STATUS_NSTMT;
    c->dbr.stmt[STATUS_STMT_TICK] = (db_stmt){TICK_TENANT_SQL, 1, c->values, NULL, NULL, 0};
    c->dbr.stmt[STATUS_STMT_QUEUES] = (db_stmt){STATUS_QUEUES_SQL, 1, c->values, NULL, NULL, 0};
    c->dbr.stmt[STATUS_STMT_STREAMS] = (db_stmt){STATUS_STREAMS_SQL, 1, c->values, NULL, NULL, 0};
    c->dbr.done = on_status;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        int status;
        const char *code, *sentence;
        api_db_error_status(&c->dbr, &status, &code, &sentence);
        status_body(r, NULL, NULL, sentence);
    }
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

static void render_kv_timer_metrics(app *a, buf *b)
{
    char lab[64];
    metric_help(b, "queen_kv_ops_total", "counter", "KV operations that succeeded, by op");
    for (int i = 0; i < 8; i++) {
        snprintf(lab, sizeof lab, "op=\"%s\"", KV_METRIC_OP_NAMES[i]);
        metric_u64(b, "queen_kv_ops_total", lab, mc_get(&a->kvm.ops[i]));
    }
    metric_help(b, "queen_kv_batches_total", "counter", "KV writes and batches that ran (single-op routes included)");
    metric_u64(b, "queen_kv_batches_total", NULL, mc_get(&a->kvm.batches));
    metric_help(b, "queen_kv_precondition_failed_total", "counter",
                "KV batches refused and rolled back, by reason (max_exceeded = an incr past its max)");
    for (int f = 1; f < KV_FAIL_COUNT; f++) {
        snprintf(lab, sizeof lab, "reason=\"%s\"", kv_fail_reason((enum kv_fail)f));
        metric_u64(b, "queen_kv_precondition_failed_total", lab, mc_get(&a->kvm.failed[f]));
    }
    metric_help(b, "queen_kv_rolled_back_total", "counter",
                "2.x KV batches and riders rolled back because a required op lost its precondition");
    metric_u64(b, "queen_kv_rolled_back_total", NULL, mc_get(&a->kvm.rolled_back));
    metric_help(b, "queen_kv_expired_reclaimed_total", "counter", "Expired KV keys deleted by this node");
    metric_u64(b, "queen_kv_expired_reclaimed_total", NULL, mc_get(&a->kvm.reclaimed));
    timer_metrics *tm = timer_job_metrics(a->timers);
    metric_help(b, "queen_timers_created_total", "counter", "Timers scheduled through this node under a key not pending");
    metric_u64(b, "queen_timers_created_total", NULL, mc_get(&tm->created));
    metric_help(b, "queen_timers_rescheduled_total", "counter",
                "Schedules through this node that replaced a pending timer (which then never fired)");
    metric_u64(b, "queen_timers_rescheduled_total", NULL, mc_get(&tm->rescheduled));
    metric_help(b, "queen_timers_cancelled_total", "counter", "Timers cancelled through this node");
    metric_u64(b, "queen_timers_cancelled_total", NULL, mc_get(&tm->cancelled));
    metric_help(b, "queen_timers_too_late_total", "counter",
                "Timer ops through this node that met their timer being fired (answered too_late)");
    metric_u64(b, "queen_timers_too_late_total", NULL, mc_get(&tm->too_late));
    metric_help(b, "queen_timers_fired_total", "counter", "Timer records pushed by this node's firing rounds");
    metric_u64(b, "queen_timers_fired_total", NULL, mc_get(&tm->fired));
    metric_help(b, "queen_timers_duplicates_total", "counter",
                "Timers whose producer transactionId had already been pushed (fired as duplicates, nothing stored)");
    metric_u64(b, "queen_timers_duplicates_total", NULL, mc_get(&tm->duplicates));
    metric_help(b, "queen_timer_rounds_total", "counter", "Firing rounds of this node that fired timers");
    metric_u64(b, "queen_timer_rounds_total", NULL, mc_get(&tm->rounds));
    metric_help(b, "queen_timer_round_failures_total", "counter", "Firing rounds that failed (rolled back)");
    metric_u64(b, "queen_timer_round_failures_total", NULL, mc_get(&tm->round_failures));
    metric_help(b, "queen_timers_sealed_total", "counter",
                "Plaintext timers of queues with encryptionEnabled that this node sealed before they fired");
    metric_u64(b, "queen_timers_sealed_total", NULL, mc_get(&tm->sealed));
    metric_help(b, "queen_timer_fire_lag_seconds", "histogram", "Per firing round: the largest delay past fireAt");
    metric_hist(b, "queen_timer_fire_lag_seconds", NULL, &tm->lag_seconds);
}

void api_metrics_prometheus(http_req *r)
{
    app *a = r->app;
    buf b;
    buf_init(&b, 0);
    metric_help(&b, "queen_uptime_seconds", "gauge", "Seconds since this node started");
    metric_f64(&b, "queen_uptime_seconds", NULL, uptime_s(a));
    metric_help(&b, "queen_process_resident_memory_bytes", "gauge", "Resident memory of this process");
    metric_u64(&b, "queen_process_resident_memory_bytes", NULL, rss_bytes());
    http_server_render_metrics(a->http, &b);
    if (a->proxy)
        http_server_render_metrics(a->proxy, &b);
    const pusher_metrics *pm = pusher_get_metrics(a->push);
    metric_help(&b, "queen_push_records_total", "counter", "Records committed by push");
    metric_u64(&b, "queen_push_records_total", NULL, mc_get(&pm->records));
    metric_help(&b, "queen_push_bytes_total", "counter", "Payload bytes committed by push");
    metric_u64(&b, "queen_push_bytes_total", NULL, mc_get(&pm->bytes));
    metric_help(&b, "queen_push_duplicates_total", "counter", "Pushed items answered duplicate");
    metric_u64(&b, "queen_push_duplicates_total", NULL, mc_get(&pm->duplicates));
    metric_help(&b, "queen_push_commits_total", "counter", "Group commits of push requests");
    metric_u64(&b, "queen_push_commits_total", NULL, mc_get(&pm->commits));
    metric_help(&b, "queen_push_commit_failures_total", "counter", "Group commits that failed");
    metric_u64(&b, "queen_push_commit_failures_total", NULL, mc_get(&pm->commit_failures));
    metric_help(&b, "queen_push_sealed_records_total", "counter",
                "Pushed records whose payload this node sealed (queues with encryptionEnabled)");
    metric_u64(&b, "queen_push_sealed_records_total", NULL, mc_get(&pm->sealed_records));
    metric_help(&b, "queen_push_seal_refusals_total", "counter",
                "Commits the database refused because they carried plaintext for a queue with encryptionEnabled "
                "(this node had not learnt it yet; they are sealed and sent again)");
    metric_u64(&b, "queen_push_seal_refusals_total", NULL, mc_get(&pm->seal_refusals));
    metric_help(&b, "queen_push_commit_batch_records", "histogram", "Records per group commit");
    metric_hist(&b, "queen_push_commit_batch_records", NULL, &pm->batch_records);
    metric_help(&b, "queen_push_commit_batch_requests", "histogram", "Push requests per group commit");
    metric_hist(&b, "queen_push_commit_batch_requests", NULL, &pm->batch_requests);
    metric_help(&b, "queen_push_commit_seconds", "histogram", "Time from batch start to commit");
    metric_hist(&b, "queen_push_commit_seconds", NULL, &pm->commit_seconds);
    const consume_metrics *cm = &a->cm;
    metric_help(&b, "queen_pop_requests_total", "counter", "Pop attempts answered or parked, by outcome");
    metric_u64(&b, "queen_pop_requests_total", "outcome=\"messages\"", mc_get(&cm->pops) - mc_get(&cm->pop_empty) - mc_get(&cm->pop_waits));
    metric_u64(&b, "queen_pop_requests_total", "outcome=\"empty\"", mc_get(&cm->pop_empty));
    metric_u64(&b, "queen_pop_requests_total", "outcome=\"parked\"", mc_get(&cm->pop_waits));
    metric_help(&b, "queen_pop_messages_total", "counter", "Records delivered by pop");
    metric_u64(&b, "queen_pop_messages_total", NULL, mc_get(&cm->pop_messages));
    metric_help(&b, "queen_pop_conflated_total", "counter",
                "Records a conflating group's pop retired behind the newest, never delivered to it");
    metric_u64(&b, "queen_pop_conflated_total", NULL, mc_get(&cm->pop_conflated));
    metric_help(&b, "queen_acks_total", "counter", "Acknowledgments accepted, by status");
    metric_u64(&b, "queen_acks_total", "status=\"completed\"", mc_get(&cm->acks_completed));
    metric_u64(&b, "queen_acks_total", "status=\"failed\"", mc_get(&cm->acks_failed));
    metric_u64(&b, "queen_acks_total", "status=\"retry\"", mc_get(&cm->acks_retry));
    metric_u64(&b, "queen_acks_total", "status=\"dlq\"", mc_get(&cm->acks_dlq));
    metric_help(&b, "queen_acks_rejected_total", "counter", "Acknowledgments refused (unknown record, foreign or expired lease)");
    metric_u64(&b, "queen_acks_rejected_total", NULL, mc_get(&cm->acks_rejected));
    metric_help(&b, "queen_retries_total", "counter", "Failed acks that sent a batch back for another delivery");
    metric_u64(&b, "queen_retries_total", NULL, mc_get(&cm->retries));
    metric_help(&b, "queen_dead_letters_total", "counter", "Records moved to the dead letters");
    metric_u64(&b, "queen_dead_letters_total", NULL, mc_get(&cm->dead_letters));
    metric_help(&b, "queen_long_poll_waiting", "gauge", "Pops parked waiting for records");
    metric_u64(&b, "queen_long_poll_waiting", NULL, (uint64_t)waitq_count(a->wq));
    retention_render_metrics(a->retention, &b);
    metric_help(&b, "queen_dedup_forgotten_total", "counter", "Producer transactionIds dropped after the dedup window");
    metric_u64(&b, "queen_dedup_forgotten_total", NULL, maint_dedup_forgotten(a->maint));
    metric_help(&b, "queen_traces_deleted_total", "counter", "Message traces deleted after retention removed their records");
    metric_u64(&b, "queen_traces_deleted_total", NULL, maint_traces_deleted(a->maint));
    render_kv_timer_metrics(a, &b);
    api_streams_prometheus(&b);
    if (a->auth)
        auth_render_metrics(a->auth, &b);
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    metric_help(&b, "queen_db_up", "gauge", "1 when at least one database connection is ready");
    metric_u64(&b, "queen_db_up", NULL, (uint64_t)db_pool_up(a->db));
    metric_help(&b, "queen_db_pool_size", "gauge", "Configured database connections");
    metric_u64(&b, "queen_db_pool_size", NULL, (uint64_t)ps.size);
    metric_help(&b, "queen_db_pool_connected", "gauge", "Database connections ready");
    metric_u64(&b, "queen_db_pool_connected", NULL, (uint64_t)ps.connected);
    metric_help(&b, "queen_db_pool_active", "gauge", "Database connections running a request");
    metric_u64(&b, "queen_db_pool_active", NULL, (uint64_t)ps.busy);
    metric_help(&b, "queen_db_pool_idle", "gauge", "Database connections ready and idle");
    metric_u64(&b, "queen_db_pool_idle", NULL, (uint64_t)(ps.connected - ps.busy));
    metric_help(&b, "queen_db_pool_waiting", "gauge", "Requests waiting for a database connection");
    metric_u64(&b, "queen_db_pool_waiting", NULL, (uint64_t)ps.pending);
    metric_help(&b, "queen_db_requests_total", "counter", "Database requests submitted");
    metric_u64(&b, "queen_db_requests_total", NULL, ps.requests);
    metric_help(&b, "queen_db_failures_total", "counter", "Database requests that failed");
    metric_u64(&b, "queen_db_failures_total", NULL, ps.failures);
    metric_help(&b, "queen_db_reconnects_total", "counter", "Database reconnection attempts");
    metric_u64(&b, "queen_db_reconnects_total", NULL, ps.reconnects);
    /* the per-queue lag and dead-letter gauges come from one query (api_resources.c) */
    if (a->s3)
        s3_node_metrics(a->s3, &b);
    cp_node_metrics(a->cp, &b);
    api_metrics_lag_finish(r, &b);
}

void api_metrics_json(http_req *r)
{
    app *a = r->app;
    db_pool_stats ps;
    db_pool_stats_get(a->db, &ps);
    const pusher_metrics *pm = pusher_get_metrics(a->push);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"uptime\":%.3f,\"messages\":{\"total\":%llu},\"database\":{\"poolSize\":%d,\"idleConnections\":%d,"
               "\"waitingRequests\":%d},\"memory\":{\"rss\":%llu}}",
               uptime_s(a), (unsigned long long)mc_get(&pm->records), ps.size, ps.connected - ps.busy, ps.pending,
               (unsigned long long)rss_bytes());
    http_respond_json(r, 200, &b);
    buf_free(&b);
}
