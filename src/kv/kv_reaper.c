/* kv_reaper.c — the background job that deletes expired KV keys. Reads already treat an
 * expired key as absent; this only gives the space back. One round is one short transaction
 * (queen.kv_gc_v1) under a try-lock, so with several nodes one does the work and the others
 * skip the round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/log.h"
#include "core/util.h"
#include "db/pg.h"
#include "kv.h"

/* Keys deleted per round: bounded so one round never holds many rows at once. */
#define KV_REAP_BATCH 5000
/* Reclaiming is cheap when there is nothing to do (an index probe on expires_at), and prompt
 * reclaiming keeps lease-style rows (short TTLs, rewritten often) from piling up. */
#define KV_REAP_INTERVAL_MS 1000
/* A full batch means more are waiting: go again soon. */
#define KV_REAP_AGAIN_MS 50

struct kv_reaper {
    uv_timer_t timer;
    db_pool *db;
    kv_metrics *m;
    db_req req;
    int busy;
    int stopping;
    char limit[16];
    const char *values[1];
};

static void schedule(kv_reaper *k, uint64_t ms);

static void on_closed(uv_handle_t *h)
{
    UNUSED(h);
}

static void on_reaped(db_req *d)
{
    kv_reaper *k = d->arg;
    k->busy = 0;
    int n = 0;
    if (d->err == DB_OK && d->res[0] && PQntuples(d->res[0]) == 1)
        n = atoi(PQgetvalue(d->res[0], 0, KV_GC_N));
    else if (d->err == DB_SQL)
        log_warn("kv", "reclaiming expired keys failed: %s", d->errmsg);
    db_req_clear(d);
    if (n > 0)
        mc_add(&k->m->reclaimed, (uint64_t)n);
    if (k->stopping) {
        uv_close((uv_handle_t *)&k->timer, on_closed);
        return;
    }
    schedule(k, n >= KV_REAP_BATCH ? KV_REAP_AGAIN_MS : KV_REAP_INTERVAL_MS);
}

static void on_timer(uv_timer_t *t)
{
    kv_reaper *k = t->data;
    if (k->busy || k->stopping)
        return;
    memset(&k->req, 0, sizeof k->req);
    k->req.nstmt = 1;
    k->req.stmt[0] = (db_stmt){"SELECT queen.kv_gc_v1($1::int4)", 1, k->values, NULL, NULL, 0};
    k->req.done = on_reaped;
    k->req.arg = k;
    if (db_submit(k->db, &k->req) == 0)
        k->busy = 1;
    else
        schedule(k, KV_REAP_INTERVAL_MS);
}

static void schedule(kv_reaper *k, uint64_t ms)
{
    uv_timer_start(&k->timer, on_timer, ms, 0);
}

kv_reaper *kv_reaper_new(struct uv_loop_s *loop, db_pool *db, kv_metrics *m)
{
    kv_reaper *k = xcalloc(1, sizeof *k);
    k->db = db;
    k->m = m;
    snprintf(k->limit, sizeof k->limit, "%d", KV_REAP_BATCH);
    k->values[0] = k->limit;
    uv_timer_init(loop, &k->timer);
    k->timer.data = k;
    schedule(k, KV_REAP_INTERVAL_MS);
    return k;
}

void kv_reaper_stop(kv_reaper *k)
{
    k->stopping = 1;
    uv_timer_stop(&k->timer);
    if (!k->busy)
        uv_close((uv_handle_t *)&k->timer, on_closed);
}

int kv_reaper_busy(const kv_reaper *k)
{
    return k->busy;
}

void kv_reaper_free(kv_reaper *k)
{
    free(k);
}
