/* api_dlq.c — the dead letters: GET /api/v1/dlq (filtered, paged, with a total),
 * POST /api/v1/dlq/:id/requeue (append the record again through the normal push path),
 * DELETE /api/v1/dlq/:id.
 *
 * A dead letter keeps its own copy of the record's bytes (one encoded record, see
 * storage/record.h); it is decoded in C, as the log's segments are (the answers' JSON:
 * admin/answers_messages.c, pure). Paging applies LIMIT/OFFSET to rows (the earlier release
 * applied them after aggregation, so any offset returned nothing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/answers_messages.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "storage/payload.h"

/* ---- GET /api/v1/dlq --------------------------------------------------------------------- */

typedef struct dlq_list_ctx {
    const char *queue;
    int64_t limit, offset;
} dlq_list_ctx;

static void on_dlq_list(api_query *q, PGresult *const *res)
{
    dlq_list_ctx *c = q->arg;
    buf b;
    buf_init(&b, 0);
    if (answer_dlq_list(&b, res[0], c->limit, c->offset) > 0)
        http_respond_error(q->http, 404, "queue not found: %s", c->queue);
    else
        http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_dlq_list(http_req *r)
{
    dlq_list_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    int64_t from = 0, to = 0;
    int has_from, has_to, requeued = -1;
    if (api_query_int_or_respond(r, "limit", 100, 1, ADMIN_DLQ_MAX_LIMIT, &c->limit) < 0 ||
        api_query_int_or_respond(r, "offset", 0, 0, ADMIN_DLQ_MAX_OFFSET, &c->offset) < 0 ||
        api_query_time_or_respond(r, "from", &from, &has_from) < 0 ||
        api_query_time_or_respond(r, "to", &to, &has_to) < 0 ||
        api_query_bool_or_respond(r, "requeued", -1, &requeued) < 0)
        return;
    c->queue = api_query_str(r, "queue");
    api_query *q = api_query_new(r, on_dlq_list, c);
    int s = api_query_stmt(q, ADMIN_DLQ_LIST_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->queue);
    api_param_text(q, s, api_query_str(r, "consumerGroup"));
    api_param_text(q, s, api_query_str(r, "partition"));
    if (has_from)
        api_param_i64(q, s, from);
    else
        api_param_null(q, s);
    if (has_to)
        api_param_i64(q, s, to);
    else
        api_param_null(q, s);
    api_param_i64(q, s, c->limit);
    api_param_i64(q, s, c->offset);
    if (requeued < 0)
        api_param_null(q, s);
    else
        api_param_bool(q, s, requeued);
    api_query_submit(q);
}

/* ---- POST /api/v1/dlq/:id/requeue -------------------------------------------------------- */

/* The requeue: claim the dead letter (mark it requeued, so a second requeue is refused), push
 * its record again to the same queue and partition through the group commit, answer the push
 * result. A failed push clears the mark again. */
typedef struct requeue_ctx {
    http_req *http;
    app *a;
    int64_t id;
    int keep_txn;
    push_req req;
    push_item item;
    db_req unclaim;
    char id_text[24];
    const char *unclaim_values[1];
    buf scratch;
} requeue_ctx;

static void on_unclaimed(db_req *d)
{
    requeue_ctx *c = d->arg;
    db_req_clear(d);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "requeue of dead letter %lld failed: ", (long long)c->id);
    if (!c->req.err_status)
        c->req.err_status = 500;
    api_respond_push_failure(c->http, &c->req, prefix);
}

static void on_requeued(push_req *pr)
{
    requeue_ctx *c = pr->arg;
    if (pr->err_status) {
        /* give the dead letter back, then answer the push's error */
        snprintf(c->id_text, sizeof c->id_text, "%lld", (long long)c->id);
        c->unclaim_values[0] = c->id_text;
        c->unclaim.nstmt = 1;
        c->unclaim.stmt[0] = (db_stmt){ADMIN_DLQ_UNCLAIM_SQL, 1, c->unclaim_values, NULL, NULL, 0};
        c->unclaim.done = on_unclaimed;
        c->unclaim.arg = c;
        if (db_submit(c->a->db, &c->unclaim) < 0) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "requeue of dead letter %lld failed: ", (long long)c->id);
            api_respond_push_failure(c->http, pr, prefix);
        }
        return;
    }
    buf b;
    buf_init(&b, 0);
    answer_dlq_requeued(&b, c->id, &c->item);
    http_respond_json(c->http, 201, &b);
    buf_free(&b);
}

