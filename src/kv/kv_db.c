/* kv_db.c — decoding kv_batch_v1's answer, and running a batch on a blocking connection for
 * subsystems that live on threads of their own (the S3 sink). */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/timeutil.h"
#include "kv.h"
#include "kv_wire.h"

/* A deadlock cannot happen inside the lock order, but a serialization failure or a deadlock
 * with some future caller outside it is answered by running the batch again, a few times. */
#define KV_SYNC_MAX_ATTEMPTS 5

void kv_outcome_clear(kv_outcome *o)
{
    free(o->results);
    if (o->res)
        PQclear(o->res);
    memset(o, 0, sizeof *o);
    o->failed_op = -1;
}

static int64_t bin_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8)
        return 0;
    return (int64_t)be_get64((const uint8_t *)PQgetvalue(r, row, col));
}

static int32_t bin_i32(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 4)
        return -1;
    return (int32_t)be_get32((const uint8_t *)PQgetvalue(r, row, col));
}

static void row_result(const PGresult *r, int row, kv_result *out)
{
    out->version = bin_i64(r, row, KV_O_VERSION);
    if (PQgetisnull(r, row, KV_O_VALUE)) {
        out->value = NULL;
        out->value_len = 0;
    } else {
        out->value = PQgetvalue(r, row, KV_O_VALUE);
        out->value_len = (size_t)PQgetlength(r, row, KV_O_VALUE);
    }
    out->expires_at_us = bin_i64(r, row, KV_O_EXPIRES_AT);
    out->flag = !PQgetisnull(r, row, KV_O_FLAG) && PQgetvalue(r, row, KV_O_FLAG)[0] != 0;
}

qerr kv_batch_decode(struct pg_result *res, int n, kv_outcome *out, qerr_detail *err)
{
    memset(out, 0, sizeof *out);
    out->failed_op = -1;
    out->res = res;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != KV_BATCH_NCOLS || PQbinaryTuples(res) != 1)
        return qerr_set(err, QERR_INTERNAL, NULL, "kv_batch_v1 returned an unexpected result");
    int rows = PQntuples(res);
    if (rows == 1 && bin_i32(res, 0, KV_O_STATUS) > 0) {
        int32_t idx = bin_i32(res, 0, KV_O_INDEX);
        int32_t st = bin_i32(res, 0, KV_O_STATUS);
        if (idx < 0 || idx >= n || st >= KV_FAIL_COUNT)
            return qerr_set(err, QERR_INTERNAL, NULL, "kv_batch_v1 reported failure %d at op %d of %d", st, idx, n);
        out->fail = (enum kv_fail)st;
        out->failed_op = idx;
        row_result(res, 0, &out->current);
        return QERR_OK;
    }
    if (rows != n)
        return qerr_set(err, QERR_INTERNAL, NULL, "kv_batch_v1 returned %d rows for %d ops", rows, n);
    out->results = xcalloc((size_t)(n ? n : 1), sizeof *out->results);
    out->n = n;
    for (int i = 0; i < rows; i++) {
        int32_t idx = bin_i32(res, i, KV_O_INDEX);
        if (idx < 0 || idx >= n || bin_i32(res, i, KV_O_STATUS) != 0)
            return qerr_set(err, QERR_INTERNAL, NULL, "kv_batch_v1 returned a malformed row %d", i);
        row_result(res, i, &out->results[idx]);
    }
    return QERR_OK;
}

/* The batch on the 2.x semantics (queen.kv_ops_apply_v1): every op that carries a
 * precondition, and every incr (max, not_integer and overflow fail the batch), is required, so
 * the first that does not apply fails the statement and nothing is written — the all-or-nothing
 * contract of kv.h. */
static void to_wire(const kv_op *o, kvw_op *w)
{
    memset(w, 0, sizeof *w);
    w->ns = o->ns;
    w->ns_len = o->ns_len;
    w->key = o->key;
    w->key_len = o->key_len;
    switch (o->kind) {
    case KV_GET: w->kind = KVW_GET; return;
    case KV_PUT:
        w->kind = o->expect == KV_EXPECT_ABSENT ? KVW_PUT_IF_ABSENT : KVW_PUT;
        w->value = o->value;
        w->value_len = o->value_len;
        break;
    case KV_DELETE: w->kind = KVW_DELETE; break;
    case KV_INCR:
        w->kind = KVW_INCR;
        w->delta = o->by;
        w->has_max = o->has_max;
        w->max = o->max;
        w->required = 1;
        break;
    }
    if (o->expect == KV_EXPECT_ABSENT) {
        w->has_expect = 1;
        w->expect = 0;
        w->required = 1;
    } else if (o->expect == KV_EXPECT_VERSION) {
        w->has_expect = 1;
        w->expect = o->version;
        w->required = 1;
    }
    if (o->kind != KV_DELETE) {
        w->ttl_ms = o->ttl_ms > 0 ? o->ttl_ms : 0;
        w->forever = o->ttl_ms <= 0;
    }
}

static enum kv_fail fail_of(const char *reason)
{
    static const struct {
        const char *name;
        enum kv_fail f;
    } map[] = {{"version", KV_FAIL_VERSION},       {"exists", KV_FAIL_EXISTS},
               {"absent", KV_FAIL_ABSENT},         {"max_exceeded", KV_FAIL_MAX},
               {"min_exceeded", KV_FAIL_MAX},      {"not_integer", KV_FAIL_NOT_INTEGER},
               {"overflow", KV_FAIL_OVERFLOW}};
    for (size_t i = 0; i < ARRAY_LEN(map); i++)
        if (strcmp(reason, map[i].name) == 0)
            return map[i].f;
    return KV_FAIL_VERSION;
}

