/* eph.c — ephemeral (RAM) queues (see eph.h). */
#include "eph.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/strmap.h"
#include "core/util.h"
#include "json/json.h"

typedef struct emsg {
    int64_t ts;
    uint32_t len;
    char *payload;
} emsg;

typedef struct epart {
    char *name;
    size_t nlen;
    emsg *msgs;       /* msgs[first .. first+n) hold seqs base .. base+n */
    size_t first, n, cap;
    uint64_t base;    /* seq of the oldest message held */
    uint64_t bytes;
} epart;

typedef struct inflight {
    uint64_t seq;
    int64_t expires;
    uint32_t attempts;
} inflight;

typedef struct retry {
    uint64_t seq;
    uint32_t attempts; /* deliveries so far */
} retry;

typedef struct gpart {
    uint64_t next; /* next never-delivered seq */
    inflight *inf;
    size_t ninf, capinf;
    retry *re;
    size_t nre, capre;
    int seen;
} gpart;

typedef struct egroup {
    char *name; /* "" = queue mode */
    size_t len;
    gpart *parts;
    size_t nparts;
} egroup;

typedef struct equeue {
    uint8_t tenant[16];
    char *name;
    size_t len;
    uint32_t gen;
    eph_opts o;
    epart *parts;
    size_t nparts, capparts;
    strmap pmap;
    egroup *groups;
    size_t ngroups;
    uint64_t bytes, count;
    uint32_t rr;
    uint64_t dropped_ttl, dropped_policy, dropped_retries;
} equeue;

struct eph {
    uint64_t inc;
    int64_t node_max;
    uint64_t node_bytes;
    uint32_t gen;
    strmap qmap;
    arena keys;
    equeue **qs; /* NULL = deleted */
    size_t nq;
    eph_stats st;
};

void eph_opts_default(eph_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_bytes = EPH_DEFAULT_MAX_BYTES;
    o->max_length = EPH_DEFAULT_MAX_LENGTH;
    o->policy = EPH_REJECT;
    o->lease_ms = EPH_DEFAULT_LEASE_MS;
    o->retry_limit = EPH_DEFAULT_RETRY_LIMIT;
}

eph *eph_new(uint64_t incarnation, int64_t node_max_bytes)
{
    eph *e = xcalloc(1, sizeof *e);
    e->inc = incarnation;
    e->node_max = node_max_bytes;
    strmap_init(&e->qmap);
    arena_init(&e->keys);
    return e;
}

static void drop_front(eph *e, equeue *q, epart *p, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        emsg *m = &p->msgs[p->first + i];
        uint64_t sz = (uint64_t)m->len + EPH_MSG_OVERHEAD;
        p->bytes -= sz;
        q->bytes -= sz;
        e->node_bytes -= sz;
        free(m->payload);
    }
    p->first += k;
    p->n -= k;
    p->base += k;
    q->count -= k;
    if (p->n == 0)
        p->first = 0;
}

static void queue_clear(eph *e, equeue *q)
{
    for (size_t i = 0; i < q->nparts; i++) {
        epart *p = &q->parts[i];
        drop_front(e, q, p, p->n);
    }
    for (size_t g = 0; g < q->ngroups; g++) {
        egroup *gr = &q->groups[g];
        for (size_t i = 0; i < gr->nparts; i++) {
            free(gr->parts[i].inf);
            free(gr->parts[i].re);
        }
        free(gr->parts);
        free(gr->name);
    }
    free(q->groups);
    q->groups = NULL;
    q->ngroups = 0;
}

static void queue_free(eph *e, equeue *q)
{
    queue_clear(e, q);
    for (size_t i = 0; i < q->nparts; i++) {
        free(q->parts[i].msgs);
        free(q->parts[i].name);
    }
    free(q->parts);
    strmap_free(&q->pmap);
    free(q->name);
    free(q);
}

void eph_free(eph *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nq; i++)
        if (e->qs[i])
            queue_free(e, e->qs[i]);
    free(e->qs);
    strmap_free(&e->qmap);
    arena_free(&e->keys);
    free(e);
}

