/* sinkdb.c — the sink's blocking PostgreSQL calls (see sinkdb.h). */
#include "sinkdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "core/util.h"
#include "db/pg.h"
#include "sinkdb_results.h"
#include "storage/logread.h"

#define SINKDB_BACKOFF_MIN_MS 100
#define SINKDB_BACKOFF_MAX_MS 5000

void sinkdb_init(sinkdb *d, const char *conninfo, int64_t statement_timeout_ms, int64_t connect_timeout_ms)
{
    memset(d, 0, sizeof *d);
    d->conninfo = xstrdup(conninfo);
    d->statement_timeout_ms = statement_timeout_ms;
    d->connect_timeout_ms = connect_timeout_ms;
    d->backoff_ms = SINKDB_BACKOFF_MIN_MS;
}

void sinkdb_close(sinkdb *d)
{
    if (d->c)
        PQfinish(d->c);
    d->c = NULL;
    free(d->conninfo);
    d->conninfo = NULL;
}

static void set_err(sinkdb *d, const char *what, const char *msg)
{
    snprintf(d->err, sizeof d->err, "%s: %s", what, msg ? msg : "unknown error");
    size_t n = strlen(d->err);
    while (n && (d->err[n - 1] == '\n' || d->err[n - 1] == ' '))
        d->err[--n] = '\0';
}

int sinkdb_ensure(sinkdb *d)
{
    if (d->c && PQstatus(d->c) == CONNECTION_OK)
        return 0;
    if (d->c) {
        PQfinish(d->c);
        d->c = NULL;
    }
    if (mono_ms() < d->next_try_ms)
        return -1;
    db_conn_params cp;
    db_conn_params_init(&cp, d->conninfo, d->statement_timeout_ms, d->connect_timeout_ms);
    PGconn *c = PQconnectdbParams(cp.keys, cp.vals, 1);
    if (PQstatus(c) != CONNECTION_OK) {
        set_err(d, "cannot connect to PostgreSQL", PQerrorMessage(c));
        PQfinish(c);
        d->next_try_ms = mono_ms() + (uint64_t)d->backoff_ms;
        d->backoff_ms = d->backoff_ms * 2 > SINKDB_BACKOFF_MAX_MS ? SINKDB_BACKOFF_MAX_MS : d->backoff_ms * 2;
        return -1;
    }
    d->c = c;
    d->backoff_ms = SINKDB_BACKOFF_MIN_MS;
    return 0;
}

/* Runs one statement with text parameters and binary results. NULL on failure (d->err set;
 * a broken connection is dropped so the next call reconnects). */
static PGresult *run(sinkdb *d, const char *what, const char *sql, int n, const char *const *vals, const int *lens,
                     const int *fmts)
{
    if (sinkdb_ensure(d) < 0)
        return NULL;
    PGresult *r = PQexecParams(d->c, sql, n, NULL, vals, lens, fmts, 1);
    if (PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK)
        return r;
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    set_err(d, what, msg ? msg : PQerrorMessage(d->c));
    PQclear(r);
    if (PQstatus(d->c) != CONNECTION_OK) {
        PQfinish(d->c);
        d->c = NULL;
    }
    return NULL;
}

static int64_t col_i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : (int64_t)be_get64((const uint8_t *)PQgetvalue(r, row, col));
}

static int64_t col_i64_or(const PGresult *r, int row, int col, int64_t dflt)
{
    return PQgetisnull(r, row, col) ? dflt : col_i64(r, row, col);
}

static void uuid_text(const uint8_t t[16], char out[37])
{
    format_uuid_text(t, out);
}

