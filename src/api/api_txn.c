/* api_txn.c — POST /api/v1/transaction: pushes and acks in one PostgreSQL transaction
 * (queen.transaction_v1), all or nothing. Push items are validated and encoded exactly as
 * POST /api/v1/push does (push_item_parse_or_respond, push_enc); `requiredLeases`, which the
 * earlier release ignored, are checked: a lease no longer held aborts the transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "db/pgarray.h"
#include "kv/kv_wire.h"
#include "timers/timers.h"
#include "txn_results.h"

#define TXN_PARAMS 18

typedef struct txn_op {
    int is_push;
    uint32_t first, count; /* push: items [first, first+count) of the push request */
    /* ack */
    const char *txn;
    size_t txn_len;
    uuid part;
    const char *status;
    const char *group;
    int has_lease;
    uuid lease;
    const char *error;
    int ack_index;         /* 1-based among acks */
    int dlq;
} txn_op;

typedef struct txn_ctx {
    http_req *http;
    app *a;
    txn_op *ops;
    uint32_t nops, nacks;
    push_req pr;
    push_enc enc;
    pgarray ack_arr[6];
    pgarray required;
    char tenant[37];
    const char *values[TXN_PARAMS];
    int lengths[TXN_PARAMS];
    int formats[TXN_PARAMS];
    db_req dbr;
    uuid txn_id;
    int attempts;
    uint32_t refusals;
    /* the riders (docs/http-api.md, "POST /api/v1/transaction"): KV first, then timers, then
     * the pushes and acks, in one BEGIN ... COMMIT (lock order: docs/lock-order.md) */
    kvw_op *kv;
    int nkv;
    kvw_params kvp;
    timer_op *tm;
    int ntm;
    timer_params tp;
    int timer_refusals;
    int st_kv, st_tm, st_txn; /* statement indexes, -1 when absent */
} txn_ctx;

/* a serialization failure or deadlock rolled the whole transaction back: run it again */
#define TXN_MAX_ATTEMPTS 5

static void txn_free(txn_ctx *c)
{
    push_enc_free(&c->enc);
    for (int k = 0; k < 6; k++)
        pgarray_free(&c->ack_arr[k]);
    pgarray_free(&c->required);
    if (c->nkv)
        kvw_params_free(&c->kvp);
    if (c->ntm)
        timer_params_free(&c->tp);
}

static void respond_failure(txn_ctx *c, const char *msg)
{
    char id[37];
    uuid_format(&c->txn_id, id);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"transactionId\":\"%s\",\"success\":false,\"error\":", id);
    jw_cstr(&b, msg);
    buf_puts(&b, ",\"results\":[]}");
    http_respond_json(c->http, 200, &b);
    buf_free(&b);
}

/* Encodes the pushes (sealing those of queues known to have encryptionEnabled) into the
 * parameters 2..11 of transaction_v1. */
static void encode_pushes(txn_ctx *c)
{
    for (uint32_t i = 0; i < c->pr.n; i++)
        c->pr.items[i].status = PUSH_PENDING;
    push_enc_build(&c->enc, &c->pr, pusher_dedup_window_us(c->a->push));
    for (int k = 0; k < PUSH_PARAMS; k++) {
        c->values[1 + k] = c->enc.values[k];
        c->lengths[1 + k] = c->enc.lengths[k];
        c->formats[1 + k] = c->enc.formats[k];
    }
}

/* The flat index of the KV rider's first op: every pushed item and every ack come first. */
static int kv_base(const txn_ctx *c)
{
    int n = 0;
    for (uint32_t k = 0; k < c->nops; k++)
        n += c->ops[k].is_push ? (int)c->ops[k].count : 1;
    return n;
}

/* A required KV op lost its precondition (QK001): nothing was applied. The one failure the
 * 2.x client returns instead of raising: {success:false, reason:"kv_precondition", failedIndex
 * (flat), kvReason, version, value}, at 200. */
