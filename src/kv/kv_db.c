/* kv_db.c — decoding kv_batch_v1's answer, and running a batch on a blocking connection for
 * subsystems that live on threads of their own (the S3 sink). */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kv.h"

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

int kv_batch_decode(struct pg_result *res, int n, kv_outcome *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->failed_op = -1;
    out->res = res;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != KV_BATCH_NCOLS || PQbinaryTuples(res) != 1) {
        snprintf(err, errlen, "kv_batch_v1 returned an unexpected result");
        return -1;
    }
    int rows = PQntuples(res);
    if (rows == 1 && bin_i32(res, 0, KV_O_STATUS) > 0) {
        int32_t idx = bin_i32(res, 0, KV_O_INDEX);
        int32_t st = bin_i32(res, 0, KV_O_STATUS);
        if (idx < 0 || idx >= n || st >= KV_FAIL_COUNT) {
            snprintf(err, errlen, "kv_batch_v1 reported failure %d at op %d of %d", st, idx, n);
            return -1;
        }
        out->fail = (enum kv_fail)st;
        out->failed_op = idx;
        row_result(res, 0, &out->current);
        return 0;
    }
    if (rows != n) {
        snprintf(err, errlen, "kv_batch_v1 returned %d rows for %d ops", rows, n);
        return -1;
    }
    out->results = xcalloc((size_t)(n ? n : 1), sizeof *out->results);
    out->n = n;
    for (int i = 0; i < rows; i++) {
        int32_t idx = bin_i32(res, i, KV_O_INDEX);
        if (idx < 0 || idx >= n || bin_i32(res, i, KV_O_STATUS) != 0) {
            snprintf(err, errlen, "kv_batch_v1 returned a malformed row %d", i);
            return -1;
        }
        row_result(res, i, &out->results[idx]);
    }
    return 0;
}

int kv_batch_sync(struct pg_conn *c, const uint8_t tenant[16], const kv_op *ops, int n, kv_outcome *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->failed_op = -1;
    if (n < 1 || n > KV_BATCH_MAX_OPS) {
        snprintf(err, errlen, "a batch holds 1 to %d ops, not %d", KV_BATCH_MAX_OPS, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char e[300];
        if (kv_check_op(&ops[i], e, sizeof e) < 0) {
            snprintf(err, errlen, "op %d: %s", i, e);
            return -1;
        }
    }
    kv_params p;
    kv_batch_params(tenant, ops, n, &p);
    int rc = -1;
    for (int attempt = 1;; attempt++) {
        PGresult *res = PQexecParams(c, KV_BATCH_SQL, p.n, NULL, p.values, p.lengths, p.formats, 1);
        if (PQresultStatus(res) == PGRES_TUPLES_OK) {
            rc = kv_batch_decode(res, n, out, err, errlen);
            break;
        }
        const char *ss = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        int retry = ss && (strcmp(ss, "40001") == 0 || strcmp(ss, "40P01") == 0) && attempt < KV_SYNC_MAX_ATTEMPTS;
        if (!retry) {
            const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
            snprintf(err, errlen, "kv batch failed: %s", msg ? msg : PQerrorMessage(c));
            PQclear(res);
            break;
        }
        PQclear(res);
    }
    kv_params_free(&p);
    return rc;
}