static void on_claimed(api_query *q, PGresult *const *res)
{
    requeue_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *x = res[0];
    const char *status = res_text(x, 0, DLQ_CLAIM_STATUS, NULL);
    if (strcmp(status, "not_found") == 0) {
        http_respond_error(r, 404, "dead letter not found: %lld", (long long)c->id);
        return;
    }
    if (strcmp(status, "already_requeued") == 0) {
        char at[32];
        format_iso_ms(res_i64(x, 0, DLQ_CLAIM_REQUEUED_US), at);
        http_respond_error(r, 409, "dead letter %lld was already requeued at %s", (long long)c->id, at);
        return;
    }
    if (strcmp(status, "no_record") == 0) {
        http_respond_error(r, 409, "dead letter %lld has no stored record to requeue", (long long)c->id);
        return;
    }
    record_view v;
    if (admin_record_decode((const uint8_t *)PQgetvalue(x, 0, DLQ_CLAIM_RECORD), (size_t)PQgetlength(x, 0, DLQ_CLAIM_RECORD), 0, &c->scratch,
                            &v) < 0) {
        buf_free(&c->scratch);
        /* leave it claimed: a record that cannot be decoded cannot be requeued either */
        http_respond_error(r, 500, "the record of dead letter %lld could not be decoded", (long long)c->id);
        return;
    }
    /* everything the push reads lives in the request arena until it is done */
    push_item *it = &c->item;
    size_t ql, pl;
    const char *qn = res_text(x, 0, DLQ_CLAIM_QUEUE, &ql), *pn = res_text(x, 0, DLQ_CLAIM_PARTITION, &pl);
    it->queue = arena_strndup(&r->ar, qn, ql);
    it->queue_len = (uint32_t)ql;
    it->partition = arena_strndup(&r->ar, pn, pl);
    it->partition_len = (uint32_t)pl;
    /* a sealed record is opened and goes through the push path like any other: sealed again
     * if its queue is encrypted now, plain if it no longer is */
    const char *plt;
    size_t pll;
    enum seal_result why;
    buf plain;
    buf_init(&plain, 0);
    if (record_payload_open(&v, &plain, &plt, &pll, &why) < 0) {
        char msg[200];
        record_payload_error_text(&v, why, msg, sizeof msg);
        buf_free(&plain);
        buf_free(&c->scratch);
        /* another node (with the key) can still requeue it: give the claim back */
        c->req.arg = c;
        c->req.err_status = why == SEAL_CORRUPT ? 500 : PUSH_NO_KEY_STATUS;
        snprintf(c->req.err, sizeof c->req.err, "this node cannot open its record: %s", msg);
        on_requeued(&c->req);
        return;
    }
    if (pll) {
        it->payload = arena_strndup(&r->ar, plt, pll);
        it->payload_len = (uint32_t)pll;
    }
    buf_free(&plain);
    if (v.trace) {
        memcpy(it->trace, v.trace, 16);
        it->has_trace = 1;
    }
    if (c->keep_txn) {
        /* the original transactionId, but not deduplicated: the point is to deliver it again */
        char txn[512];
        size_t tl = record_txn_text(&v, txn, sizeof txn);
        it->txn = arena_strndup(&r->ar, txn, tl);
        it->txn_len = (uint32_t)tl;
    } else {
        uuid u;
        uuid_v7(&u);
        char *t = arena_alloc(&r->ar, 37);
        uuid_format(&u, t);
        it->txn = t;
        it->txn_len = 36;
    }
    it->txn_producer = 0;
    push_req *pr = &c->req;
    memcpy(pr->tenant, r->tenant, 16);
    if (v.producer) {
        pr->producer = arena_strndup(&r->ar, v.producer, v.producer_len);
        pr->producer_len = (uint32_t)v.producer_len;
    }
    buf_free(&c->scratch);
    pr->items = it;
    pr->n = 1;
    pr->done = on_requeued;
    pr->arg = c;
    pusher_submit(c->a->push, pr);
}

static int dlq_id_or_respond(http_req *r, int64_t *id)
{
    char *end;
    long long v = strtoll(r->params[0], &end, 10);
    if (*end || end == r->params[0] || v <= 0) {
        http_respond_error(r, 400, "dead letter id must be a positive integer (the dlqId of GET /api/v1/dlq)");
        return -1;
    }
    *id = v;
    return 0;
}

