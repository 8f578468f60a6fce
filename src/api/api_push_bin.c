/* api_push_bin.c — POST /api/v1/push with the 2.x binary body (QPB1, storage/qpb.h).
 *
 * The body is decoded and checked whole (storage/qpb.c) before anything is stored, then its
 * items take the same group commit as the JSON push: same dedup, offsets, stamps, producer
 * identity and sealing. A flag-8 body (frames compressed by the producer) is decompressed to be
 * checked, and each group's zstd frame is stored as it was sent (codec 1) unless the group must
 * be re-encoded: a sealed queue, or a duplicate inside it. A record's id is derived from its
 * partition and offset, as for every push; a frame without a transactionId gets its message id's
 * text as one (what the frame reads back with). docs/storage.md, "Codec 1". The answer is the
 * JSON push's, or with flag 2 the counts only. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "core/util.h"
#include "core/uuid.h"
#include "storage/qpb.h"

/* Content-Type: application/x-queen-push (parameters allowed), the type of both binary bodies */
static int binary_content_type(http_req *r)
{
    const char *ct = http_header(r, "content-type");
    if (!ct)
        return 0;
    size_t n = strlen(QPB_CONTENT_TYPE);
    while (*ct == ' ')
        ct++;
    return strncasecmp(ct, QPB_CONTENT_TYPE, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

int api_push_is_binary(http_req *r)
{
    return binary_content_type(r) || qpb_is(r->body, r->body_len);
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
        } else if (q->has_id) {
            uuid u;
            memcpy(u.b, q->id, 16);
            char *t = arena_alloc(&r->ar, UUID_STR_LEN + 1);
            uuid_format(&u, t);
            pi->txn = t;
            pi->txn_len = UUID_STR_LEN;
        } else {
            uuid u;
            uuid_v7(&u);
            char *t = arena_alloc(&r->ar, UUID_STR_LEN + 1);
            uuid_format(&u, t);
            pi->txn = t;
            pi->txn_len = UUID_STR_LEN;
        }
    }
    if (body.zgroups) {
        push_zframe *zf = arena_alloc(&r->ar, body.groups * sizeof *zf);
        for (uint32_t g = 0; g < body.groups; g++) {
            const qpb_zgroup *zg = &body.zgroups[g];
            /* a frame without a transactionId would be handed out by the framed pop without one
             * (the 2.x client always sends one): such a chunk is stored, but re-framed at pop */
            int all_txn = 1;
            for (uint32_t i = 0; i < zg->n; i++)
                all_txn &= body.items[zg->first + i].txn_len > 0;
            zf[g] = (push_zframe){zg->z, zg->zlen, &pr->items[zg->first], zg->n, !all_txn};
            for (uint32_t i = 0; i < zg->n; i++)
                pr->items[zg->first + i].zf = &zf[g];
        }
    }
    http_async(r);
    pusher_submit(a->push, pr);
}

int api_txn_is_binary(http_req *r)
{
    return binary_content_type(r) || qtb_is(r->body, r->body_len);
}

/* The QTB1 body becomes the JSON transaction it stands for: the head's members, its operations,
 * then one push operation per group (its messages in wire order), so the answer lists the
 * head's operations first and the pushed messages after them, as the 2.x client expects. The
 * request's body is replaced by that text; the JSON path does the rest (every rule, every
 * rider). -1 when answered (a refusal). */
int api_txn_binary_to_json(http_req *r)
{
    app *a = r->app;
    if (!r->body || r->body_len == 0) {
        http_respond_error_code(r, 400, "invalid_transaction_body", "Empty request body");
        return -1;
    }
    const char *head;
    size_t hlen;
    uint8_t flags;
    qpb_body body;
    qpb_error e;
    if (qtb_decode(r->body, r->body_len, (size_t)a->cfg->max_body_bytes, &r->ar, &head, &hlen, &flags, &body, &e) < 0) {
        refuse(r, &e);
        return -1;
    }
    if (flags & QPB_FLAG_COUNTS) {
        http_respond_error_code(r, 400, "invalid_push_body",
                                "binary transaction: flag 2 (counts instead of results) is not supported; send flags 0");
        return -1;
    }
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts o = {.token_depth = 2};
    if (hlen == 0) {
        head = "{}";
        hlen = 2;
    }
    if (json_parse(&d, head, hlen, &o) < 0 || json_type_of(&d, 0) != JSON_OBJECT) {
        http_respond_error_code(r, 400, "invalid_transaction_body", "binary transaction: the head must be a JSON object%s%s",
                                d.err[0] ? ": " : "", d.err);
        json_doc_free(&d);
        return -1;
    }
    buf b;
    buf_init(&b, 0);
    buf_putc(&b, '{');
    int ops = -1, first = 1;
    uint32_t cnt = d.toks[0].count;
    int k = json_first(&d, 0);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(&d, json_next(&d, k))) {
        if (json_str_eq(&d, k, "operations")) {
            ops = k + 1;
            continue;
        }
        size_t kl, vl;
        const char *ks = json_raw(&d, k, &kl), *vs = json_raw(&d, k + 1, &vl);
        if (!first)
            buf_putc(&b, ',');
        first = 0;
        buf_append(&b, ks, kl);
        buf_putc(&b, ':');
        buf_append(&b, vs, vl);
    }
    if (ops >= 0 && json_type_of(&d, ops) != JSON_ARRAY && json_type_of(&d, ops) != JSON_NULL) {
        buf_free(&b);
        json_doc_free(&d);
        http_respond_error_code(r, 400, "invalid_transaction_body", "binary transaction: the head's operations must be an array");
        return -1;
    }
    if (!first)
        buf_putc(&b, ',');
    buf_puts(&b, "\"operations\":[");
    int nop = 0;
    if (ops >= 0 && json_type_of(&d, ops) == JSON_ARRAY) {
        int op = json_first(&d, ops);
        for (uint32_t i = 0; i < d.toks[ops].count; i++, op = json_next(&d, op)) {
            size_t ol;
            const char *os = json_raw(&d, op, &ol);
            if (nop++)
                buf_putc(&b, ',');
            buf_append(&b, os, ol);
        }
    }
    for (uint32_t i = 0; i < body.n; i++) {
        const qpb_item *it = &body.items[i];
        if (it->pos == 0) {
            if (i)
                buf_puts(&b, "]}");
            if (nop++)
                buf_putc(&b, ',');
            buf_puts(&b, "{\"type\":\"push\",\"items\":[");
        } else {
            buf_putc(&b, ',');
        }
        buf_puts(&b, "{\"queue\":");
        jw_string(&b, it->queue, it->queue_len);
        buf_puts(&b, ",\"partition\":");
        jw_string(&b, it->partition, it->partition_len);
        if (it->txn_len) {
            buf_puts(&b, ",\"transactionId\":");
            jw_string(&b, it->txn, it->txn_len);
        }
        buf_puts(&b, ",\"payload\":");
        buf_append(&b, it->payload, it->payload_len);
        buf_putc(&b, '}');
    }
    if (body.n)
        buf_puts(&b, "]}");
    buf_puts(&b, "]}");
    json_doc_free(&d);
    if (b.overflow) {
        buf_free(&b);
        http_respond_error_code(r, 413, "payload_too_large", "binary transaction: too large once decoded");
        return -1;
    }
    free(r->body);
    r->body = xmalloc(b.len + 1);
    memcpy(r->body, b.data, b.len);
    r->body[b.len] = '\0';
    r->body_len = b.len;
    buf_free(&b);
    return 0;
}
