/* api_push_bin.c — POST /api/v1/push with the 2.x binary body (QPB1, storage/qpb.h).
 *
 * The body is decoded and checked whole (storage/qpb.c) before anything is stored, then its
 * items take the same group commit as the JSON push: same dedup, offsets, stamps, producer
 * identity and sealing. A flag-8 body (frames compressed by the producer) is decompressed and
 * its records stored like any other push; the producer's message ids are checked (version 7)
 * but not kept: a record's id is derived from its partition and offset (docs/storage.md,
 * "The binary push"). The answer is the JSON push's, or with flag 2 the counts only. */
#include <string.h>
#include <strings.h>

#include "app.h"
#include "core/uuid.h"
#include "storage/qpb.h"

int api_push_is_binary(http_req *r)
{
    const char *ct = http_header(r, "content-type");
    if (ct) {
        size_t n = strlen(QPB_CONTENT_TYPE);
        while (*ct == ' ')
            ct++;
        if (strncasecmp(ct, QPB_CONTENT_TYPE, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' '))
            return 1;
    }
    return qpb_is(r->body, r->body_len);
}

/* flag 2: {"count","queued","duplicate","error"} — error counts the items that failed, which
 * is 0 in an answer at all: a push stores all of its items or none. */
static void answer_counts(push_req *pr)
{
    api_push_ctx *bc = pr->arg;
    http_req *r = bc->http;
    if (pr->err_status) {
        api_respond_push_failure(r, pr, NULL);
        return;
    }
    uint64_t queued = 0, dup = 0;
    for (uint32_t i = 0; i < pr->n; i++) {
        if (pr->items[i].status == PUSH_DUPLICATE)
            dup++;
        else
            queued++;
    }
    buf b;
    buf_init(&b, 64);
    buf_puts(&b, "{\"count\":");
    buf_put_u64(&b, pr->n);
    buf_puts(&b, ",\"queued\":");
    buf_put_u64(&b, queued);
    buf_puts(&b, ",\"duplicate\":");
    buf_put_u64(&b, dup);
    buf_puts(&b, ",\"error\":0}");
    http_respond_json(r, 201, &b);
    buf_free(&b);
}

static void refuse(http_req *r, const qpb_error *e)
{
    buf b;
    buf_init(&b, 0);
    http_error_open(&b, r, 400, "invalid_push_body", e->detail);
    buf_puts(&b, ",\"reason\":");
    jw_cstr(&b, e->reason);
    if (e->group >= 0) {
        buf_puts(&b, ",\"group\":");
        buf_put_u64(&b, (uint64_t)e->group);
    }
    if (e->item >= 0) {
        buf_puts(&b, ",\"index\":");
        buf_put_u64(&b, (uint64_t)e->item);
    }
    buf_putc(&b, '}');
    http_respond_json(r, 400, &b);
    buf_free(&b);
}

void api_push_binary(http_req *r)
{
    app *a = r->app;
    if (!r->body || r->body_len == 0) {
        http_respond_error_code(r, 400, "invalid_push_body", "Empty request body");
        return;
    }
    qpb_body body;
    qpb_error e;
    /* what a body may expand to is what it could have been sent as: the body limit */
    if (qpb_decode(r->body, r->body_len, (size_t)a->cfg->max_body_bytes, &r->ar, &body, &e) < 0) {
        refuse(r, &e);
        return;
    }
    api_push_ctx *bc = arena_alloc(&r->ar, sizeof *bc);
    memset(bc, 0, sizeof *bc);
    bc->http = r;
    push_req *pr = &bc->req;
    memcpy(pr->tenant, r->tenant, 16);
    if (r->subject) {
        pr->producer = r->subject;
        pr->producer_len = (uint32_t)strlen(r->subject);
    }
    pr->items = arena_alloc(&r->ar, body.n * sizeof *pr->items);
    memset(pr->items, 0, body.n * sizeof *pr->items);
    pr->n = body.n;
    pr->done = (body.flags & QPB_FLAG_COUNTS) ? answer_counts : api_push_answer;
    pr->arg = bc;
    for (uint32_t i = 0; i < body.n; i++) {
        const qpb_item *q = &body.items[i];
        push_item *pi = &pr->items[i];
        pi->queue = q->queue;
        pi->queue_len = q->queue_len;
        pi->partition = q->partition;
        pi->partition_len = q->partition_len;
        pi->payload = q->payload;
        pi->payload_len = q->payload_len;
        if (q->txn_len) {
            pi->txn = q->txn;
            pi->txn_len = q->txn_len;
            pi->txn_producer = 1;
        } else {
            uuid u;
            uuid_v7(&u);
            char *t = arena_alloc(&r->ar, UUID_STR_LEN + 1);
            uuid_format(&u, t);
            pi->txn = t;
            pi->txn_len = UUID_STR_LEN;
        }
    }
    http_async(r);
    pusher_submit(a->push, pr);
}
