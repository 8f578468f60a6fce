/* popbatch.c — the group commit for pops (popbatch.h): lanes, merging, partition hints, the
 * lease store call. Answers are the caller's (pop_job_ops). */
#include <stdlib.h>
#include <string.h>

#include "popbatch.h"
#include "core/arena.h"
#include "core/buf.h"
#include "core/idring.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"

/* Partition hints a lane remembers (ids with records, most likely); beyond that the scan
 * that pops fall back to finds the rest. */
#define HINTS_MAX 4096
/* A lane scans its queue at least this often even while hints keep it busy, so a partition
 * that no hint names (records pushed through another node) is never starved. */
#define FULL_SCAN_EVERY_MS 500

struct pop_lane {
    int busy;
    pop_job *head, *tail;
    int n;
    idring hints;
    uint64_t last_scan_ms;
    pop_lane *next_of_queue; /* lanes of the same (tenant, queue), for push hints */
};

typedef struct pop_batch {
    db_pool *db;
    pop_lane *lane;      /* hints come from here (NULL: a named partition or namespace pop) */
    int merged;          /* pops merged into this call: claim k is job k's */
    pop_job *jobs[POP_MERGE_MAX];
    int n;
    uuid leases[POP_MERGE_MAX];
    pop_args args;
    uint64_t hints[POP_MERGE_MAX * 4 + 8];
    sql_params sp;
    db_req dbr;
    lease_store ls;
    int cur_index;
    uint64_t cur_pid;
    uint32_t cur_count;
} pop_batch;

/* lanes by key; keys and lanes live as long as the process (one per queue/group/shape used) */
static strmap g_lanes;
static strmap g_queue_lanes; /* tenant + queue → index of the newest lane of that queue */
static arena g_lane_mem;
static pop_lane **g_lane_list;
static uint32_t g_nlanes, g_lane_cap;

static void batch_start(db_pool *db, pop_lane *lane, pop_job **jobs, int n);

static pop_lane *lane_for(const pop_args *p)
{
    buf k;
    buf_init(&k, 0);
    buf_append(&k, p->tenant, 16);
    buf_printf(&k, "%s%c%s%c%lld%c%d%c%s%c%lld%c%lld%c%lld%c%d", p->queue, 0, p->group, 0, (long long)p->batch, 0,
               p->auto_ack, 0, p->sub_mode ? p->sub_mode : "", 0, (long long)p->sub_from, 0,
               (long long)p->lease_seconds, 0, (long long)p->max_partitions, 0, p->conflation);
    uint32_t *v = strmap_get(&g_lanes, k.data, k.len);
    if (v) {
        buf_free(&k);
        return g_lane_list[*v];
    }
    char *key = arena_alloc(&g_lane_mem, k.len);
    memcpy(key, k.data, k.len);
    pop_lane *l = arena_alloc(&g_lane_mem, sizeof *l);
    memset(l, 0, sizeof *l);
    idring_init(&l->hints, HINTS_MAX);
    if (g_nlanes == g_lane_cap) {
        g_lane_cap = g_lane_cap ? g_lane_cap * 2 : 16;
        g_lane_list = xrealloc(g_lane_list, g_lane_cap * sizeof *g_lane_list);
    }
    g_lane_list[g_nlanes] = l;
    strmap_put(&g_lanes, key, k.len, g_nlanes, NULL);
    /* chain the lane to the others of its queue: the key starts with tenant + queue */
    size_t qk = 16 + strlen(p->queue);
    int ins;
    uint32_t *first = strmap_put(&g_queue_lanes, key, qk, g_nlanes, &ins);
    if (!ins) {
        l->next_of_queue = g_lane_list[*first];
        *first = g_nlanes;
    }
    g_nlanes++;
    buf_free(&k);
    return l;
}

void pop_lanes_hint(const uint8_t tenant[16], const char *queue, size_t qlen, uint64_t partition_id)
{
    char tmp[16 + 256];
    if (qlen > 255)
        return;
    memcpy(tmp, tenant, 16);
    memcpy(tmp + 16, queue, qlen);
    uint32_t *first = strmap_get(&g_queue_lanes, tmp, 16 + qlen);
    for (pop_lane *l = first ? g_lane_list[*first] : NULL; l; l = l->next_of_queue)
        idring_push(&l->hints, partition_id);
}

void pop_job_prepare(pop_job *j)
{
    const pop_args *p = &j->args;
    j->mergeable = !p->partition && !p->ns && p->max_partitions == 1;
    j->lane = !p->partition && !p->ns ? lane_for(p) : NULL; /* hints, and merging when mergeable */
}

