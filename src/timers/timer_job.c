/* timer_job.c — the firing job every node runs.
 *
 * Scheduling. A round is one call of queen.timers_fire_v2 on the pool. After a round:
 *  - it took as many timers as it may (more are due): the next round starts at once;
 *  - a timer is due but was held by another node's round: look again in TIMER_CONTENDED_MS
 *    (if that node dies, its transaction rolls back and the timers are ours to fire);
 *  - the next timer is due within TIMER_IDLE_MAX_MS: sleep until then;
 *  - otherwise sleep TIMER_IDLE_MAX_MS at most, backing off from TIMER_IDLE_MIN_MS while
 *    nothing at all is scheduled.
 * A timer scheduled on this node kicks the job so it does not wait out a long sleep; timers
 * scheduled on other nodes are seen at the next poll, so one second bounds how late a timer
 * fires when the node that accepted it has died. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "db/pg.h"
#include "timers.h"

#define TIMER_FIRST_ROUND_MS 200
#define TIMER_CONTENDED_MS 100
#define TIMER_IDLE_MIN_MS 250
#define TIMER_IDLE_MAX_MS 1000
#define TIMER_RETRY_MS 1000

struct timer_job {
    uv_timer_t timer;
    /* the sealing pass a round may need (docs/encryption.md): its statement's parameters */
    pgarray seal_arr[3];
    char seal_limit[24];
    const char *seal_values[3];
    int seal_lengths[3];
    int seal_formats[3];
    uint64_t seal_warned_ms;
    uv_loop_t *loop;
    db_pool *db;
    db_req req;
    int busy;
    int stopping;
    uint64_t due_ms;        /* uv_now of the scheduled round, when the timer is armed */
    int armed;
    int64_t kick_ms;        /* a kick arrived during a round: run again no later than this delay; -1 none */
    uint64_t idle_ms;
    uint8_t p_limit[4];
    uint8_t p_bytes[8];
    uint8_t p_window[8];
    const char *values[3];
    int lengths[3];
    int formats[3];
    timer_metrics m;
};

static const double lag_bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

static void schedule(timer_job *j, uint64_t ms);
static int seal_pass_start(timer_job *j);


static void on_closed(uv_handle_t *h)
{
    UNUSED(h);
}

/* The end of a round (and of its sealing pass): the next one, or the handle closed. */
static void round_end(timer_job *j, uint64_t next_ms)
{
    j->busy = 0;
    if (j->stopping) {
        uv_close((uv_handle_t *)&j->timer, on_closed);
        return;
    }
    if (j->kick_ms >= 0 && (uint64_t)j->kick_ms < next_ms)
        next_ms = (uint64_t)j->kick_ms;
    j->kick_ms = -1;
    schedule(j, next_ms);
}

static void on_round(db_req *d)
{
    timer_job *j = d->arg;
    uint64_t next_ms = TIMER_RETRY_MS;
    int unsealed = 0;
    PGresult *r = d->res[0];
    if (d->err == DB_OK && r && PQntuples(r) == 1) {
        int fired = atoi(PQgetvalue(r, 0, FIRE_FIRED));
        int dups = atoi(PQgetvalue(r, 0, FIRE_DUPLICATES));
        int more = PQgetvalue(r, 0, FIRE_MORE)[0] == 't';
        int64_t lag = atoll(PQgetvalue(r, 0, FIRE_MAX_LAG_US));
        int has_next = !PQgetisnull(r, 0, FIRE_NEXT_IN_US);
        int64_t next_in_us = has_next ? atoll(PQgetvalue(r, 0, FIRE_NEXT_IN_US)) : 0;
        unsealed = atoi(PQgetvalue(r, 0, FIRE_UNSEALED));
        if (fired + dups > 0) {
            mc_add(&j->m.fired, (uint64_t)fired);
            mc_add(&j->m.duplicates, (uint64_t)dups);
            mc_add(&j->m.rounds, 1);
            mhist_observe(&j->m.lag_seconds, (uint64_t)(lag > 0 ? lag : 0));
            log_debug("timers", "fired %d timers (%d duplicates), largest delay %lld us", fired, dups,
                      (long long)lag);
        }
        if (more) {
            next_ms = 0;
        } else if (!has_next) {
            next_ms = j->idle_ms;
            j->idle_ms = MIN(j->idle_ms * 2, TIMER_IDLE_MAX_MS);
        } else if (next_in_us <= 0) {
            next_ms = TIMER_CONTENDED_MS;
        } else {
            next_ms = MIN((uint64_t)(next_in_us + 999) / 1000, TIMER_IDLE_MAX_MS);
        }
        if (has_next)
            j->idle_ms = TIMER_IDLE_MIN_MS;
    } else {
        mc_add(&j->m.round_failures, 1);
        if (d->err == DB_SQL)
            log_warn("timers", "firing round failed: %s (sqlstate %s)", d->errmsg, d->sqlstate);
        else
            log_debug("timers", "firing round failed: %s", d->errmsg);
        /* a serialization failure or deadlock is worth an immediate second try */
        if (d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0))
            next_ms = 10;
    }
    db_req_clear(d);
    if (unsealed > 0 && !j->stopping) {
        /* plaintext timers of encrypted queues wait: seal them, then fire at once */
        if (seal_node_key() && seal_pass_start(j) == 0)
            return;
        if (!seal_node_key() && mono_ms() - j->seal_warned_ms >= 60000) {
            j->seal_warned_ms = mono_ms();
            log_warn("timers", "%d due timers of queues with encryptionEnabled hold plaintext and wait for a node "
                               "with QUEEN_ENCRYPTION_KEY to seal them; this node has none", unsealed);
        }
    }
    round_end(j, next_ms);
}