static void respond_kv_precondition(txn_ctx *c, const db_req *d, int op)
{
    char reason[64];
    kvw_required_failure(d->sqlstate, d->errmsg, reason, sizeof reason);
    char id[37];
    uuid_format(&c->txn_id, id);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"transactionId\":\"%s\",\"success\":false,\"reason\":\"kv_precondition\",\"error\":", id);
    char msg[160];
    snprintf(msg, sizeof msg, "kv[%d] (%s) lost its required precondition (%s): nothing was applied", op - 1,
             kvw_kind_name(c->kv[op - 1].kind), reason);
    jw_cstr(&b, msg);
    buf_printf(&b, ",\"failedIndex\":%d,\"kvReason\":", kv_base(c) + op - 1);
    jw_cstr(&b, reason);
    json_doc v;
    memset(&v, 0, sizeof v);
    json_opts jo = {.token_depth = 1};
    int ver = -1, val = -1;
    if (json_parse(&v, d->errdetail, strlen(d->errdetail), &jo) == 0 && json_type_of(&v, 0) == JSON_OBJECT) {
        ver = json_get(&v, 0, "version");
        val = json_get(&v, 0, "value");
    }
    size_t n;
    const char *raw;
    buf_puts(&b, ",\"version\":");
    if (ver >= 0 && json_type_of(&v, ver) == JSON_NUMBER) {
        raw = json_raw(&v, ver, &n);
        buf_append(&b, raw, n);
    } else {
        buf_puts(&b, "null");
    }
    buf_puts(&b, ",\"value\":");
    if (val >= 0) {
        raw = json_raw(&v, val, &n);
        buf_append(&b, raw, n);
    } else {
        buf_puts(&b, "null");
    }
    json_doc_free(&v);
    buf_puts(&b, ",\"results\":[]}");
    mc_add(&c->a->kvm.rolled_back, 1);
    http_respond_json(c->http, 200, &b);
    buf_free(&b);
}

/* Seals, from now on, the timer payloads of op k's queue (QE002 named it). -1 after answering
 * when this node has no key. */
static int seal_timer_queue_or_respond(txn_ctx *c, int k)
{
    http_req *r = c->http;
    const timer_op *o = &c->tm[k];
    if (!seal_node_key()) {
        http_respond_refusal(r, PUSH_NO_KEY_STATUS, "encryption_key_missing", "no_node_key",
                             "queue %.*s has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY to seal "
                             "its timers' payloads; nothing was applied (send the transaction through a node that "
                             "has the key)",
                             (int)o->queue_len, o->queue);
        return -1;
    }
    sealq_set(pusher_sealq(c->a->push), r->tenant, o->queue, o->queue_len, 1, mono_ms());
    for (int i = 0; i < c->ntm; i++)
        if (c->tm[i].queue_len == o->queue_len && memcmp(c->tm[i].queue, o->queue, o->queue_len) == 0)
            c->tm[i].seal = 1;
    return 0;
}

