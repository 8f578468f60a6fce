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
#include "db/pgarray.h"
#include "record.h"

/* A batch never carries more payload than this, whatever the record count: one statement's
 * parameters are held in memory on both sides. */
#define PUSH_MAX_BATCH_BYTES (48u << 20)
/* Serialization failures and deadlocks are retried this many times before answering 500. */
#define PUSH_MAX_ATTEMPTS 5

static const char PUSH_SQL[] =
    "SELECT kind, idx, partition_id, partition_uuid, queue_id, off, ts FROM queen.push_v1("
    "$1::uuid[], $2::text[], $3::text[], $4::int4[], $5::int4[], $6::bytea[], $7::int4[], $8::int4[], "
    "$9::text[], $10::int8)";

enum { A_TENANT, A_QUEUE, A_PART, A_COUNT, A_BYTES, A_DATA, A_DDG, A_DDPOS, A_DDTXN, A_NARR };

typedef struct group {
    const uint8_t *tenant;
    const char *queue;
    uint32_t queue_len;
    const char *partition;
    uint32_t partition_len;
    push_item **items;
    uint32_t n, cap;
    uint32_t sql_idx; /* 1-based index in the call's arrays; 0 when nothing to write */
} group;

typedef struct lane lane;

typedef struct batch {
    pusher *p;
    lane *lane;
    push_req *reqs; /* linked through next */
    uint32_t nreqs;
    uint64_t nrecords;
    arena ar;
    group *groups;
    uint32_t ngroups, gcap;
    push_item **dd_items; /* producer transactionIds sent for checking, by dedup index */
    uint32_t ndd;
    pgarray arr[A_NARR];
    uint8_t window[8];
    const char *values[10];
    int lengths[10];
    int formats[10];
    db_req dbr;
    int attempts;
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
    return p;
}

