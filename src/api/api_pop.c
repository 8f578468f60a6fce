/* api_pop.c — GET /api/v1/pop/queue/:queue[/partition/:partition] and /api/v1/pop?namespace=:
 * lease records to consumers. This file parses the query, and shapes the answers; the group
 * commit (lanes, merging, hints, the lease store call) is consume/popbatch.c.
 *
 * Conflation (last-value delivery, docs/consume.md): the group's stored policy is applied by
 * queen.pop_v2; this file refuses what can never conflate and echoes the policy on every answer
 * with a body (`conflation`, `conflationConflict`), so empty answers to such a pop have one.
 *
 * With wait=true a pop that got nothing parks in the wait queue until a push or an ack on any
 * node changes the queue, a lease over records expires, or its timeout passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "app.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "consume/autopilot.h"
#include "consume/popbatch.h"
#include "consume/popreq.h"
#include "consume/qpf.h"
#include "core/util.h"
#include "storage/payload.h"

typedef struct pop_ctx {
    pop_job job;         /* first: the group commit's handle (consume/popbatch.h) */
    http_req *http;
    app *a;
    pop_sizing sizing;   /* batch and width; with sizing.autopilot, echoed in every answer */
    int64_t retry_at;    /* µs: when records may become ready, from the last empty call */
    int echo_conf;       /* the answer says `conflation: true` (the group conflates) */
    int echo_conflict;   /* the answer says `conflationConflict: true` (the pop declared the other) */
    int wait;
    uint64_t deadline_ms;
    waiter w;
    /* the answer */
    buf msgs;
    int nmsgs;
    uuid lease;
    char first_part[300];
    char first_uuid[37];
    /* frames=true (not a namespace pop): the answer is QPF1 (consume/qpf.h) instead of msgs */
    int framed;
    qpf_writer qpf;
    int qpf_bad;         /* a message the format cannot carry: the pop answers an error */
    uint32_t qpf_skip;   /* records left of a producer frame already written as stored */
    buf qpf_tmp;         /* an opened sealed payload */
    buf qpf_errors;      /* payloadErrors entries of the answer's own keys */
} pop_ctx;

/* The autopilot echo (a 2.x pop that sent autopilot=true): what the broker used. */
static void put_autopilot(buf *b, const pop_ctx *c, int delivered)
{
    if (!c->sizing.autopilot)
        return;
    answer_pop_autopilot(b, 1, c->sizing.partitions, c->sizing.batch,
                         pop_wait_advice_ms(delivered, c->retry_at, wall_us()));
}

/* The conflation echo: what the last call said of the group's policy (before any call: what the
 * pop declared). A 2.x client that asked for conflation reads an answer without either key as
 * a broker that ignored it (ConflationUnsupportedError). */
static void put_conflation(buf *b, const pop_ctx *c)
{
    if (c->echo_conf)
        buf_puts(b, ",\"conflation\":true");
    if (c->echo_conflict)
        buf_puts(b, ",\"conflationConflict\":true");
}

static void take_policy(pop_ctx *c)
{
    if (!c->job.policy)
        return; /* queue mode, or a queue that does not exist (yet): the declaration stands */
    c->echo_conf = c->job.conflation;
    c->echo_conflict = c->job.conflict;
}

