/* api_messages.c — browsing the log: GET /api/v1/messages (filtered, newest first, paged) and
 * GET /api/v1/messages/:partitionId/:transactionId (one record with its payload) and DELETE
 * of one (queen.message_delete_v1 marks it deleted in its segment; readers skip it).
 *
 * Records live in segments that only C can decode. The list is one call of
 * queen.list_messages_v1, which counts matching records per segment from offsets (so it can
 * skip whole segments for `offset`) and returns the page's segments with each partition's
 * cursor positions and dead-lettered offsets; the decoder (answer_messages_list,
 * admin/answers_messages.c, pure) gives each record its status by the same rule
 * (admin_record_status) and cuts the page. This file submits the statements and sends what
 * the writers there write.
 *
 * A single record is found without scanning when possible: a message id names its offset, a
 * producer transactionId is in the dedup window's index, a dead letter or a live lease names
 * it. Otherwise the partition's segments are scanned, bounded (admin.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/answers_messages.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"

/* ---- GET /api/v1/messages ---------------------------------------------------------------- */

typedef struct list_ctx {
    const char *queue;
    messages_page pg;
} list_ctx;

/* the statements of the list, in order: the page; whether the queue exists (a queue asked for) */
enum { LIST_STMT_PAGE, LIST_STMT_QUEUE_EXISTS };

