/* api_pop.c — GET /api/v1/pop/queue/:queue[/partition/:partition]: lease records to a consumer.
 *
 * One pop is one call of queen.pop_v1 (claim and read), then, unless autoAck, one call of
 * queen.lease_store_v1 (the lease's transactionIds, so acks by transactionId find their
 * offsets). With wait=true an empty pop parks in the wait queue until a push or an ack on this
 * or another node changes the queue, a lease over records expires, or the timeout passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"

typedef struct pop_ctx {
    http_req *http;
    app *a;
    pop_args args;
    sql_params sp;
    db_req dbr;
    waiter w;
    uint64_t deadline_ms;
    int wait;
    int in_db;
    /* answer being built */
    buf msgs;
    int nmsgs;
    char lease_text[37];
    char first_part[300];
    char first_uuid[37];
    lease_store ls;
    uint64_t cur_pid;
    uint32_t cur_count;
    int have_part;
    int claimed;
} pop_ctx;

static void pop_run(pop_ctx *c);

static void respond_empty(pop_ctx *c, int status, const char *error)
{
    if (status == 204 || !error) {
        http_respond(c->http, 204, NULL, "", 0);
        return;
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":false,\"error\":");
    jw_cstr(&b, error);
    buf_puts(&b, ",\"messages\":[]}");
    http_respond_json(c->http, status, &b);
    buf_free(&b);
}

static void on_record(void *arg, const popped_partition *p, const record_view *v, int64_t ts)
{
    pop_ctx *c = arg;
    char pu[37];
    format_uuid_text(p->uuid, pu);
    if (!c->have_part || c->cur_pid != p->id) {
        if (c->have_part && !c->args.auto_ack)
            lease_store_add_partition(&c->ls, c->cur_pid, c->cur_count);
        if (!c->have_part) {
            snprintf(c->first_part, sizeof c->first_part, "%.*s", (int)p->name_len, p->name);
            snprintf(c->first_uuid, sizeof c->first_uuid, "%s", pu);
        }
        c->have_part = 1;
        c->cur_pid = p->id;
        c->cur_count = 0;
    }
    c->cur_count++;
    char txn[512];
    size_t tl = record_txn_text(v, txn, sizeof txn);
    if (!c->args.auto_ack)
        lease_store_add_txn(&c->ls, txn, tl);
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
    if (v->payload_len)
        buf_append(b, v->payload, v->payload_len);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"producerSub\":");
    if (v->producer)
        jw_string(b, v->producer, v->producer_len);
    else
        buf_puts(b, "null");
    char created[32];
    format_iso_us(ts, created);
    buf_printf(b, ",\"createdAt\":\"%s\",\"partitionId\":\"%s\",\"partition\":", created, pu);
    jw_string(b, p->name, p->name_len);
    buf_printf(b, ",\"leaseId\":\"%s\",\"consumerGroup\":", c->args.auto_ack ? "" : c->lease_text);
    jw_cstr(b, c->args.group);
    buf_putc(b, '}');
}

static void respond_messages(pop_ctx *c)
{
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":true,\"queue\":");
    jw_cstr(&b, c->args.queue);
    buf_puts(&b, ",\"partition\":");
    jw_cstr(&b, c->first_part);
    buf_printf(&b, ",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"consumerGroup\":", c->first_uuid,
               c->args.auto_ack ? "" : c->lease_text);
    jw_cstr(&b, c->args.group);
    buf_printf(&b, ",\"partitionsClaimed\":%d,\"messages\":[", c->claimed);
    buf_append(&b, c->msgs.data, c->msgs.len);
    buf_puts(&b, "]}");
    http_respond_json(c->http, 200, &b);
    buf_free(&b);
    buf_free(&c->msgs);
}

static void on_stored(db_req *d)
{
    pop_ctx *c = d->arg;
    c->in_db = 0;
    lease_store_free(&c->ls);
    if (d->err != DB_OK) {
        /* the records are leased but cannot be acked by transactionId; they come back when the
         * lease expires. Say so rather than hand out messages that cannot be acked. */
        db_req_clear(d);
        buf_free(&c->msgs);
        http_respond_error(c->http, d->err == DB_SQL ? 500 : 503, "%s", d->errmsg);
        return;
    }
    db_req_clear(d);
    respond_messages(c);
}

static void on_wake(waiter *w, int timed_out)
{
    pop_ctx *c = w->arg;
    if (http_client_gone(c->http)) {
        http_respond(c->http, 204, NULL, "", 0);
        return;
    }
    if (timed_out || c->a->shutting_down) {
        respond_empty(c, 204, NULL);
        return;
    }
    pop_run(c);
}

static void on_abandon(http_req *r)
{
    pop_ctx *c = r->abandon_arg;
    if (c->in_db)
        return; /* the database callback answers (and frees) */
    if (c->w.parked)
        waitq_unpark(c->a->wq, &c->w);
    http_respond(r, 204, NULL, "", 0);
}

