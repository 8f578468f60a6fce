/* push.c — group commit of push requests through queen.push_v1. */
#include "push.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "db/pgarray.h"
#include "record.h"
#include "storage_results.h"

/* A batch never carries more payload than this, whatever the record count: one statement's
 * parameters are held in memory on both sides. */
#define PUSH_MAX_BATCH_BYTES (48u << 20)
/* Serialization failures and deadlocks are retried this many times before answering 500. */
#define PUSH_MAX_ATTEMPTS 5

static const char PUSH_SQL[] =
    "SELECT * FROM queen.push_v1("
    "$1::uuid[], $2::text[], $3::text[], $4::int4[], $5::int4[], $6::bytea[], $7::int4[], $8::int4[], "
    "$9::text[], $10::int8)";

typedef struct lane lane;

typedef struct batch {
    pusher *p;
    lane *lane;
    push_req *reqs; /* linked through next */
    uint32_t nreqs;
    uint64_t nrecords;
    push_enc enc;
    db_req dbr;
    int attempts;
    uint32_t refusals; /* push_v1 refused plaintext for an encrypted queue (each teaches one queue) */
    uint64_t started_us;
} batch;

/* A lane carries at most one commit at a time. Requests go to the lane of their first item's
 * queue: commits to one queue serialise on its clock row anyway, so a second commit in flight
 * for the same queue only waits on the lock while its batch could have grown; different
 * queues hash to different lanes and commit in parallel. */
struct lane {
    push_req *head, *tail;
    int busy;
};

#define MAX_LANES 64

struct pusher {
    db_pool *db;
    int64_t dedup_window_us;
    uint32_t max_batch;
    int nlanes;
    lane lanes[MAX_LANES];
    int inflight;
    int queued;
    pusher_metrics m;
    pusher_commit_fn on_commit;
    void *on_commit_arg;
    sealq *sq;
};

static const double batch_bounds[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 50000};
static const double req_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
static const double sec_bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

pusher *pusher_new(db_pool *db, const queen_config *cfg)
{
    pusher *p = xcalloc(1, sizeof *p);
    p->db = db;
    p->dedup_window_us = cfg->dedup_window_s * 1000000;
    p->max_batch = (uint32_t)cfg->push_max_batch;
    p->nlanes = (int)MIN(cfg->push_max_inflight, MAX_LANES);
    mhist_init(&p->m.batch_records, batch_bounds, (int)ARRAY_LEN(batch_bounds), 1);
    mhist_init(&p->m.batch_requests, req_bounds, (int)ARRAY_LEN(req_bounds), 1);
    mhist_init(&p->m.commit_seconds, sec_bounds, (int)ARRAY_LEN(sec_bounds), 1e6);
    p->sq = sealq_new();
    return p;
}

void pusher_free(pusher *p)
{
    if (p)
        sealq_free(p->sq);
    free(p);
}

sealq *pusher_sealq(pusher *p)
{
    return p->sq;
}

void pusher_on_commit(pusher *p, pusher_commit_fn fn, void *arg)
{
    p->on_commit = fn;
    p->on_commit_arg = arg;
}

const pusher_metrics *pusher_get_metrics(const pusher *p)
{
    return &p->m;
}

int pusher_inflight(const pusher *p)
{
    return p->inflight;
}

int pusher_queued(const pusher *p)
{
    return p->queued;
}

int64_t pusher_dedup_window_us(const pusher *p)
{
    return p->dedup_window_us;
}


int push_enc_apply(push_enc *e, PGresult *res, int *dups, int *full)
{
    return push_enc_apply_where(e, res, -1, 0, dups, full);
}