static void on_done(db_req *d)
{
    txn_ctx *c = d->arg;
    http_req *r = c->http;
    PGresult *res = d->res[c->st_txn];
    if (d->err == DB_SQL && c->st_kv >= 0 && d->failed_stmt == c->st_kv) {
        int op = kvw_required_failure(d->sqlstate, d->errmsg, NULL, 0);
        if (op >= 1 && op <= c->nkv) {
            respond_kv_precondition(c, d, op);
            db_req_clear(d);
            txn_free(c);
            return;
        }
    }
    if (d->err == DB_SQL && c->st_tm >= 0 && d->failed_stmt == c->st_tm) {
        int k = timer_ops_refused_op(d->sqlstate, d->errmsg);
        if (k >= 1 && k <= c->ntm) {
            /* plaintext for a queue with encryptionEnabled: seal that queue's and run it all again */
            db_req_clear(d);
            if (seal_timer_queue_or_respond(c, k - 1) < 0) {
                txn_free(c);
                return;
            }
            if (++c->timer_refusals > c->ntm + 1) {
                http_respond_error(r, 500, "timer_ops_v1 kept refusing sealed records as not sealed");
                txn_free(c);
                return;
            }
            timer_params_free(&c->tp);
            timer_ops_params(r->tenant, c->tm, c->ntm, r->subject, r->subject ? strlen(r->subject) : 0, &c->tp);
            if (db_submit(c->a->db, d) == 0)
                return;
            api_respond_db_error(r, d);
            txn_free(c);
            return;
        }
    }
    const push_group *refused = d->err == DB_SQL && d->failed_stmt == c->st_txn
                                    ? push_enc_refused(&c->enc, d->sqlstate, d->errmsg)
                                    : NULL;
    if (refused) {
        /* plaintext for a queue with encryptionEnabled: seal it and run the transaction again */
        db_req_clear(d);
        if (!seal_node_key()) {
            char msg[400];
            push_enc_no_key_error(refused, msg, sizeof msg);
            http_respond_error(r, PUSH_NO_KEY_STATUS, "%s", msg);
            txn_free(c);
            return;
        }
        if (++c->refusals <= c->enc.ngroups + 1) {
            encode_pushes(c);
            if (db_submit(c->a->db, d) == 0)
                return;
            api_respond_db_error(r, d);
        } else {
            http_respond_error(r, 500, "transaction_v1 kept refusing sealed records as not sealed");
        }
        txn_free(c);
        return;
    }
    if (d->err != DB_OK || !res) {
        int retryable = d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0);
        if (retryable && ++c->attempts < TXN_MAX_ATTEMPTS) {
            db_req_clear(d);
            if (db_submit(c->a->db, d) == 0)
                return;
        }
        if (d->err == DB_SQL && (strncmp(d->sqlstate, "QT", 2) == 0))
            respond_failure(c, d->errmsg);
        else if (d->err == DB_SQL && strcmp(d->sqlstate, "54000") == 0 && d->failed_stmt == c->st_kv)
            http_respond_refusal(r, 400, "kv_limit_exceeded", "answer_too_large",
                                 "the kv rider's answer would carry more than %u bytes of values; split it",
                                 KV_ANSWER_MAX_BYTES);
        else
            api_respond_db_error(r, d);
        db_req_clear(d);
        txn_free(c);
        return;
    }
    PGresult *kres = c->st_kv >= 0 ? d->res[c->st_kv] : NULL;
    PGresult *tres = c->st_tm >= 0 ? d->res[c->st_tm] : NULL;
    if ((c->st_kv >= 0 && (!kres || PQntuples(kres) != c->nkv)) || (c->st_tm >= 0 && (!tres || PQntuples(tres) != c->ntm))) {
        http_respond_error(r, 500, "a rider answered %d rows for %d ops", kres && c->st_kv >= 0 ? PQntuples(kres) : tres ? PQntuples(tres) : 0,
                           c->st_kv >= 0 ? c->nkv : c->ntm);
        db_req_clear(d);
        txn_free(c);
        return;
    }
    int dups, full;
    push_enc_apply(&c->enc, res, &dups, &full);
    push_enc_settle(&c->pr);
    int rows = PQntuples(res);
    for (int i = 0; i < rows; i++) {
        if (db_get_i32(res, i, TXN_KIND) != TXN_ROW_ACK)
            continue;
        int idx = db_get_i32(res, i, TXN_IDX);
        int dlq = !PQgetisnull(res, i, TXN_DLQ) && PQgetvalue(res, i, TXN_DLQ)[0];
        for (uint32_t k = 0; k < c->nops; k++)
            if (!c->ops[k].is_push && c->ops[k].ack_index == idx)
                c->ops[k].dlq = dlq;
    }
    char id[37];
    uuid_format(&c->txn_id, id);
    buf b;
    buf_init(&b, c->nkv ? 2 * (size_t)KV_ANSWER_MAX_BYTES : 0);
    buf_printf(&b, "{\"transactionId\":\"%s\",\"success\":true,\"results\":[", id);
    int n = 0;
    for (uint32_t k = 0; k < c->nops; k++) {
        txn_op *op = &c->ops[k];
        if (!op->is_push) {
            if (n)
                buf_putc(&b, ',');
            buf_printf(&b, "{\"index\":%d,\"type\":\"ack\",\"success\":true,\"transactionId\":", n++);
            jw_string(&b, op->txn, op->txn_len);
            buf_printf(&b, ",\"error\":null,\"dlq\":%s}", op->dlq ? "true" : "false");
            continue;
        }
        for (uint32_t j = op->first; j < op->first + op->count; j++) {
            push_item *it = &c->pr.items[j];
            uuid mid;
            uuid_message_id(it->partition_id, it->offset, &mid);
            char ms[37], pu[37];
            uuid_format(&mid, ms);
            format_uuid_text(it->partition_uuid, pu);
            if (n)
                buf_putc(&b, ',');
            buf_printf(&b, "{\"index\":%d,\"type\":\"push\",\"success\":true,\"transactionId\":", n++);
            jw_string(&b, it->txn, it->txn_len);
            buf_printf(&b, ",\"status\":\"%s\",\"messageId\":\"%s\",\"partitionId\":\"%s\",\"queueName\":",
                       it->status == PUSH_DUPLICATE ? "duplicate" : "queued", ms, pu);
            jw_string(&b, it->queue, it->queue_len);
            buf_putc(&b, '}');
        }
    }
    /* then the kv rider's results, then the timers', in the same flat index space */
    for (int i = 0; i < c->nkv; i++) {
        const char *o = PQgetvalue(kres, i, KV_OPS_RESULT);
        int len = PQgetlength(kres, i, KV_OPS_RESULT);
        if (n)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"index\":%d,\"type\":\"kv\",\"op\":\"%s\"%s", n++, kvw_kind_name(c->kv[i].kind), len > 2 ? "," : "");
        buf_append(&b, o + 1, (size_t)len - 1);
        mc_add(&c->a->kvm.ops[kvw_metric_slot(c->kv[i].kind)], 1);
    }
    if (c->nkv)
        mc_add(&c->a->kvm.batches, 1);
    if (c->ntm) {
        int *at = arena_alloc(&r->ar, (size_t)c->ntm * sizeof *at);
        for (int i = 0; i < c->ntm; i++)
            at[i] = -1;
        for (int i = 0; i < c->ntm; i++) {
            int k = db_get_i32(tres, i, TIMER_OPS_INDEX);
            if (k >= 1 && k <= c->ntm)
                at[k - 1] = i;
        }
        buf t;
        buf_init(&t, 0);
        for (int i = 0; i < c->ntm; i++) {
            if (at[i] < 0)
                continue;
            buf_reset(&t);
            timer_result_json(&t, &c->tm[i], tres, at[i]);
            if (n)
                buf_putc(&b, ',');
            buf_printf(&b, "{\"index\":%d,\"type\":\"timer\",", n++);
            buf_append(&b, t.data + 1, t.len - 1);
        }
        buf_free(&t);
        int64_t soonest = timer_ops_account(timer_job_metrics(c->a->timers), tres);
        if (soonest != INT64_MAX)
            timer_job_kick(c->a->timers, soonest);
    }
    db_req_clear(d);
    buf_puts(&b, "]}");
    /* records may be available (pushes) or leases released (acks): wake waiting pops */
    for (uint32_t g = 0; g < c->enc.ngroups; g++)
        notifier_changed(c->a->notify, c->enc.groups[g].tenant, c->enc.groups[g].queue, c->enc.groups[g].queue_len);
    txn_free(c);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