void pusher_free(pusher *p)
{
    free(p);
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

static void maybe_flush(pusher *p, lane *l);

/* Groups the batch's pending items by (tenant, queue, partition), drops repeats of a producer
 * transactionId within the batch, encodes one segment per group and fills the arrays.
 * Returns the number of records to write. */
static uint64_t build(batch *b)
{
    pusher *p = b->p;
    strmap gmap, ddmap;
    strmap_init(&gmap);
    strmap_init(&ddmap);
    b->ngroups = 0;
    b->ndd = 0;
    buf key;
    buf_init(&key, 0);
    for (push_req *r = b->reqs; r; r = r->next) {
        for (uint32_t i = 0; i < r->n; i++) {
            push_item *it = &r->items[i];
            if (it->status != PUSH_PENDING)
                continue;
            buf_reset(&key);
            buf_append(&key, r->tenant, 16);
            buf_append(&key, it->queue, it->queue_len);
            buf_putc(&key, '\0');
            buf_append(&key, it->partition, it->partition_len);
            int ins;
            uint32_t *gi = strmap_get(&gmap, key.data, key.len);
            if (!gi) {
                char *k = arena_alloc(&b->ar, key.len);
                memcpy(k, key.data, key.len);
                gi = strmap_put(&gmap, k, key.len, b->ngroups, &ins);
                if (b->ngroups == b->gcap) {
                    b->gcap = b->gcap ? b->gcap * 2 : 8;
                    b->groups = xrealloc(b->groups, b->gcap * sizeof *b->groups);
                }
                group *g = &b->groups[b->ngroups++];
                memset(g, 0, sizeof *g);
                g->tenant = r->tenant;
                g->queue = it->queue;
                g->queue_len = it->queue_len;
                g->partition = it->partition;
                g->partition_len = it->partition_len;
            }
            group *g = &b->groups[*gi];
            it->group = *gi;
            it->dup_of = NULL;
            it->req = r;
            if (it->txn_producer) {
                buf_reset(&key);
                uint8_t gb[4];
                be_put32(gb, *gi);
                buf_append(&key, gb, 4);
                buf_append(&key, it->txn, it->txn_len);
                uint32_t *first = strmap_get(&ddmap, key.data, key.len);
                if (first) {
                    it->dup_of = g->items[*first];
                    continue;
                }
                char *k = arena_alloc(&b->ar, key.len);
                memcpy(k, key.data, key.len);
                strmap_put(&ddmap, k, key.len, g->n, &ins);
            }
            if (g->n == g->cap) {
                g->cap = g->cap ? g->cap * 2 : 8;
                push_item **ni = arena_alloc(&b->ar, g->cap * sizeof *ni);
                if (g->n)
                    memcpy(ni, g->items, g->n * sizeof *ni);
                g->items = ni;
            }
            it->pos = g->n;
            g->items[g->n++] = it;
        }
    }
    buf_free(&key);
    strmap_free(&gmap);
    strmap_free(&ddmap);

    for (int a = 0; a < A_NARR; a++)
        pgarray_free(&b->arr[a]);
    pgarray_begin(&b->arr[A_TENANT], OID_UUID);
    pgarray_begin(&b->arr[A_QUEUE], OID_TEXT);
    pgarray_begin(&b->arr[A_PART], OID_TEXT);
    pgarray_begin(&b->arr[A_COUNT], OID_INT4);
    pgarray_begin(&b->arr[A_BYTES], OID_INT4);
    pgarray_begin(&b->arr[A_DATA], OID_BYTEA);
    pgarray_begin(&b->arr[A_DDG], OID_INT4);
    pgarray_begin(&b->arr[A_DDPOS], OID_INT4);
    pgarray_begin(&b->arr[A_DDTXN], OID_TEXT);
    uint32_t ndd_cap = 0;
    uint64_t total = 0;
    uint32_t sql_idx = 0;
    buf seg;
    buf_init(&seg, 0);
    for (uint32_t gi = 0; gi < b->ngroups; gi++) {
        group *g = &b->groups[gi];
        if (g->n == 0) {
            g->sql_idx = 0;
            continue;
        }
        g->sql_idx = ++sql_idx;
        buf_reset(&seg);
        segment_begin(&seg);
        uint64_t bytes = 0;
        for (uint32_t k = 0; k < g->n; k++) {
            push_item *it = g->items[k];
            const push_req *own = it->req;
            record_in rec = {
                .txn = it->txn,
                .txn_len = it->txn_len,
                .txn_producer = it->txn_producer,
                .trace = it->has_trace ? it->trace : NULL,
                .producer = own->producer,
                .producer_len = own->producer_len,
                .payload = it->payload,
                .payload_len = it->payload_len,
            };
            record_encode(&seg, &rec);
            bytes += it->payload_len;
            if (it->txn_producer) {
                if (b->ndd == ndd_cap) {
                    ndd_cap = ndd_cap ? ndd_cap * 2 : 16;
                    b->dd_items = xrealloc(b->dd_items, ndd_cap * sizeof *b->dd_items);
                }
                b->dd_items[b->ndd++] = it;
                pgarray_add_i32(&b->arr[A_DDG], (int32_t)g->sql_idx);
                pgarray_add_i32(&b->arr[A_DDPOS], (int32_t)k);
                pgarray_add(&b->arr[A_DDTXN], it->txn, it->txn_len);
            }
        }
        pgarray_add(&b->arr[A_TENANT], g->tenant, 16);
        pgarray_add(&b->arr[A_QUEUE], g->queue, g->queue_len);
        pgarray_add(&b->arr[A_PART], g->partition, g->partition_len);
        pgarray_add_i32(&b->arr[A_COUNT], (int32_t)g->n);
        pgarray_add_i32(&b->arr[A_BYTES], (int32_t)(bytes > INT32_MAX ? INT32_MAX : bytes));
        pgarray_add(&b->arr[A_DATA], seg.data, seg.len);
        total += g->n;
    }
    buf_free(&seg);
    for (int a = 0; a < A_NARR; a++) {
        pgarray_finish(&b->arr[a]);
        b->values[a] = b->arr[a].b.data;
        b->lengths[a] = (int)b->arr[a].b.len;
        b->formats[a] = 1;
    }
    be_put64(b->window, (uint64_t)p->dedup_window_us);
    b->values[9] = (const char *)b->window;
    b->lengths[9] = 8;
    b->formats[9] = 1;
    return total;
}

static void batch_free(batch *b)
{
    for (int a = 0; a < A_NARR; a++)
        pgarray_free(&b->arr[a]);
    free(b->groups);
    free(b->dd_items);
    arena_free(&b->ar);
    free(b);
}

/* Completes every request of the batch: with err_status 0, items carry their results. */
static void batch_finish(batch *b, int err_status, const char *err)
{
    pusher *p = b->p;
    if (!err_status) {
        uint64_t recs = 0, bytes = 0, dups = 0;
        for (push_req *r = b->reqs; r; r = r->next) {
            for (uint32_t i = 0; i < r->n; i++) {
                push_item *it = &r->items[i];
                if (it->dup_of) {
                    push_item *o = it->dup_of;
                    it->status = PUSH_DUPLICATE;
                    it->offset = o->offset;
                    it->ts = o->ts;
                    it->partition_id = o->partition_id;
                    memcpy(it->partition_uuid, o->partition_uuid, 16);
                }
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
        if (p->on_commit)
            for (uint32_t gi = 0; gi < b->ngroups; gi++)
                if (b->groups[gi].n)
                    p->on_commit(p->on_commit_arg, b->groups[gi].tenant, b->groups[gi].queue, b->groups[gi].queue_len);
        mhist_observe(&p->m.batch_records, recs);
        mhist_observe(&p->m.batch_requests, b->nreqs);
        mhist_observe(&p->m.commit_seconds, mono_us() - b->started_us);
    } else {
        mc_add(&p->m.commit_failures, 1);
    }
    push_req *r = b->reqs;
    b->reqs = NULL;
    b->lane->busy = 0;
    p->inflight--;
    batch_free(b);
    while (r) {
        push_req *next = r->next;
        r->next = NULL;
        r->err_status = err_status;
        if (err_status)
            snprintf(r->err, sizeof r->err, "%s", err);
        r->done(r);
        r = next;
    }
}

static int batch_send(batch *b);

static void on_push_done(db_req *dr)
{
    batch *b = dr->arg;
    pusher *p = b->p;
    PGresult *res = dr->res[0];
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
    int rows = PQntuples(res);
    int dups = 0;
    for (int i = 0; i < rows; i++) {
        int32_t kind = db_get_i32(res, i, 0);
        int32_t idx = db_get_i32(res, i, 1);
        uint64_t pid = (uint64_t)db_get_i64(res, i, 2);
        const uint8_t *pu = (const uint8_t *)PQgetvalue(res, i, 3);
        uint64_t off = (uint64_t)db_get_i64(res, i, 5);
        int64_t ts = db_get_i64(res, i, 6);
        if (kind == 1) {
            if (idx < 1 || (uint32_t)idx > b->ndd)
                continue;
            push_item *it = b->dd_items[idx - 1];
            it->status = PUSH_DUPLICATE;
            it->offset = off;
            it->ts = ts;
            it->partition_id = pid;
            memcpy(it->partition_uuid, pu, 16);
            dups++;
            continue;
        }
        for (uint32_t gi = 0; gi < b->ngroups; gi++) {
            group *g = &b->groups[gi];
            if (g->sql_idx != (uint32_t)idx)
                continue;
            for (uint32_t k = 0; k < g->n; k++) {
                push_item *it = g->items[k];
                it->status = PUSH_QUEUED;
                it->offset = off + k;
                it->ts = ts;
                it->partition_id = pid;
                memcpy(it->partition_uuid, pu, 16);
            }
            break;
        }
    }
    db_req_clear(dr);
    if (dups) {
        /* some transactionIds were known: nothing was written; send the rest again */
        for (uint32_t gi = 0; gi < b->ngroups; gi++)
            for (uint32_t k = 0; k < b->groups[gi].n; k++)
                if (b->groups[gi].items[k]->status == PUSH_QUEUED)
                    b->groups[gi].items[k]->status = PUSH_PENDING;
        b->attempts = 0;
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
    uint64_t n = build(b);
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
    b->dbr.stmt[0].sql = PUSH_SQL;
    b->dbr.stmt[0].nparams = 10;
    b->dbr.stmt[0].values = b->values;
    b->dbr.stmt[0].lengths = b->lengths;
    b->dbr.stmt[0].formats = b->formats;
    b->dbr.stmt[0].binary_result = 1;
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
        arena_init(&b->ar);
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