void api_dlq_requeue(http_req *r)
{
    requeue_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    buf_init(&c->scratch, 0);
    if (dlq_id_or_respond(r, &c->id) < 0)
        return;
    if (r->body && r->body_len) {
        json_doc d;
        if (api_parse_body_or_respond(r, &d, 0) < 0)
            return;
        int t = json_get(&d, 0, "keepTransactionId");
        int ty = json_type_of(&d, t);
        json_doc_free(&d);
        if (t >= 0 && ty != JSON_TRUE && ty != JSON_FALSE && ty != JSON_NULL) {
            http_respond_error(r, 400, "keepTransactionId must be true or false");
            return;
        }
        c->keep_txn = ty == JSON_TRUE;
    }
    api_query *q = api_query_new(r, on_claimed, c);
    int s = api_query_stmt(q, ADMIN_DLQ_CLAIM_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, c->id);
    api_query_submit(q);
}

/* ---- POST /api/v1/messages/:partitionId/:transactionId/retry ---------------------------- */

/* On the log a record is never "failed" in place: a consumer's failure either leaves it below
 * the cursor for redelivery (retries left) or files a dead letter. Retrying a message is
 * therefore requeuing its newest dead letter that was not requeued yet, keeping its
 * transactionId (docs/http-api.md): ADMIN_DLQ_RETRY_FIND_SQL finds it. */
static void on_retry_found(api_query *q, PGresult *const *res)
{
    requeue_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *x = res[0];
    if (PQntuples(x) == 0) {
        http_respond_error_code(r, 404, "partition_not_found", "Partition not found: %s", r->params[0]);
        return;
    }
    if (res_null(x, 0, DLQ_RETRY_DLQ_ID)) {
        http_respond_error_code(r, 404, "no_failed_message",
                                "no dead letter to retry for transactionId %s in this partition (only a dead-lettered "
                                "message can be retried; one that is not yet requeued)",
                                r->params[1]);
        return;
    }
    c->id = res_i64(x, 0, DLQ_RETRY_DLQ_ID);
    api_query *cl = api_query_new(r, on_claimed, c);
    int s = api_query_stmt(cl, ADMIN_DLQ_CLAIM_SQL);
    api_param_uuid(cl, s, r->tenant);
    api_param_i64(cl, s, c->id);
    api_query_submit(cl);
}

void api_message_retry(http_req *r)
{
    uuid pu;
    if (uuid_parse(r->params[0], r->param_lens[0], &pu) < 0) {
        http_respond_bad_param(r, "partitionId", "partitionId must be a UUID");
        return;
    }
    if (r->param_lens[1] > 255) {
        http_respond_bad_param(r, "transactionId", "transactionId must be 1 to 255 bytes");
        return;
    }
    if (r->body && r->body_len) {
        json_doc d;
        if (api_parse_body_or_respond(r, &d, 1) < 0)
            return;
        uint32_t cnt = d.toks[0].count;
        json_doc_free(&d);
        if (cnt) {
            http_respond_error_code(r, 400, "unknown_field", "the retry body must be an empty object");
            return;
        }
    }
    requeue_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    c->keep_txn = 1;
    buf_init(&c->scratch, 0);
    uuid mid;
    uint64_t mpid = 0, moff = 0;
    int is_mid = uuid_parse(r->params[1], r->param_lens[1], &mid) == 0 &&
                 uuid_message_id_decode(&mid, &mpid, &moff) == 0;
    api_query *q = api_query_new(r, on_retry_found, c);
    int s = api_query_stmt(q, ADMIN_DLQ_RETRY_FIND_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    api_param_text(q, s, r->params[1]);
    if (is_mid) {
        api_param_i64(q, s, (int64_t)moff);
        api_param_i64(q, s, (int64_t)mpid);
    } else {
        api_param_null(q, s);
        api_param_null(q, s);
    }
    api_query_submit(q);
}

/* ---- DELETE /api/v1/dlq/:id -------------------------------------------------------------- */

static void on_dlq_deleted(api_query *q, PGresult *const *res)
{
    int64_t *id = q->arg;
    if (PQntuples(res[0]) == 0) {
        http_respond_error(q->http, 404, "dead letter not found: %lld", (long long)*id);
        return;
    }
    buf b;
    buf_init(&b, 0);
    answer_dlq_deleted(&b, *id);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_dlq_delete(http_req *r)
{
    int64_t *id = arena_alloc(&r->ar, sizeof *id);
    if (dlq_id_or_respond(r, id) < 0)
        return;
    api_query *q = api_query_new(r, on_dlq_deleted, id);
    int s = api_query_stmt(q, ADMIN_DLQ_DELETE_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, *id);
    api_query_submit(q);
}