static void respond_empty(pop_ctx *c, int status, const char *error)
{
    if (status == 204 || !error) {
        if (!c->sizing.autopilot && !c->echo_conf && !c->echo_conflict) {
            http_respond(c->http, 204, NULL, "", 0);
            return;
        }
        /* an autopilot or conflation pop answers with a body even when empty: the echo rides on it */
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"success\":true,\"messages\":[]");
        put_autopilot(&b, c, 0);
        put_conflation(&b, c);
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
    put_conflation(&b, c);
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

static void qpf_drop(pop_ctx *c)
{
    if (!c->framed)
        return;
    qpf_free(&c->qpf);
    buf_free(&c->qpf_tmp);
    buf_free(&c->qpf_errors);
}

/* The QPF1 answer (consume/qpf.h); its own keys are the JSON answer's beside the messages. */
static void respond_framed(pop_ctx *c)
{
    if (c->qpf_bad) {
        qpf_drop(c);
        /* leased but not delivered: the lease expires and the records come back */
        http_respond_error_code(c->http, 422, "framed_pop_unencodable",
                                "a message cannot be carried by the framed answer (a transactionId or producer "
                                "longer than 65535 bytes); pop without frames=true");
        return;
    }
    buf e, out;
    buf_init(&e, 0);
    buf_init(&out, 0);
    buf_puts(&e, "{\"frames\":true");
    put_autopilot(&e, c, 1);
    put_conflation(&e, c);
    if (c->qpf_errors.len) {
        buf_puts(&e, ",\"payloadErrors\":[");
        buf_append(&e, c->qpf_errors.data, c->qpf_errors.len);
        buf_putc(&e, ']');
    }
    buf_putc(&e, '}');
    int rc = qpf_finish(&c->qpf, e.data, e.len, &out);
    buf_free(&e);
    buf_free(&c->qpf_tmp);
    buf_free(&c->qpf_errors);
    mc_add(&c->a->cm.pop_messages, (uint64_t)c->nmsgs);
    if (rc < 0)
        http_respond_error_code(c->http, 422, "framed_pop_unencodable", "the framed answer could not be built");
    else
        http_respond(c->http, 200, QPF_CONTENT_TYPE, out.data, out.len);
    buf_free(&out);
}

static void respond_messages(pop_ctx *c)
{
    take_policy(c);
    if (c->nmsgs == 0) {
        /* every record it claimed had been deleted; the lease store moved the cursor past them */
        buf_free(&c->msgs);
        qpf_drop(c);
        respond_empty(c, 204, NULL);
        return;
    }
    if (c->framed) {
        respond_framed(c);
        return;
    }
    pop_answer pa = {c->job.args.queue, c->first_part, c->first_uuid, c->job.args.auto_ack ? NULL : &c->lease,
                     c->job.args.group, c->job.claimed};
    buf b;
    buf_init(&b, 0);
    answer_pop_open(&b, &pa, c->msgs.data, c->msgs.len);
    put_autopilot(&b, c, 1);
    put_conflation(&b, c);
    buf_putc(&b, '}');
    buf_free(&c->msgs);
    mc_add(&c->a->cm.pop_messages, (uint64_t)c->nmsgs);
    http_respond_json(c->http, 200, &b);
    buf_free(&b);
}

/* A claim of a framed answer: the 2.x partitionId is our partition's u64 id (docs/http-api.md),
 * deliveryAttempt the cursor's retry count + 1. */
static void framed_claim(pop_ctx *c, const popped_partition *p)
{
    if (!c->qpf_bad && qpf_claim(&c->qpf, p->id, p->name, p->name_len, (uint64_t)p->start, (uint64_t)p->end - 1, p->attempt) < 0)
        c->qpf_bad = 1;
}

/* A message of a framed answer: the plaintext (a sealed payload opened here); one this node
 * cannot open goes as no payload (data null, as the JSON answer's) with its payloadError in the
 * answer's own keys. */
static void framed_record(pop_ctx *c, const popped_partition *p, const record_view *v, int64_t ts, const char *txn,
                          size_t tl)
{
    if (c->qpf_bad)
        return;
    if (c->qpf_skip) { /* inside a producer frame handed out as stored */
        c->qpf_skip--;
        return;
    }
    /* a producer's frame the claim covers whole goes out as stored (QPF1 codec 1): the client
     * reads the producer's own frames. Codec 1 is never sealed; a frame with a producer identity
     * is re-framed, since the stored frames do not carry it. */
    if (v->zchunk && v->zindex == 0 && !v->producer && (int64_t)v->offset >= p->start &&
        (int64_t)(v->offset + v->zcount) <= p->end) {
        if (qpf_stored(&c->qpf, v->offset, ts, v->zcount, v->zchunk, v->zchunk_len) < 0)
            c->qpf_bad = 1;
        c->qpf_skip = v->zcount - 1;
        return;
    }
    uuid mid;
    uuid_message_id(p->id, v->offset, &mid);
    const char *pl;
    size_t plen;
    enum seal_result why;
    if (record_payload_open(v, &c->qpf_tmp, &pl, &plen, &why) < 0) {
        char text[160];
        record_payload_error_text(v, why, text, sizeof text);
        if (c->qpf_errors.len)
            buf_putc(&c->qpf_errors, ',');
        buf_printf(&c->qpf_errors, "{\"partitionId\":\"%llu\",\"offset\":%llu,\"" PAYLOAD_ERROR_FIELD "\":",
                   (unsigned long long)p->id, (unsigned long long)v->offset);
        jw_cstr(&c->qpf_errors, text);
        buf_putc(&c->qpf_errors, '}');
        plen = 0;
    }
    if (qpf_message(&c->qpf, v->offset, ts, mid.b, v->trace, txn, tl, v->producer, v->producer ? v->producer_len : 0,
                    pl, plen) < 0)
        c->qpf_bad = 1;
}

/* Its n-th claim: the answer's first partition and lease come from the first. */
static void on_claim(pop_job *j, int n, const popped_partition *p, const uuid *lease)
{
    pop_ctx *c = (pop_ctx *)j;
    if (n != 1) {
        if (c->framed)
            framed_claim(c, p);
        return;
    }
    buf_init(&c->msgs, 0);
    c->nmsgs = 0;
    snprintf(c->first_part, sizeof c->first_part, "%.*s", (int)p->name_len, p->name);
    if (p->queue)
        c->job.args.queue = arena_strndup(&c->http->ar, p->queue, p->queue_len);
    format_uuid_text(p->uuid, c->first_uuid);
    c->lease = *lease;
    if (c->framed) {
        char ls[37] = "";
        if (!c->job.args.auto_ack)
            uuid_format(lease, ls);
        const char *q = c->job.args.queue, *g = c->job.args.group;
        buf_init(&c->qpf_tmp, 0);
        buf_init(&c->qpf_errors, 0);
        c->qpf_bad = qpf_begin(&c->qpf, 0, q, strlen(q), ls, strlen(ls), g, strlen(g)) < 0;
        framed_claim(c, p);
    }
}

static void on_record(pop_job *j, const popped_partition *p, const record_view *v, int64_t ts, const char *txn,
                      size_t tl, const uuid *lease)
{
    pop_ctx *c = (pop_ctx *)j;
    if (c->framed) {
        c->nmsgs++;
        framed_record(c, p, v, ts, txn, tl);
        return;
    }
    if (c->nmsgs++)
        buf_putc(&c->msgs, ',');
    answer_pop_message(&c->msgs, p, v, ts, txn, tl, c->job.args.auto_ack ? NULL : lease, c->job.args.group);
}

static void on_deliver(pop_job *j)
{
    respond_messages((pop_ctx *)j);
}

/* The call failed: the database's failure d, or (d NULL) 500 with msg. */
static void on_fail(pop_job *j, const db_req *d, const char *msg)
{
    pop_ctx *c = (pop_ctx *)j;
    buf_free(&c->msgs);
    qpf_drop(c);
    if (d) {
        respond_db_failure(c, d);
        return;
    }
    http_req *r = c->http;
    log_error("api", "request %s (%s %s): %s", r->request_id, r->method, http_route_pattern(r), msg);
    r->error_logged = 1;
    respond_empty(c, 500, msg);
}

static void on_wake(waiter *w, int timed_out)
{
    pop_ctx *c = w->arg;
    if (http_client_gone(c->http) || timed_out || c->a->shutting_down) {
        respond_empty(c, 204, NULL);
        return;
    }
    pop_job_submit(&c->job);
}

static void on_abandon(http_req *r)
{
    pop_ctx *c = r->abandon_arg;
    if (!pop_job_abandon(&c->job))
        return; /* the call in flight answers (and frees) */
    if (c->w.parked)
        waitq_unpark(c->a->wq, &c->w);
    http_respond(r, 204, NULL, "", 0);
}

/* Nothing for this pop in the call: wait for a change, or answer. */
static void on_nothing(pop_job *j, const pop_outcome *out)
{
    pop_ctx *c = (pop_ctx *)j;
    c->retry_at = out->retry_at;
    buf_free(&c->msgs);
    qpf_drop(c);
    c->nmsgs = 0;
    take_policy(c);
    if (strcmp(out->why, "conflation_with_auto_ack") == 0) {
        /* the group's stored policy conflates: an autoAck pop of it is refused, as one declaring both */
        http_respond_error_code(c->http, 400, "conflation_with_auto_ack",
                                "this consumer group conflates (its stored policy): autoAck cannot be combined with it");
        return;
    }
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
        const char *key = c->job.args.ns ? WAITQ_ANY_QUEUE : c->job.args.queue;
        waitq_park(c->a->wq, &c->w, c->job.args.tenant, key, strlen(key));
        return;
    }
    mc_add(&c->a->cm.pop_empty, 1);
    const char *why = out->why;
    /* a partition (or queue) that does not exist yet is an empty pop, as in the earlier
     * release, whose clients consume a partition while a buffered producer is still creating
     * it; with wait=true the pop parked above and the push that creates it wakes it */
    if (c->job.args.partition && strcmp(why, "lease_held") == 0) {
        respond_empty(c, 200, "lease_held");
    } else if (c->job.args.partition && strcmp(why, "window_buffer") == 0) {
        buf b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"success\":true,\"queue\":");
        jw_cstr(&b, c->job.args.queue);
        buf_puts(&b, ",\"partition\":");
        jw_cstr(&b, c->job.args.partition);
        buf_puts(&b, ",\"leaseId\":\"\",\"messages\":[],\"windowBufferActive\":true");
        put_conflation(&b, c);
        buf_putc(&b, '}');
        http_respond_json(c->http, 200, &b);
        buf_free(&b);
    } else {
        respond_empty(c, 204, NULL);
    }
}