int push_enc_apply_where(push_enc *e, PGresult *res, int col, int32_t val, int *dups, int *full)
{
    *dups = *full = 0;
    int rows = PQntuples(res);
    for (int i = 0; i < rows; i++) {
        if (col >= 0 && (PQgetisnull(res, i, col) || db_get_i32(res, i, col) != val))
            continue;
        int32_t kind = db_get_i32(res, i, PUSH_KIND);
        int32_t idx = db_get_i32(res, i, PUSH_IDX);
        uint64_t pid = (uint64_t)db_get_i64(res, i, PUSH_PARTITION_ID);
        const uint8_t *pu = (const uint8_t *)PQgetvalue(res, i, PUSH_PARTITION_UUID);
        uint64_t off = (uint64_t)db_get_i64(res, i, PUSH_OFF);
        int64_t ts = db_get_i64(res, i, PUSH_TS);
        if (kind > PUSH_ROW_FULL)
            continue; /* rows of a caller that wraps push_v1 (transaction acks: api/txn_results.h) */
        if (kind == PUSH_ROW_DUPLICATE) {
            if (idx < 1 || (uint32_t)idx > e->ndd)
                continue;
            push_item *it = e->dd_items[idx - 1];
            it->status = PUSH_DUPLICATE;
            it->offset = off;
            it->ts = ts;
            it->partition_id = pid;
            memcpy(it->partition_uuid, pu, 16);
            (*dups)++;
            continue;
        }
        for (uint32_t gi = 0; gi < e->ngroups; gi++) {
            push_group *g = &e->groups[gi];
            if (g->sql_idx != (uint32_t)idx)
                continue;
            for (uint32_t k = 0; k < g->n; k++) {
                push_item *it = g->items[k];
                if (kind == PUSH_ROW_FULL) {
                    it->status = PUSH_FULL;
                    it->offset = off; /* the queue's maxSize */
                    continue;
                }
                it->status = PUSH_QUEUED;
                it->offset = off + k;
                it->ts = ts;
                it->partition_id = pid;
                memcpy(it->partition_uuid, pu, 16);
            }
            if (kind == PUSH_ROW_FULL)
                (*full)++;
            break;
        }
    }
    if (*dups || *full) {
        /* nothing was written: whatever was marked queued is pending again */
        for (uint32_t gi = 0; gi < e->ngroups; gi++)
            for (uint32_t k = 0; k < e->groups[gi].n; k++)
                if (e->groups[gi].items[k]->status == PUSH_QUEUED)
                    e->groups[gi].items[k]->status = PUSH_PENDING;
    }
    return 0;
}

void push_enc_stmt(push_enc *e, db_stmt *st)
{
    *st = (db_stmt){PUSH_SQL, PUSH_PARAMS, e->values, e->lengths, e->formats, 1};
}

static void maybe_flush(pusher *p, lane *l);

static void batch_free(batch *b)
{
    push_enc_free(&b->enc);
    free(b);
}

/* Completes every request of the batch: with err_status 0, items carry their results. */
static void batch_finish(batch *b, int err_status, const char *err)
{
    pusher *p = b->p;
    if (!err_status) {
        push_enc_settle(b->reqs);
        uint64_t recs = 0, bytes = 0, dups = 0;
        for (push_req *r = b->reqs; r; r = r->next) {
            for (uint32_t i = 0; i < r->n; i++) {
                push_item *it = &r->items[i];
                if (it->status == PUSH_QUEUED) {
                    recs++;
                    bytes += it->payload_len;
                } else {
                    dups++;
                }
            }
        }
        mc_add(&p->m.records, recs);
        mc_add(&p->m.bytes, bytes);
        mc_add(&p->m.duplicates, dups);
        mc_add(&p->m.commits, 1);
        for (uint32_t gi = 0; gi < b->enc.ngroups; gi++)
            if (b->enc.groups[gi].sealed)
                mc_add(&p->m.sealed_records, b->enc.groups[gi].n);
        if (p->on_commit)
            for (uint32_t gi = 0; gi < b->enc.ngroups; gi++)
                if (b->enc.groups[gi].n)
                    p->on_commit(p->on_commit_arg, b->enc.groups[gi].tenant, b->enc.groups[gi].queue,
                                 b->enc.groups[gi].queue_len, b->enc.groups[gi].items[0]->partition_id);
        mhist_observe(&p->m.batch_records, recs);
        mhist_observe(&p->m.batch_requests, b->nreqs);
        mhist_observe(&p->m.commit_seconds, mono_us() - b->started_us);
    } else {
        mc_add(&p->m.commit_failures, 1);
    }
    char sqlstate[6];
    memcpy(sqlstate, b->dbr.sqlstate, sizeof sqlstate); /* the batch is freed below */
    push_req *r = b->reqs;
    b->reqs = NULL;
    b->lane->busy = 0;
    p->inflight--;
    batch_free(b);
    while (r) {
        push_req *next = r->next;
        r->next = NULL;
        r->err_status = err_status;
        r->err_internal = err_status != 0; /* the commit failed: PostgreSQL's or our own detail */
        if (err_status) {
            snprintf(r->err, sizeof r->err, "%s", err);
            memcpy(r->err_sqlstate, sqlstate, sizeof r->err_sqlstate);
        }
        r->done(r);
        r = next;
    }
}

