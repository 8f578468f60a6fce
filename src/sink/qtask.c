/* qtask.c — one queue of one sink on this node: claim its lease, restore it from its KV
 * documents (and the bucket, for a window whose intent survived), read its log forward in
 * time slices, close windows by the rules of window.h, and commit each one in the spec's
 * sequence: intent in KV → objects → manifest → commit pointer in KV (docs/s3-sink.md).
 *
 * A task is a state machine run one step at a time by whichever worker picks it (sink.c);
 * a step does a bounded amount of blocking work and returns how long to wait before the next.
 * Every intent and commit is a KV batch whose op 0 rewrites the lease row at the version this
 * node last wrote (the fence): a node whose lease was taken over cannot move a pointer. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "json/json.h"
#include "sink/layout.h"
#include "sink/sink_int.h"
#include "storage/logread.h"
#include "storage/payload.h"
#include "storage/record.h"

#define CHUNK_BYTES (1u << 20)

const char *qstate_name(enum qstate s)
{
    static const char *const names[] = {"claiming", "held",     "restoring", "filling", "intent",
                                        "upload",   "commit",   "drained",   "fenced",  "failed",
                                        "missing",  "crashed",  "released"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

static const double WINDOW_RECORD_BOUNDS[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
static const double WINDOW_BYTE_BOUNDS[] = {1024, 16384, 262144, 1048576, 8388608, 33554432, 134217728, 536870912};

s3_qtask *qtask_new(s3_sink *s, const char *queue)
{
    s3_qtask *t = xcalloc(1, sizeof *t);
    t->node = s->node;
    t->sink = s;
    t->queue = xstrdup(queue);
    t->qlen = strlen(queue);
    buf b;
    buf_init(&b, 0);
    s3_kv_key(&b, s->c.sink, t->queue, t->qlen, "lease");
    t->k_lease = xstrdup(buf_cstr(&b));
    buf_reset(&b);
    s3_kv_key(&b, s->c.sink, t->queue, t->qlen, "intent");
    t->k_intent = xstrdup(buf_cstr(&b));
    buf_reset(&b);
    s3_kv_key(&b, s->c.sink, t->queue, t->qlen, "committed");
    t->k_committed = xstrdup(buf_cstr(&b));
    buf_free(&b);
    pthread_mutex_init(&t->lease_mu, NULL);
    mhist_init(&t->m_window_records, WINDOW_RECORD_BOUNDS, 8, 1);
    mhist_init(&t->m_window_bytes, WINDOW_BYTE_BOUNDS, 8, 1);
    strmap_init(&t->pos_index);
    t->state = Q_CLAIMING;
    t->st.state = Q_CLAIMING;
    t->backoff_ms = S3_BACKOFF_MIN_MS;
    return t;
}

/* ---- the buffer ---- */

static void *chunk_alloc(s3_buffer *b, size_t n)
{
    if (!b->chunks || b->chunks->cap - b->chunks->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        s3_chunk *c = xmalloc(sizeof *c + cap);
        c->next = b->chunks;
        c->used = 0;
        c->cap = cap;
        b->chunks = c;
    }
    void *p = b->chunks->data + b->chunks->used;
    b->chunks->used += n;
    return p;
}

static const char *chunk_copy(s3_buffer *b, const void *p, size_t n)
{
    if (n == 0)
        return "";
    char *d = chunk_alloc(b, n);
    memcpy(d, p, n);
    return d;
}

static void buffer_clear(s3_node *node, s3_buffer *b)
{
    atomic_fetch_sub(&node->buffered_total, b->bytes);
    while (b->chunks) {
        s3_chunk *c = b->chunks;
        b->chunks = c->next;
        free(c);
    }
    free(b->recs);
    memset(b, 0, sizeof *b);
}

static void lost_clear(s3_lost_range **v, int *n)
{
    for (int i = 0; i < *n; i++)
        free((*v)[i].partition);
    free(*v);
    *v = NULL;
    *n = 0;
}

static void pending_clear(s3_pending *p)
{
    for (int i = 0; i < p->nobjects; i++) {
        free(p->objects[i].key);
        free(p->objects[i].partition);
    }
    free(p->objects);
    lost_clear(&p->lost, &p->nlost);
    memset(p, 0, sizeof *p);
}

static void positions_clear(s3_qtask *t)
{
    for (uint32_t i = 0; i < t->npos; i++)
        free(t->pos[i].name);
    free(t->pos);
    t->pos = NULL;
    t->npos = t->cappos = 0;
    strmap_free(&t->pos_index);
    strmap_init(&t->pos_index);
}

void qtask_free(s3_qtask *t)
{
    if (!t)
        return;
    buffer_clear(t->node, &t->buf);
    positions_clear(t);
    strmap_free(&t->pos_index);
    lost_clear(&t->lost, &t->nlost);
    pending_clear(&t->pend);
    pthread_mutex_destroy(&t->lease_mu);
    free(t->queue);
    free(t->k_lease);
    free(t->k_intent);
    free(t->k_committed);
    free(t);
}

/* ---- positions ---- */

static s3_pos *pos_find(s3_qtask *t, const char *name, size_t len)
{
    uint32_t *v = strmap_get(&t->pos_index, name, len);
    return v ? &t->pos[*v] : NULL;
}

static s3_pos *pos_add(s3_qtask *t, const char *name, size_t len, const uint8_t puuid[16], int64_t next)
{
    if (t->npos == t->cappos) {
        uint32_t cap = t->cappos ? t->cappos * 2 : 64;
        s3_pos *np = xrealloc(t->pos, (size_t)cap * sizeof *np);
        /* the map's keys point into the names, which do not move */
        t->pos = np;
        t->cappos = cap;
    }
    s3_pos *p = &t->pos[t->npos];
    p->name = xstrndup(name, len);
    p->len = len;
    memcpy(p->uuid, puuid, 16);
    p->next = next;
    int ins;
    *strmap_put(&t->pos_index, p->name, len, t->npos, &ins) = t->npos;
    t->npos++;
    return p;
}

/* Records offsets [from, to] of a partition as lost; ts is the stamp the loss was seen at
 * (the first segment above the gap, or the partition's last record no later than the read's
 * end), which a window holding only lost ranges is placed around (window.h). */
static void add_lost(s3_qtask *t, const char *name, size_t len, int64_t from, int64_t to, int64_t ts)
{
    if (to < from)
        return;
    if (ts > 0 && (t->w.lost_ts == 0 || ts < t->w.lost_ts))
        t->w.lost_ts = ts;
    if (t->nlost && t->lost[t->nlost - 1].partition_len == len && memcmp(t->lost[t->nlost - 1].partition, name, len) == 0 &&
        t->lost[t->nlost - 1].to + 1 == from) {
        t->lost[t->nlost - 1].to = to;
        return;
    }
    if (t->nlost == t->caplost) {
        t->caplost = t->caplost ? t->caplost * 2 : 8;
        t->lost = xrealloc(t->lost, (size_t)t->caplost * sizeof *t->lost);
    }
    s3_lost_range *l = &t->lost[t->nlost++];
    l->partition = xstrndup(name, len);
    l->partition_len = len;
    l->from = from;
    l->to = to;
    t->w.lost = 1;
}

/* ---- the lease and the fence ---- */

static void lease_doc(s3_qtask *t, buf *out)
{
    s3_lease_doc d;
    memset(&d, 0, sizeof d);
    snprintf(d.instance, sizeof d.instance, "%s", t->node->k.instance);
    snprintf(d.incarnation, sizeof d.incarnation, "%s", t->sink->incarnation);
    d.since_ms = t->lease_since_ms;
    s3_lease_doc_json(out, &d);
}

enum fence_rc { FENCE_OK = 0, FENCE_LOST = 1, FENCE_CONFLICT = 2, FENCE_DB = -1 };

/* One KV batch behind the fence: op 0 rewrites the lease row at the version this node last
 * wrote (renewing its TTL), ops follow. out->results[i + 1] answers ops[i]. */
static enum fence_rc fenced(s3_qtask *t, s3_worker *w, const kv_op *ops, int n, kv_outcome *out)
{
    enum fence_rc rc;
    pthread_mutex_lock(&t->lease_mu);
    if (t->lease_lost || !t->held) {
        pthread_mutex_unlock(&t->lease_mu);
        memset(out, 0, sizeof *out);
        return FENCE_LOST;
    }
    buf doc;
    buf_init(&doc, 0);
    lease_doc(t, &doc);
    kv_op batch[8];
    batch[0] = kv_op_put_if_version(S3_KV_NAMESPACE, t->k_lease, buf_cstr(&doc), t->node->k.lease_ttl_ms,
                                    t->lease_version);
    for (int i = 0; i < n && i < 7; i++)
        batch[i + 1] = ops[i];
    if (sinkdb_kv(&w->db, t->sink->c.tenant, batch, n + 1, out) < 0) {
        rc = FENCE_DB;
        t->unsure = 1;
    } else if (out->fail == KV_FAIL_NONE) {
        t->lease_version = out->results[0].version;
        t->refresh_due_ms = mono_ms() + (uint64_t)t->node->k.lease_ttl_ms / 3;
        rc = FENCE_OK;
    } else if (out->failed_op == 0) {
        t->lease_lost = 1;
        rc = FENCE_LOST;
    } else {
        rc = FENCE_CONFLICT;
    }
    pthread_mutex_unlock(&t->lease_mu);
    buf_free(&doc);
    return rc;
}

