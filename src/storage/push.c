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

/* the arrays of queen.push_v1, in parameter order */
enum { A_TENANT, A_QUEUE, A_PART, A_COUNT, A_BYTES, A_DATA, A_DDG, A_DDPOS, A_DDTXN };

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

/* ---- the encoder ---- */

void push_enc_init(push_enc *e)
{
    memset(e, 0, sizeof *e);
    arena_init(&e->ar);
}

void push_enc_free(push_enc *e)
{
    for (int a = 0; a < PUSH_ARRAYS; a++)
        pgarray_free(&e->arr[a]);
    free(e->groups);
    free(e->dd_items);
    arena_free(&e->ar);
    memset(e, 0, sizeof *e);
}

/* Encodes a group's records as one segment into seg, their payloads sealed under key when
 * g->sealed (an empty payload too, so every record says sealed); *bytes = the stored payload
 * bytes. -1 when a seal failed (the segment is then incomplete). */
static int encode_group(const push_group *g, const seal_key *key, buf *seg, buf *sealed, uint64_t *bytes)
{
    buf_reset(seg);
    segment_begin(seg);
    *bytes = 0;
    for (uint32_t k = 0; k < g->n; k++) {
        const push_item *it = g->items[k];
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
        if (g->sealed) {
            buf_reset(sealed);
            if (seal_seal(key, it->payload, it->payload_len, sealed) < 0)
                return -1;
            rec.payload = sealed->data;
            rec.payload_len = sealed->len;
            rec.encrypted = 1;
        }
        record_encode(seg, &rec);
        *bytes += rec.payload_len;
    }
    return 0;
}

/* Groups the pending items of the requests by (tenant, queue, partition), drops repeats of a producer
 * transactionId within the batch, encodes one segment per group and fills the arrays.
 * Returns the number of records to write. */
uint64_t push_enc_build(push_enc *b, push_req *reqs, int64_t dedup_window_us)
{
    arena_free(&b->ar);
    arena_init(&b->ar);
    strmap gmap, ddmap;
    strmap_init(&gmap);
    strmap_init(&ddmap);
    b->ngroups = 0;
    b->ndd = 0;
    buf key;
    buf_init(&key, 0);
    for (push_req *r = reqs; r; r = r->next) {
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
                push_group *g = &b->groups[b->ngroups++];
                memset(g, 0, sizeof *g);
                g->tenant = r->tenant;
                g->queue = it->queue;
                g->queue_len = it->queue_len;
                g->partition = it->partition;
                g->partition_len = it->partition_len;
            }
            push_group *g = &b->groups[*gi];
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

    for (int a = 0; a < PUSH_ARRAYS; a++)
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
    uint64_t total = 0;
    uint32_t sql_idx = 0;
    buf seg, sealed;
    buf_init(&seg, 0);
    buf_init(&sealed, 0);
    const seal_key *nkey = seal_node_key();
    uint64_t now_ms = mono_ms();
    for (uint32_t gi = 0; gi < b->ngroups; gi++) {
        push_group *g = &b->groups[gi];
        if (g->n == 0) {
            g->sql_idx = 0;
            continue;
        }
        g->sql_idx = ++sql_idx;
        /* all of a group's records are sealed or none: push_v1 reads the first one's flags */
        g->sealed = nkey && b->sq && sealq_wants(b->sq, g->tenant, g->queue, g->queue_len, now_ms);
        uint64_t bytes;
        if (encode_group(g, nkey, &seg, &sealed, &bytes) < 0) {
            /* only a failing RAND_bytes gets here: the whole group goes plain, so a queue that
             * needs sealing refuses it (push_v1) instead of taking a half-sealed segment */
            log_error("push", "sealing a payload of queue %.*s failed", (int)g->queue_len, g->queue);
            g->sealed = 0;
            encode_group(g, nkey, &seg, &sealed, &bytes);
        }
        for (uint32_t k = 0; k < g->n; k++) {
            push_item *it = g->items[k];
            if (it->txn_producer) {
                if (b->ndd == b->ddcap) {
                    b->ddcap = b->ddcap ? b->ddcap * 2 : 16;
                    b->dd_items = xrealloc(b->dd_items, b->ddcap * sizeof *b->dd_items);
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
    buf_free(&sealed);
    for (int a = 0; a < PUSH_ARRAYS; a++) {
        pgarray_finish(&b->arr[a]);
        b->values[a] = b->arr[a].b.data;
        b->lengths[a] = (int)b->arr[a].b.len;
        b->formats[a] = 1;
    }
    be_put64(b->window, (uint64_t)dedup_window_us);
    b->values[9] = (const char *)b->window;
    b->lengths[9] = 8;
    b->formats[9] = 1;
    return total;
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

void push_enc_settle(push_req *reqs)
{
    for (push_req *r = reqs; r; r = r->next)
        for (uint32_t i = 0; i < r->n; i++) {
            push_item *it = &r->items[i];
            if (!it->dup_of)
                continue;
            push_item *o = it->dup_of;
            it->status = o->status == PUSH_FULL ? PUSH_FULL : PUSH_DUPLICATE;
            it->offset = o->offset;
            it->ts = o->ts;
            it->partition_id = o->partition_id;
            memcpy(it->partition_uuid, o->partition_uuid, 16);
        }
}

const push_group *push_enc_refused(push_enc *e, const char *sqlstate, const char *errmsg)
{
    if (strcmp(sqlstate, SEALQ_SQLSTATE) != 0)
        return NULL;
    uint32_t idx = sealq_refused_group(errmsg);
    for (uint32_t gi = 0; idx && gi < e->ngroups; gi++) {
        const push_group *g = &e->groups[gi];
        if (g->sql_idx != idx)
            continue;
        if (seal_node_key() && e->sq)
            sealq_set(e->sq, g->tenant, g->queue, g->queue_len, 1, mono_ms());
        return g;
    }
    log_error("push", "push_v1 refused a group this write does not have: %s", errmsg);
    return NULL;
}

void push_enc_no_key_error(const push_group *g, char *out, size_t cap)
{
    snprintf(out, cap,
             "queue %.*s has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY to seal its payloads; "
             "nothing was stored (push through a node that has the key)",
             (int)MIN(g->queue_len, 255u), g->queue);
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
