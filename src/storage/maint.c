/* maint.c — periodic dedup garbage collection, and the traces whose records retention removed
 * (queen.trace_gc_v1), in the same round (two statements, each its own transaction). */
#include "maint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "storage_results.h"

/* Rows deleted per round: bounded so one round never holds the table for long. */
#define DEDUP_GC_BATCH 10000
#define TRACE_GC_BATCH 10000
#define MAINT_INTERVAL_MS 30000
#define MAINT_AGAIN_MS 1000

struct maint {
    uv_timer_t timer;
    db_pool *db;
    db_req req;
    int busy;
    int stopping;
    char window[24];
    char limit[16];
    char trace_limit[16];
    const char *values[3];
    uint64_t forgotten;
    uint64_t traces_deleted;
};

static void schedule(maint *m, uint64_t ms);

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

static void on_gc(db_req *d)
{
    maint *m = d->arg;
    m->busy = 0;
    int n = 0, nt = 0;
    if (d->err == DB_OK && d->res[0] && PQntuples(d->res[0]) == 1 && d->res[1] && PQntuples(d->res[1]) == 1) {
        n = atoi(PQgetvalue(d->res[0], 0, DEDUP_GC_N));
        nt = atoi(PQgetvalue(d->res[1], 0, TRACE_GC_N));
    } else if (d->err == DB_SQL) {
        log_warn("maint", "dedup or trace cleanup failed: %s", d->errmsg);
    }
    db_req_clear(d);
    if (n > 0)
        m->forgotten += (uint64_t)n;
    if (nt > 0)
        m->traces_deleted += (uint64_t)nt;
    if (m->stopping) {
        uv_close((uv_handle_t *)&m->timer, on_closed);
        return;
    }
    schedule(m, n >= DEDUP_GC_BATCH || nt >= TRACE_GC_BATCH ? MAINT_AGAIN_MS : MAINT_INTERVAL_MS);
}

static void on_timer(uv_timer_t *t)
{
    maint *m = t->data;
    if (m->busy || m->stopping)
        return;
    memset(&m->req, 0, sizeof m->req);
    m->req.nstmt = 2;
    m->req.stmt[0] = (db_stmt){"SELECT queen.dedup_gc_v1($1::int8, $2::int4)", 2, m->values, NULL, NULL, 0};
    m->req.stmt[1] = (db_stmt){"SELECT queen.trace_gc_v1($1::int4)", 1, m->values + 2, NULL, NULL, 0};
    m->req.done = on_gc;
    m->req.arg = m;
    if (db_submit(m->db, &m->req) == 0)
        m->busy = 1;
    else
        schedule(m, MAINT_INTERVAL_MS);
}

static void schedule(maint *m, uint64_t ms)
{
    uv_timer_start(&m->timer, on_timer, ms, 0);
}

maint *maint_new(uv_loop_t *loop, db_pool *db, int64_t dedup_window_s)
{
    maint *m = xcalloc(1, sizeof *m);
    m->db = db;
    snprintf(m->window, sizeof m->window, "%lld", (long long)(dedup_window_s * 1000000));
    snprintf(m->limit, sizeof m->limit, "%d", DEDUP_GC_BATCH);
    m->values[0] = m->window;
    m->values[1] = m->limit;
    snprintf(m->trace_limit, sizeof m->trace_limit, "%d", TRACE_GC_BATCH);
    m->values[2] = m->trace_limit;
    uv_timer_init(loop, &m->timer);
    m->timer.data = m;
    schedule(m, 5000);
    return m;
}

void maint_stop(maint *m)
{
    m->stopping = 1;
    uv_timer_stop(&m->timer);
    if (!m->busy)
        uv_close((uv_handle_t *)&m->timer, on_closed);
}

uint64_t maint_dedup_forgotten(const maint *m)
{
    return m->forgotten;
}

uint64_t maint_traces_deleted(const maint *m)
{
    return m->traces_deleted;
}