/* ---- sealing plaintext timers of encrypted queues in place ---- */

static void seal_arrays_free(timer_job *j)
{
    for (int k = 0; k < 3; k++)
        pgarray_free(&j->seal_arr[k]);
}

static void on_resealed(db_req *d)
{
    timer_job *j = d->arg;
    seal_arrays_free(j);
    uint64_t next_ms = 0;
    if (d->err == DB_OK && d->res[0]) {
        int n = atoi(PQcmdTuples(d->res[0]));
        mc_add(&j->m.sealed, (uint64_t)n);
        log_debug("timers", "sealed %d plaintext timers of encrypted queues", n);
    } else {
        log_warn("timers", "sealing timers failed: %s", d->errmsg);
        next_ms = TIMER_RETRY_MS;
    }
    db_req_clear(d);
    round_end(j, next_ms);
}

static void on_unsealed(db_req *d)
{
    timer_job *j = d->arg;
    PGresult *r = d->res[0];
    if (d->err != DB_OK || !r) {
        log_warn("timers", "reading timers to seal failed: %s", d->errmsg);
        db_req_clear(d);
        round_end(j, TIMER_RETRY_MS);
        return;
    }
    pgarray_begin(&j->seal_arr[0], OID_UUID);
    pgarray_begin(&j->seal_arr[1], OID_BYTEA);
    pgarray_begin(&j->seal_arr[2], OID_BYTEA);
    buf rec;
    buf_init(&rec, 0);
    int n = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        const uint8_t *old = (const uint8_t *)PQgetvalue(r, i, TIMER_UNSEALED_RECORD);
        size_t len = (size_t)PQgetlength(r, i, TIMER_UNSEALED_RECORD);
        buf_reset(&rec);
        if (PQgetlength(r, i, TIMER_UNSEALED_ID) != 16 || timer_reseal_record(old, len, &rec) != 0)
            continue; /* sealed meanwhile, or not a record (reported when it is read) */
        pgarray_add(&j->seal_arr[0], PQgetvalue(r, i, TIMER_UNSEALED_ID), 16);
        pgarray_add(&j->seal_arr[1], old, len);
        pgarray_add(&j->seal_arr[2], rec.data, rec.len);
        n++;
    }
    buf_free(&rec);
    db_req_clear(d);
    if (n == 0) {
        seal_arrays_free(j);
        round_end(j, TIMER_RETRY_MS);
        return;
    }
    for (int k = 0; k < 3; k++) {
        pgarray_finish(&j->seal_arr[k]);
        j->seal_values[k] = j->seal_arr[k].b.data;
        j->seal_lengths[k] = (int)j->seal_arr[k].b.len;
        j->seal_formats[k] = 1;
    }
    memset(&j->req, 0, sizeof j->req);
    j->req.nstmt = 1;
    j->req.stmt[0] = (db_stmt){TIMER_RESEAL_SQL, 3, j->seal_values, j->seal_lengths, j->seal_formats, 0};
    j->req.done = on_resealed;
    j->req.arg = j;
    if (db_submit(j->db, &j->req) < 0) {
        seal_arrays_free(j);
        round_end(j, TIMER_RETRY_MS);
    }
}