static void on_record(void *arg, const popped_partition *p, const record_view *v, int64_t ts)
{
    pop_batch *bt = arg;
    /* merged pops: claim k belongs to job k; a pop run on its own owns every claim */
    pop_job *j = bt->merged ? bt->jobs[p->index] : bt->jobs[0];
    const uuid *lease = &bt->leases[bt->merged ? p->index : 0];
    if (bt->cur_index != p->index) {
        if (bt->cur_index >= 0 && !bt->args.auto_ack)
            lease_store_add_partition(&bt->ls, &bt->leases[bt->merged ? bt->cur_index : 0], bt->cur_pid,
                                      bt->cur_count);
        bt->cur_index = p->index;
        bt->cur_pid = p->id;
        bt->cur_count = 0;
        j->claimed++;
        j->ops->claim(j, j->claimed, p, lease);
    }
    bt->cur_count++;
    if (v->flags & REC_DELETED) {
        /* deleted (DELETE /api/v1/messages): not delivered; its lease slot is done already */
        if (!bt->args.auto_ack)
            lease_store_add_deleted(&bt->ls);
        return;
    }
    char txn[512];
    size_t tl = record_txn_text(v, txn, sizeof txn);
    if (!bt->args.auto_ack)
        lease_store_add_txn(&bt->ls, txn, tl);
    j->ops->record(j, p, v, ts, txn, tl, lease);
}

static void on_partition(void *arg, const popped_partition *p)
{
    pop_batch *bt = arg;
    if (!bt->lane)
        return;
    /* a scanned candidate not claimed, or a claimed partition with records left: try it again
     * later, behind what is already queued (round-robin) */
    if (p->index < 0 || p->more)
        idring_push(&bt->lane->hints, p->id);
}

int pop_job_abandon(pop_job *j)
{
    if (j->in_db)
        return 0; /* the call in flight answers */
    if (j->queued) {
        pop_lane *l = j->lane;
        pop_job **pp = &l->head;
        while (*pp && *pp != j)
            pp = &(*pp)->next;
        if (*pp) {
            *pp = j->next;
            l->n--;
            l->tail = NULL;
            for (pop_job *x = l->head; x; x = x->next)
                l->tail = x;
        }
        j->queued = 0;
    }
    return 1;
}

/* The lane may start its next call once this one's claims are committed. */
static void lane_release(db_pool *db, pop_lane *l)
{
    if (!l)
        return;
    l->busy = 0;
    if (!l->head)
        return;
    pop_job *jobs[POP_MERGE_MAX];
    int n = 0;
    while (l->head && n < POP_MERGE_MAX) {
        pop_job *j = l->head;
        l->head = j->next;
        j->next = NULL;
        j->queued = 0;
        l->n--;
        jobs[n++] = j;
    }
    if (!l->head)
        l->tail = NULL;
    batch_start(db, l, jobs, n);
}

/* Every job of the call fails: the database's failure d, or (d NULL) msg. */
static void batch_fail(pop_batch *bt, const db_req *d, const char *msg)
{
    for (int i = 0; i < bt->n; i++) {
        pop_job *j = bt->jobs[i];
        if (!j)
            continue;
        j->in_db = 0;
        j->ops->fail(j, d, msg);
    }
}

static void on_stored(db_req *d)
{
    pop_batch *bt = d->arg;
    lease_store_free(&bt->ls);
    int ok = d->err == DB_OK;
    db_req_clear(d); /* the results; the error fields stay */
    for (int i = 0; i < bt->n; i++) {
        pop_job *j = bt->jobs[i];
        if (!j)
            continue;
        j->in_db = 0;
        /* not ok: leased but not ackable by transactionId; the lease expires and the records
         * come back, and the answer says so rather than hand out messages that cannot be acked */
        if (ok)
            j->ops->deliver(j);
        else
            j->ops->fail(j, d, NULL);
    }
    free(bt);
}