void qtask_refresh_lease(s3_qtask *t, sinkdb *db)
{
    pthread_mutex_lock(&t->lease_mu);
    if (!t->held || t->lease_lost || mono_ms() < t->refresh_due_ms) {
        pthread_mutex_unlock(&t->lease_mu);
        return;
    }
    buf doc;
    buf_init(&doc, 0);
    lease_doc(t, &doc);
    kv_op op = kv_op_put_if_version(S3_KV_NAMESPACE, t->k_lease, buf_cstr(&doc), t->node->k.lease_ttl_ms,
                                    t->lease_version);
    kv_outcome o;
    if (sinkdb_kv(db, t->sink->c.tenant, &op, 1, &o) == 0) {
        if (o.fail == KV_FAIL_NONE) {
            t->lease_version = o.results[0].version;
            t->refresh_due_ms = mono_ms() + (uint64_t)t->node->k.lease_ttl_ms / 3;
        } else {
            t->lease_lost = 1;
            log_warn(S3_LOG, "queue=%s: the lease was taken over (refresh found version %lld, expected %lld)",
                     t->queue, (long long)o.current.version, (long long)t->lease_version);
        }
        kv_outcome_clear(&o);
    } else {
        /* try again soon; the TTL leaves room for two misses */
        t->refresh_due_ms = mono_ms() + 1000;
    }
    pthread_mutex_unlock(&t->lease_mu);
    buf_free(&doc);
}

/* After a fenced batch whose outcome is unknown (the connection dropped): read the lease, the
 * intent and the pointer again and adopt what is ours. 0, or -1 on a database failure. */
static int resync(s3_qtask *t, s3_worker *w)
{
    kv_op ops[3] = {kv_op_get(S3_KV_NAMESPACE, t->k_lease), kv_op_get(S3_KV_NAMESPACE, t->k_intent),
                    kv_op_get(S3_KV_NAMESPACE, t->k_committed)};
    kv_outcome o;
    if (sinkdb_kv(&w->db, t->sink->c.tenant, ops, 3, &o) < 0)
        return -1;
    char err[200];
    pthread_mutex_lock(&t->lease_mu);
    s3_lease_doc ld;
    if (o.results[0].flag && s3_lease_doc_parse(o.results[0].value, o.results[0].value_len, &ld, err, sizeof err) == 0 &&
        strcmp(ld.instance, t->node->k.instance) == 0 && strcmp(ld.incarnation, t->sink->incarnation) == 0)
        t->lease_version = o.results[0].version;
    else
        t->lease_lost = 1;
    pthread_mutex_unlock(&t->lease_mu);
    t->intent_version = o.results[1].flag ? o.results[1].version : 0;
    if (o.results[2].flag) {
        s3_committed c;
        if (s3_committed_parse(o.results[2].value, o.results[2].value_len, &c, err, sizeof err) == 0) {
            t->committed_version = o.results[2].version;
            if (c.k > t->committed.k)
                t->committed = c; /* our commit did land */
        }
    }
    kv_outcome_clear(&o);
    t->unsure = 0;
    return 0;
}

/* ---- status ---- */

static void set_state(s3_qtask *t, enum qstate s)
{
    t->state = s;
    sink_status_update(t);
}

static uint64_t backoff(s3_qtask *t)
{
    uint64_t d = (uint64_t)t->backoff_ms;
    t->backoff_ms = t->backoff_ms * 2 > S3_BACKOFF_MAX_MS ? S3_BACKOFF_MAX_MS : t->backoff_ms * 2;
    return d;
}

static void crash_at(s3_qtask *t, enum s3_crash_at where)
{
    if (t->node->k.crash_at != where)
        return;
    log_warn(S3_LOG, "queue=%s: QUEEN_S3_CRASH_AT=%s reached: killing the process", t->queue, s3_crash_name(where));
    raise(SIGKILL);
    _exit(137);
}

/* Gives the lease up: the queue is not this node's any more (stop, fence, failure). */
static void drop_queue(s3_qtask *t, enum qstate s)
{
    pthread_mutex_lock(&t->lease_mu);
    t->held = 0;
    pthread_mutex_unlock(&t->lease_mu);
    buffer_clear(t->node, &t->buf);
    positions_clear(t);
    lost_clear(&t->lost, &t->nlost);
    pending_clear(&t->pend);
    t->have_stored_intent = 0;
    t->claim_at_ms = 0;
    set_state(t, s);
}

/* The queue's run ends on an unexpected error that retrying the same step cannot fix (a
 * segment of the log that does not decode, a window whose object cannot be built): the lease
 * is given back at once (one attempt; else it expires after its TTL) so another node may try,
 * and this node looks at the queue again after S3_FAILED_RETRY_MS. State crashed, with the
 * reason in lastError. */
static uint64_t crash_queue(s3_qtask *t, s3_worker *w, const char *why)
{
    sink_set_error(t, "crashed: %s", why);
    log_error(S3_LOG, "queue=%s: the queue's run crashed (%s); its lease is given back and this node tries it again "
                      "in %d s",
              t->queue, why, S3_FAILED_RETRY_MS / 1000);
    pthread_mutex_lock(&t->lease_mu);
    int held = t->held && !t->lease_lost;
    int64_t v = t->lease_version;
    t->held = 0; /* the keeper stops refreshing it now */
    pthread_mutex_unlock(&t->lease_mu);
    if (held) {
        kv_op op = kv_op_delete_if_version(S3_KV_NAMESPACE, t->k_lease, v);
        kv_outcome o;
        if (sinkdb_kv(&w->db, t->sink->c.tenant, &op, 1, &o) == 0)
            kv_outcome_clear(&o);
    }
    drop_queue(t, Q_CRASHED);
    return S3_FAILED_RETRY_MS;
}

/* ---- claiming ---- */