int sinkdb_clock(sinkdb *d, const uint8_t tenant[16], const char *queue, int64_t *qid, int64_t *safe_time,
                 int64_t *now_us)
{
    char t[37];
    uuid_text(tenant, t);
    const char *vals[2] = {t, queue};
    PGresult *r = run(d, "reading the queue clock", "SELECT * FROM queen.sink_clock_v1($1::uuid, $2::text)",
                      2, vals, NULL, NULL);
    if (!r)
        return -1;
    int rc = 1;
    if (PQntuples(r) == 1) {
        *qid = col_i64(r, 0, SINK_CLOCK_QUEUE_ID);
        *safe_time = col_i64(r, 0, SINK_CLOCK_SAFE_TIME);
        *now_us = col_i64(r, 0, SINK_CLOCK_NOW);
        rc = 0;
    }
    PQclear(r);
    return rc;
}

/* Where a partition's name, uuid and offsets are in a row of each function. */
typedef struct part_cols {
    int name, puuid, start, next;
} part_cols;
static const part_cols SLICE_PART = {SINK_SLICE_NAME, SINK_SLICE_PUUID, SINK_SLICE_START, SINK_SLICE_NEXT};
static const part_cols POSITIONS_PART = {SINK_POS_NAME, SINK_POS_PUUID, SINK_POS_START, SINK_POS_NEXT};
static const part_cols POSITIONS_AT_PART = {SINK_POS_AT_NAME, SINK_POS_AT_PUUID, SINK_POS_AT_START, SINK_POS_AT_NEXT};

static void fill_part(const PGresult *r, int row, const part_cols *c, sinkdb_part *p)
{
    p->name = PQgetvalue(r, row, c->name);
    p->name_len = (size_t)PQgetlength(r, row, c->name);
    p->uuid = (const uint8_t *)PQgetvalue(r, row, c->puuid);
    p->start_offset = col_i64(r, row, c->start);
    p->next_offset = col_i64(r, row, c->next);
    p->last_offset = -1;
    p->last_ts = 0;
}

int sinkdb_slice(sinkdb *d, int64_t qid, int64_t from, int64_t to, int64_t budget, int64_t align_us,
                 const sinkdb_slice_cb *cb, int64_t *end)
{
    char a[5][24];
    snprintf(a[0], sizeof a[0], "%lld", (long long)qid);
    snprintf(a[1], sizeof a[1], "%lld", (long long)from);
    snprintf(a[2], sizeof a[2], "%lld", (long long)to);
    snprintf(a[3], sizeof a[3], "%lld", (long long)budget);
    snprintf(a[4], sizeof a[4], "%lld", (long long)align_us);
    const char *vals[5] = {a[0], a[1], a[2], a[3], a[4]};
    /* single-row mode: a slice can be a target's worth of segments, and each row is copied
     * into the window's buffer as it arrives instead of holding the whole result as well */
    if (sinkdb_ensure(d) < 0)
        return -1;
    static const char sql[] = "SELECT * FROM queen.sink_slice_v1($1::int8, $2::int8, $3::int8, $4::int8, $5::int8)";
    if (!PQsendQueryParams(d->c, sql, 5, NULL, vals, NULL, NULL, 1)) {
        set_err(d, "reading the log", PQerrorMessage(d->c));
        PQfinish(d->c);
        d->c = NULL;
        return -1;
    }
    PQsetSingleRowMode(d->c);
    *end = to;
    int rc = 0, failed = 0;
    PGresult *r;
    /* rows come as the function returns them: kind 0, then the partitions, then the segments */
    while ((r = PQgetResult(d->c)) != NULL) {
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_SINGLE_TUPLE && rc == 0) {
            int kind = (int)be_get32((const uint8_t *)PQgetvalue(r, 0, SINK_SLICE_KIND));
            if (kind == SINK_SLICE_ROW_END) {
                *end = col_i64(r, 0, SINK_SLICE_TS);
            } else if (kind == SINK_SLICE_ROW_PARTITION && cb->on_part) {
                sinkdb_part p;
                fill_part(r, 0, &SLICE_PART, &p);
                p.last_ts = col_i64(r, 0, SINK_SLICE_TS);
                cb->on_part(cb->arg, &p);
            } else if (kind == SINK_SLICE_ROW_SEGMENT && cb->on_seg) {
                sinkdb_seg sg;
                sg.name = PQgetvalue(r, 0, SINK_SLICE_NAME);
                sg.name_len = (size_t)PQgetlength(r, 0, SINK_SLICE_NAME);
                sg.uuid = (const uint8_t *)PQgetvalue(r, 0, SINK_SLICE_PUUID);
                sg.base_offset = col_i64(r, 0, SINK_SLICE_BASE);
                sg.ts = col_i64(r, 0, SINK_SLICE_TS);
                sg.count = (uint32_t)be_get32((const uint8_t *)PQgetvalue(r, 0, SINK_SLICE_COUNT));
                sg.data = (const uint8_t *)PQgetvalue(r, 0, SINK_SLICE_DATA);
                sg.data_len = (size_t)PQgetlength(r, 0, SINK_SLICE_DATA);
                if (cb->on_seg(cb->arg, &sg)) {
                    set_err(d, "reading the log", "a segment could not be decoded");
                    rc = -2; /* the rest of the answer is read and dropped */
                }
            }
        } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK) {
            const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
            set_err(d, "reading the log", msg ? msg : PQerrorMessage(d->c));
            failed = 1;
        }
        PQclear(r);
    }
    if (failed) {
        if (PQstatus(d->c) != CONNECTION_OK) {
            PQfinish(d->c);
            d->c = NULL;
        }
        return -1;
    }
    return rc;
}

