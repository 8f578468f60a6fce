/* api_pop.c — GET /api/v1/pop/queue/:queue[/partition/:partition]: lease records to consumers.
 *
 * Group commit for pops. Pops of one queue that ask for the same thing (group, batch, autoAck,
 * subscription) share a lane; the first runs at once, and the pops that arrive while it is in
 * flight run together as one call of queen.pop_v1 that claims one partition per pop, so one
 * commit (durable for autoAck) serves them all. A pop of a named partition, or of several
 * partitions, runs on its own.
 *
 * Unless autoAck, a second call (queen.lease_store_v1) records the transactionIds each lease
 * delivered, so acks by transactionId find their offsets. With wait=true a pop that got nothing
 * parks in the wait queue until a push or an ack on any node changes the queue, a lease over
 * records expires, or its timeout passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/idring.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "consume/autopilot.h"
#include "core/util.h"
#include "storage/payload.h"

/* Pops merged into one call at most: one partition each, so more than a queue's partitions
 * only adds empty answers; 32 keeps the lease array and the answer of one call small. */
#define POP_MERGE_MAX 32
/* Partition hints a lane remembers (ids with records, most likely); beyond that the scan
 * that pops fall back to finds the rest. */
#define HINTS_MAX 4096
/* A lane scans its queue at least this often even while hints keep it busy, so a partition
 * that no hint names (records pushed through another node) is never starved. */
#define FULL_SCAN_EVERY_MS 500

typedef struct pop_lane pop_lane;
typedef struct pop_ctx pop_ctx;

struct pop_ctx {
    http_req *http;
    app *a;
    pop_args args;
    pop_sizing sizing;   /* batch and width; with sizing.autopilot, echoed in every answer */
    int64_t retry_at;    /* µs: when records may become ready, from the last empty call */
    int wait;
    int mergeable;
    uint64_t deadline_ms;
    waiter w;
    pop_lane *lane;
    int queued;          /* waiting in its lane for the next call */
    int in_db;           /* part of a call in flight */
    pop_ctx *next;
    /* the answer */
    buf msgs;
    int nmsgs;
    int claimed;
    uuid lease;
    char first_part[300];
    char first_uuid[37];
};

struct pop_lane {
    int busy;
    pop_ctx *head, *tail;
    int n;
    idring hints;
    uint64_t last_scan_ms;
    pop_lane *next_of_queue; /* lanes of the same (tenant, queue), for push hints */
};

typedef struct pop_batch {
    app *a;
    pop_lane *lane;      /* hints come from here (NULL: a named partition or namespace pop) */
    int merged;          /* pops merged into this call: claim k is request k's */
    pop_ctx *reqs[POP_MERGE_MAX];
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
    int claimed;
} pop_batch;

/* lanes by key; keys and lanes live as long as the process (one per queue/group/shape used) */
static strmap g_lanes;
static strmap g_queue_lanes; /* tenant + queue → index of the newest lane of that queue */
static arena g_lane_mem;
static pop_lane **g_lane_list;
static uint32_t g_nlanes, g_lane_cap;

static void pop_submit(pop_ctx *c);
static void batch_start(app *a, pop_lane *lane, pop_ctx **reqs, int n);

static pop_lane *lane_for(const pop_ctx *c)
{
    const pop_args *p = &c->args;
    buf k;
    buf_init(&k, 0);
    buf_append(&k, p->tenant, 16);
    buf_printf(&k, "%s%c%s%c%lld%c%d%c%s%c%lld%c%lld%c%lld", p->queue, 0, p->group, 0, (long long)p->batch, 0,
               p->auto_ack, 0, p->sub_mode ? p->sub_mode : "", 0, (long long)p->sub_from, 0,
               (long long)p->lease_seconds, 0, (long long)p->max_partitions);
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

void api_pop_hint(const uint8_t tenant[16], const char *queue, size_t qlen, uint64_t partition_id)
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

/* The autopilot echo (a 2.x pop that sent autopilot=true): what the broker used. */
static void put_autopilot(buf *b, const pop_ctx *c, int delivered)
{
    if (!c->sizing.autopilot)
        return;
    buf_printf(b, ",\"autopilot\":{\"partitions\":%lld,\"batch\":%lld,\"waitMs\":%lld}",
               (long long)c->sizing.partitions, (long long)c->sizing.batch,
               (long long)pop_wait_advice_ms(delivered, c->retry_at, wall_us()));
}

static void respond_empty(pop_ctx *c, int status, const char *error)
{
    if (status == 204 || !error) {
        if (!c->sizing.autopilot) {
            http_respond(c->http, 204, NULL, "", 0);
            return;
        }
        /* an autopilot pop answers with a body even when empty: the echo rides on it */
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"success\":true,\"messages\":[]");
        put_autopilot(&b, c, 0);
        buf_putc(&b, '}');
        http_respond_json(c->http, 200, &b);
        buf_free(&b);
        return;
    }
    buf b;
    buf_init(&b, 0);
    if (status >= 400) {
        http_error_open(&b, c->http, status, NULL, error);
        buf_puts(&b, ",\"success\":false,\"messages\":[]}");
        http_respond_json(c->http, status, &b);
        buf_free(&b);
        return;
    }
    /* a pop that found nothing it may take (lease_held): the earlier release's 200 shape */
    buf_puts(&b, "{\"success\":false,\"error\":");
    jw_cstr(&b, error);
    buf_puts(&b, ",\"messages\":[]");
    put_autopilot(&b, c, 0);
    buf_putc(&b, '}');
    http_respond_json(c->http, status, &b);
    buf_free(&b);
}