static uint64_t step_claim(s3_qtask *t, s3_worker *w)
{
    s3_node *n = t->node;
    if (task_stopping(t))
        return UINT64_MAX;
    int64_t qid, safe, now;
    int rc = sinkdb_clock(&w->db, t->sink->c.tenant, t->queue, &qid, &safe, &now);
    if (rc < 0) {
        sink_set_error(t, "%s", w->db.err);
        return backoff(t);
    }
    if (rc == 1) {
        if (t->state != Q_MISSING)
            log_info(S3_LOG, "queue=%s does not exist yet; looking again every %d s", t->queue, S3_MISSING_RETRY_MS / 1000);
        t->claim_at_ms = 0;
        set_state(t, Q_MISSING);
        return S3_MISSING_RETRY_MS;
    }
    t->qid = qid;
    t->safe_time = safe;
    t->now_us = now;
    kv_op get = kv_op_get(S3_KV_NAMESPACE, t->k_lease);
    kv_outcome o;
    if (sinkdb_kv(&w->db, t->sink->c.tenant, &get, 1, &o) < 0) {
        sink_set_error(t, "%s", w->db.err);
        return backoff(t);
    }
    char err[200];
    s3_lease_doc ld;
    int live = o.results[0].flag;
    int64_t version = o.results[0].version;
    int parsed = live && s3_lease_doc_parse(o.results[0].value, o.results[0].value_len, &ld, err, sizeof err) == 0;
    kv_outcome_clear(&o);
    buf doc;
    buf_init(&doc, 0);
    uint64_t delay = 0;
    if (live && !(parsed && strcmp(ld.instance, n->k.instance) == 0)) {
        /* another node holds it: look again later */
        pthread_mutex_lock(&n->mu);
        snprintf(t->st.held_by, sizeof t->st.held_by, "%s", parsed ? ld.instance : "unknown");
        pthread_mutex_unlock(&n->mu);
        if (t->state != Q_HELD)
            log_info(S3_LOG, "queue=%s is held by %s", t->queue, parsed ? ld.instance : "unknown");
        t->claim_at_ms = 0;
        set_state(t, Q_HELD);
        /* a node below its share looks again every third of a TTL, one at its share once a TTL */
        int held_here, share;
        sink_share(t, &held_here, &share);
        delay = (uint64_t)n->k.lease_ttl_ms / (held_here < share ? 3 : 1);
        goto out;
    }
    kv_op claim;
    t->lease_since_ms = wall_us() / 1000;
    lease_doc(t, &doc);
    if (live) {
        /* a row under this node's own name: an earlier life of it, taken back at once */
        claim = kv_op_put_if_version(S3_KV_NAMESPACE, t->k_lease, buf_cstr(&doc), n->k.lease_ttl_ms, version);
    } else {
        /* a free queue: wait a second per queue this node already runs, so the least loaded
         * node claims first */
        uint64_t now_ms = mono_ms();
        if (now_ms < t->cooldown_until_ms) {
            /* given back by this node: the others' first */
            delay = t->cooldown_until_ms - now_ms;
            if (delay > (uint64_t)n->k.lease_ttl_ms / 3)
                delay = (uint64_t)n->k.lease_ttl_ms / 3;
            goto out;
        }
        if (t->claim_at_ms == 0) {
            uint64_t held = node_held_count(n);
            uint64_t step = held * S3_CLAIM_STEP_MS;
            if (step > (uint64_t)n->k.lease_ttl_ms / 2)
                step = (uint64_t)n->k.lease_ttl_ms / 2;
            /* at its share, a node lets the nodes below theirs claim first */
            int held_here, share;
            sink_share(t, &held_here, &share);
            if (share > 0 && held_here >= share)
                step += (uint64_t)n->k.lease_ttl_ms;
            t->claim_at_ms = now_ms + step + (uint64_t)(rand() % S3_CLAIM_JITTER_MS);
            if (step > 0) {
                set_state(t, t->state == Q_RELEASED ? Q_RELEASED : Q_CLAIMING);
                delay = t->claim_at_ms - now_ms;
                goto out;
            }
        }
        if (now_ms < t->claim_at_ms) {
            delay = t->claim_at_ms - now_ms;
            goto out;
        }
        claim = kv_op_put_if_absent(S3_KV_NAMESPACE, t->k_lease, buf_cstr(&doc), n->k.lease_ttl_ms);
    }
    t->claim_at_ms = 0;
    if (sinkdb_kv(&w->db, t->sink->c.tenant, &claim, 1, &o) < 0) {
        sink_set_error(t, "%s", w->db.err);
        delay = backoff(t);
        goto out;
    }
    if (o.fail != KV_FAIL_NONE) {
        /* somebody else got there first */
        kv_outcome_clear(&o);
        delay = 200;
        goto out;
    }
    pthread_mutex_lock(&t->lease_mu);
    t->held = 1;
    t->lease_lost = 0;
    t->lease_version = o.results[0].version;
    t->refresh_due_ms = mono_ms() + (uint64_t)n->k.lease_ttl_ms / 3;
    pthread_mutex_unlock(&t->lease_mu);
    kv_outcome_clear(&o);
    pthread_mutex_lock(&n->mu);
    snprintf(t->st.held_by, sizeof t->st.held_by, "%s", n->k.instance);
    t->st.running_since_ms = mono_ms();
    t->st.lag_reported_ms = 0;
    pthread_mutex_unlock(&n->mu);
    log_info(S3_LOG, "queue=%s: lease taken (instance %s)", t->queue, n->k.instance);
    t->backoff_ms = S3_BACKOFF_MIN_MS;
    set_state(t, Q_RESTORING);
out:
    buf_free(&doc);
    return delay;
}

/* ---- reading ---- */

typedef struct slice_ctx {
    s3_qtask *t;
    int64_t from;
    uint64_t added_bytes;
    uint64_t added;
    buf scratch;
    /* the partitions this slice reported, for the retention check after the segments */
    sinkdb_part *parts;
    char **part_names;
    int nparts, capparts;
    strmap names;       /* partition name → index into interned (copies in the buffer) */
    const char **interned;
    uint32_t ninterned, capinterned;
} slice_ctx;

/* The partition name as the buffer keeps it: one copy per slice. */
static const char *intern(slice_ctx *c, const char *name, size_t len)
{
    uint32_t *v = strmap_get(&c->names, name, len);
    if (v)
        return c->interned[*v];
    if (c->ninterned == c->capinterned) {
        c->capinterned = c->capinterned ? c->capinterned * 2 : 16;
        c->interned = xrealloc(c->interned, c->capinterned * sizeof *c->interned);
    }
    const char *copy = chunk_copy(&c->t->buf, name, len);
    c->interned[c->ninterned] = copy;
    int ins;
    *strmap_put(&c->names, copy, len, c->ninterned, &ins) = c->ninterned;
    c->ninterned++;
    return copy;
}

static void on_part(void *arg, const sinkdb_part *p)
{
    slice_ctx *c = arg;
    s3_qtask *t = c->t;
    s3_pos *pos = pos_find(t, p->name, p->name_len);
    if (pos && memcmp(pos->uuid, p->uuid, 16) != 0) {
        /* deleted and created again under the same name: a new incarnation from offset 0 */
        memcpy(pos->uuid, p->uuid, 16);
        pos->next = 0;
    }
    if (!pos && t->pos_known)
        pos_add(t, p->name, p->name_len, p->uuid, 0);
    if (c->nparts == c->capparts) {
        c->capparts = c->capparts ? c->capparts * 2 : 16;
        c->parts = xrealloc(c->parts, (size_t)c->capparts * sizeof *c->parts);
        c->part_names = xrealloc(c->part_names, (size_t)c->capparts * sizeof *c->part_names);
    }
    c->part_names[c->nparts] = xstrndup(p->name, p->name_len);
    c->parts[c->nparts] = *p;
    c->parts[c->nparts].name = c->part_names[c->nparts];
    c->parts[c->nparts].uuid = NULL;
    c->nparts++;
}

static void buf_push_rec(s3_buffer *b, const s3_record *r)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 1024;
        b->recs = xrealloc(b->recs, b->cap * sizeof *b->recs);
    }
    b->recs[b->n++] = *r;
}

static int on_seg(void *arg, const sinkdb_seg *s)
{
    slice_ctx *c = arg;
    s3_qtask *t = c->t;
    s3_pos *pos = pos_find(t, s->name, s->name_len);
    if (pos && s->base_offset > pos->next)
        add_lost(t, s->name, s->name_len, pos->next, s->base_offset - 1, s->ts);
    if (!pos)
        pos = pos_add(t, s->name, s->name_len, s->uuid, s->base_offset);
    const char *pname = NULL;
    seg_reader sr;
    if (seg_reader_init(&sr, s->data, s->data_len, (uint64_t)s->base_offset, s->count) < 0)
        return -1;
    record_view v;
    int rc;
    while ((rc = seg_reader_next(&sr, &v)) == 1) {
        pos->next = (int64_t)v.offset + 1;
        if (v.flags & REC_DELETED)
            continue;
        if (!pname)
            pname = intern(c, s->name, s->name_len);
        s3_record r;
        memset(&r, 0, sizeof r);
        r.partition = pname;
        r.partition_len = s->name_len;
        r.offset = (int64_t)v.offset;
        char txn[512];
        size_t tl = record_txn_text(&v, txn, sizeof txn);
        r.txn = chunk_copy(&t->buf, txn, tl);
        r.txn_len = tl;
        r.ts = s->ts;
        /* the lake is plaintext: an encrypted queue's payloads are opened here; one this node
         * cannot open is written as a JSON string of its stored bytes */
        const char *pl;
        size_t plen;
        r.payload_kind = record_payload_open(&v, &c->scratch, &pl, &plen, NULL) == 0 ? S3_PAYLOAD_JSON : S3_PAYLOAD_SEALED;
        r.payload = chunk_copy(&t->buf, pl, plen);
        r.payload_len = plen;
        uint64_t wgt = s3_record_weight(r.partition_len, r.txn_len, r.payload_len);
        buf_push_rec(&t->buf, &r);
        t->buf.bytes += wgt;
        if (t->buf.n == 1 || r.ts < t->buf.min_ts)
            t->buf.min_ts = r.ts;
        c->added_bytes += wgt;
        c->added++;
    }
    seg_reader_done(&sr);
    return rc < 0 ? -1 : 0;
}

/* Reads [read_to, limit) (cut by the budget); returns 1 when the slice was cut (more to read
 * at once), 0 when it reached limit, -1 on a failure worth retrying, -2 when a segment does
 * not decode (the same read fails the same way: the queue crashes). */
