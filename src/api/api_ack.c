/* api_ack.c — POST /api/v1/ack, POST /api/v1/ack/batch, POST /api/v1/lease/:leaseId/extend.
 * Acks of one request are one call of queen.ack_v1 (one transaction). Messages follow the
 * earlier release's texts so its clients recognise them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "app.h"
#include "consume/ackreq.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "db/pgarray.h"

typedef struct ack_ctx {
    http_req *http;
    app *a;
    db_req dbr;
    sql_params sp;
    pgarray parts, txns, status, leases, errors;
    char tenant[37];
    const char *group;
    uint32_t n;
    const char **txn_of; /* per item, for the answer */
    const char **status_of;
} ack_ctx;

static void ack_free(ack_ctx *c)
{
    pgarray_free(&c->parts);
    pgarray_free(&c->txns);
    pgarray_free(&c->status);
    pgarray_free(&c->leases);
    pgarray_free(&c->errors);
}

static void on_acked(db_req *d)
{
    ack_ctx *c = d->arg;
    http_req *r = c->http;
    ack_free(c);
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    int rows = PQntuples(res);
    ack_row *ar = arena_alloc(&r->ar, (size_t)(rows > 0 ? rows : 1) * sizeof *ar);
    consume_metrics *cm = &c->a->cm;
    for (int i = 0; i < rows; i++) {
        ack_row *a = &ar[i];
        a->index = atoi(PQgetvalue(res, i, ACK_IDX)) - 1;
        a->success = PQgetvalue(res, i, ACK_SUCCESS)[0] == 't';
        a->error = PQgetisnull(res, i, ACK_ERROR) ? NULL : PQgetvalue(res, i, ACK_ERROR);
        a->queue = PQgetisnull(res, i, ACK_QUEUE) ? NULL : PQgetvalue(res, i, ACK_QUEUE);
        a->partition = PQgetisnull(res, i, ACK_PARTITION) ? NULL : PQgetvalue(res, i, ACK_PARTITION);
        a->lease_released = PQgetvalue(res, i, ACK_LEASE_RELEASED)[0] == 't';
        a->dlq = PQgetvalue(res, i, ACK_DLQ)[0] == 't';
        /* records may be available again (a lease released or finished): wake waiters */
        if (a->queue)
            notifier_changed(c->a->notify, r->tenant, a->queue, strlen(a->queue));
        const char *st = a->index >= 0 && (uint32_t)a->index < c->n ? c->status_of[a->index] : "";
        if (!a->success)
            mc_add(&cm->acks_rejected, 1);
        else if (a->dlq)
            mc_add(&cm->dead_letters, 1);
        else if (strcmp(st, "failed") == 0)
            mc_add(&cm->retries, 1);
        if (a->success)
            mc_add(strcmp(st, "failed") == 0 ? &cm->acks_failed : strcmp(st, "retry") == 0 ? &cm->acks_retry
                   : strcmp(st, "dlq") == 0 ? &cm->acks_dlq : &cm->acks_completed, 1);
    }
    buf b;
    buf_init(&b, 0);
    answer_ack(&b, ar, rows, c->txn_of, c->n);
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void submit_acks(http_req *r, ack_item *items, uint32_t n, const char *group)
{
    app *a = r->app;
    ack_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = a;
    c->n = n;
    c->group = group && *group ? group : QUEUE_MODE_GROUP;
    c->txn_of = arena_alloc(&r->ar, n * sizeof *c->txn_of);
    c->status_of = arena_alloc(&r->ar, n * sizeof *c->status_of);
    pgarray_begin(&c->parts, OID_UUID);
    pgarray_begin(&c->txns, OID_TEXT);
    pgarray_begin(&c->status, OID_TEXT);
    pgarray_begin(&c->leases, OID_UUID);
    pgarray_begin(&c->errors, OID_TEXT);
    for (uint32_t i = 0; i < n; i++) {
        ack_item *it = &items[i];
        c->txn_of[i] = it->txn;
        c->status_of[i] = it->status;
        pgarray_add(&c->parts, it->part.b, 16);
        pgarray_add(&c->txns, it->txn, it->txn_len);
        pgarray_add(&c->status, it->status, strlen(it->status));
        if (it->has_lease)
            pgarray_add(&c->leases, it->lease.b, 16);
        else
            pgarray_add_null(&c->leases);
        if (it->error)
            pgarray_add(&c->errors, it->error, strlen(it->error));
        else
            pgarray_add_null(&c->errors);
    }
    format_uuid_text(r->tenant, c->tenant);
    sql_params *p = &c->sp;
    p->values[0] = c->tenant;
    p->values[1] = c->group;
    pgarray *arrs[5] = {&c->parts, &c->txns, &c->status, &c->leases, &c->errors};
    for (int k = 0; k < 5; k++) {
        pgarray_finish(arrs[k]);
        p->values[2 + k] = arrs[k]->b.data;
        p->lengths[2 + k] = (int)arrs[k]->b.len;
        p->formats[2 + k] = 1;
    }
    p->n = 7;
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){ACK_SQL, 7, p->values, p->lengths, p->formats, 0};
    c->dbr.done = on_acked;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        ack_free(c);
        api_respond_db_error(r, &c->dbr);
    }
}