/* Reads an ack operation; -1 with msg on bad input. */
static int read_ack(http_req *r, const json_doc *d, int t, uint32_t i, txn_op *op, char *msg, size_t ml)
{
    const char *s;
    size_t len;
    char where[64], other[96];
    int rc = api_str_field(r, d, t, "transactionId", &op->txn, &op->txn_len);
    if (rc <= 0) {
        snprintf(where, sizeof where, "operations[%u].transactionId", i);
        snprintf(other, sizeof other, "operations[%u]: transactionId is required", i);
        api_str_field_msg(rc, where, other, msg, ml);
        return -1;
    }
    rc = api_str_field(r, d, t, "partitionId", &s, &len);
    if (rc <= 0 || api_partition_ref(s, len, &op->part) < 0) {
        snprintf(msg, ml, "operations[%u]: partitionId is required (a UUID, or a framed pop's decimal id)", i);
        return -1;
    }
    rc = api_str_field(r, d, t, "status", &op->status, &len);
    if (rc < 0) {
        snprintf(where, sizeof where, "operations[%u].status", i);
        snprintf(other, sizeof other, "operations[%u]: status must be a string", i);
        api_str_field_msg(rc, where, other, msg, ml);
        return -1;
    }
    if (rc == 0)
        op->status = "completed";
    rc = api_str_field(r, d, t, "consumerGroup", &op->group, &len);
    if (rc < 0) {
        snprintf(where, sizeof where, "operations[%u].consumerGroup", i);
        snprintf(other, sizeof other, "operations[%u]: consumerGroup must be a string", i);
        api_str_field_msg(rc, where, other, msg, ml);
        return -1;
    }
    if (!op->group || !*op->group)
        op->group = QUEUE_MODE_GROUP;
    rc = api_str_field(r, d, t, "leaseId", &s, &len);
    if (rc < 0 || (rc == 1 && len > 0 && uuid_parse(s, len, &op->lease) < 0)) {
        snprintf(msg, ml, "operations[%u]: leaseId must be a UUID", i);
        return -1;
    }
    op->has_lease = rc == 1 && len > 0;
    rc = api_str_field(r, d, t, "error", &op->error, &len);
    if (rc < 0) {
        snprintf(where, sizeof where, "operations[%u].error", i);
        snprintf(other, sizeof other, "operations[%u]: error must be a string", i);
        api_str_field_msg(rc, where, other, msg, ml);
        return -1;
    }
    return 0;
}