static int read_slice(s3_qtask *t, s3_worker *w, int64_t limit)
{
    s3_node *n = t->node;
    uint64_t target = (uint64_t)t->sink->c.target_mb << 20;
    uint64_t mem = (uint64_t)n->k.memory_mb << 20;
    uint64_t total = atomic_load(&n->buffered_total);
    uint64_t budget = target > t->buf.bytes ? target - t->buf.bytes : 0;
    uint64_t headroom = mem > total ? mem - total : 0;
    if (headroom < budget)
        budget = headroom;
    if (budget < S3_MIN_SLICE_BYTES)
        budget = S3_MIN_SLICE_BYTES;
    int64_t align_us = t->sink->c.align == S3_ALIGN_HOUR ? S3_US_PER_HOUR
                       : t->sink->c.align == S3_ALIGN_DAY ? S3_US_PER_DAY
                                                          : 0;
    slice_ctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.from = t->w.read_to;
    buf_init(&c.scratch, 0);
    strmap_init(&c.names);
    sinkdb_slice_cb cb = {.arg = &c, .on_part = on_part, .on_seg = on_seg};
    int64_t end = limit;
    size_t before = t->buf.n;
    uint64_t t_read = mono_us();
    int rc = sinkdb_slice(&w->db, t->qid, t->w.read_to, limit, (int64_t)budget, align_us, &cb, &end);
    mc_add(&t->m_fetches, 1);
    if (c.added)
        log_debug(S3_LOG, "queue=%s: read %llu records (%llu bytes) of [%lld, %lld) in %.1f ms", t->queue,
                  (unsigned long long)c.added, (unsigned long long)c.added_bytes, (long long)t->w.read_to,
                  (long long)end, (double)(mono_us() - t_read) / 1000.0);
    if (rc == 0) {
        /* retention removed records of a partition before this node read them */
        for (int i = 0; i < c.nparts; i++) {
            s3_pos *pos = pos_find(t, c.parts[i].name, c.parts[i].name_len);
            if (pos && pos->next < c.parts[i].start_offset) {
                /* its records were stamped no later than its last one; the window that
                 * records the loss must end above the stamp, so no later than this read */
                int64_t seen = c.parts[i].last_ts < end ? c.parts[i].last_ts : end - 1;
                add_lost(t, pos->name, pos->len, pos->next, c.parts[i].start_offset - 1, seen);
                pos->next = c.parts[i].start_offset;
            }
        }
        atomic_fetch_add(&n->buffered_total, c.added_bytes);
        t->w.read_to = end;
        t->w.records = t->buf.n;
        t->w.bytes = t->buf.bytes;
        t->w.min_ts = t->buf.min_ts;
    } else {
        /* nothing of a failed slice stays: drop what it appended */
        for (size_t i = before; i < t->buf.n; i++)
            t->buf.bytes -= s3_record_weight(t->buf.recs[i].partition_len, t->buf.recs[i].txn_len,
                                             t->buf.recs[i].payload_len);
        t->buf.n = before;
        sink_set_error(t, "%s", w->db.err);
    }
    for (int i = 0; i < c.nparts; i++)
        free(c.part_names[i]);
    free(c.parts);
    free(c.part_names);
    buf_free(&c.scratch);
    strmap_free(&c.names);
    free(c.interned);
    if (rc < 0)
        return rc == -2 ? -2 : -1;
    return end < limit ? 1 : 0;
}

/* ---- the commit sequence ---- */

static const char *content_type(enum s3_format f, enum s3_compression c)
{
    if (f == S3_FORMAT_PARQUET)
        return "application/vnd.apache.parquet";
    if (c == S3_COMP_ZSTD)
        return "application/zstd";
    if (c == S3_COMP_GZIP)
        return "application/gzip";
    return "application/x-ndjson";
}

/* The records of [t_start, t_end) from the buffer, sorted (a copy of the array). */
static s3_record *window_records(s3_qtask *t, int64_t t_start, int64_t t_end, size_t *n)
{
    s3_record *out = xmalloc((t->buf.n ? t->buf.n : 1) * sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < t->buf.n; i++)
        if (t->buf.recs[i].ts >= t_start && t->buf.recs[i].ts < t_end)
            out[k++] = t->buf.recs[i];
    s3_records_sort(out, k);
    *n = k;
    return out;
}

static void pend_add_object(s3_pending *p, const char *key, const buf *data, uint64_t records, const char *part,
                            size_t plen, int64_t first, int64_t last)
{
    p->objects = xrealloc(p->objects, (size_t)(p->nobjects + 1) * sizeof *p->objects);
    s3_manifest_object *o = &p->objects[p->nobjects++];
    memset(o, 0, sizeof *o);
    o->key = xstrdup(key);
    o->bytes = data->len;
    o->records = records;
    s3_sha256_hex(data->data, data->len, o->sha256);
    if (part) {
        o->partition = xstrndup(part, plen);
        o->partition_len = plen;
        o->first_offset = first;
        o->last_offset = last;
    }
}

static void manifest_of(s3_qtask *t, const s3_pending *p, s3_manifest *m)
{
    memset(m, 0, sizeof *m);
    m->sink = t->sink->c.sink;
    m->tenant = t->sink->c.tenant_text;
    m->queue = t->queue;
    m->queue_len = t->qlen;
    m->k = p->intent.k;
    m->t_start = p->intent.t_start;
    m->t_end = p->intent.t_end;
    m->format = p->intent.format;
    m->compression = p->intent.compression;
    m->layout = p->intent.layout;
    m->objects = p->objects;
    m->nobjects = p->nobjects;
    m->records = p->records;
    m->bytes = p->bytes;
    m->partitions = p->partitions;
    m->min_ts = p->min_ts;
    m->max_ts = p->max_ts;
    m->lost = p->lost;
    m->nlost = p->nlost;
    snprintf(m->writer, sizeof m->writer, "%s", p->intent.writer);
    m->committed_at_us = wall_us();
}

/* The manifest PUT found an object under the window's key (If-None-Match: *). Ours when it
 * names the same window (an earlier attempt whose answer was lost, or the upload a rebuilt
 * intent repeats: same records, same object keys): 0. Anything else is never replaced: -1. */
static int same_window_there(s3_qtask *t, s3_client *cl, const s3_pending *p)
{
    s3_result r;
    s3_result_init(&r);
    int g = s3_get(cl, p->manifest_key, &r);
    int rc = -1;
    if (g < 0) {
        sink_set_error(t, "reading %s: %s (HTTP %ld)", p->manifest_key, r.error, r.status);
    } else if (g == 1) {
        sink_set_error(t, "uploading %s: refused as existing, then not found", p->manifest_key);
    } else {
        s3_manifest m;
        char err[200];
        if (s3_manifest_parse(r.body.data, r.body.len, &m, err, sizeof err) == 0) {
            if (m.k == p->intent.k && m.t_start == p->intent.t_start && m.t_end == p->intent.t_end)
                rc = 0;
            s3_manifest_free(&m);
        }
        if (rc < 0)
            sink_set_error(t, "%s already holds another window's manifest; refusing to replace it", p->manifest_key);
    }
    s3_result_free(&r);
    return rc;
}

/* Builds and uploads the objects and the manifest of the pending window. 0, -1 (the error
 * is recorded; the step retries from here), or -2 when an object cannot be built (the same
 * records fail the same way: the queue crashes; *why says what failed). */