static equeue *find(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    char tmp[16 + 256];
    if (qlen > 255)
        return NULL;
    memcpy(tmp, tenant, 16);
    memcpy(tmp + 16, queue, qlen);
    uint32_t *v = strmap_get(&e->qmap, tmp, 16 + qlen);
    return v ? e->qs[*v] : NULL;
}

static equeue *get(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, int *created)
{
    *created = 0;
    if (qlen > 255)
        return NULL;
    equeue *q = find(e, tenant, queue, qlen);
    if (q)
        return q;
    char tmp[16 + 256];
    memcpy(tmp, tenant, 16);
    memcpy(tmp + 16, queue, qlen);
    uint32_t *v = strmap_get(&e->qmap, tmp, 16 + qlen);
    if (!v) {
        char *k = arena_alloc(&e->keys, 16 + qlen);
        memcpy(k, tmp, 16 + qlen);
        e->qs = xrealloc(e->qs, (e->nq + 1) * sizeof *e->qs);
        e->qs[e->nq] = NULL;
        v = strmap_put(&e->qmap, k, 16 + qlen, (uint32_t)e->nq, NULL);
        e->nq++;
    }
    q = xcalloc(1, sizeof *q);
    memcpy(q->tenant, tenant, 16);
    q->name = xstrndup(queue, qlen);
    q->len = qlen;
    q->gen = ++e->gen;
    eph_opts_default(&q->o);
    strmap_init(&q->pmap);
    e->qs[*v] = q;
    e->st.queues++;
    *created = 1;
    return q;
}

static epart *part_get(equeue *q, const char *name, size_t nlen, int create)
{
    uint32_t *v = strmap_get(&q->pmap, name, nlen);
    if (v)
        return &q->parts[*v];
    if (!create)
        return NULL;
    if (q->nparts == q->capparts) {
        /* the map's keys are the parts' names, which do not move when the array grows */
        q->capparts = q->capparts ? q->capparts * 2 : 4;
        q->parts = xrealloc(q->parts, q->capparts * sizeof *q->parts);
    }
    epart *p = &q->parts[q->nparts];
    memset(p, 0, sizeof *p);
    p->name = xstrndup(name, nlen);
    p->nlen = nlen;
    strmap_put(&q->pmap, p->name, nlen, (uint32_t)q->nparts, NULL);
    q->nparts++;
    return p;
}

static egroup *group_get(equeue *q, const char *g, size_t glen, int create)
{
    if (!g)
        glen = 0;
    for (size_t i = 0; i < q->ngroups; i++)
        if (q->groups[i].len == glen && memcmp(q->groups[i].name, g ? g : "", glen) == 0)
            return &q->groups[i];
    if (!create)
        return NULL;
    q->groups = xrealloc(q->groups, (q->ngroups + 1) * sizeof *q->groups);
    egroup *gr = &q->groups[q->ngroups++];
    memset(gr, 0, sizeof *gr);
    gr->name = xstrndup(g ? g : "", glen);
    gr->len = glen;
    return gr;
}

static gpart *gpart_of(equeue *q, egroup *gr, size_t pi)
{
    if (pi >= gr->nparts) {
        size_t n = q->nparts > pi + 1 ? q->nparts : pi + 1;
        gr->parts = xrealloc(gr->parts, n * sizeof *gr->parts);
        memset(gr->parts + gr->nparts, 0, (n - gr->nparts) * sizeof *gr->parts);
        gr->nparts = n;
    }
    gpart *gp = &gr->parts[pi];
    if (!gp->seen) {
        /* a group's first look at a partition starts at the oldest message it holds */
        gp->seen = 1;
        gp->next = q->parts[pi].base;
    }
    if (gp->next < q->parts[pi].base)
        gp->next = q->parts[pi].base;
    return gp;
}