void api_ack(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    ack_item *it = arena_alloc(&r->ar, sizeof *it);
    memset(it, 0, sizeof *it);
    qerr_detail err;
    qerr e = ack_item_read(&r->ar, &d, 0, 0, 0, it, &err);
    if (e != QERR_OK) {
        json_doc_free(&d);
        http_respond_qerr(r, e, &err);
        return;
    }
    char msg[256];
    const char *group = NULL;
    size_t gl;
    int rc = api_str_field(r, &d, 0, "consumerGroup", &group, &gl);
    if (rc < 0) {
        json_doc_free(&d);
        http_respond_error(r, 400, "%s", api_str_field_msg(rc, "consumerGroup", "consumerGroup must be a string", msg, sizeof msg));
        return;
    }
    json_doc_free(&d);
    submit_acks(r, it, 1, group);
}

void api_ack_batch(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    int arr = json_get(&d, 0, "acknowledgments");
    if (json_type_of(&d, arr) != JSON_ARRAY) {
        json_doc_free(&d);
        http_respond_error(r, 400, "acknowledgments array is required");
        return;
    }
    uint32_t n = d.toks[arr].count;
    if (n == 0) {
        json_doc_free(&d);
        http_respond(r, 200, "application/json", "[]", 2);
        return;
    }
    const char *group = NULL;
    size_t gl;
    char msg[256];
    int rc = api_str_field(r, &d, 0, "consumerGroup", &group, &gl);
    if (rc < 0) {
        json_doc_free(&d);
        http_respond_error(r, 400, "%s", api_str_field_msg(rc, "consumerGroup", "consumerGroup must be a string", msg, sizeof msg));
        return;
    }
    ack_item *items = arena_alloc(&r->ar, n * sizeof *items);
    memset(items, 0, n * sizeof *items);
    int t = json_first(&d, arr);
    for (uint32_t i = 0; i < n; i++, t = json_next(&d, t)) {
        qerr_detail err;
        qerr e = ack_item_read(&r->ar, &d, t, 1, i, &items[i], &err);
        if (e != QERR_OK) {
            json_doc_free(&d);
            http_respond_qerr(r, e, &err);
            return;
        }
    }
    json_doc_free(&d);
    submit_acks(r, items, n, group);
}

typedef struct extend_ctx {
    http_req *http;
    db_req dbr;
    char tenant[37];
    char lease[37];
    char secs[16];
    const char *values[3];
} extend_ctx;

static void on_extended(db_req *d)
{
    extend_ctx *c = d->arg;
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res || PQntuples(res) != 1) {
        api_respond_db_error(c->http, d);
        db_req_clear(d);
        return;
    }
    buf b;
    buf_init(&b, 0);
    if (PQgetisnull(res, 0, LEASE_EXTEND_EXPIRES_AT))
        answer_lease_extend(&b, c->lease, PQgetvalue(res, 0, LEASE_EXTEND_ERROR), 0);
    else
        answer_lease_extend(&b, c->lease, NULL, atoll(PQgetvalue(res, 0, LEASE_EXTEND_EXPIRES_AT)));
    db_req_clear(d);
    http_respond_json(c->http, 200, &b);
    buf_free(&b);
}

void api_lease_extend(http_req *r)
{
    app *a = r->app;
    uuid lease;
    if (uuid_parse(r->params[0], r->param_lens[0], &lease) < 0) {
        http_respond_error(r, 400, "leaseId must be a UUID");
        return;
    }
    int64_t seconds = 60;
    if (r->body && r->body_len) {
        json_doc d;
        if (api_parse_body_or_respond(r, &d, 0) < 0)
            return;
        int rc = api_int_field(&d, 0, "seconds", 1, 7 * 86400, &seconds);
        json_doc_free(&d);
        if (rc < 0) {
            http_respond_error(r, 400, "seconds must be an integer between 1 and 604800");
            return;
        }
    }
    extend_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    uuid_format(&lease, c->lease);
    snprintf(c->secs, sizeof c->secs, "%lld", (long long)seconds);
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->values[1] = c->lease;
    c->values[2] = c->secs;
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){LEASE_EXTEND_SQL, 3, c->values, NULL, NULL, 0};
    c->dbr.done = on_extended;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0)
        api_respond_db_error(r, &c->dbr);
}