static int upload(s3_qtask *t, s3_worker *w, char *why, size_t whylen)
{
    s3_pending *p = &t->pend;
    s3_sink *s = t->sink;
    s3_client *cl = worker_client(w, s);
    const char *ext = s3_object_ext(p->intent.format, p->intent.compression);
    size_t n;
    s3_record *recs = window_records(t, p->intent.t_start, p->intent.t_end, &n);
    for (int i = 0; i < p->nobjects; i++) {
        free(p->objects[i].key);
        free(p->objects[i].partition);
    }
    free(p->objects);
    p->objects = NULL;
    p->nobjects = 0;
    p->records = n;
    p->bytes = 0;
    p->partitions = 0;
    p->min_ts = p->max_ts = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || recs[i].partition_len != recs[i - 1].partition_len ||
            memcmp(recs[i].partition, recs[i - 1].partition, recs[i].partition_len) != 0)
            p->partitions++;
        if (p->min_ts == 0 || recs[i].ts < p->min_ts)
            p->min_ts = recs[i].ts;
        if (recs[i].ts > p->max_ts)
            p->max_ts = recs[i].ts;
    }
    int rc = -1;
    buf obj, key;
    buf_init(&obj, 0);
    buf_init(&key, 0);
    char err[300];
    s3_result res;
    s3_result_init(&res);
    size_t i = 0;
    int first_object = 1;
    while (i < n) {
        size_t j = n;
        if (p->intent.layout == S3_LAYOUT_PER_PARTITION) {
            j = i + 1;
            while (j < n && recs[j].partition_len == recs[i].partition_len &&
                   memcmp(recs[j].partition, recs[i].partition, recs[i].partition_len) == 0)
                j++;
        }
        buf_reset(&obj);
        uint64_t t_build = mono_us();
        if (s3_object_build(p->intent.format, p->intent.compression, recs + i, j - i, t->queue, t->qlen,
                            s->c.tenant_text, &obj, err, sizeof err) < 0) {
            snprintf(why, whylen, "building window %llu: %s", (unsigned long long)p->intent.k, err);
            rc = -2;
            goto out;
        }
        buf_reset(&key);
        if (p->intent.layout == S3_LAYOUT_PER_PARTITION)
            s3_key_data_partition(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, p->intent.k, p->intent.t_start,
                                  p->intent.t_end, s->c.align, recs[i].partition, recs[i].partition_len, recs[i].offset,
                                  recs[j - 1].offset, ext);
        else
            s3_key_data(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, p->intent.k, p->intent.t_start,
                        p->intent.t_end, s->c.align, ext);
        s3_result_free(&res);
        s3_result_init(&res);
        uint64_t t_put = mono_us();
        if (s3_put(cl, buf_cstr(&key), obj.data, obj.len, content_type(p->intent.format, p->intent.compression), &res) < 0) {
            sink_set_error(t, "uploading %s: %s (HTTP %ld)", buf_cstr(&key), res.error, res.status);
            goto out;
        }
        log_debug(S3_LOG, "queue=%s: window %llu object of %zu records: built in %.1f ms (%zu bytes), put in %.1f ms",
                  t->queue, (unsigned long long)p->intent.k, j - i, (double)(t_put - t_build) / 1000.0, obj.len,
                  (double)(mono_us() - t_put) / 1000.0);
        p->bytes += obj.len;
        pend_add_object(p, buf_cstr(&key), &obj, j - i, p->intent.layout == S3_LAYOUT_PER_PARTITION ? recs[i].partition : NULL,
                        recs[i].partition_len, recs[i].offset, recs[j - 1].offset);
        if (first_object)
            crash_at(t, S3_CRASH_MID_UPLOAD);
        first_object = 0;
        i = j;
    }
    /* the manifest */
    s3_manifest m;
    manifest_of(t, p, &m);
    buf_reset(&obj);
    s3_manifest_json(&obj, &m);
    buf_reset(&key);
    s3_key_manifest(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, p->intent.k);
    snprintf(p->manifest_key, sizeof p->manifest_key, "%s", buf_cstr(&key));
    s3_result_free(&res);
    s3_result_init(&res);
    int pr = s3_put_new(cl, p->manifest_key, obj.data, obj.len, "application/json", &res);
    if (pr < 0) {
        sink_set_error(t, "uploading %s: %s (HTTP %ld)", p->manifest_key, res.error, res.status);
        goto out;
    }
    if (pr == 1 && same_window_there(t, cl, p) < 0)
        goto out;
    rc = 0;
out:
    s3_result_free(&res);
    buf_free(&obj);
    buf_free(&key);
    free(recs);
    return rc;
}

static void write_checkpoint(s3_qtask *t, s3_worker *w)
{
    s3_sink *s = t->sink;
    s3_checkpoint c;
    memset(&c, 0, sizeof c);
    c.k = t->committed.k;
    c.t_end = t->committed.t_end;
    if (!t->pos_known) {
        /* positions this node has not established for every partition are not a checkpoint */
        return;
    }
    c.npositions = (int)t->npos;
    c.positions = xcalloc(t->npos ? t->npos : 1, sizeof *c.positions);
    for (uint32_t i = 0; i < t->npos; i++) {
        c.positions[i].partition = t->pos[i].name;
        c.positions[i].partition_len = t->pos[i].len;
        c.positions[i].offset = t->pos[i].next;
        memcpy(c.positions[i].uuid, t->pos[i].uuid, 16);
        c.positions[i].has_uuid = 1;
    }
    /* sorted by name, bytewise */
    for (int i = 1; i < c.npositions; i++) {
        s3_position x = c.positions[i];
        int j = i - 1;
        while (j >= 0) {
            size_t a = c.positions[j].partition_len, b = x.partition_len;
            int r = memcmp(c.positions[j].partition, x.partition, a < b ? a : b);
            if (r < 0 || (r == 0 && a <= b))
                break;
            c.positions[j + 1] = c.positions[j];
            j--;
        }
        c.positions[j + 1] = x;
    }
    buf json, z, key;
    buf_init(&json, 0);
    buf_init(&z, 0);
    buf_init(&key, 0);
    s3_checkpoint_json(&json, &c);
    free(c.positions);
    if (s3_compress(S3_COMP_ZSTD, json.data, json.len, &z) == 0) {
        s3_key_checkpoint(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, t->committed.k);
        s3_result res;
        s3_result_init(&res);
        if (s3_put(worker_client(w, s), buf_cstr(&key), z.data, z.len, "application/zstd", &res) == 0)
            t->last_ckpt_k = t->committed.k;
        else
            log_warn(S3_LOG, "queue=%s: checkpoint %s not written: %s (it only shortens a restart)", t->queue,
                     buf_cstr(&key), res.error);
        s3_result_free(&res);
    }
    buf_free(&json);
    buf_free(&z);
    buf_free(&key);
}

/* Step 6: the commit pointer, behind the fence. Returns 0, 1 when fenced, -1 to retry. */
static int commit(s3_qtask *t, s3_worker *w)
{
    s3_pending *p = &t->pend;
    crash_at(t, S3_CRASH_BEFORE_COMMIT);
    s3_committed c;
    memset(&c, 0, sizeof c);
    c.k = p->intent.k;
    c.k_base = t->committed.k_base;
    c.t_end = p->intent.t_end;
    snprintf(c.manifest, sizeof c.manifest, "%s", p->manifest_key);
    c.records = p->records;
    c.bytes = p->bytes;
    c.committed_at_ms = wall_us() / 1000;
    buf doc;
    buf_init(&doc, 0);
    s3_committed_json(&doc, &c);
    kv_op op = kv_op_put_if_version(S3_KV_NAMESPACE, t->k_committed, buf_cstr(&doc), 0, t->committed_version);
    kv_outcome o;
    enum fence_rc rc = fenced(t, w, &op, 1, &o);
    buf_free(&doc);
    if (rc == FENCE_DB) {
        sink_set_error(t, "writing the commit pointer of window %llu: %s", (unsigned long long)c.k, w->db.err);
        return -1;
    }
    if (rc != FENCE_OK) {
        kv_outcome_clear(&o);
        return 1;
    }
    t->committed_version = o.results[1].version;
    kv_outcome_clear(&o);
    crash_at(t, S3_CRASH_AFTER_COMMIT);
    t->committed = c;
    /* what the window held leaves the buffer; anything stamped after it stays */
    size_t keep = 0;
    uint64_t dropped = 0;
    for (size_t i = 0; i < t->buf.n; i++) {
        if (t->buf.recs[i].ts >= c.t_end)
            t->buf.recs[keep++] = t->buf.recs[i];
        else
            dropped += s3_record_weight(t->buf.recs[i].partition_len, t->buf.recs[i].txn_len, t->buf.recs[i].payload_len);
    }
    if (keep == 0) {
        buffer_clear(t->node, &t->buf);
    } else {
        /* rare (the slices end at window boundaries): keep the chunks, shrink the count */
        t->buf.n = keep;
        t->buf.bytes -= dropped;
        atomic_fetch_sub(&t->node->buffered_total, dropped);
        t->buf.min_ts = t->buf.recs[0].ts;
        for (size_t i = 1; i < keep; i++)
            if (t->buf.recs[i].ts < t->buf.min_ts)
                t->buf.min_ts = t->buf.recs[i].ts;
    }
    t->w.t0 = c.t_end;
    if (t->w.read_to < c.t_end)
        t->w.read_to = c.t_end;
    t->w.records = t->buf.n;
    t->w.bytes = t->buf.bytes;
    t->w.min_ts = t->buf.min_ts;
    t->w.lost = t->nlost > 0;
    if (!t->w.lost)
        t->w.lost_ts = 0;
    uint64_t lost = 0;
    for (int i = 0; i < p->nlost; i++)
        lost += (uint64_t)(p->lost[i].to - p->lost[i].from + 1);
    mc_add(&t->m_windows, 1);
    mc_add(&t->m_records, p->records);
    mc_add(&t->m_bytes, p->bytes);
    mc_add(&t->m_lost, lost);
    mhist_observe(&t->m_window_records, p->records);
    mhist_observe(&t->m_window_bytes, p->bytes);
    pthread_mutex_lock(&t->node->mu);
    t->st.windows++;
    t->st.records += p->records;
    t->st.bytes += p->bytes;
    t->st.lost += lost;
    pthread_mutex_unlock(&t->node->mu);
    if (lost)
        log_warn(S3_LOG, "queue=%s: window %llu is missing %llu record%s retention removed before the sink read "
                         "them (see \"lost\" in %s)",
                 t->queue, (unsigned long long)c.k, (unsigned long long)lost, lost == 1 ? "" : "s", p->manifest_key);
    log_info(S3_LOG, "window committed queue=%s k=%llu records=%llu bytes=%llu partitions=%llu tStart=%lld tEnd=%lld%s%s",
             t->queue, (unsigned long long)c.k, (unsigned long long)p->records, (unsigned long long)p->bytes,
             (unsigned long long)p->partitions, (long long)p->intent.t_start, (long long)p->intent.t_end,
             p->from_manifest ? " from=manifest" : " reason=", p->from_manifest ? "" : s3_close_name(p->reason));
    pending_clear(p);
    if (t->node->k.checkpoint_every > 0 && c.k % (uint64_t)t->node->k.checkpoint_every == 0)
        write_checkpoint(t, w);
    return 0;
}