static void on_popped(db_req *d)
{
    pop_batch *bt = d->arg;
    db_pool *db = bt->db;
    pop_lane *l = bt->merged ? bt->lane : NULL;
    sql_params_free(&bt->sp);
    if (d->err != DB_OK || !d->res[0]) {
        db_req_clear(d);
        batch_fail(bt, d, NULL);
        free(bt);
        lane_release(db, l);
        return;
    }
    pop_outcome out;
    bt->cur_index = -1;
    if (!bt->args.auto_ack)
        lease_store_init(&bt->ls);
    for (int i = 0; i < bt->n; i++)
        bt->jobs[i]->claimed = 0;
    mcounter *pops = bt->jobs[0]->pops;
    int rc = pop_decode(d->res[0], on_record, on_partition, bt, &out);
    db_req_clear(d);
    if (rc < 0) {
        if (!bt->args.auto_ack)
            lease_store_free(&bt->ls);
        batch_fail(bt, NULL, "a stored segment could not be decoded");
        free(bt);
        lane_release(db, l);
        return;
    }
    if (pops)
        mc_add(pops, (uint64_t)bt->n);
    if (out.conflated && bt->jobs[0]->conflated)
        mc_add(bt->jobs[0]->conflated, out.conflated);
    for (int i = 0; i < bt->n; i++) {
        bt->jobs[i]->policy = out.policy;
        bt->jobs[i]->conflation = out.conflation;
        bt->jobs[i]->conflict = out.conflict;
    }
    /* answer (or park) the jobs that got nothing now; the others after the lease store */
    for (int i = 0; i < bt->n; i++) {
        pop_job *j = bt->jobs[i];
        if (j->claimed == 0) {
            /* answered or parked now: no longer part of this call (it may even be freed) */
            bt->jobs[i] = NULL;
            j->in_db = 0;
            j->ops->nothing(j, &out);
        }
    }
    if (out.claimed > 0 && bt->args.auto_ack) {
        for (int i = 0; i < bt->n; i++)
            if (bt->jobs[i]) {
                bt->jobs[i]->in_db = 0;
                bt->jobs[i]->ops->deliver(bt->jobs[i]);
            }
        free(bt);
    } else if (out.claimed > 0) {
        lease_store_add_partition(&bt->ls, &bt->leases[bt->merged ? bt->cur_index : 0], bt->cur_pid, bt->cur_count);
        lease_store_finish(&bt->ls, bt->args.group);
        memset(&bt->dbr, 0, sizeof bt->dbr);
        bt->dbr.nstmt = 1;
        bt->dbr.stmt[0] = (db_stmt){LEASE_STORE_SQL, bt->ls.sp.n, bt->ls.sp.values, bt->ls.sp.lengths,
                                    bt->ls.sp.formats, 0};
        bt->dbr.done = on_stored;
        bt->dbr.arg = bt;
        if (db_submit(db, &bt->dbr) < 0) {
            lease_store_free(&bt->ls);
            batch_fail(bt, &bt->dbr, NULL);
            free(bt);
        }
    } else {
        if (!bt->args.auto_ack)
            lease_store_free(&bt->ls);
        free(bt);
    }
    lane_release(db, l);
}

/* Takes hints from the lane (or none: scan first) for a call wanting `claims` partitions. */
static void take_hints(pop_lane *lane, pop_batch *bt, uint32_t claims)
{
    uint64_t now = mono_ms();
    if (now - lane->last_scan_ms >= FULL_SCAN_EVERY_MS || idring_count(&lane->hints) == 0) {
        /* scan first: least recently claimed partitions, whatever the hints say */
        lane->last_scan_ms = now;
        bt->args.hints = NULL;
        bt->args.nhints = 0;
        return;
    }
    uint32_t want = claims * 4 + 8, k = 0;
    if (want > ARRAY_LEN(bt->hints))
        want = ARRAY_LEN(bt->hints);
    uint64_t id;
    while (k < want && idring_pop(&lane->hints, &id))
        bt->hints[k++] = id;
    bt->args.hints = bt->hints;
    bt->args.nhints = k;
}

/* One call of pop_v2 for n jobs: merged (claim k for job k) when they came through a lane's
 * queue and each wants one partition; otherwise n is 1 and the job owns every claim. */
static void batch_start(db_pool *db, pop_lane *lane, pop_job **jobs, int n)
{
    pop_batch *bt = xcalloc(1, sizeof *bt);
    bt->db = db;
    bt->n = n;
    for (int i = 0; i < n; i++) {
        bt->jobs[i] = jobs[i];
        jobs[i]->in_db = 1;
        uuid_v7(&bt->leases[i]);
    }
    bt->args = jobs[0]->args;
    bt->args.leases = bt->leases;
    bt->merged = lane != NULL;
    bt->lane = lane ? lane : jobs[0]->lane;
    if (bt->merged) {
        bt->args.max_partitions = n;
        bt->args.split = 1;
        bt->args.nleases = (uint32_t)n;
        lane->busy = 1;
    } else {
        bt->args.split = 0;
        bt->args.nleases = 1;
    }
    if (bt->lane)
        take_hints(bt->lane, bt, (uint32_t)bt->args.max_partitions);
    pop_params(&bt->args, &bt->sp);
    bt->dbr.nstmt = 1;
    bt->dbr.stmt[0] = (db_stmt){bt->args.ns ? POP_NS_SQL : POP_SQL, bt->sp.n, bt->sp.values, bt->sp.lengths,
                                bt->sp.formats, 1};
    bt->dbr.done = on_popped;
    bt->dbr.arg = bt;
    if (db_submit(db, &bt->dbr) < 0) {
        sql_params_free(&bt->sp);
        batch_fail(bt, &bt->dbr, NULL);
        free(bt);
        if (lane)
            lane->busy = 0;
    }
}

void pop_job_submit(pop_job *j)
{
    if (!j->mergeable) {
        pop_job *one[1] = {j};
        batch_start(j->db, NULL, one, 1);
        return;
    }
    pop_lane *l = j->lane;
    if (!l->busy) {
        pop_job *one[1] = {j};
        batch_start(j->db, l, one, 1);
        return;
    }
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->n++;
    j->queued = 1;
}