/* Answers 409 to every request with an item in a queue that is full, and takes them out of
 * the batch; the others are sent again. */
static void fail_full_requests(batch *b)
{
    push_enc_settle(b->reqs);
    push_req **pp = &b->reqs;
    while (*pp) {
        push_req *r = *pp;
        const push_item *full = NULL;
        for (uint32_t i = 0; i < r->n && !full; i++)
            if (r->items[i].status == PUSH_FULL)
                full = &r->items[i];
        if (!full) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        r->next = NULL;
        b->nreqs--;
        r->err_status = 409;
        snprintf(r->err, sizeof r->err, "queue %.*s is full: it holds %llu records at most (maxSize)",
                 (int)full->queue_len, full->queue, (unsigned long long)full->offset);
        r->done(r);
    }
    for (push_req *x = b->reqs; x; x = x->next)
        for (uint32_t i = 0; i < x->n; i++)
            if (x->items[i].status != PUSH_DUPLICATE || x->items[i].dup_of)
                x->items[i].status = PUSH_PENDING;
}

/* push_v1 refused plaintext for an encrypted queue and this node has no key: answers every
 * request with an item in that queue and takes it out of the batch; the others are sent again. */
static void fail_unsealable_requests(batch *b, const uint8_t tenant[16], const char *queue, size_t qlen,
                                     const char *msg)
{
    push_req **pp = &b->reqs;
    while (*pp) {
        push_req *r = *pp;
        int hit = 0;
        for (uint32_t i = 0; i < r->n && !hit; i++)
            hit = memcmp(r->tenant, tenant, 16) == 0 && r->items[i].queue_len == qlen &&
                  memcmp(r->items[i].queue, queue, qlen) == 0;
        if (!hit) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        r->next = NULL;
        b->nreqs--;
        r->err_status = PUSH_NO_KEY_STATUS;
        snprintf(r->err, sizeof r->err, "%s", msg);
        r->done(r);
    }
}

static int batch_send(batch *b);

static void on_push_done(db_req *dr)
{
    batch *b = dr->arg;
    pusher *p = b->p;
    PGresult *res = dr->res[0];
    const push_group *refused = dr->err == DB_SQL ? push_enc_refused(&b->enc, dr->sqlstate, dr->errmsg) : NULL;
    if (refused) {
        /* plaintext for a queue with encryptionEnabled: seal it (push_enc_refused marked the
         * queue) and send again, or, without a key, refuse the requests that touch it */
        mc_add(&p->m.seal_refusals, 1);
        db_req_clear(dr);
        lane *l = b->lane;
        if (!seal_node_key()) {
            uint8_t tenant[16];
            char queue[256], msg[sizeof b->reqs->err];
            size_t qlen = MIN(refused->queue_len, sizeof queue);
            memcpy(tenant, refused->tenant, 16);
            memcpy(queue, refused->queue, qlen);
            push_enc_no_key_error(refused, msg, sizeof msg);
            fail_unsealable_requests(b, tenant, queue, qlen, msg);
            if (!b->reqs) {
                b->enc.ngroups = 0; /* nothing was committed: no group to report */
                batch_finish(b, 0, NULL);
                maybe_flush(p, l);
                return;
            }
        }
        if (++b->refusals <= b->enc.ngroups + 1) {
            b->attempts--; /* a refusal is not a failed attempt */
            if (batch_send(b) == 0)
                return;
            char msg[600];
            snprintf(msg, sizeof msg, "%s", b->dbr.errmsg);
            batch_finish(b, 503, msg);
        } else {
            batch_finish(b, 500, "push_v1 kept refusing sealed records as not sealed");
        }
        maybe_flush(p, l);
        return;
    }
    if (dr->err != DB_OK || !res) {
        int retryable = dr->err == DB_SQL && (strcmp(dr->sqlstate, "40001") == 0 || strcmp(dr->sqlstate, "40P01") == 0);
        char msg[600];
        snprintf(msg, sizeof msg, "%s", dr->errmsg[0] ? dr->errmsg : "push failed");
        db_req_clear(dr);
        if (retryable && b->attempts < PUSH_MAX_ATTEMPTS) {
            log_debug("push", "retrying commit after %s", msg);
            if (batch_send(b) == 0)
                return;
            snprintf(msg, sizeof msg, "%s", b->dbr.errmsg);
        }
        int status = (dr->err == DB_SQL || dr->err == DB_OK) ? 500 : 503;
        if (status == 500)
            log_error("push", "commit failed: %s (sqlstate %s)", msg, dr->sqlstate);
        lane *l = b->lane;
        batch_finish(b, status, msg);
        maybe_flush(p, l);
        return;
    }
    int dups, full;
    push_enc_apply(&b->enc, res, &dups, &full);
    db_req_clear(dr);
    if (dups || full) {
        /* nothing was written: drop what cannot be written and send the rest again */
        if (full)
            fail_full_requests(b);
        b->attempts = 0;
        if (!b->reqs) {
            lane *l = b->lane;
            batch_finish(b, 0, NULL);
            maybe_flush(p, l);
            return;
        }
        if (batch_send(b) == 0)
            return;
        lane *l = b->lane;
        char msg[600];
        snprintf(msg, sizeof msg, "%s", b->dbr.errmsg);
        batch_finish(b, 503, msg);
        maybe_flush(p, l);
        return;
    }
    lane *l = b->lane;
    batch_finish(b, 0, NULL);
    maybe_flush(p, l);
}