/* Step 4: the intent, behind the fence. 0, 1 when fenced, -1 to retry. */
static int write_intent(s3_qtask *t, s3_worker *w)
{
    s3_pending *p = &t->pend;
    if (t->unsure && resync(t, w) < 0) {
        sink_set_error(t, "%s", w->db.err);
        return -1;
    }
    buf doc;
    buf_init(&doc, 0);
    s3_intent_json(&doc, &p->intent);
    kv_op op = t->intent_version ? kv_op_put_if_version(S3_KV_NAMESPACE, t->k_intent, buf_cstr(&doc), 0, t->intent_version)
                                 : kv_op_put_if_absent(S3_KV_NAMESPACE, t->k_intent, buf_cstr(&doc), 0);
    kv_outcome o;
    enum fence_rc rc = fenced(t, w, &op, 1, &o);
    buf_free(&doc);
    if (rc == FENCE_DB) {
        sink_set_error(t, "writing the intent of window %llu: %s", (unsigned long long)p->intent.k, w->db.err);
        return -1;
    }
    if (rc != FENCE_OK) {
        kv_outcome_clear(&o);
        return 1;
    }
    t->intent_version = o.results[1].version;
    kv_outcome_clear(&o);
    return 0;
}

static uint64_t fence_lost(s3_qtask *t, const char *during)
{
    mc_add(&t->m_precondition_lost, 1);
    sink_set_error(t, "fenced while %s: another node holds the queue's lease or moved its pointers; stopping the queue here",
                   during);
    log_warn(S3_LOG, "queue=%s: fenced while %s; the queue stops on this node", t->queue, during);
    drop_queue(t, Q_FENCED);
    return (uint64_t)t->node->k.lease_ttl_ms;
}

/* Runs the pending window from wherever it stands. Returns the step's delay. */
static uint64_t run_pending(s3_qtask *t, s3_worker *w)
{
    s3_pending *p = &t->pend;
    int rc;
    if (t->state == Q_INTENT) {
        rc = write_intent(t, w);
        if (rc < 0)
            return backoff(t);
        if (rc > 0)
            return fence_lost(t, "writing an intent");
        crash_at(t, S3_CRASH_AFTER_INTENT);
        set_state(t, Q_UPLOAD);
    }
    if (t->state == Q_UPLOAD) {
        char why[400];
        int u = upload(t, w, why, sizeof why);
        if (u == -2)
            return crash_queue(t, w, why);
        if (u < 0)
            return backoff(t);
        crash_at(t, S3_CRASH_AFTER_UPLOAD);
        set_state(t, Q_COMMIT);
    }
    if (t->state == Q_COMMIT) {
        if (t->unsure && resync(t, w) < 0) {
            sink_set_error(t, "%s", w->db.err);
            return backoff(t);
        }
        if (t->committed.k >= p->intent.k) {
            /* the pointer write of an earlier attempt did land */
            pending_clear(p);
        } else {
            rc = commit(t, w);
            if (rc < 0)
                return backoff(t);
            if (rc > 0)
                return fence_lost(t, "committing a window");
        }
        t->backoff_ms = S3_BACKOFF_MIN_MS;
        set_state(t, Q_FILLING);
    }
    return 0;
}

/* Closes the open window [t_start, t_end) and starts its commit sequence. */
static uint64_t close_window(s3_qtask *t, s3_worker *w, int64_t t_start, int64_t t_end, enum s3_close why)
{
    s3_pending *p = &t->pend;
    s3_sink *s = t->sink;
    pending_clear(p);
    p->active = 1;
    p->reason = why;
    p->intent.k = t->committed.k + 1;
    p->intent.t_start = t_start;
    p->intent.t_end = t_end;
    p->intent.format = s->c.format;
    p->intent.compression = s->codec;
    p->intent.layout = s->c.layout;
    snprintf(p->intent.writer, sizeof p->intent.writer, "%s", s->writer);
    /* the lost ranges found so far go into this window's manifest */
    p->lost = t->lost;
    p->nlost = t->nlost;
    t->lost = NULL;
    t->nlost = t->caplost = 0;
    set_state(t, Q_INTENT);
    return run_pending(t, w);
}

/* ---- restoring ---- */

typedef struct advance_ctx {
    s3_qtask *t;
} advance_ctx;

static void on_advance(void *arg, const sinkdb_part *p)
{
    advance_ctx *c = arg;
    s3_qtask *t = c->t;
    s3_pos *pos = pos_find(t, p->name, p->name_len);
    if (pos && memcmp(pos->uuid, p->uuid, 16) != 0) {
        memcpy(pos->uuid, p->uuid, 16);
        pos->next = 0;
    }
    if (!pos)
        pos = pos_add(t, p->name, p->name_len, p->uuid, 0);
    if (p->last_offset >= 0 && p->last_offset + 1 > pos->next)
        pos->next = p->last_offset + 1;
}

static void on_at(void *arg, const sinkdb_part *p)
{
    s3_qtask *t = arg;
    if (!pos_find(t, p->name, p->name_len))
        pos_add(t, p->name, p->name_len, p->uuid, p->last_offset);
}

/* The positions at the commit pointer: the last checkpoint's, moved forward over what was
 * committed after it (offsets only). Before the first checkpoint of a queue read from the
 * start of the log, every partition starts at 0. Otherwise (a latest start, or a checkpoint
 * that is gone) each partition's first offset stamped at or after the pointer: a gap that
 * retention made while no node ran the queue is then not reported, but nothing is reported
 * that is not a gap. */
static int restore_positions(s3_qtask *t, s3_worker *w)
{
    s3_sink *s = t->sink;
    positions_clear(t);
    int64_t from = 0;
    uint64_t ck = s3_checkpoint_k(t->committed.k, t->node->k.checkpoint_every);
    t->pos_known = 0;
    if (ck <= t->committed.k_base) {
        /* no checkpoint of this pointer yet (those up to kBase are an earlier lake's) */
        if (t->committed.k_base == 0 && s->c.start == S3_START_EARLIEST) {
            t->pos_known = 1;
            from = 0;
        }
    } else {
        buf key;
        buf_init(&key, 0);
        s3_key_checkpoint(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, ck);
        s3_result r;
        s3_result_init(&r);
        int g = s3_get(worker_client(w, s), buf_cstr(&key), &r);
        if (g == 0) {
            buf json;
            buf_init(&json, 256u << 20);
            s3_checkpoint c;
            char err[200];
            if (s3_decompress(S3_COMP_ZSTD, r.body.data, r.body.len, &json) == 0 &&
                s3_checkpoint_parse(json.data, json.len, &c, err, sizeof err) == 0) {
                for (int i = 0; i < c.npositions; i++)
                    pos_add(t, c.positions[i].partition, c.positions[i].partition_len, c.positions[i].uuid,
                            c.positions[i].offset);
                from = c.t_end;
                t->pos_known = 1;
                t->last_ckpt_k = ck;
                s3_checkpoint_free(&c);
            } else {
                log_warn(S3_LOG, "queue=%s: checkpoint %s unreadable; positions start unknown", t->queue, buf_cstr(&key));
            }
            buf_free(&json);
        } else if (g < 0) {
            buf_free(&key);
            sink_set_error(t, "reading checkpoint: %s (HTTP %ld)", r.error, r.status);
            s3_result_free(&r);
            return -1;
        }
        s3_result_free(&r);
        buf_free(&key);
    }
    if (t->pos_known && from < t->committed.t_end) {
        advance_ctx c = {t};
        if (sinkdb_positions(&w->db, t->qid, from, t->committed.t_end, on_advance, &c) < 0) {
            sink_set_error(t, "%s", w->db.err);
            return -1;
        }
    }
    if (!t->pos_known) {
        if (sinkdb_positions_at(&w->db, t->qid, t->committed.t_end, on_at, t) < 0) {
            sink_set_error(t, "%s", w->db.err);
            return -1;
        }
        t->pos_known = 1;
    }
    return 0;
}