static void on_messages(api_query *q, PGresult *const *res)
{
    list_ctx *c = q->arg;
    http_req *r = q->http;
    const PGresult *ex = c->queue ? res[LIST_STMT_QUEUE_EXISTS] : NULL;
    if (ex && PQntuples(ex) == 1 && !res_bool(ex, 0, QUEUE_EXISTS)) {
        http_respond_error(r, 404, "queue not found: %s", c->queue);
        return;
    }
    buf b;
    buf_init(&b, 0);
    if (answer_messages_list(&b, res[LIST_STMT_PAGE], &c->pg) < 0) {
        buf_free(&b);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_messages_list(http_req *r)
{
    list_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    int64_t from = 0, to = 0;
    int has_from, has_to;
    if (api_query_int_or_respond(r, "limit", 200, 1, ADMIN_MESSAGES_MAX_LIMIT, &c->pg.limit) < 0 ||
        api_query_int_or_respond(r, "offset", 0, 0, ADMIN_MESSAGES_MAX_OFFSET, &c->pg.offset) < 0 ||
        api_query_time_or_respond(r, "from", &from, &has_from) < 0 ||
        api_query_time_or_respond(r, "to", &to, &has_to) < 0)
        return;
    const char *status = api_query_str(r, "status");
    if (status) {
        if (admin_status_parse(status, &c->pg.status) < 0) {
            http_respond_error(r, 400, "status must be one of pending, processing, completed, dead_letter");
            return;
        }
        c->pg.has_status = 1;
    }
    /* as the earlier release: the last hour unless told otherwise */
    if (!has_from)
        from = wall_us() - 3600LL * 1000000;
    if (has_to && to < from) {
        http_respond_error(r, 400, "from must not be after to");
        return;
    }
    const char *ns = api_query_str(r, "ns");
    if (!ns)
        ns = api_query_str(r, "namespace");
    c->queue = api_query_str(r, "queue");
    api_query *q = api_query_new(r, on_messages, c);
    int s = api_query_stmt(q, ADMIN_LIST_MESSAGES_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->queue);
    api_param_text(q, s, api_query_str(r, "partition"));
    api_param_text(q, s, ns);
    api_param_text(q, s, api_query_str(r, "task"));
    api_param_text(q, s, status);
    api_param_i64(q, s, from);
    if (has_to)
        api_param_i64(q, s, to);
    else
        api_param_null(q, s);
    api_param_i64(q, s, c->pg.offset);
    /* one more than the page, to know whether another page follows */
    api_param_i64(q, s, c->pg.limit + 1);
    if (c->queue) {
        s = api_query_stmt(q, ADMIN_QUEUE_EXISTS_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_text(q, s, c->queue);
    }
    api_query_submit(q);
}

/* ---- GET /api/v1/messages/:partitionId/:transactionId ------------------------------------ */

typedef struct get_ctx {
    uint8_t part[16];
    msg_lookup l;
    int st_part, st_find, st_cursors, st_dead; /* the statements' places in the request (record_query) */
    api_locate_fn located; /* api_message_locate */
    void *located_arg;
} get_ctx;

static void on_message(api_query *q, PGresult *const *res)
{
    get_ctx *c = q->arg;
    http_req *r = q->http;
    if (PQntuples(res[c->st_part]) == 0) {
        msg_lookup_free(&c->l);
        http_respond_error(r, 404, "partition not found: %s", r->params[0]);
        return;
    }
    buf b;
    buf_init(&b, 0);
    int rc = answer_message(&b, &c->l, res[c->st_part], res[c->st_find], res[c->st_cursors], res[c->st_dead]);
    msg_lookup_free(&c->l);
    if (rc < 0)
        http_respond_error(r, 500, "a stored segment could not be decoded");
    else if (rc > 0)
        http_respond_error(r, 404, "Message not found");
    else
        http_respond_json(r, 200, &b);
    buf_free(&b);
}

/* The statements that find one record of partition pu: its partition, the segments that may
 * hold it, the partition's cursors (with_cursors), its dead letters; their places in c. */
static get_ctx *record_query(http_req *r, const uuid *pu_in, const char *txn, size_t txn_len, api_query_fn done,
                             int with_cursors, api_query **out)
{
    uuid pu = *pu_in;
    get_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    memcpy(c->part, pu.b, 16);
    msg_lookup *l = &c->l;
    msg_lookup_init(l, txn, txn_len);
    int64_t v7 = admin_uuid_v7_time_us(l->txn, l->txn_len);
    api_query *q = api_query_new(r, done, c);
    int s = c->st_part = api_query_stmt(q, ADMIN_MESSAGE_PARTITION_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    s = c->st_find = api_query_stmt(q, ADMIN_MESSAGE_FIND_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    api_param_text(q, s, l->txn);
    if (l->is_msg_id) {
        api_param_i64(q, s, (int64_t)l->msg_pid);
        api_param_i64(q, s, (int64_t)l->msg_off);
    } else {
        api_param_null(q, s);
        api_param_null(q, s);
    }
    if (v7 > 0)
        api_param_i64(q, s, v7 - ADMIN_FIND_V7_SLACK_US);
    else
        api_param_null(q, s);
    api_param_i64(q, s, ADMIN_FIND_MAX_SEGMENTS);
    api_param_i64(q, s, ADMIN_FIND_MAX_BYTES);
    c->st_cursors = -1;
    if (with_cursors) {
        s = c->st_cursors = api_query_stmt(q, ADMIN_MESSAGE_CURSORS_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_uuid(q, s, pu.b);
    }
    s = c->st_dead = api_query_stmt(q, ADMIN_MESSAGE_DEAD_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    api_param_text(q, s, l->txn);
    if (l->is_msg_id)
        api_param_i64(q, s, (int64_t)l->msg_off);
    else
        api_param_null(q, s);
    *out = q;
    return c;
}

static get_ctx *message_query(http_req *r, api_query_fn done, int with_cursors, api_query **out)
{
    uuid pu;
    if (uuid_parse(r->params[0], r->param_lens[0], &pu) < 0) {
        http_respond_error(r, 400, "partitionId must be a UUID");
        return NULL;
    }
    return record_query(r, &pu, r->params[1], strlen(r->params[1]), done, with_cursors, out);
}

static void on_located(api_query *q, PGresult *const *res)
{
    get_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *pi = res[c->st_part], *f = res[c->st_find], *dl = res[c->st_dead];
    if (PQntuples(pi) == 0) {
        msg_lookup_free(&c->l);
        c->located(r, c->located_arg, -2);
        return;
    }
    int64_t pid = res_i64(pi, 0, MSG_PART_ID);
    record_view v;
    int64_t ts = 0, off = -1;
    int found = msg_lookup_segments(&c->l, f, &v, &ts);
    if (found < 0) {
        msg_lookup_free(&c->l);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    if (found) {
        off = (int64_t)v.offset;
    } else {
        int row = msg_lookup_dead_row(&c->l, pid, dl);
        if (row >= 0)
            off = res_i64(dl, row, MSG_DEAD_OFF);
    }
    msg_lookup_free(&c->l);
    c->located(r, c->located_arg, off);
}

void api_message_locate(http_req *r, const uint8_t part[16], const char *txn, size_t txn_len, api_locate_fn done,
                        void *arg)
{
    uuid pu;
    memcpy(pu.b, part, 16);
    api_query *q;
    get_ctx *c = record_query(r, &pu, txn, txn_len, on_located, 0, &q);
    c->located = done;
    c->located_arg = arg;
    api_query_submit(q);
}

void api_message_get(http_req *r)
{
    api_query *q;
    if (message_query(r, on_message, 1, &q))
        api_query_submit(q);
}

/* ---- DELETE /api/v1/messages/:partitionId/:transactionId --------------------------------- */

static void respond_deleted(http_req *r, int ok)
{
    buf b;
    buf_init(&b, 0);
    answer_message_deleted(&b, r->params[0], r->params[1], ok);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void on_deleted(api_query *q, PGresult *const *res)
{
    /* the delete is the last statement (a codec-1 segment's re-encoding may come first) */
    const PGresult *d = res[q->dbr.nstmt - 1];
    respond_deleted(q->http, PQntuples(d) == 1 && res_bool(d, 0, MESSAGE_DELETE_DONE));
}

static void on_delete_found(api_query *q, PGresult *const *res)
{
    get_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *pi = res[c->st_part], *f = res[c->st_find], *dl = res[c->st_dead];
    if (PQntuples(pi) == 0) {
        msg_lookup_free(&c->l);
        respond_deleted(r, 0);
        return;
    }
    int64_t pid = res_i64(pi, 0, MSG_PART_ID);
    record_view v;
    int64_t ts, off = -1;
    char txn[512];
    size_t tl = 0;
    int found = msg_lookup_segments(&c->l, f, &v, &ts);
    if (found < 0) {
        msg_lookup_free(&c->l);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    const uint8_t *flat = NULL; /* a codec-1 segment, re-encoded as codec 0 before the delete */
    size_t flat_len = 0;
    int64_t flat_last = 0;
    if (found) {
        off = (int64_t)v.offset;
        tl = record_txn_text(&v, txn, sizeof txn);
        int row = c->l.found_row;
        const uint8_t *data = (const uint8_t *)PQgetvalue(f, row, FIND_DATA);
        size_t len = (size_t)PQgetlength(f, row, FIND_DATA);
        if (segment_is_chunked(data, len)) {
            buf out;
            buf_init(&out, 0);
            if (segment_to_records(data, len, (uint32_t)res_i64(f, row, FIND_COUNT), &out) < 0) {
                buf_free(&out);
                msg_lookup_free(&c->l);
                http_respond_error(r, 500, "a stored segment could not be decoded");
                return;
            }
            uint8_t *copy = arena_alloc(&r->ar, out.len);
            memcpy(copy, out.data, out.len);
            flat = copy;
            flat_len = out.len;
            flat_last = res_i64(f, row, FIND_LAST);
            buf_free(&out);
        }
    } else {
        /* retention removed it from the log; a dead letter may still hold a copy */
        int row = msg_lookup_dead_row(&c->l, pid, dl);
        if (row >= 0) {
            size_t dl_len;
            const char *t = res_text(dl, row, MSG_DEAD_TXN, &dl_len);
            off = res_i64(dl, row, MSG_DEAD_OFF);
            tl = dl_len < sizeof txn ? dl_len : sizeof txn - 1;
            memcpy(txn, t, tl);
        }
    }
    msg_lookup_free(&c->l);
    if (off < 0) {
        respond_deleted(r, 0);
        return;
    }
    txn[tl] = 0;
    char *t = arena_strndup(&r->ar, txn, tl);
    api_query *d = api_query_new(r, on_deleted, c);
    if (flat) {
        /* records inside a producer's zstd frame cannot be marked one by one: the segment becomes
         * codec 0 first (the same records; only a codec-1 segment is replaced, so a concurrent
         * delete that did this already is left alone) */
        int f0 = api_query_stmt(d, ADMIN_SEGMENT_FLATTEN_SQL);
        api_param_i64(d, f0, pid);
        api_param_i64(d, f0, flat_last);
        api_param_bytes(d, f0, flat, flat_len);
    }
    int s = api_query_stmt(d, ADMIN_MESSAGE_DELETE_SQL);
    api_param_uuid(d, s, r->tenant);
    api_param_uuid(d, s, c->part);
    api_param_i64(d, s, off);
    api_param_text(d, s, t);
    api_query_submit(d);
}

void api_message_delete(http_req *r)
{
    api_query *q;
    if (message_query(r, on_delete_found, 0, &q))
        api_query_submit(q);
}
