/* retention.c — schedules queen.retention_v1 rounds and counts what they delete. */
#include "retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "metrics/metrics.h"
#include "storage/logread.h"
#include "storage_results.h"

#define TICK_MS 1000
/* A round skips partitions a group commit holds (queen.retention_v1 never waits for a
 * producer) and names them as rows of kind 'busy'; the rounds that follow such a round run at
 * the next tick instead of a whole period later, this many in a row at most, so a partition
 * pushed to all the time is still caught between two commits. */
#define BUSY_RETRIES 10

typedef struct deleted_counter {
    char *tenant;
    char *queue;
    char kind[16];
    uint64_t records;
} deleted_counter;

struct retention {
    uv_timer_t timer;
    db_pool *db;
    db_req req;
    int busy;
    int stopping;
    int64_t retention_ms, eviction_ms;
    uint64_t next_retention, next_eviction;
    int run_retention, run_eviction;
    int busy_rounds;
    char limit[16];
    char cleanup_us[24];
    int64_t cleanup_days;
    uint64_t partitions_cleaned;
    const char *values[3];
    const char *cvalues[2];
    deleted_counter *counters;
    uint32_t ncounters, cap;
};

static void on_closed(uv_handle_t *h)
{
    retention *r = h->data;
    for (uint32_t i = 0; i < r->ncounters; i++) {
        free(r->counters[i].tenant);
        free(r->counters[i].queue);
    }
    free(r->counters);
    free(r);
}

static void count(retention *r, const char *tenant, const char *queue, const char *kind, uint64_t n)
{
    for (uint32_t i = 0; i < r->ncounters; i++) {
        deleted_counter *c = &r->counters[i];
        if (strcmp(c->queue, queue) == 0 && strcmp(c->tenant, tenant) == 0 && strcmp(c->kind, kind) == 0) {
            c->records += n;
            return;
        }
    }
    if (r->ncounters == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->counters = xrealloc(r->counters, r->cap * sizeof *r->counters);
    }
    deleted_counter *c = &r->counters[r->ncounters++];
    c->tenant = xstrdup(tenant);
    c->queue = xstrdup(queue);
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    c->records = n;
}

static void on_round(db_req *d)
{
    retention *r = d->arg;
    r->busy = 0;
    int segments = 0, busy = 0;
    if (d->err == DB_OK && d->res[0]) {
        int rows = PQntuples(d->res[0]);
        for (int i = 0; i < rows; i++) {
            if (strcmp(PQgetvalue(d->res[0], i, RETENTION_KIND), "busy") == 0) {
                busy += atoi(PQgetvalue(d->res[0], i, RETENTION_SEGMENTS));
                log_debug("retention", "queue %s: %s partitions busy, left for the next round",
                          PQgetvalue(d->res[0], i, RETENTION_QUEUE), PQgetvalue(d->res[0], i, RETENTION_SEGMENTS));
                continue;
            }
            segments += atoi(PQgetvalue(d->res[0], i, RETENTION_SEGMENTS));
            uint64_t recs = (uint64_t)atoll(PQgetvalue(d->res[0], i, RETENTION_RECORDS));
            count(r, PQgetvalue(d->res[0], i, RETENTION_TENANT), PQgetvalue(d->res[0], i, RETENTION_QUEUE), PQgetvalue(d->res[0], i, RETENTION_KIND), recs);
            log_info("retention", "queue %s: deleted %llu records (%s)", PQgetvalue(d->res[0], i, RETENTION_QUEUE),
                     (unsigned long long)recs, PQgetvalue(d->res[0], i, RETENTION_KIND));
        }
    } else if (d->err == DB_SQL) {
        log_warn("retention", "round failed: %s", d->errmsg);
    }
    if (d->err == DB_OK && d->nstmt > 1 && d->res[1] && PQntuples(d->res[1]) == 1) {
        int n = atoi(PQgetvalue(d->res[1], 0, PARTITION_CLEANUP_N));
        if (n > 0) {
            r->partitions_cleaned += (uint64_t)n;
            log_info("retention", "deleted %d partitions empty and idle for %lld days", n, (long long)r->cleanup_days);
        }
    }
    db_req_clear(d);
    if (r->stopping) {
        uv_close((uv_handle_t *)&r->timer, on_closed);
        return;
    }
    /* a full round means more is waiting: go again now; so does a round that skipped busy
     * partitions (a few times in a row); otherwise wait for the next period */
    int again = segments >= atoi(r->limit);
    if (busy > 0 && r->busy_rounds < BUSY_RETRIES) {
        r->busy_rounds++;
        again = 1;
    } else {
        r->busy_rounds = 0; /* the next period's round starts a fresh series */
    }
    if (again) {
        r->next_retention = r->run_retention ? 0 : r->next_retention;
        r->next_eviction = r->run_eviction ? 0 : r->next_eviction;
    }
}