int sinkdb_positions(sinkdb *d, int64_t qid, int64_t from, int64_t to, void (*on_part)(void *, const sinkdb_part *),
                     void *arg)
{
    char a[3][24];
    snprintf(a[0], sizeof a[0], "%lld", (long long)qid);
    snprintf(a[1], sizeof a[1], "%lld", (long long)from);
    snprintf(a[2], sizeof a[2], "%lld", (long long)to);
    const char *vals[3] = {a[0], a[1], a[2]};
    PGresult *r = run(d, "reading positions",
                      "SELECT * FROM queen.sink_positions_v1($1::int8, $2::int8, $3::int8)",
                      3, vals, NULL, NULL);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        sinkdb_part p;
        fill_part(r, i, &POSITIONS_PART, &p);
        p.last_offset = col_i64_or(r, i, SINK_POS_LAST, -1);
        on_part(arg, &p);
    }
    PQclear(r);
    return 0;
}

int sinkdb_positions_at(sinkdb *d, int64_t qid, int64_t t, void (*on_part)(void *, const sinkdb_part *), void *arg)
{
    char a[2][24];
    snprintf(a[0], sizeof a[0], "%lld", (long long)qid);
    snprintf(a[1], sizeof a[1], "%lld", (long long)t);
    const char *vals[2] = {a[0], a[1]};
    PGresult *r = run(d, "reading positions",
                      "SELECT * FROM queen.sink_positions_at_v1($1::int8, $2::int8)",
                      2, vals, NULL, NULL);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        sinkdb_part p;
        fill_part(r, i, &POSITIONS_AT_PART, &p);
        p.last_offset = col_i64(r, i, SINK_POS_AT_FIRST);
        on_part(arg, &p);
    }
    PQclear(r);
    return 0;
}

const char SINKDB_QUEUES_SQL[] = "SELECT name FROM queen.queues WHERE tenant_id = $1::uuid ORDER BY name COLLATE \"C\"";

int sinkdb_queues(sinkdb *d, const uint8_t tenant[16], char ***names, int *n)
{
    char t[37];
    uuid_text(tenant, t);
    const char *vals[1] = {t};
    PGresult *r = run(d, "listing queues", SINKDB_QUEUES_SQL, 1, vals, NULL, NULL);
    if (!r)
        return -1;
    int rows = PQntuples(r);
    char **out = xcalloc((size_t)rows + 1, sizeof *out);
    for (int i = 0; i < rows; i++)
        out[i] = xstrndup(PQgetvalue(r, i, SINKDB_QUEUE_NAME), (size_t)PQgetlength(r, i, SINKDB_QUEUE_NAME));
    PQclear(r);
    *names = out;
    *n = rows;
    return 0;
}