/* The lowest seq any group still needs in partition pi. */
static uint64_t low_water(equeue *q, size_t pi)
{
    epart *p = &q->parts[pi];
    uint64_t lw = p->base + p->n;
    if (q->ngroups == 0)
        return p->base; /* nobody consumes yet: keep everything (bounds still apply) */
    for (size_t g = 0; g < q->ngroups; g++) {
        egroup *gr = &q->groups[g];
        if (pi >= gr->nparts || !gr->parts[pi].seen)
            return p->base;
        gpart *gp = &gr->parts[pi];
        uint64_t m = gp->next;
        for (size_t i = 0; i < gp->ninf; i++)
            if (gp->inf[i].seq < m)
                m = gp->inf[i].seq;
        for (size_t i = 0; i < gp->nre; i++)
            if (gp->re[i].seq < m)
                m = gp->re[i].seq;
        if (m < lw)
            lw = m;
    }
    return lw < p->base ? p->base : lw;
}

static void trim_consumed(eph *e, equeue *q, size_t pi)
{
    epart *p = &q->parts[pi];
    uint64_t lw = low_water(q, pi);
    if (lw > p->base)
        drop_front(e, q, p, (size_t)(lw - p->base));
}

static void trim_ttl(eph *e, equeue *q, int64_t now_ms)
{
    if (q->o.ttl_ms <= 0)
        return;
    for (size_t pi = 0; pi < q->nparts; pi++) {
        epart *p = &q->parts[pi];
        size_t k = 0;
        while (k < p->n && p->msgs[p->first + k].ts + q->o.ttl_ms <= now_ms)
            k++;
        if (k) {
            drop_front(e, q, p, k);
            q->dropped_ttl += k;
            e->st.dropped_ttl += k;
        }
    }
}

/* Expired leases go back for redelivery, or are dropped once their attempts are spent. */
static void expire(eph *e, equeue *q, egroup *gr, size_t pi, gpart *gp, int64_t now_ms)
{
    size_t w = 0;
    int dropped = 0;
    for (size_t i = 0; i < gp->ninf; i++) {
        inflight f = gp->inf[i];
        if (f.expires > now_ms) {
            gp->inf[w++] = f;
            continue;
        }
        if ((int64_t)f.attempts > q->o.retry_limit) {
            q->dropped_retries++;
            e->st.dropped_retries++;
            dropped = 1;
            continue;
        }
        if (gp->nre == gp->capre) {
            gp->capre = gp->capre ? gp->capre * 2 : 8;
            gp->re = xrealloc(gp->re, gp->capre * sizeof *gp->re);
        }
        gp->re[gp->nre++] = (retry){f.seq, f.attempts};
        e->st.redelivered++;
    }
    gp->ninf = w;
    (void)gr;
    if (dropped)
        trim_consumed(e, q, pi);
}

int eph_configure(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const eph_opts *o)
{
    int created;
    equeue *q = get(e, tenant, queue, qlen, &created);
    if (!q)
        return -1;
    q->o = *o;
    return created;
}

uint64_t eph_reset(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    equeue *q = find(e, tenant, queue, qlen);
    if (!q)
        return 0;
    uint64_t dropped = q->count;
    queue_clear(e, q);
    return dropped;
}

int eph_delete(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    char tmp[16 + 256];
    if (qlen > 255)
        return 0;
    memcpy(tmp, tenant, 16);
    memcpy(tmp + 16, queue, qlen);
    uint32_t *v = strmap_get(&e->qmap, tmp, 16 + qlen);
    if (!v || !e->qs[*v])
        return 0;
    queue_free(e, e->qs[*v]);
    e->qs[*v] = NULL;
    e->st.queues--;
    return 1;
}

/* The oldest head among the queue's partitions (drop_oldest), or NULL. */
static epart *oldest(equeue *q)
{
    epart *best = NULL;
    for (size_t i = 0; i < q->nparts; i++) {
        epart *p = &q->parts[i];
        if (p->n && (!best || p->msgs[p->first].ts < best->msgs[best->first].ts))
            best = p;
    }
    return best;
}