static void park(pop_ctx *c, int64_t retry_at_us)
{
    c->w.wake = on_wake;
    c->w.arg = c;
    c->w.deadline_ms = c->deadline_ms;
    c->w.recheck_ms = 0;
    if (retry_at_us > 0) {
        int64_t in_ms = (retry_at_us - wall_us()) / 1000 + 5;
        c->w.recheck_ms = mono_ms() + (uint64_t)(in_ms > 0 ? in_ms : 0);
    }
    waitq_park(c->a->wq, &c->w, c->args.tenant, c->args.queue, strlen(c->args.queue));
}

static void on_popped(db_req *d)
{
    pop_ctx *c = d->arg;
    c->in_db = 0;
    sql_params_free(&c->sp);
    if (d->err != DB_OK || !d->res[0]) {
        int st = d->err == DB_SQL ? 500 : 503;
        char msg[600];
        snprintf(msg, sizeof msg, "%s", d->errmsg);
        db_req_clear(d);
        respond_empty(c, st, msg);
        return;
    }
    pop_outcome out;
    buf_init(&c->msgs, 0);
    c->nmsgs = 0;
    c->have_part = 0;
    if (!c->args.auto_ack)
        lease_store_init(&c->ls, c->args.group, &c->args.lease_id);
    int rc = pop_decode(d->res[0], on_record, c, &out);
    db_req_clear(d);
    if (rc < 0) {
        if (!c->args.auto_ack)
            lease_store_free(&c->ls);
        buf_free(&c->msgs);
        respond_empty(c, 500, "a stored segment could not be decoded");
        return;
    }
    if (out.claimed > 0 && c->nmsgs > 0) {
        c->claimed = out.claimed;
        if (c->args.auto_ack) {
            respond_messages(c);
            return;
        }
        lease_store_add_partition(&c->ls, c->cur_pid, c->cur_count);
        lease_store_finish(&c->ls, c->args.group);
        memset(&c->dbr, 0, sizeof c->dbr);
        c->dbr.nstmt = 1;
        c->dbr.stmt[0] = (db_stmt){LEASE_STORE_SQL, c->ls.sp.n, c->ls.sp.values, c->ls.sp.lengths,
                                   c->ls.sp.formats, 0};
        c->dbr.done = on_stored;
        c->dbr.arg = c;
        c->in_db = 1;
        if (db_submit(c->a->db, &c->dbr) < 0) {
            c->in_db = 0;
            lease_store_free(&c->ls);
            buf_free(&c->msgs);
            http_respond_error(c->http, 503, "%s", c->dbr.errmsg);
        }
        return;
    }
    if (!c->args.auto_ack)
        lease_store_free(&c->ls);
    buf_free(&c->msgs);
    if (c->wait && mono_ms() < c->deadline_ms && !c->a->shutting_down) {
        park(c, out.retry_at);
        return;
    }
    if (strcmp(out.why, "partition_not_found") == 0 ||
        (c->args.partition && strcmp(out.why, "queue_not_found") == 0)) {
        respond_empty(c, 404, "partition_not_found");
    } else if (c->args.partition && strcmp(out.why, "lease_held") == 0) {
        respond_empty(c, 200, "lease_held");
    } else if (c->args.partition && strcmp(out.why, "window_buffer") == 0) {
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

static void pop_run(pop_ctx *c)
{
    uuid_v7(&c->args.lease_id);
    uuid_format(&c->args.lease_id, c->lease_text);
    pop_params(&c->args, &c->sp);
    memset(&c->dbr, 0, sizeof c->dbr);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){POP_SQL, c->sp.n, c->sp.values, c->sp.lengths, c->sp.formats, 1};
    c->dbr.done = on_popped;
    c->dbr.arg = c;
    c->in_db = 1;
    if (db_submit(c->a->db, &c->dbr) < 0) {
        c->in_db = 0;
        sql_params_free(&c->sp);
        respond_empty(c, 503, c->dbr.errmsg);
    }
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

/* integer in [lo, hi]; absent → def; bad → -1 with *ok = 0 */
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

static void pop_route(http_req *r, const char *queue, const char *partition)
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
    const char *g = http_query(r, "consumerGroup");
    pa->group = g && *g ? g : QUEUE_MODE_GROUP;
    int ok = 1;
    pa->batch = query_int(r, "batch", a->cfg->default_batch, 1, POP_MAX_BATCH, &ok);
    if (!ok) {
        http_respond_error(r, 400, "batch must be an integer between 1 and %d", POP_MAX_BATCH);
        return;
    }
    pa->max_partitions = partition ? 1 : query_int(r, "partitions", 1, 1, POP_MAX_PARTITIONS, &ok);
    if (!ok) {
        http_respond_error(r, 400, "partitions must be an integer between 1 and %d", POP_MAX_PARTITIONS);
        return;
    }
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
    r->on_abandon = on_abandon;
    r->abandon_arg = c;
    http_async(r);
    pop_run(c);
}

void api_pop_queue(http_req *r)
{
    pop_route(r, r->params[0], NULL);
}

void api_pop_partition(http_req *r)
{
    pop_route(r, r->params[0], r->params[1]);
}