void sinkdb_names_free(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int sinkdb_kv(sinkdb *d, const uint8_t tenant[16], const kv_op *ops, int n, kv_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->failed_op = -1;
    if (sinkdb_ensure(d) < 0)
        return -1;
    qerr_detail err;
    if (kv_batch_sync(d->c, tenant, ops, n, out, &err) != QERR_OK) {
        set_err(d, "kv", err.text);
        if (PQstatus(d->c) != CONNECTION_OK) {
            PQfinish(d->c);
            d->c = NULL;
        }
        return -1;
    }
    return 0;
}

const char SINKDB_KV_COUNT_SQL[] =
    "SELECT count(*)::int8 AS n FROM queen.kv WHERE tenant_id = $1::uuid AND namespace = $2::text "
    "AND key LIKE $3::text AND version > 0 AND (expires_at IS NULL OR expires_at > queen.now_us())";

int sinkdb_kv_count(sinkdb *d, const uint8_t tenant[16], const char *ns, const char *prefix, int64_t *count)
{
    char t[37];
    uuid_text(tenant, t);
    buf like;
    buf_init(&like, 0);
    kv_like_prefix(prefix, strlen(prefix), &like);
    const char *vals[3] = {t, ns, buf_cstr(&like)};
    PGresult *r = run(d, "counting kv keys", SINKDB_KV_COUNT_SQL, 3, vals, NULL, NULL);
    buf_free(&like);
    if (!r)
        return -1;
    *count = col_i64(r, 0, SINKDB_KV_COUNT);
    PQclear(r);
    return 0;
}

int sinkdb_cp_sinks(sinkdb *d, sinkdb_cp_row **rows, int *n)
{
    *rows = NULL;
    *n = 0;
    PGresult *r = run(d, "reading the control plane's sinks", "SELECT * FROM queen.cp_s3_sinks_v1()", 0, NULL, NULL,
                      NULL);
    if (!r)
        return -1;
    int cnt = PQntuples(r);
    sinkdb_cp_row *out = xcalloc((size_t)cnt + 1, sizeof *out);
    for (int i = 0; i < cnt; i++) {
        sinkdb_cp_row *o = &out[i];
        snprintf(o->cluster, sizeof o->cluster, "%.*s", PQgetlength(r, i, CPK_CLUSTER), PQgetvalue(r, i, CPK_CLUSTER));
        if (PQgetlength(r, i, CPK_TENANT) == 16)
            memcpy(o->tenant, PQgetvalue(r, i, CPK_TENANT), 16);
        o->enabled = !PQgetisnull(r, i, CPK_ENABLED) && PQgetvalue(r, i, CPK_ENABLED)[0] != 0;
        o->config = xstrndup(PQgetvalue(r, i, CPK_CONFIG), (size_t)PQgetlength(r, i, CPK_CONFIG));
        if (!PQgetisnull(r, i, CPK_SEALED))
            o->sealed = xstrndup(PQgetvalue(r, i, CPK_SEALED), (size_t)PQgetlength(r, i, CPK_SEALED));
        snprintf(o->effective, sizeof o->effective, "%.*s", PQgetlength(r, i, CPK_EFFECTIVE),
                 PQgetvalue(r, i, CPK_EFFECTIVE));
        o->updated_us = col_i64(r, i, CPK_UPDATED);
    }
    PQclear(r);
    *rows = out;
    *n = cnt;
    return 0;
}

void sinkdb_cp_rows_free(sinkdb_cp_row *rows, int n)
{
    if (!rows)
        return;
    for (int i = 0; i < n; i++) {
        free(rows[i].config);
        free(rows[i].sealed);
    }
    free(rows);
}