/* The refusal of a push the queue has no room for: the sentence names the queue (cut). */
static qerr queue_full(qerr_detail *err, const char *queue, size_t qlen, uint32_t n)
{
    return qerr_set_reason(err, QERR_LIMIT, "ephemeral_queue_full", "queue_full",
                           "ephemeral queue %.*s has no room for %u more messages (maxLength/maxBytes, policy reject); "
                           "nothing was pushed",
                           (int)(qlen > 200 ? 200 : qlen), queue, n);
}

qerr eph_push(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *part, size_t plen,
              const char *const *payloads, const size_t *lens, uint32_t n, int64_t now_ms, qerr_detail *err)
{
    int created;
    equeue *q = get(e, tenant, queue, qlen, &created);
    if (!q)
        return queue_full(err, queue, qlen, n);
    trim_ttl(e, q, now_ms);
    uint64_t add = 0;
    for (uint32_t i = 0; i < n; i++)
        add += (uint64_t)lens[i] + EPH_MSG_OVERHEAD;
    int64_t maxlen = q->o.max_length > 0 ? q->o.max_length : EPH_DEFAULT_MAX_LENGTH;
    int64_t maxbytes = q->o.max_bytes > 0 ? q->o.max_bytes : EPH_DEFAULT_MAX_BYTES;
    if ((int64_t)n > maxlen || (int64_t)add > maxbytes) {
        e->st.refused_full++;
        return queue_full(err, queue, qlen, n);
    }
    if ((int64_t)(q->count + n) > maxlen || (int64_t)(q->bytes + add) > maxbytes) {
        if (q->o.policy != EPH_DROP_OLDEST) {
            e->st.refused_full++;
            return queue_full(err, queue, qlen, n);
        }
        while ((int64_t)(q->count + n) > maxlen || (int64_t)(q->bytes + add) > maxbytes) {
            epart *p = oldest(q);
            if (!p)
                break;
            drop_front(e, q, p, 1);
            q->dropped_policy++;
            e->st.dropped_policy++;
        }
    }
    if (e->node_max > 0 && (int64_t)(e->node_bytes + add) > e->node_max) {
        e->st.refused_full++;
        return qerr_set_reason(err, QERR_UNAVAILABLE, "ephemeral_node_full", "node_full",
                                   "this node's ephemeral queues hold QUEEN_EPHEMERAL_MAX_BYTES already; nothing was pushed");
    }
    epart *p = part_get(q, part, plen, 1);
    if (p->first + p->n + n > p->cap) {
        if (p->first > 0) {
            memmove(p->msgs, p->msgs + p->first, p->n * sizeof *p->msgs);
            p->first = 0;
        }
        if (p->n + n > p->cap) {
            size_t cap = p->cap ? p->cap : 16;
            while (cap < p->n + n)
                cap *= 2;
            p->msgs = xrealloc(p->msgs, cap * sizeof *p->msgs);
            p->cap = cap;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        emsg *m = &p->msgs[p->first + p->n++];
        m->ts = now_ms;
        m->len = (uint32_t)lens[i];
        m->payload = xmalloc(lens[i] ? lens[i] : 1);
        memcpy(m->payload, payloads[i], lens[i]);
    }
    p->bytes += add;
    q->bytes += add;
    q->count += n;
    e->node_bytes += add;
    e->st.pushed += n;
    return QERR_OK;
}

static void put_id(const eph *e, const equeue *q, size_t pi, uint64_t seq, char out[64])
{
    snprintf(out, 64, "%016" PRIx64 ".%" PRIu32 ".%zu.%" PRIu64, e->inc, q->gen, pi, seq);
}

static void emit(eph *e, equeue *q, size_t pi, uint64_t seq, uint32_t attempts, arena *ar, eph_msg *m)
{
    epart *p = &q->parts[pi];
    emsg *s = &p->msgs[p->first + (size_t)(seq - p->base)];
    put_id(e, q, pi, seq, m->id);
    /* copies: a commit at delivery frees the message before the answer is written */
    m->partition = arena_strndup(ar, p->name, p->nlen);
    m->partition_len = p->nlen;
    m->payload = arena_strndup(ar, s->payload, s->len);
    m->payload_len = s->len;
    m->attempts = attempts;
    e->st.delivered++;
}

static void add_inflight(gpart *gp, uint64_t seq, int64_t expires, uint32_t attempts)
{
    if (gp->ninf == gp->capinf) {
        gp->capinf = gp->capinf ? gp->capinf * 2 : 16;
        gp->inf = xrealloc(gp->inf, gp->capinf * sizeof *gp->inf);
    }
    gp->inf[gp->ninf++] = (inflight){seq, expires, attempts};
}

/* Pops from one partition; returns the count written. */
static uint32_t pop_part(eph *e, equeue *q, egroup *gr, size_t pi, uint32_t want, int auto_ack, int64_t now_ms,
                         arena *ar, eph_msg *out)
{
    epart *p = &q->parts[pi];
    gpart *gp = gpart_of(q, gr, pi);
    expire(e, q, gr, pi, gp, now_ms);
    uint32_t got = 0;
    /* redeliveries first, in the order they came back */
    size_t w = 0;
    for (size_t i = 0; i < gp->nre; i++) {
        retry r = gp->re[i];
        if (r.seq < p->base)
            continue; /* dropped meanwhile */
        if (got < want) {
            emit(e, q, pi, r.seq, r.attempts + 1, ar, &out[got++]);
            if (!auto_ack)
                add_inflight(gp, r.seq, now_ms + q->o.lease_ms, r.attempts + 1);
        } else {
            gp->re[w++] = r;
        }
    }
    gp->nre = w;
    uint64_t end = p->base + p->n;
    while (got < want && gp->next < end) {
        uint64_t seq = gp->next++;
        emit(e, q, pi, seq, 1, ar, &out[got++]);
        if (!auto_ack)
            add_inflight(gp, seq, now_ms + q->o.lease_ms, 1);
    }
    if (auto_ack)
        trim_consumed(e, q, pi);
    return got;
}

uint32_t eph_pop(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *part, size_t plen,
                 const char *group, size_t glen, uint32_t batch, int auto_ack, int64_t now_ms, arena *ar,
                 eph_msg *out)
{
    int created;
    equeue *q = get(e, tenant, queue, qlen, &created);
    if (!q || batch == 0)
        return 0;
    trim_ttl(e, q, now_ms);
    egroup *gr = group_get(q, group, glen, 1);
    if (part) {
        epart *p = part_get(q, part, plen, 1);
        return pop_part(e, q, gr, (size_t)(p - q->parts), batch, auto_ack, now_ms, ar, out);
    }
    uint32_t got = 0;
    size_t np = q->nparts;
    for (size_t k = 0; k < np && got < batch; k++) {
        size_t pi = (q->rr + k) % np;
        got += pop_part(e, q, gr, pi, batch - got, auto_ack, now_ms, ar, out + got);
    }
    if (np)
        q->rr = (uint32_t)((q->rr + 1) % np);
    return got;
}

static int parse_id(const char *id, size_t len, uint64_t *inc, uint32_t *gen, size_t *pi, uint64_t *seq)
{
    char tmp[64];
    if (len == 0 || len >= sizeof tmp)
        return -1;
    memcpy(tmp, id, len);
    tmp[len] = '\0';
    char *end;
    if (len < 17 || tmp[16] != '.')
        return -1;
    tmp[16] = '\0';
    *inc = strtoull(tmp, &end, 16);
    if (*end)
        return -1;
    char *s = tmp + 17;
    unsigned long long g = strtoull(s, &end, 10);
    if (end == s || *end != '.')
        return -1;
    s = end + 1;
    unsigned long long p = strtoull(s, &end, 10);
    if (end == s || *end != '.')
        return -1;
    s = end + 1;
    unsigned long long q = strtoull(s, &end, 10);
    if (end == s || *end)
        return -1;
    *gen = (uint32_t)g;
    *pi = (size_t)p;
    *seq = q;
    return 0;
}

int eph_ack(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *group, size_t glen,
            const char *id, size_t idlen, int status, int64_t now_ms)
{
    uint64_t inc, seq;
    uint32_t gen;
    size_t pi;
    if (parse_id(id, idlen, &inc, &gen, &pi, &seq) < 0)
        return EPH_UNKNOWN;
    equeue *q = find(e, tenant, queue, qlen);
    if (inc != e->inc || (q && gen != q->gen))
        return EPH_STALE; /* an earlier incarnation of this node, or of the queue */
    if (!q || pi >= q->nparts)
        return EPH_UNKNOWN;
    egroup *gr = group_get(q, group, glen, 0);
    epart *p = &q->parts[pi];
    if (seq >= p->base + p->n)
        return EPH_UNKNOWN; /* never pushed */
    if (!gr || pi >= gr->nparts)
        return EPH_STALE;
    gpart *gp = &gr->parts[pi];
    expire(e, q, gr, pi, gp, now_ms);
    for (size_t i = 0; i < gp->ninf; i++) {
        if (gp->inf[i].seq != seq)
            continue;
        inflight f = gp->inf[i];
        gp->inf[i] = gp->inf[--gp->ninf];
        if (status == EPH_COMPLETED || (int64_t)f.attempts > q->o.retry_limit) {
            if (status != EPH_COMPLETED) {
                q->dropped_retries++;
                e->st.dropped_retries++;
            } else {
                e->st.acked++;
            }
            trim_consumed(e, q, pi);
            return EPH_ACKED;
        }
        if (gp->nre == gp->capre) {
            gp->capre = gp->capre ? gp->capre * 2 : 8;
            gp->re = xrealloc(gp->re, gp->capre * sizeof *gp->re);
        }
        gp->re[gp->nre++] = (retry){seq, f.attempts};
        e->st.redelivered++;
        return EPH_REDELIVERED;
    }
    /* waiting for its redelivery (its lease ran out): a completed ack still settles it */
    for (size_t i = 0; i < gp->nre; i++) {
        if (gp->re[i].seq != seq)
            continue;
        if (status != EPH_COMPLETED)
            return EPH_REDELIVERED;
        memmove(gp->re + i, gp->re + i + 1, (gp->nre - i - 1) * sizeof *gp->re);
        gp->nre--;
        e->st.acked++;
        trim_consumed(e, q, pi);
        return EPH_ACKED;
    }
    return EPH_STALE;
}

uint64_t eph_available(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *part,
                       size_t plen, const char *group, size_t glen, int64_t now_ms)
{
    equeue *q = find(e, tenant, queue, qlen);
    if (!q)
        return 0;
    trim_ttl(e, q, now_ms);
    egroup *gr = group_get(q, group, glen, 1);
    uint64_t n = 0;
    for (size_t pi = 0; pi < q->nparts; pi++) {
        epart *p = &q->parts[pi];
        if (part && (p->nlen != plen || memcmp(p->name, part, plen) != 0))
            continue;
        gpart *gp = gpart_of(q, gr, pi);
        expire(e, q, gr, pi, gp, now_ms);
        for (size_t i = 0; i < gp->nre; i++)
            n += gp->re[i].seq >= p->base;
        n += p->base + p->n - gp->next;
    }
    return n;
}

int64_t eph_next_expiry(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    equeue *q = find(e, tenant, queue, qlen);
    if (!q)
        return 0;
    int64_t t = 0;
    for (size_t g = 0; g < q->ngroups; g++)
        for (size_t pi = 0; pi < q->groups[g].nparts; pi++) {
            gpart *gp = &q->groups[g].parts[pi];
            for (size_t i = 0; i < gp->ninf; i++)
                if (!t || gp->inf[i].expires < t)
                    t = gp->inf[i].expires;
        }
    return t;
}

int eph_options(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, eph_opts *out)
{
    equeue *q = find(e, tenant, queue, qlen);
    if (!q)
        return -1;
    *out = q->o;
    return 0;
}

static void opts_json(const eph_opts *o, buf *b)
{
    buf_printf(b,
               "{\"maxBytes\":%" PRId64 ",\"maxLength\":%" PRId64 ",\"policy\":\"%s\",\"ttlSeconds\":%" PRId64
               ",\"leaseSeconds\":%" PRId64 ",\"retryLimit\":%" PRId64 ",\"windowBuffer\":{\"ms\":%" PRId64
               ",\"count\":%" PRId64 "}}",
               o->max_bytes, o->max_length, o->policy == EPH_DROP_OLDEST ? "drop_oldest" : "reject", o->ttl_ms / 1000,
               o->lease_ms / 1000, o->retry_limit, o->window_ms, o->window_count);
}

static void queue_summary(equeue *q, buf *b)
{
    buf_puts(b, "{\"queue\":");
    jw_string(b, q->name, q->len);
    buf_printf(b, ",\"length\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"partitions\":%zu,\"groups\":%zu,\"options\":",
               q->count, q->bytes, q->nparts, q->ngroups);
    opts_json(&q->o, b);
    buf_putc(b, '}');
}

int eph_depth_json(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, int64_t now_ms, buf *b)
{
    equeue *q = find(e, tenant, queue, qlen);
    if (!q)
        return -1;
    trim_ttl(e, q, now_ms);
    buf_puts(b, "{\"queue\":");
    jw_string(b, q->name, q->len);
    buf_printf(b, ",\"length\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"partitions\":[", q->count, q->bytes);
    for (size_t i = 0; i < q->nparts; i++) {
        epart *p = &q->parts[i];
        if (i)
            buf_putc(b, ',');
        buf_puts(b, "{\"partition\":");
        jw_string(b, p->name, p->nlen);
        buf_printf(b, ",\"length\":%zu,\"bytes\":%" PRIu64 "}", p->n, p->bytes);
    }
    buf_puts(b, "],\"groups\":[");
    for (size_t g = 0; g < q->ngroups; g++) {
        egroup *gr = &q->groups[g];
        uint64_t pending = 0, infl = 0;
        for (size_t pi = 0; pi < q->nparts; pi++) {
            gpart *gp = gpart_of(q, gr, pi);
            expire(e, q, gr, pi, gp, now_ms);
            epart *p = &q->parts[pi];
            pending += p->base + p->n - gp->next + gp->nre;
            infl += gp->ninf;
        }
        if (g)
            buf_putc(b, ',');
        buf_puts(b, "{\"group\":");
        if (gr->len)
            jw_string(b, gr->name, gr->len);
        else
            buf_puts(b, "null");
        buf_printf(b, ",\"pending\":%" PRIu64 ",\"inflight\":%" PRIu64 "}", pending, infl);
    }
    buf_printf(b, "],\"dropped\":{\"ttl\":%" PRIu64 ",\"policy\":%" PRIu64 ",\"retries\":%" PRIu64 "},\"options\":",
               q->dropped_ttl, q->dropped_policy, q->dropped_retries);
    opts_json(&q->o, b);
    buf_puts(b, ",\"durable\":false}");
    return 0;
}

void eph_list_json(eph *e, const uint8_t tenant[16], int64_t now_ms, buf *b)
{
    buf_puts(b, "{\"queues\":[");
    int first = 1;
    for (size_t i = 0; i < e->nq; i++) {
        equeue *q = e->qs[i];
        if (!q || memcmp(q->tenant, tenant, 16) != 0)
            continue;
        trim_ttl(e, q, now_ms);
        if (!first)
            buf_putc(b, ',');
        first = 0;
        queue_summary(q, b);
    }
    buf_puts(b, "]}");
}

void eph_get_stats(const eph *e, eph_stats *s)
{
    *s = e->st;
    s->bytes = e->node_bytes;
    uint64_t m = 0;
    for (size_t i = 0; i < e->nq; i++)
        if (e->qs[i])
            m += e->qs[i]->count;
    s->messages = m;
}