void api_transaction(http_req *r)
{
    app *a = r->app;
    /* the 2.x binary body (QTB1) becomes the JSON transaction it stands for */
    if (api_txn_is_binary(r) && api_txn_binary_to_json(r) < 0)
        return;
    json_doc d;
    /* root → operations → op → items → item → payload (depth 5) */
    if (api_parse_body_or_respond(r, &d, 5) < 0)
        return;
    if (json_type_of(&d, 0) != JSON_OBJECT) {
        json_doc_free(&d);
        http_respond_error(r, 400, "the body must be an object: {operations, requiredLeases?, kv?, timers?}");
        return;
    }
    /* every top-level key is one this route applies: a rider it did not know would otherwise
     * commit the pushes and acks without the guard it carried */
    {
        uint32_t cnt = d.toks[0].count;
        int k = json_first(&d, 0);
        for (uint32_t i = 0; i < cnt; i++, k = json_next(&d, k + 1)) {
            if (json_str_eq(&d, k, "operations") || json_str_eq(&d, k, "requiredLeases") || json_str_eq(&d, k, "kv") ||
                json_str_eq(&d, k, "timers"))
                continue;
            buf nb;
            buf_init(&nb, 256);
            json_str_decode(&d, k, &nb);
            json_doc_free(&d);
            http_respond_error_code(r, 400, "unknown_field",
                                    "unknown field \"%.*s\": a transaction takes operations, requiredLeases, kv and "
                                    "timers",
                                    (int)utf8_cut(nb.data ? nb.data : "", nb.len, 64), nb.data ? nb.data : "");
            buf_free(&nb);
            return;
        }
    }
    int ops = json_get(&d, 0, "operations");
    if (json_type_of(&d, ops) != JSON_ARRAY) {
        json_doc_free(&d);
        http_respond_error(r, 400, "operations array required");
        return;
    }
    uint32_t nops = d.toks[ops].count;
    txn_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = a;
    c->st_kv = c->st_tm = -1;
    int kvt = json_get(&d, 0, "kv"), tmt = json_get(&d, 0, "timers");
    if (kvt >= 0) {
        qerr_detail why;
        qerr e = kvw_parse(&d, kvt, "kv", 1, &r->ar, &c->kv, &c->nkv, &why);
        if (e != QERR_OK) {
            json_doc_free(&d);
            http_respond_qerr_refusal(r, e, &why);
            return;
        }
    }
    if (tmt >= 0) {
        qerr_detail why;
        qerr e = timer_ops_parse(&d, tmt, "timers", &r->ar, &c->tm, &c->ntm, &why);
        if (e != QERR_OK) {
            json_doc_free(&d);
            http_respond_qerr_refusal(r, e, &why);
            return;
        }
    }
    if (nops == 0 && c->nkv == 0 && c->ntm == 0) {
        json_doc_free(&d);
        http_respond_error(r, 400, "operations array cannot be empty");
        return;
    }
    c->nops = nops;
    c->ops = arena_alloc(&r->ar, (nops ? nops : 1) * sizeof *c->ops);
    memset(c->ops, 0, (nops ? nops : 1) * sizeof *c->ops);
    uuid_v7(&c->txn_id);
    /* count push items first: they live in one push request */
    uint32_t nitems = 0;
    int o = json_first(&d, ops);
    for (uint32_t i = 0; i < nops; i++, o = json_next(&d, o)) {
        int items = json_get(&d, o, "items");
        if (json_type_of(&d, items) == JSON_ARRAY)
            nitems += d.toks[items].count;
    }
    push_req *pr = &c->pr;
    memcpy(pr->tenant, r->tenant, 16);
    if (r->subject) {
        pr->producer = r->subject;
        pr->producer_len = (uint32_t)strlen(r->subject);
    }
    pr->items = arena_alloc(&r->ar, (nitems + 1) * sizeof *pr->items);
    memset(pr->items, 0, (nitems + 1) * sizeof *pr->items);
    char msg[300];
    o = json_first(&d, ops);
    for (uint32_t i = 0; i < nops; i++, o = json_next(&d, o)) {
        txn_op *op = &c->ops[i];
        if (json_type_of(&d, o) != JSON_OBJECT) {
            json_doc_free(&d);
            http_respond_error(r, 400, "operations[%u] must be an object", i);
            return;
        }
        int ty = json_get(&d, o, "type");
        if (json_str_eq(&d, ty, "push")) {
            int items = json_get(&d, o, "items");
            if (json_type_of(&d, items) != JSON_ARRAY || d.toks[items].count == 0) {
                json_doc_free(&d);
                http_respond_error(r, 400, "operations[%u]: a push needs a non-empty items array", i);
                return;
            }
            op->is_push = 1;
            op->first = pr->n;
            op->count = d.toks[items].count;
            int it = json_first(&d, items);
            for (uint32_t k = 0; k < op->count; k++, it = json_next(&d, it)) {
                if (push_item_parse_or_respond(r, &d, it, k, &pr->items[pr->n++]) < 0) {
                    json_doc_free(&d);
                    return;
                }
            }
        } else if (json_str_eq(&d, ty, "ack")) {
            if (read_ack(r, &d, o, i, op, msg, sizeof msg) < 0) {
                json_doc_free(&d);
                http_respond_error(r, 400, "%s", msg);
                return;
            }
            op->ack_index = (int)++c->nacks;
        } else {
            buf t;
            buf_init(&t, 200);
            if (json_type_of(&d, ty) == JSON_STRING)
                json_str_decode(&d, ty, &t);
            json_doc_free(&d);
            http_respond_error(r, 400, "Unknown operation type: %s", t.len ? buf_cstr(&t) : "(missing)");
            buf_free(&t);
            return;
        }
    }
    pgarray_begin(&c->required, OID_UUID);
    int req = json_get(&d, 0, "requiredLeases");
    if (req >= 0 && json_type_of(&d, req) != JSON_NULL) {
        if (json_type_of(&d, req) != JSON_ARRAY) {
            json_doc_free(&d);
            pgarray_free(&c->required);
            http_respond_error(r, 400, "requiredLeases must be an array of lease ids");
            return;
        }
        int t = json_first(&d, req);
        for (uint32_t k = 0; k < d.toks[req].count; k++, t = json_next(&d, t)) {
            const char *s;
            size_t len;
            uuid u;
            if (json_str_span(&d, t, &s, &len) < 0 || uuid_parse(s, len, &u) < 0) {
                json_doc_free(&d);
                pgarray_free(&c->required);
                http_respond_error(r, 400, "requiredLeases[%u] must be a lease id (a UUID)", k);
                return;
            }
            pgarray_add(&c->required, u.b, 16);
        }
    }
    json_doc_free(&d);
    /* a cluster that may not push (push_blocked, over its storage) may still ack. The riders
     * count as what they do on their own routes: a timer scheduled (or rescheduled) is a push,
     * as POST /api/v1/timers is; a KV write is refused at the storage ceiling */
    int cp_kind = nitems > 0 ? 2 : 0;
    for (int i = 0; i < c->ntm && cp_kind < 2; i++)
        if (c->tm[i].kind != TIMER_OP_CANCEL)
            cp_kind = 2;
    for (int i = 0; i < c->nkv && cp_kind < 1; i++)
        if (c->kv[i].kind == KVW_PUT || c->kv[i].kind == KVW_PUT_IF_ABSENT || c->kv[i].kind == KVW_INCR)
            cp_kind = 1;
    if (cp_kind > 0 && api_cp_refused(r, cp_kind)) {
        pgarray_free(&c->required);
        return;
    }

    push_enc_init(&c->enc);
    c->enc.sq = pusher_sealq(a->push);
    encode_pushes(c);
    pgarray *aa = c->ack_arr;
    pgarray_begin(&aa[0], OID_TEXT);
    pgarray_begin(&aa[1], OID_UUID);
    pgarray_begin(&aa[2], OID_TEXT);
    pgarray_begin(&aa[3], OID_TEXT);
    pgarray_begin(&aa[4], OID_UUID);
    pgarray_begin(&aa[5], OID_TEXT);
    for (uint32_t i = 0; i < nops; i++) {
        txn_op *op = &c->ops[i];
        if (op->is_push)
            continue;
        pgarray_add(&aa[0], op->group, strlen(op->group));
        pgarray_add(&aa[1], op->part.b, 16);
        pgarray_add(&aa[2], op->txn, op->txn_len);
        pgarray_add(&aa[3], op->status, strlen(op->status));
        if (op->has_lease)
            pgarray_add(&aa[4], op->lease.b, 16);
        else
            pgarray_add_null(&aa[4]);
        if (op->error)
            pgarray_add(&aa[5], op->error, strlen(op->error));
        else
            pgarray_add_null(&aa[5]);
    }
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    for (int k = 0; k < 6; k++) {
        pgarray_finish(&aa[k]);
        c->values[11 + k] = aa[k].b.data;
        c->lengths[11 + k] = (int)aa[k].b.len;
        c->formats[11 + k] = 1;
    }
    pgarray_finish(&c->required);
    c->values[17] = c->required.b.data;
    c->lengths[17] = (int)c->required.b.len;
    c->formats[17] = 1;
    /* with riders: BEGIN; the KV ops; the timer ops; the pushes and acks; COMMIT — each its own
     * statement of one pipeline, one transaction. The first that fails leaves the rest in an
     * aborted transaction and COMMIT rolls it all back. */
    int ns = 0;
    if (c->nkv || c->ntm)
        c->dbr.stmt[ns++] = (db_stmt){"BEGIN", 0, NULL, NULL, NULL, 0};
    if (c->nkv) {
        /* sealed: a lost required op raises QK001 and loses the whole transaction */
        kvw_params_build(r->tenant, 1, c->kv, c->nkv, &c->kvp);
        c->st_kv = ns;
        c->dbr.stmt[ns++] = (db_stmt){KV_OPS_SQL, c->kvp.n, c->kvp.values, c->kvp.lengths, c->kvp.formats, 1};
    }
    if (c->ntm) {
        for (int i = 0; i < c->ntm; i++)
            c->tm[i].seal = c->tm[i].kind != TIMER_OP_CANCEL && seal_node_key() &&
                            sealq_wants(pusher_sealq(a->push), r->tenant, c->tm[i].queue, c->tm[i].queue_len, mono_ms());
        timer_ops_params(r->tenant, c->tm, c->ntm, r->subject, r->subject ? strlen(r->subject) : 0, &c->tp);
        c->st_tm = ns;
        c->dbr.stmt[ns++] = (db_stmt){TIMER_OPS_SQL, c->tp.n, c->tp.values, c->tp.lengths, c->tp.formats, 1};
    }
    c->st_txn = ns;
    c->dbr.stmt[ns++] = (db_stmt){"SELECT * FROM queen.transaction_v1("
                                  "$1::uuid, $2::uuid[], $3::text[], $4::text[], $5::int4[], $6::int4[], "
                                  "$7::bytea[], $8::int4[], $9::int4[], $10::text[], $11::int8, $12::text[], "
                                  "$13::uuid[], $14::text[], $15::text[], $16::uuid[], $17::text[], $18::uuid[])",
                                  TXN_PARAMS, c->values, c->lengths, c->formats, 1};
    if (c->nkv || c->ntm)
        c->dbr.stmt[ns++] = (db_stmt){"COMMIT", 0, NULL, NULL, NULL, 0};
    c->dbr.nstmt = ns;
    c->dbr.done = on_done;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        api_respond_db_error(r, &c->dbr);
        txn_free(c);
    }
}