/* A failed call: the error shape with the pop's own fields, and no database text (app.h). */
static void respond_db_failure(pop_ctx *c, const db_req *d)
{
    int status;
    const char *code, *sentence;
    api_db_error_status(d, &status, &code, &sentence);
    api_log_db_error(c->http, d);
    buf b;
    buf_init(&b, 0);
    http_error_open(&b, c->http, status, code, sentence);
    buf_puts(&b, ",\"success\":false,\"messages\":[]}");
    http_respond_json(c->http, status, &b);
    buf_free(&b);
}

static void respond_messages(pop_ctx *c)
{
    if (c->nmsgs == 0) {
        /* every record it claimed had been deleted; the lease store moved the cursor past them */
        buf_free(&c->msgs);
        respond_empty(c, 204, NULL);
        return;
    }
    char lease[37] = "";
    if (!c->args.auto_ack)
        uuid_format(&c->lease, lease);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":true,\"queue\":");
    jw_cstr(&b, c->args.queue);
    buf_puts(&b, ",\"partition\":");
    jw_cstr(&b, c->first_part);
    buf_printf(&b, ",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"consumerGroup\":", c->first_uuid, lease);
    jw_cstr(&b, c->args.group);
    buf_printf(&b, ",\"partitionsClaimed\":%d,\"messages\":[", c->claimed);
    buf_append(&b, c->msgs.data, c->msgs.len);
    buf_putc(&b, ']');
    put_autopilot(&b, c, 1);
    buf_putc(&b, '}');
    buf_free(&c->msgs);
    mc_add(&c->a->cm.pop_messages, (uint64_t)c->nmsgs);
    http_respond_json(c->http, 200, &b);
    buf_free(&b);
}