/* One result object (JSON text at p, which lives as long as the PGresult) into r; kind -1
 * reads a failed op's verdict (the key as it saw it). */
static int read_result(const char *p, size_t n, int kind, kv_result *r)
{
    memset(r, 0, sizeof *r);
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = 1};
    if (json_parse(&d, p, n, &jo) < 0 || json_type_of(&d, 0) != JSON_OBJECT) {
        json_doc_free(&d);
        return -1;
    }
    int t = json_get(&d, 0, "version");
    if (t >= 0 && json_type_of(&d, t) == JSON_NUMBER)
        json_int64(&d, t, &r->version);
    t = json_get(&d, 0, "value");
    if (t >= 0 && json_type_of(&d, t) != JSON_NULL) {
        r->value = json_raw(&d, t, &r->value_len);
    } else if (t >= 0 && kind != KVW_PUT && kind != KVW_PUT_IF_ABSENT) {
        /* a stored JSON null */
        r->value = json_raw(&d, t, &r->value_len);
    }
    t = json_get(&d, 0, "expiresAt");
    if (t >= 0 && json_type_of(&d, t) == JSON_STRING) {
        const char *s;
        size_t sl;
        if (json_str_span(&d, t, &s, &sl) == 0)
            parse_iso_us(s, sl, &r->expires_at_us);
    }
    const char *flag = kind == KVW_GET ? "found" : kind == KVW_DELETE ? "applied" : "created";
    r->flag = kind >= 0 && json_type_of(&d, json_get(&d, 0, flag)) == JSON_TRUE;
    if (kind == KVW_GET && !r->flag) {
        r->value = NULL;
        r->value_len = 0;
        r->version = 0;
    }
    if (kind == KVW_DELETE)
        r->version = 0;
    json_doc_free(&d);
    return 0;
}

qerr kv_batch_sync(struct pg_conn *c, const uint8_t tenant[16], const kv_op *ops, int n, kv_outcome *out,
                   qerr_detail *err)
{
    memset(out, 0, sizeof *out);
    out->failed_op = -1;
    if (n < 1 || n > KV_BATCH_MAX_OPS)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "a batch holds 1 to %d ops, not %d", KV_BATCH_MAX_OPS, n);
    kvw_op *w = xcalloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++) {
        qerr_detail e;
        if (kv_check_op(&ops[i], &e) != QERR_OK) {
            free(w);
            return qerr_set(err, QERR_BAD_INPUT, NULL, "op %d: %s", i, e.text);
        }
        to_wire(&ops[i], &w[i]);
    }
    kvw_params p;
    kvw_params_build_apply(tenant, w, n, &p);
    qerr rc = QERR_DATABASE;
    for (int attempt = 1;; attempt++) {
        PGresult *res = PQexecParams(c, KV_OPS_APPLY_SQL, p.n, NULL, p.values, p.lengths, p.formats, 1);
        const char *ss = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (PQresultStatus(res) == PGRES_TUPLES_OK) {
            if (PQntuples(res) != n) {
                rc = qerr_set(err, QERR_INTERNAL, NULL, "kv_ops_apply_v1 answered %d rows for %d ops", PQntuples(res), n);
                PQclear(res);
                break;
            }
            out->results = xcalloc((size_t)n, sizeof *out->results);
            out->n = n;
            out->res = res;
            rc = QERR_OK;
            for (int i = 0; i < n && rc == QERR_OK; i++)
                if (read_result(PQgetvalue(res, i, KV_OPS_APPLY_RESULT), (size_t)PQgetlength(res, i, KV_OPS_APPLY_RESULT),
                                w[i].kind, &out->results[i]) < 0)
                    rc = qerr_set(err, QERR_INTERNAL, NULL, "kv_ops_apply_v1: result %d is not a JSON object", i);
            break;
        }
        char reason[64];
        int op = ss ? kvw_required_failure(ss, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), reason, sizeof reason)
                    : 0;
        if (op >= 1 && op <= n) {
            /* the fence (or another precondition) did not hold: nothing was written */
            const char *det = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
            out->fail = fail_of(reason);
            out->failed_op = op - 1;
            out->res = res;
            if (det)
                read_result(det, strlen(det), -1, &out->current);
            /* the failing op's key as it saw it: found when it has a version */
            out->current.flag = out->current.version > 0;
            if (!out->current.flag) {
                out->current.value = NULL;
                out->current.value_len = 0;
            }
            rc = QERR_OK;
            break;
        }
        int retry = ss && (strcmp(ss, "40001") == 0 || strcmp(ss, "40P01") == 0) && attempt < KV_SYNC_MAX_ATTEMPTS;
        if (!retry) {
            const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
            /* for the caller's log: blocking threads (the sink) have no client to hide it from */
            rc = qerr_set(err, QERR_DATABASE, NULL, "kv batch failed: %s", msg ? msg : PQerrorMessage(c));
            PQclear(res);
            break;
        }
        PQclear(res);
    }
    kvw_params_free(&p);
    free(w);
    return rc;
}
