/* api_push.c — POST /api/v1/push: validate every item, then hand the request to the group
 * commit. Validation is all or nothing: the first bad item answers 400 and nothing is stored. */
#include <stdio.h>
#include <string.h>

#include "answers.h"
#include "app.h"
#include "core/util.h"
#include "core/uuid.h"
#include "storage/logread.h"
#include "storage/pushreq.h"

void api_respond_push_failure(http_req *r, const push_req *pr, const char *prefix)
{
    if (pr->err_internal) {
        api_respond_failure(r, pr->err_status, pr->err_sqlstate, pr->err);
        return;
    }
    const char *code = pr->err_status == 409 ? "queue_full"
                       : pr->err_status == PUSH_NO_KEY_STATUS ? "encryption_key_missing"
                                                              : NULL;
    http_respond_error_code(r, pr->err_status, code, "%s%s", prefix ? prefix : "", pr->err);
}

void api_push_answer(push_req *pr)
{
    api_push_ctx *pc = pr->arg;
    http_req *r = pc->http;
    if (pr->err_status) {
        api_respond_push_failure(r, pr, NULL);
        return;
    }
    buf b;
    buf_init(&b, 0);
    answer_push(&b, pr);
    http_respond_json(r, 201, &b);
    buf_free(&b);
}

/* Reads one push item (storage/pushreq.h) or answers 400 and returns -1. */
int push_item_parse_or_respond(http_req *r, const json_doc *d, int it, uint32_t i, push_item *pi)
{
    qerr_detail err;
    qerr e = push_item_read(&r->ar, d, it, i, pi, &err);
    if (e != QERR_OK) {
        http_respond_qerr(r, e, &err);
        return -1;
    }
    return 0;
}

void api_push(http_req *r)
{
    app *a = r->app;
    if (api_push_is_binary(r)) {
        api_push_binary(r);
        return;
    }
    json_doc d;
    /* root(0) → items(1) → item(2) → field values(3): payload internals are not tokenised */
    if (api_parse_body_or_respond(r, &d, 3) < 0)
        return;
    int items = json_get(&d, 0, "items");
    if (json_type_of(&d, items) != JSON_ARRAY) {
        json_doc_free(&d);
        http_respond_error(r, 400, "items array is required");
        return;
    }
    uint32_t n = d.toks[items].count;
    if (n == 0) {
        json_doc_free(&d);
        http_respond(r, 201, "application/json", "[]", 2);
        return;
    }
    api_push_ctx *pc = arena_alloc(&r->ar, sizeof *pc);
    memset(pc, 0, sizeof *pc);
    pc->http = r;
    push_req *pr = &pc->req;
    memcpy(pr->tenant, r->tenant, 16);
    if (r->subject) {
        pr->producer = r->subject;
        pr->producer_len = (uint32_t)strlen(r->subject);
    }
    pr->items = arena_alloc(&r->ar, n * sizeof *pr->items);
    memset(pr->items, 0, n * sizeof *pr->items);
    pr->n = n;
    pr->done = api_push_answer;
    pr->arg = pc;
    int it = json_first(&d, items);
    for (uint32_t i = 0; i < n; i++, it = json_next(&d, it)) {
        if (push_item_parse_or_respond(r, &d, it, i, &pr->items[i]) < 0) {
            json_doc_free(&d);
            return;
        }
    }
    json_doc_free(&d);
    http_async(r);
    pusher_submit(a->push, pr);
}