static void on_tick(uv_timer_t *t)
{
    retention *r = t->data;
    if (r->busy || r->stopping)
        return;
    uint64_t now = mono_ms();
    r->run_retention = now >= r->next_retention;
    r->run_eviction = now >= r->next_eviction;
    if (!r->run_retention && !r->run_eviction)
        return;
    if (r->run_retention)
        r->next_retention = now + (uint64_t)r->retention_ms;
    if (r->run_eviction)
        r->next_eviction = now + (uint64_t)r->eviction_ms;
    memset(&r->req, 0, sizeof r->req);
    r->values[0] = r->limit;
    r->values[1] = r->run_retention ? "true" : "false";
    r->values[2] = r->run_eviction ? "true" : "false";
    r->req.nstmt = 1;
    r->req.stmt[0] = (db_stmt){"SELECT * FROM queen.retention_v1($1::int4, $2::bool, $3::bool)",
                               3, r->values, NULL, NULL, 0};
    if (r->run_retention && r->cleanup_days > 0) {
        r->cvalues[0] = r->limit;
        r->cvalues[1] = r->cleanup_us;
        r->req.stmt[r->req.nstmt++] =
            (db_stmt){"SELECT queen.partition_cleanup_v1($1::int4, $2::int8)", 2, r->cvalues, NULL, NULL, 0};
    }
    r->req.done = on_round;
    r->req.arg = r;
    if (db_submit(r->db, &r->req) == 0)
        r->busy = 1;
}

retention *retention_new(uv_loop_t *loop, db_pool *db, int64_t retention_ms, int64_t eviction_ms, int64_t batch,
                         int64_t cleanup_days)
{
    retention *r = xcalloc(1, sizeof *r);
    r->cleanup_days = cleanup_days;
    snprintf(r->cleanup_us, sizeof r->cleanup_us, "%lld", (long long)(cleanup_days * 86400LL * 1000000LL));
    r->db = db;
    r->retention_ms = retention_ms;
    r->eviction_ms = eviction_ms;
    snprintf(r->limit, sizeof r->limit, "%lld", (long long)batch);
    uint64_t now = mono_ms();
    r->next_retention = now + (uint64_t)MIN(retention_ms, 5000);
    r->next_eviction = now + (uint64_t)MIN(eviction_ms, 5000);
    uv_timer_init(loop, &r->timer);
    r->timer.data = r;
    uint64_t tick = (uint64_t)MIN(MIN(retention_ms, eviction_ms), TICK_MS);
    uv_timer_start(&r->timer, on_tick, tick, tick);
    return r;
}

void retention_stop(retention *r)
{
    r->stopping = 1;
    uv_timer_stop(&r->timer);
    if (!r->busy)
        uv_close((uv_handle_t *)&r->timer, on_closed);
}

void retention_render_metrics(const retention *r, buf *b)
{
    metric_help(b, "queen_retention_deleted_records_total", "counter",
                "Records deleted by retention (retention, completed) and eviction, per queue");
    for (uint32_t i = 0; i < r->ncounters; i++) {
        const deleted_counter *c = &r->counters[i];
        buf lab;
        buf_init(&lab, 0);
        if (strcmp(c->tenant, "00000000-0000-0000-0000-000000000001") != 0)
            buf_printf(&lab, "tenant=\"%s\",", c->tenant);
        buf_puts(&lab, "queue=\"");
        metric_label_escape(&lab, c->queue, strlen(c->queue));
        buf_printf(&lab, "\",kind=\"%s\"", c->kind);
        metric_u64(b, "queen_retention_deleted_records_total", buf_cstr(&lab), c->records);
        buf_free(&lab);
    }
    metric_help(b, "queen_partitions_cleaned_total", "counter",
                "Partitions this node deleted because they were empty and idle for PARTITION_CLEANUP_DAYS");
    metric_u64(b, "queen_partitions_cleaned_total", NULL, r->partitions_cleaned);
}