/* A window whose intent survived: commit its finished upload, or rebuild it. */
static uint64_t redo(s3_qtask *t, s3_worker *w)
{
    s3_sink *s = t->sink;
    s3_pending *p = &t->pend;
    pending_clear(p);
    p->active = 1;
    p->intent = t->stored_intent;
    p->reason = S3_CLOSE_NONE;
    t->have_stored_intent = 0;
    buf key;
    buf_init(&key, 0);
    s3_key_manifest(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, p->intent.k);
    s3_result r;
    s3_result_init(&r);
    int g = s3_get(worker_client(w, s), buf_cstr(&key), &r);
    if (g < 0) {
        sink_set_error(t, "reading %s: %s (HTTP %ld)", buf_cstr(&key), r.error, r.status);
        s3_result_free(&r);
        buf_free(&key);
        t->have_stored_intent = 1;
        return backoff(t);
    }
    s3_manifest m;
    char err[200];
    if (g == 0 && s3_manifest_parse(r.body.data, r.body.len, &m, err, sizeof err) == 0) {
        if (m.k == p->intent.k && m.t_start == p->intent.t_start && m.t_end == p->intent.t_end) {
            /* a finished upload whose manifest names this intent: commit it as it is */
            log_info(S3_LOG, "queue=%s: window %llu was uploaded before the restart; committing its manifest", t->queue,
                     (unsigned long long)p->intent.k);
            p->from_manifest = 1;
            p->records = m.records;
            p->bytes = m.bytes;
            p->partitions = m.partitions;
            snprintf(p->manifest_key, sizeof p->manifest_key, "%s", buf_cstr(&key));
            s3_manifest_free(&m);
            s3_result_free(&r);
            buf_free(&key);
            /* positions move over the window without reading it */
            if (t->pos_known) {
                advance_ctx c = {t};
                if (sinkdb_positions(&w->db, t->qid, t->w.read_to, p->intent.t_end, on_advance, &c) < 0) {
                    sink_set_error(t, "%s", w->db.err);
                    t->have_stored_intent = 1;
                    pending_clear(p);
                    return backoff(t);
                }
            }
            t->w.read_to = p->intent.t_end;
            set_state(t, Q_COMMIT);
            return run_pending(t, w);
        }
        s3_manifest_free(&m);
    }
    s3_result_free(&r);
    buf_free(&key);
    /* rebuild: the same records in the same order, hence the same bytes under the same keys */
    if (t->safe_time - t->node->k.safe_guard_ms * 1000 < p->intent.t_end) {
        pending_clear(p);
        t->have_stored_intent = 1;
        return 500;
    }
    log_info(S3_LOG, "queue=%s: rebuilding window %llu [%lld, %lld) from its intent", t->queue,
             (unsigned long long)p->intent.k, (long long)p->intent.t_start, (long long)p->intent.t_end);
    pthread_mutex_lock(&t->node->mu);
    t->st.redo = 1;
    pthread_mutex_unlock(&t->node->mu);
    while (t->w.read_to < p->intent.t_end) {
        /* a rebuild holds the queue back until it is done: it waits for a read slot */
        int got = node_read_acquire(t->node, 1);
        int rc = got ? read_slice(t, w, p->intent.t_end) : -1;
        if (got)
            node_read_release(t->node);
        if (rc == -2) {
            pthread_mutex_lock(&t->node->mu);
            t->st.redo = 0;
            pthread_mutex_unlock(&t->node->mu);
            return crash_queue(t, w, w->db.err);
        }
        if (rc < 0) {
            pending_clear(p);
            buffer_clear(t->node, &t->buf);
            t->w.read_to = t->w.t0;
            t->have_stored_intent = 1;
            return backoff(t);
        }
    }
    p->lost = t->lost;
    p->nlost = t->nlost;
    t->lost = NULL;
    t->nlost = t->caplost = 0;
    set_state(t, Q_UPLOAD);
    uint64_t d = run_pending(t, w);
    pthread_mutex_lock(&t->node->mu);
    t->st.redo = 0;
    pthread_mutex_unlock(&t->node->mu);
    return d;
}

static void s3_key_manifest_str(s3_qtask *t, uint64_t k, char *out, size_t n)
{
    buf key;
    buf_init(&key, 0);
    s3_key_manifest(&key, t->sink->c.prefix, t->sink->c.tenant_text, t->queue, t->qlen, k);
    snprintf(out, n, "%s", buf_cstr(&key));
    buf_free(&key);
}

/* One probe of the lake: 1 when windows/<k>.json is there (its body kept in top), 0 when
 * not, -1 on a failure (the queue's error set). */
static int probe_manifest(s3_qtask *t, s3_client *cl, uint64_t k, buf *top)
{
    s3_sink *s = t->sink;
    buf key;
    buf_init(&key, 0);
    s3_key_manifest(&key, s->c.prefix, s->c.tenant_text, t->queue, t->qlen, k);
    s3_result r;
    s3_result_init(&r);
    int g = s3_get(cl, buf_cstr(&key), &r);
    int rc = g == 0 ? 1 : g == 1 ? 0 : -1;
    if (g < 0)
        sink_set_error(t, "reading %s: %s (HTTP %ld)", buf_cstr(&key), r.error, r.status);
    if (g == 0) {
        buf_free(top);
        *top = r.body;
        buf_init(&r.body, 0);
    }
    s3_result_free(&r);
    buf_free(&key);
    return rc;
}

/* A queue with no commit pointer: the windows an earlier lake left under the same prefix (a
 * purged or re-created sink, a new or restored database) keep their numbers. Manifests are
 * numbered 1..K without gaps, so galloping probes (1, 2, 4, ... until one is missing) and a
 * binary search find K in O(log K) GETs; a new lake costs the one 404. *floor is the t_end of
 * manifest K (the lake holds everything before it), 0 when K is 0. 0, or -1 (error set). */
static int lake_top(s3_qtask *t, s3_worker *w, uint64_t *kout, int64_t *floor)
{
    s3_client *cl = worker_client(w, t->sink);
    buf top;
    buf_init(&top, 0);
    *kout = 0;
    *floor = 0;
    uint64_t lo = 0, hi = 1; /* lo there (0: none), hi missing once found */
    int rc = -1, got;
    for (;;) {
        got = probe_manifest(t, cl, hi, &top);
        if (got < 0)
            goto out;
        if (got == 0)
            break;
        lo = hi;
        if (hi > UINT64_MAX / 4) {
            sink_set_error(t, "the lake's window numbers are out of range");
            goto out;
        }
        hi *= 2;
    }
    buf last;
    buf_init(&last, 0);
    if (lo > 0) {
        last = top; /* the body of manifest lo */
        buf_init(&top, 0);
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        got = probe_manifest(t, cl, mid, &top);
        if (got < 0) {
            buf_free(&last);
            goto out;
        }
        if (got) {
            lo = mid;
            buf_free(&last);
            last = top;
            buf_init(&top, 0);
        } else {
            hi = mid;
        }
    }
    *kout = lo;
    if (lo > 0) {
        s3_manifest m;
        char err[200];
        if (s3_manifest_parse(last.data, last.len, &m, err, sizeof err) == 0) {
            *floor = m.t_end;
            s3_manifest_free(&m);
        } else {
            log_warn(S3_LOG, "queue=%s: the earlier lake's last manifest %llu is not readable (%s); starting after it",
                     t->queue, (unsigned long long)lo, err);
        }
    }
    buf_free(&last);
    rc = 0;
out:
    buf_free(&top);
    return rc;
}

static uint64_t step_restore(s3_qtask *t, s3_worker *w)
{
    s3_sink *s = t->sink;
    kv_op ops[2] = {kv_op_get(S3_KV_NAMESPACE, t->k_committed), kv_op_get(S3_KV_NAMESPACE, t->k_intent)};
    kv_outcome o;
    if (sinkdb_kv(&w->db, s->c.tenant, ops, 2, &o) < 0) {
        sink_set_error(t, "%s", w->db.err);
        return backoff(t);
    }
    char err[200];
    int have_committed = o.results[0].flag;
    memset(&t->committed, 0, sizeof t->committed);
    t->committed_version = have_committed ? o.results[0].version : 0;
    t->intent_version = o.results[1].flag ? o.results[1].version : 0;
    t->have_stored_intent = 0;
    if (have_committed && s3_committed_parse(o.results[0].value, o.results[0].value_len, &t->committed, err, sizeof err) < 0) {
        sink_set_error(t, "the commit pointer %s is not readable: %s", t->k_committed, err);
        kv_outcome_clear(&o);
        drop_queue(t, Q_FAILED);
        return S3_FAILED_RETRY_MS;
    }
    if (o.results[1].flag &&
        s3_intent_parse(o.results[1].value, o.results[1].value_len, &t->stored_intent, err, sizeof err) == 0 &&
        t->stored_intent.k == t->committed.k + 1 && have_committed)
        t->have_stored_intent = 1;
    kv_outcome_clear(&o);
    if (!have_committed) {
        /* the queue's starting point: the log's start, or this node's safeTime now */
        uint64_t k0;
        int64_t floor;
        if (lake_top(t, w, &k0, &floor) < 0)
            return backoff(t);
        s3_committed c;
        memset(&c, 0, sizeof c);
        c.k = k0;
        c.k_base = k0;
        c.t_end = s->c.start == S3_START_EARLIEST ? 0 : t->safe_time + 1;
        if (c.t_end < floor)
            c.t_end = floor; /* the earlier lake holds what is before: not written twice */
        if (k0 > 0)
            s3_key_manifest_str(t, k0, c.manifest, sizeof c.manifest);
        c.committed_at_ms = wall_us() / 1000;
        buf doc;
        buf_init(&doc, 0);
        s3_committed_json(&doc, &c);
        kv_op op = kv_op_put_if_absent(S3_KV_NAMESPACE, t->k_committed, buf_cstr(&doc), 0);
        enum fence_rc rc = fenced(t, w, &op, 1, &o);
        buf_free(&doc);
        if (rc == FENCE_DB) {
            sink_set_error(t, "writing the starting point: %s", w->db.err);
            return backoff(t);
        }
        if (rc != FENCE_OK) {
            kv_outcome_clear(&o);
            return fence_lost(t, "writing the starting point");
        }
        t->committed = c;
        t->committed_version = o.results[1].version;
        kv_outcome_clear(&o);
        if (k0 > 0)
            log_info(S3_LOG, "queue=%s: the bucket holds an earlier lake's windows 1..%llu; starting at window %llu, %lld",
                     t->queue, (unsigned long long)k0, (unsigned long long)k0 + 1, (long long)c.t_end);
        else
            log_info(S3_LOG, "queue=%s: starting at %s (%lld)", t->queue, s3_start_name(s->c.start), (long long)c.t_end);
    }
    buffer_clear(t->node, &t->buf);
    lost_clear(&t->lost, &t->nlost);
    t->caplost = 0;
    memset(&t->w, 0, sizeof t->w);
    t->w.t0 = t->committed.t_end;
    t->w.read_to = t->committed.t_end;
    if (restore_positions(t, w) < 0)
        return backoff(t);
    set_state(t, Q_FILLING);
    if (t->have_stored_intent)
        return redo(t, w);
    return 0;
}