static const pop_job_ops POP_OPS = {on_claim, on_record, on_nothing, on_deliver, on_fail};

/* A pop declaring conflation=true that could never conflate is refused before anything is
 * touched: conflation is a consumer group's policy (no group: 400), and last-value delivery
 * leases the newest record, which autoAck would not (400). Returns 1 when it answered. */
static int conflation_refused(http_req *r, const pop_request *pr)
{
    if (!pr->has_group) {
        http_respond_error_code(r, 400, "conflation_needs_group", "conflation is a consumer group's policy: name one");
        return 1;
    }
    if (pr->args.auto_ack) {
        http_respond_error_code(r, 400, "conflation_with_auto_ack", "conflation cannot be combined with autoAck");
        return 1;
    }
    return 0;
}

static void pop_route(http_req *r, const char *queue, const char *partition, const char *ns, const char *task)
{
    app *a = r->app;
    pop_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = a;
    pop_args *pa = &c->job.args;
    memcpy(pa->tenant, r->tenant, 16);
    pa->queue = queue;
    pa->partition = partition;
    pa->ns = ns;
    pa->task = task;
    pop_request pr;
    memset(&pr, 0, sizeof pr);
    pr.args = *pa;
    pop_defaults def = {a->cfg->default_batch, a->cfg->default_timeout_ms,
                        a->cfg->default_subscription_mode};
    qerr_detail err;
    qerr e = pop_request_read(&r->q, &def, &pr, &err);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        return;
    }
    *pa = pr.args;
    c->sizing = pr.sizing;
    c->wait = pr.wait;
    int64_t timeout = pr.timeout_ms;
    if (pr.conflation && conflation_refused(r, &pr))
        return;
    c->echo_conf = pr.conflation;
    c->framed = pr.frames == 1 && !ns;
    c->deadline_ms = mono_ms() + (uint64_t)timeout;
    c->job.ops = &POP_OPS;
    c->job.db = a->db;
    c->job.pops = &a->cm.pops;
    c->job.conflated = &a->cm.pop_conflated;
    pop_job_prepare(&c->job); /* its lane: hints, and merging when it wants one partition */
    r->on_abandon = on_abandon;
    r->abandon_arg = c;
    http_async(r);
    pop_job_submit(&c->job);
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