/* Builds and submits; returns -1 when the pool refused (b->dbr.errmsg says why). When
 * nothing is left to write, finishes the batch at once. */
static int batch_send(batch *b)
{
    b->attempts++;
    uint64_t n = push_enc_build(&b->enc, b->reqs, b->p->dedup_window_us);
    if (n == 0) {
        /* everything was a duplicate */
        pusher *p = b->p;
        lane *l = b->lane;
        batch_finish(b, 0, NULL);
        maybe_flush(p, l);
        return 0;
    }
    memset(&b->dbr, 0, sizeof b->dbr);
    b->dbr.nstmt = 1;
    push_enc_stmt(&b->enc, &b->dbr.stmt[0]);
    b->dbr.done = on_push_done;
    b->dbr.arg = b;
    return db_submit(b->p->db, &b->dbr);
}

/* Starts the lane's next commit when it is idle and has requests waiting. */
static void maybe_flush(pusher *p, lane *l)
{
    while (l->head && !l->busy) {
        batch *b = xcalloc(1, sizeof *b);
        b->p = p;
        b->lane = l;
        push_enc_init(&b->enc);
        b->enc.sq = p->sq;
        push_req **tail = &b->reqs;
        uint64_t bytes = 0;
        while (l->head) {
            push_req *r = l->head;
            uint64_t rb = 0;
            for (uint32_t i = 0; i < r->n; i++)
                rb += r->items[i].payload_len;
            if (b->nreqs > 0 && (b->nrecords + r->n > p->max_batch || bytes + rb > PUSH_MAX_BATCH_BYTES))
                break;
            l->head = r->next;
            if (!l->head)
                l->tail = NULL;
            p->queued--;
            r->next = NULL;
            *tail = r;
            tail = &r->next;
            b->nreqs++;
            b->nrecords += r->n;
            bytes += rb;
        }
        l->busy = 1;
        p->inflight++;
        b->started_us = mono_us();
        if (batch_send(b) < 0) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", b->dbr.errmsg);
            batch_finish(b, 503, msg);
        }
    }
}

void pusher_submit(pusher *p, push_req *r)
{
    r->err_status = 0;
    r->err_internal = 0;
    r->err_sqlstate[0] = '\0';
    r->err[0] = '\0';
    r->next = NULL;
    for (uint32_t i = 0; i < r->n; i++) {
        r->items[i].status = PUSH_PENDING;
        r->items[i].dup_of = NULL;
    }
    uint32_t h = hash_bytes(r->tenant, 16, 0);
    if (r->n)
        h = hash_bytes(r->items[0].queue, r->items[0].queue_len, h);
    lane *l = &p->lanes[h % (uint32_t)p->nlanes];
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    p->queued++;
    maybe_flush(p, l);
}