/* Reads the due plaintext timers of encrypted queues; -1 when the pool refused. */
static int seal_pass_start(timer_job *j)
{
    snprintf(j->seal_limit, sizeof j->seal_limit, "%d", TIMER_SEAL_BATCH);
    j->seal_values[0] = j->seal_limit;
    memset(&j->req, 0, sizeof j->req);
    j->req.nstmt = 1;
    j->req.stmt[0] = (db_stmt){TIMER_UNSEALED_SQL, 1, j->seal_values, NULL, NULL, 1};
    j->req.done = on_unsealed;
    j->req.arg = j;
    return db_submit(j->db, &j->req);
}

static void on_timer(uv_timer_t *t)
{
    timer_job *j = t->data;
    j->armed = 0;
    if (j->busy || j->stopping)
        return;
    memset(&j->req, 0, sizeof j->req);
    j->req.nstmt = 1;
    j->req.stmt[0] = (db_stmt){TIMER_FIRE_SQL, 3, j->values, j->lengths, j->formats, 0};
    j->req.done = on_round;
    j->req.arg = j;
    if (db_submit(j->db, &j->req) == 0) {
        j->busy = 1;
        j->kick_ms = -1;
    } else {
        schedule(j, TIMER_RETRY_MS);
    }
}

static void schedule(timer_job *j, uint64_t ms)
{
    j->armed = 1;
    j->due_ms = uv_now(j->loop) + ms;
    uv_timer_start(&j->timer, on_timer, ms, 0);
}

timer_job *timer_job_new(struct uv_loop_s *loop, db_pool *db, int64_t dedup_window_s, int64_t fire_batch)
{
    timer_job *j = xcalloc(1, sizeof *j);
    j->loop = loop;
    j->db = db;
    j->kick_ms = -1;
    j->idle_ms = TIMER_IDLE_MIN_MS;
    be_put32(j->p_limit, (uint32_t)fire_batch);
    be_put64(j->p_bytes, (uint64_t)TIMER_ROUND_MAX_BYTES);
    be_put64(j->p_window, (uint64_t)(dedup_window_s * 1000000));
    j->values[0] = (const char *)j->p_limit;
    j->values[1] = (const char *)j->p_bytes;
    j->values[2] = (const char *)j->p_window;
    j->lengths[0] = 4;
    j->lengths[1] = j->lengths[2] = 8;
    j->formats[0] = j->formats[1] = j->formats[2] = 1;
    mhist_init(&j->m.lag_seconds, lag_bounds, (int)ARRAY_LEN(lag_bounds), 1e6);
    uv_timer_init(loop, &j->timer);
    j->timer.data = j;
    schedule(j, TIMER_FIRST_ROUND_MS);
    return j;
}

void timer_job_kick(timer_job *j, int64_t delay_us)
{
    if (j->stopping)
        return;
    uint64_t ms = delay_us <= 0 ? 0 : (uint64_t)(delay_us + 999) / 1000;
    if (ms > TIMER_IDLE_MAX_MS)
        return; /* the regular polling reaches it in time */
    j->idle_ms = TIMER_IDLE_MIN_MS;
    if (j->busy) {
        if (j->kick_ms < 0 || (uint64_t)j->kick_ms > ms)
            j->kick_ms = (int64_t)ms;
        return;
    }
    if (j->armed && j->due_ms <= uv_now(j->loop) + ms)
        return;
    schedule(j, ms);
}

void timer_job_stop(timer_job *j)
{
    j->stopping = 1;
    uv_timer_stop(&j->timer);
    j->armed = 0;
    if (!j->busy)
        uv_close((uv_handle_t *)&j->timer, on_closed);
}

int timer_job_busy(const timer_job *j)
{
    return j->busy;
}

void timer_job_free(timer_job *j)
{
    free(j);
}

timer_metrics *timer_job_metrics(timer_job *j)
{
    return &j->m;
}