static void on_record(void *arg, const popped_partition *p, const record_view *v, int64_t ts)
{
    pop_batch *bt = arg;
    /* merged pops: claim k belongs to request k; a pop run on its own owns every claim */
    pop_ctx *c = bt->merged ? bt->reqs[p->index] : bt->reqs[0];
    const uuid *lease = &bt->leases[bt->merged ? p->index : 0];
    char pu[37];
    format_uuid_text(p->uuid, pu);
    if (bt->cur_index != p->index) {
        if (bt->cur_index >= 0 && !bt->args.auto_ack)
            lease_store_add_partition(&bt->ls, &bt->leases[bt->merged ? bt->cur_index : 0], bt->cur_pid,
                                      bt->cur_count);
        bt->cur_index = p->index;
        bt->cur_pid = p->id;
        bt->cur_count = 0;
        if (c->claimed++ == 0) {
            snprintf(c->first_part, sizeof c->first_part, "%.*s", (int)p->name_len, p->name);
            if (p->queue)
                c->args.queue = arena_strndup(&c->http->ar, p->queue, p->queue_len);
            snprintf(c->first_uuid, sizeof c->first_uuid, "%s", pu);
            c->lease = *lease;
        }
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
    buf *b = &c->msgs;
    if (c->nmsgs++)
        buf_putc(b, ',');
    uuid mid;
    uuid_message_id(p->id, v->offset, &mid);
    char ms[37];
    uuid_format(&mid, ms);
    buf_printf(b, "{\"id\":\"%s\",\"transactionId\":", ms);
    jw_string(b, txn, tl);
    buf_puts(b, ",\"traceId\":");
    if (v->trace) {
        char t[37];
        format_uuid_text(v->trace, t);
        jw_cstr(b, t);
    } else {
        buf_puts(b, "null");
    }
    buf_puts(b, ",\"data\":");
    record_payload_json(b, v); /* the plaintext, or null and payloadError */
    buf_puts(b, ",\"producerSub\":");
    if (v->producer)
        jw_string(b, v->producer, v->producer_len);
    else
        buf_puts(b, "null");
    char created[32], ls[37] = "";
    format_iso_us(ts, created);
    if (!bt->args.auto_ack)
        uuid_format(lease, ls);
    buf_printf(b, ",\"createdAt\":\"%s\",\"partitionId\":\"%s\",\"partition\":", created, pu);
    jw_string(b, p->name, p->name_len);
    buf_printf(b, ",\"leaseId\":\"%s\",\"consumerGroup\":", ls);
    jw_cstr(b, c->args.group);
    if (p->queue) {
        /* a namespace pop spans queues: each message names its own */
        buf_puts(b, ",\"queue\":");
        jw_string(b, p->queue, p->queue_len);
    }
    buf_putc(b, '}');
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

static void on_wake(waiter *w, int timed_out)
{
    pop_ctx *c = w->arg;
    if (http_client_gone(c->http) || timed_out || c->a->shutting_down) {
        respond_empty(c, 204, NULL);
        return;
    }
    pop_submit(c);
}

static void on_abandon(http_req *r)
{
    pop_ctx *c = r->abandon_arg;
    if (c->in_db)
        return; /* the call in flight answers (and frees) */
    if (c->w.parked)
        waitq_unpark(c->a->wq, &c->w);
    if (c->queued) {
        pop_lane *l = c->lane;
        pop_ctx **pp = &l->head;
        while (*pp && *pp != c)
            pp = &(*pp)->next;
        if (*pp) {
            *pp = c->next;
            l->n--;
            l->tail = NULL;
            for (pop_ctx *x = l->head; x; x = x->next)
                l->tail = x;
        }
        c->queued = 0;
    }
    http_respond(r, 204, NULL, "", 0);
}

/* Nothing for this pop in the call: wait for a change, or answer. */
static void nothing_for(pop_ctx *c, const pop_outcome *out)
{
    c->retry_at = out->retry_at;
    buf_free(&c->msgs);
    c->nmsgs = 0;
    c->claimed = 0;
    if (c->wait && mono_ms() < c->deadline_ms && !c->a->shutting_down && !http_client_gone(c->http)) {
        mc_add(&c->a->cm.pop_waits, 1);
        c->w.wake = on_wake;
        c->w.arg = c;
        c->w.deadline_ms = c->deadline_ms;
        c->w.recheck_ms = 0;
        if (out->retry_at > 0) {
            int64_t in_ms = (out->retry_at - wall_us()) / 1000 + 5;
            c->w.recheck_ms = mono_ms() + (uint64_t)(in_ms > 0 ? in_ms : 0);
        }
        const char *key = c->args.ns ? WAITQ_ANY_QUEUE : c->args.queue;
        waitq_park(c->a->wq, &c->w, c->args.tenant, key, strlen(key));
        return;
    }
    mc_add(&c->a->cm.pop_empty, 1);
    const char *why = out->why;
    /* a partition (or queue) that does not exist yet is an empty pop, as in the earlier
     * release, whose clients consume a partition while a buffered producer is still creating
     * it; with wait=true the pop parked above and the push that creates it wakes it */
    if (c->args.partition && strcmp(why, "lease_held") == 0) {
        respond_empty(c, 200, "lease_held");
    } else if (c->args.partition && strcmp(why, "window_buffer") == 0) {
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"success\":true,\"queue\":");
        jw_cstr(&b, c->args.queue);
        buf_puts(&b, ",\"partition\":");
        jw_cstr(&b, c->args.partition);
        buf_puts(&b, ",\"leaseId\":\"\",\"messages\":[],\"windowBufferActive\":true}");
        http_respond_json(c->http, 200, &b);
        buf_free(&b);
    } else {
        respond_empty(c, 204, NULL);
    }
}

static void batch_free(pop_batch *bt)
{
    free(bt);
}

/* The lane may start its next call once this one's claims are committed. */
static void lane_release(app *a, pop_lane *l)
{
    if (!l)
        return;
    l->busy = 0;
    if (!l->head)
        return;
    pop_ctx *reqs[POP_MERGE_MAX];
    int n = 0;
    while (l->head && n < POP_MERGE_MAX) {
        pop_ctx *c = l->head;
        l->head = c->next;
        c->next = NULL;
        c->queued = 0;
        l->n--;
        reqs[n++] = c;
    }
    if (!l->head)
        l->tail = NULL;
    batch_start(a, l, reqs, n);
}

/* Answers every pop of the call: the database's failure d, or (d NULL) 500 with msg. */
static void batch_fail(pop_batch *bt, const db_req *d, const char *msg)
{
    for (int i = 0; i < bt->n; i++) {
        bt->reqs[i]->in_db = 0;
        buf_free(&bt->reqs[i]->msgs);
        if (d) {
            respond_db_failure(bt->reqs[i], d);
        } else {
            http_req *r = bt->reqs[i]->http;
            log_error("api", "request %s (%s %s): %s", r->request_id, r->method, http_route_pattern(r), msg);
            r->error_logged = 1;
            respond_empty(bt->reqs[i], 500, msg);
        }
    }
}

static void on_stored(db_req *d)
{
    pop_batch *bt = d->arg;
    lease_store_free(&bt->ls);
    int ok = d->err == DB_OK;
    db_req_clear(d); /* the results; the error fields stay */
    for (int i = 0; i < bt->n; i++) {
        pop_ctx *c = bt->reqs[i];
        if (!c)
            continue;
        c->in_db = 0;
        if (ok) {
            respond_messages(c);
        } else {
            /* leased but not ackable by transactionId: the lease expires and the records come
             * back; say so rather than hand out messages that cannot be acked */
            buf_free(&c->msgs);
            respond_db_failure(c, d);
        }
    }
    batch_free(bt);
}

static void on_popped(db_req *d)
{
    pop_batch *bt = d->arg;
    app *a = bt->a;
    sql_params_free(&bt->sp);
    if (d->err != DB_OK || !d->res[0]) {
        db_req_clear(d);
        pop_lane *l = bt->merged ? bt->lane : NULL;
        batch_fail(bt, d, NULL);
        batch_free(bt);
        lane_release(a, l);
        return;
    }
    pop_outcome out;
    bt->cur_index = -1;
    if (!bt->args.auto_ack)
        lease_store_init(&bt->ls);
    for (int i = 0; i < bt->n; i++) {
        buf_init(&bt->reqs[i]->msgs, 0);
        bt->reqs[i]->nmsgs = 0;
        bt->reqs[i]->claimed = 0;
    }
    int rc = pop_decode(d->res[0], on_record, on_partition, bt, &out);
    db_req_clear(d);
    pop_lane *l = bt->merged ? bt->lane : NULL;
    if (rc < 0) {
        if (!bt->args.auto_ack)
            lease_store_free(&bt->ls);
        batch_fail(bt, NULL, "a stored segment could not be decoded");
        batch_free(bt);
        lane_release(a, l);
        return;
    }
    mc_add(&a->cm.pops, (uint64_t)bt->n);
    bt->claimed = out.claimed;
    /* answer (or park) the pops that got nothing now; the others after the lease store */
    for (int i = 0; i < bt->n; i++) {
        pop_ctx *c = bt->reqs[i];
        if (c->claimed == 0) {
            /* answered or parked now: no longer part of this call (it may even be freed) */
            bt->reqs[i] = NULL;
            c->in_db = 0;
            nothing_for(c, &out);
        }
    }
    if (out.claimed > 0 && bt->args.auto_ack) {
        for (int i = 0; i < bt->n; i++)
            if (bt->reqs[i]) {
                bt->reqs[i]->in_db = 0;
                respond_messages(bt->reqs[i]);
            }
        batch_free(bt);
    } else if (out.claimed > 0) {
        lease_store_add_partition(&bt->ls, &bt->leases[bt->merged ? bt->cur_index : 0], bt->cur_pid, bt->cur_count);
        lease_store_finish(&bt->ls, bt->args.group);
        memset(&bt->dbr, 0, sizeof bt->dbr);
        bt->dbr.nstmt = 1;
        bt->dbr.stmt[0] = (db_stmt){LEASE_STORE_SQL, bt->ls.sp.n, bt->ls.sp.values, bt->ls.sp.lengths,
                                    bt->ls.sp.formats, 0};
        bt->dbr.done = on_stored;
        bt->dbr.arg = bt;
        if (db_submit(a->db, &bt->dbr) < 0) {
            lease_store_free(&bt->ls);
            for (int i = 0; i < bt->n; i++) {
                pop_ctx *c = bt->reqs[i];
                if (c) {
                    c->in_db = 0;
                    buf_free(&c->msgs);
                    respond_db_failure(c, &bt->dbr);
                }
            }
            batch_free(bt);
        }
    } else {
        if (!bt->args.auto_ack)
            lease_store_free(&bt->ls);
        batch_free(bt);
    }
    lane_release(a, l);
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

/* One call of pop_v1 for n pops: merged (claim k for pop k) when they came through a lane's
 * queue and each wants one partition; otherwise n is 1 and the pop owns every claim. */
static void batch_start(app *a, pop_lane *lane, pop_ctx **reqs, int n)
{
    pop_batch *bt = xcalloc(1, sizeof *bt);
    bt->a = a;
    bt->n = n;
    for (int i = 0; i < n; i++) {
        bt->reqs[i] = reqs[i];
        reqs[i]->in_db = 1;
        uuid_v7(&bt->leases[i]);
    }
    bt->args = reqs[0]->args;
    bt->args.leases = bt->leases;
    bt->merged = lane != NULL;
    bt->lane = lane ? lane : reqs[0]->lane;
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
    if (db_submit(a->db, &bt->dbr) < 0) {
        sql_params_free(&bt->sp);
        batch_fail(bt, &bt->dbr, NULL);
        batch_free(bt);
        if (lane)
            lane->busy = 0;
    }
}

static void pop_submit(pop_ctx *c)
{
    if (!c->mergeable) {
        pop_ctx *one[1] = {c};
        batch_start(c->a, NULL, one, 1);
        return;
    }
    pop_lane *l = c->lane;
    if (!l->busy) {
        pop_ctx *one[1] = {c};
        batch_start(c->a, l, one, 1);
        return;
    }
    c->next = NULL;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->n++;
    c->queued = 1;
}

/* "true"/"1"/"yes" (any case) → 1, "false"/"0"/"no" → 0, absent → def, else -1 */
static int query_bool(http_req *r, const char *name, int def)
{
    const char *v = http_query(r, name);
    if (!v || !*v)
        return def;
    size_t n = strlen(v);
    if (ascii_ieq(v, n, "true") || ascii_ieq(v, n, "1") || ascii_ieq(v, n, "yes"))
        return 1;
    if (ascii_ieq(v, n, "false") || ascii_ieq(v, n, "0") || ascii_ieq(v, n, "no"))
        return 0;
    return -1;
}

/* integer in [lo, hi]; absent → def; bad → def with *ok = 0 */
static int64_t query_int(http_req *r, const char *name, int64_t def, int64_t lo, int64_t hi, int *ok)
{
    const char *v = http_query(r, name);
    if (!v || !*v)
        return def;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end || x < lo || x > hi) {
        *ok = 0;
        return def;
    }
    return x;
}

/* conflation=true (last-value delivery) is not served yet. A pop asking for it is refused
 * without touching the queue: 400 when the request could never conflate (no consumer group,
 * or autoAck, as a broker with conflation refuses it), otherwise an empty 200 answer whose
 * `conflation` is false — the 2.x client reads the missing echo as ConflationUnsupportedError
 * on its first poll and stops, instead of draining a backlog one message at a time. Nothing
 * is leased, committed or waited for. Returns 1 when it answered. */
static int conflation_refused_or_respond(pop_ctx *c, int has_group)
{
    http_req *r = c->http;
    if (!has_group) {
        http_respond_error_code(r, 400, "conflation_needs_group", "conflation is a consumer group's policy: name one");
        return 1;
    }
    if (c->args.auto_ack) {
        http_respond_error_code(r, 400, "conflation_with_auto_ack", "conflation cannot be combined with autoAck");
        return 1;
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":false,\"messages\":[],\"conflation\":false,\"code\":\"conflation_unsupported\","
                 "\"error\":\"conflation (last-value delivery) is not supported by this broker; nothing was delivered\"");
    put_autopilot(&b, c, 0);
    buf_putc(&b, '}');
    http_respond_json(r, 200, &b);
    buf_free(&b);
    return 1;
}

static void pop_route(http_req *r, const char *queue, const char *partition, const char *ns, const char *task)
{
    app *a = r->app;
    pop_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = a;
    pop_args *pa = &c->args;
    memcpy(pa->tenant, r->tenant, 16);
    pa->queue = queue;
    pa->partition = partition;
    pa->ns = ns;
    pa->task = task;
    const char *g = http_query(r, "consumerGroup");
    pa->group = g && *g ? g : QUEUE_MODE_GROUP;
    int ok = 1;
    /* the 2.x knobs: autopilot sizes what the client left unset (consume/autopilot.h) */
    pop_sizing *sz = &c->sizing;
    sz->autopilot = query_bool(r, "autopilot", 0);
    int conflation = query_bool(r, "conflation", 0);
    int frames = query_bool(r, "frames", 0); /* the framed answer is not served: JSON, the documented fallback */
    if (sz->autopilot < 0 || conflation < 0 || frames < 0) {
        http_respond_error_code(r, 400, "invalid_request", "autopilot, conflation and frames must be true or false");
        return;
    }
    sz->batch = query_int(r, "batch", 0, 1, POP_MAX_BATCH, &ok);
    if (!ok) {
        http_respond_error(r, 400, "batch must be an integer between 1 and %d", POP_MAX_BATCH);
        return;
    }
    sz->partitions = partition ? 1 : query_int(r, "partitions", 0, 1, POP_MAX_PARTITIONS, &ok);
    if (!ok) {
        http_respond_error(r, 400, "partitions must be an integer between 1 and %d", POP_MAX_PARTITIONS);
        return;
    }
    sz->batch_set = sz->batch > 0;
    sz->partitions_set = sz->partitions > 0;
    pop_size(sz, a->cfg->default_batch, POP_MAX_BATCH, POP_MAX_PARTITIONS);
    pa->batch = sz->batch;
    pa->max_partitions = sz->partitions;
    int64_t timeout = query_int(r, "timeout", a->cfg->default_timeout_ms, 0, 3600000, &ok);
    if (!ok) {
        http_respond_error(r, 400, "timeout must be an integer number of milliseconds between 0 and 3600000");
        return;
    }
    c->wait = query_bool(r, "wait", 0);
    pa->auto_ack = query_bool(r, "autoAck", 0);
    if (c->wait < 0 || pa->auto_ack < 0) {
        http_respond_error(r, 400, "wait and autoAck must be true or false");
        return;
    }
    if (conflation && conflation_refused_or_respond(c, g && *g))
        return;
    const char *mode = http_query(r, "subscriptionMode");
    if ((!mode || !*mode) && (a->cfg->default_subscription_mode == 1 || a->cfg->default_subscription_mode == 2))
        mode = "new";
    const char *from = http_query(r, "subscriptionFrom");
    if (from && *from) {
        if (strcmp(from, "now") == 0) {
            pa->sub_mode = "new";
        } else if (parse_iso_us(from, strlen(from), &pa->sub_from) < 0) {
            http_respond_error(r, 400, "subscriptionFrom must be 'now' or an ISO-8601 timestamp");
            return;
        }
    }
    /* "new" and its synonym "new-only" start at now; every other mode (all, from_beginning, ...)
     * reads from the beginning, as the earlier release did */
    if (mode && *mode && (ascii_ieq(mode, strlen(mode), "new") || ascii_ieq(mode, strlen(mode), "new-only")))
        pa->sub_mode = "new";
    c->deadline_ms = mono_ms() + (uint64_t)timeout;
    c->mergeable = !partition && !ns && pa->max_partitions == 1;
    if (!partition && !ns)
        c->lane = lane_for(c); /* hints, and merging when mergeable */
    r->on_abandon = on_abandon;
    r->abandon_arg = c;
    http_async(r);
    pop_submit(c);
}

void api_pop_queue(http_req *r)
{
    pop_route(r, r->params[0], NULL, NULL, NULL);
}

void api_pop_partition(http_req *r)
{
    pop_route(r, r->params[0], r->params[1], NULL, NULL);
}

/* GET /api/v1/pop?namespace=&task= — documented by the earlier release and called by its
 * clients, never served by it: a pop over the queues of a namespace (and task). */
void api_pop_namespace(http_req *r)
{
    const char *ns = http_query(r, "namespace");
    const char *task = http_query(r, "task");
    if (!ns || !*ns) {
        http_respond_error(r, 400, "namespace is required (pop by queue with /api/v1/pop/queue/:queue)");
        return;
    }
    pop_route(r, "", NULL, ns, task && *task ? task : NULL);
}