/* ---- filling ---- */

static uint64_t release_lease_as(s3_qtask *t, s3_worker *w, enum qstate end);

static uint64_t release_lease(s3_qtask *t, s3_worker *w)
{
    return release_lease_as(t, w, Q_DRAINED);
}

/* Gives the queue back to even out the shares: drained like a stop, then left to the other
 * nodes for two TTLs. */
static uint64_t give_back(s3_qtask *t, s3_worker *w)
{
    uint64_t d = release_lease_as(t, w, Q_RELEASED);
    if (t->state != Q_RELEASED)
        return d; /* still retrying the release */
    s3_node *n = t->node;
    t->cooldown_until_ms = mono_ms() + 2 * (uint64_t)n->k.lease_ttl_ms;
    mc_add(&t->sink->given_back, 1);
    pthread_mutex_lock(&n->mu);
    t->give_back = 0;
    t->sink->gave_back_at_ms = mono_ms();
    pthread_mutex_unlock(&n->mu);
    log_info(S3_LOG, "queue=%s given back to even out the shares", t->queue);
    return (uint64_t)n->k.lease_ttl_ms / 3;
}

static uint64_t release_lease_as(s3_qtask *t, s3_worker *w, enum qstate end)
{
    if (t->release_deadline_ms == 0)
        t->release_deadline_ms = mono_ms() + S3_RELEASE_BUDGET_MS;
    pthread_mutex_lock(&t->lease_mu);
    int held = t->held && !t->lease_lost;
    int64_t v = t->lease_version;
    pthread_mutex_unlock(&t->lease_mu);
    if (held) {
        kv_op op = kv_op_delete_if_version(S3_KV_NAMESPACE, t->k_lease, v);
        kv_outcome o;
        if (sinkdb_kv(&w->db, t->sink->c.tenant, &op, 1, &o) < 0) {
            if (mono_ms() < t->release_deadline_ms)
                return 250;
            log_warn(S3_LOG, "queue=%s: could not give the lease back (%s); it expires after its TTL", t->queue,
                     w->db.err);
        } else {
            kv_outcome_clear(&o);
            log_info(S3_LOG, "queue=%s: lease given back", t->queue);
        }
    }
    t->release_deadline_ms = 0;
    drop_queue(t, end);
    return UINT64_MAX;
}

/* One filling step: the clock, a slice read (holding a read slot, *slot, given back as soon as
 * the read is done), the window rules, and a close when one holds. */
static uint64_t fill(s3_qtask *t, s3_worker *w, int stopping, int giving, int *slot)
{
    s3_node *n = t->node;
    s3_sink *s = t->sink;
    if (t->unsure && resync(t, w) < 0) {
        sink_set_error(t, "%s", w->db.err);
        return backoff(t);
    }
    int64_t qid, safe, now;
    int rc = sinkdb_clock(&w->db, s->c.tenant, t->queue, &qid, &safe, &now);
    if (rc < 0) {
        sink_set_error(t, "%s", w->db.err);
        if (stopping)
            return release_lease(t, w);
        return backoff(t);
    }
    if (rc == 1 || qid != t->qid) {
        /* the queue was deleted (and perhaps created again): start over from the pointers */
        sink_set_error(t, "the queue was deleted");
        buffer_clear(n, &t->buf);
        if (rc == 1) {
            drop_queue(t, Q_MISSING);
            return S3_MISSING_RETRY_MS;
        }
        t->qid = qid;
        set_state(t, Q_RESTORING);
        return 0;
    }
    t->safe_time = safe;
    t->now_us = now;
    int64_t ceiling = safe - n->k.safe_guard_ms * 1000;
    if (ceiling > t->w.ceiling || t->w.ceiling == 0)
        t->w.ceiling = ceiling;
    int more = 0;
    int draining = stopping || giving;
    if (!draining) {
        int64_t limit = s3_window_read_limit(&t->w, s->c.align);
        if (limit > t->w.read_to) {
            int r = read_slice(t, w, limit);
            node_read_release(n);
            *slot = 0;
            if (r == -2)
                return crash_queue(t, w, w->db.err);
            if (r < 0)
                return backoff(t);
            more = r;
        }
    }
    if (*slot) {
        node_read_release(n);
        *slot = 0;
    }
    s3_window_rules rules = {
        .target_bytes = (uint64_t)s->c.target_mb << 20,
        .max_window_us = s->c.max_window_ms * 1000,
        .align = s->c.align,
        .memory_pressure = node_memory_pressure(n, t),
        .draining = draining,
    };
    int64_t ts, te;
    enum s3_close why = s3_window_decide(&t->w, &rules, &ts, &te);
    sink_status_update(t);
    if (why != S3_CLOSE_NONE) {
        uint64_t d = close_window(t, w, ts, te, why);
        if (t->state != Q_FILLING)
            return d; /* retrying, or fenced */
        return 0;
    }
    if (stopping)
        return release_lease(t, w);
    if (giving)
        return give_back(t, w);
    t->backoff_ms = S3_BACKOFF_MIN_MS;
    if (more)
        return 0;
    return (uint64_t)n->k.discovery_interval_ms;
}

/* A filling step reads the log, so it runs holding one of the node's read slots
 * (QUEEN_S3_FETCH_CONCURRENCY); with none free it does nothing and comes back soon, leaving
 * the worker to other queues' steps. A drain reads nothing and needs no slot. */
static uint64_t step_fill(s3_qtask *t, s3_worker *w)
{
    s3_node *n = t->node;
    int stopping = task_stopping(t);
    pthread_mutex_lock(&n->mu);
    int giving = t->give_back;
    pthread_mutex_unlock(&n->mu);
    int slot = 0;
    if (!stopping && !giving) {
        if (!node_read_acquire(n, 0))
            return S3_READ_SLOT_RETRY_MS;
        slot = 1;
    }
    uint64_t d = fill(t, w, stopping, giving, &slot);
    if (slot)
        node_read_release(n);
    return d;
}

uint64_t qtask_step(s3_qtask *t, s3_worker *w)
{
    s3_node *n = t->node;
    if (n->hard_stop)
        return UINT64_MAX;
    pthread_mutex_lock(&t->lease_mu);
    int lost = t->held && t->lease_lost;
    pthread_mutex_unlock(&t->lease_mu);
    if (lost && t->state != Q_FENCED)
        return fence_lost(t, "holding the queue");
    switch (t->state) {
    case Q_CLAIMING:
    case Q_HELD:
    case Q_MISSING:
    case Q_FENCED:
    case Q_FAILED:
    case Q_RELEASED:
    case Q_CRASHED:
        return step_claim(t, w);
    case Q_RESTORING:
        return step_restore(t, w);
    case Q_FILLING:
        if (t->have_stored_intent)
            return redo(t, w);
        return step_fill(t, w);
    case Q_INTENT:
    case Q_UPLOAD:
    case Q_COMMIT:
        return run_pending(t, w);
    case Q_DRAINED:
        return task_stopping(t) ? UINT64_MAX : step_claim(t, w);
    }
    return 1000;
}
