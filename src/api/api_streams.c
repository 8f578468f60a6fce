/* api_streams.c — the broker side of streams, /streams/v1/… (docs/streams.md): registering,
 * listing, reading and dropping queries, the cycle (state ops + sink pushes + source ack in one
 * transaction, queen.streams_cycle_v2) and state reads. Bodies and answers are the earlier
 * release's (its JS SDK and the 2.x Python runtime speak them unchanged); the cycle body is
 * read by streams/cyclereq.c (pure), its sink pushes are encoded exactly as POST /api/v1/push
 * encodes them (push_item_read, push_enc: sealing, the producer stamp), and every sink item
 * without a transactionId gets one derived from (query, partition, what the cycle closes,
 * result index), so a retried or concurrent cycle or flush is deduplicated by the push path
 * instead of emitted twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"

#define NAME_MAX_BYTES 255
#include "crypto/seal.h"
#include "db/pgarray.h"
#include "storage/logread.h"
#include "streams/cyclereq.h"
#include "streams/streams_results.h"

/* ------------------------------------------------------------------ per-query counters */

static void prom_label(buf *b, const void *sp);

typedef struct stream_stat {
    uuid id;
    uint8_t tenant[16];
    char name[128];
    uint64_t cycles, flushes, sink_pushes, sink_duplicates, state_ops, conflicts, aborted, failed, acked;
} stream_stat;

#define STREAM_STATS_MAX 1024
static stream_stat g_stats[STREAM_STATS_MAX];
static uint32_t g_nstats;
static uint64_t g_registers, g_state_gets;

static stream_stat *stat_for(const uuid *id, const uint8_t tenant[16], const char *name)
{
    for (uint32_t i = 0; i < g_nstats; i++)
        if (memcmp(g_stats[i].id.b, id->b, 16) == 0) {
            if (name && !g_stats[i].name[0])
                snprintf(g_stats[i].name, sizeof g_stats[i].name, "%s", name);
            return &g_stats[i];
        }
    if (g_nstats == STREAM_STATS_MAX)
        return NULL;
    stream_stat *s = &g_stats[g_nstats++];
    memset(s, 0, sizeof *s);
    s->id = *id;
    memcpy(s->tenant, tenant, 16);
    if (name)
        snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static void json_stat(buf *b, const stream_stat *s)
{
    char id[37];
    uuid_format(&s->id, id);
    buf_printf(&b[0], "{\"query_id\":\"%s\",\"name\":", id);
    if (s->name[0])
        jw_cstr(b, s->name);
    else
        buf_puts(b, "null");
    buf_printf(b,
               ",\"cycles\":%llu,\"flushes\":%llu,\"sink_pushes\":%llu,\"sink_duplicates\":%llu,"
               "\"state_ops\":%llu,\"source_acked\":%llu,\"conflicts\":%llu,\"aborted_cycles\":%llu,"
               "\"failed_cycles\":%llu}",
               (unsigned long long)s->cycles, (unsigned long long)s->flushes, (unsigned long long)s->sink_pushes,
               (unsigned long long)s->sink_duplicates, (unsigned long long)s->state_ops,
               (unsigned long long)s->acked, (unsigned long long)s->conflicts, (unsigned long long)s->aborted,
               (unsigned long long)s->failed);
}

void api_streams_status_json(buf *b, const uint8_t tenant[16], const PGresult *rows)
{
    buf_printf(b, "{\"registers\":%llu,\"state_reads\":%llu,\"queries\":[", (unsigned long long)g_registers,
               (unsigned long long)g_state_gets);
    int n = 0;
    if (rows) {
        /* every query of the tenant, from the database, with this node's counters */
        for (int i = 0; i < PQntuples(rows); i++) {
            uuid u;
            if (uuid_parse(PQgetvalue(rows, i, SSR_QUERY_ID), (size_t)PQgetlength(rows, i, SSR_QUERY_ID), &u) < 0)
                continue;
            stream_stat zero, *s = NULL;
            for (uint32_t k = 0; k < g_nstats; k++)
                if (memcmp(g_stats[k].id.b, u.b, 16) == 0)
                    s = &g_stats[k];
            if (!s) {
                memset(&zero, 0, sizeof zero);
                zero.id = u;
                s = &zero;
            }
            snprintf(s->name, sizeof s->name, "%s", PQgetvalue(rows, i, SSR_NAME));
            if (n++)
                buf_putc(b, ',');
            json_stat(b, s);
            b->len--; /* reopen the object */
            buf_printf(b, ",\"state_rows\":%s}", PQgetvalue(rows, i, SSR_STATE_ROWS));
        }
    } else {
        for (uint32_t i = 0; i < g_nstats; i++) {
            if (tenant && memcmp(g_stats[i].tenant, tenant, 16) != 0)
                continue;
            if (n++)
                buf_putc(b, ',');
            json_stat(b, &g_stats[i]);
            b->len--;
            buf_puts(b, ",\"state_rows\":null}");
        }
    }
    buf_puts(b, "]}");
}

void api_streams_prometheus_state(buf *b, const PGresult *rows)
{
    buf_puts(b, "# HELP queen_stream_state_rows State rows of a streaming query (open windows, watermarks, gate state)\n"
                "# TYPE queen_stream_state_rows gauge\n");
    for (int i = 0; i < PQntuples(rows); i++) {
        stream_stat s;
        memset(&s, 0, sizeof s);
        if (uuid_parse(PQgetvalue(rows, i, SSR_QUERY_ID), (size_t)PQgetlength(rows, i, SSR_QUERY_ID), &s.id) < 0)
            continue;
        snprintf(s.name, sizeof s.name, "%s", PQgetvalue(rows, i, SSR_NAME));
        buf_puts(b, "queen_stream_state_rows");
        prom_label(b, &s);
        buf_printf(b, " %s\n", PQgetvalue(rows, i, SSR_STATE_ROWS));
    }
}

static void prom_label(buf *b, const void *sp)
{
    const stream_stat *s = sp;
    char id[37];
    uuid_format(&s->id, id);
    buf_printf(b, "{query_id=\"%s\",query=\"", id);
    for (const char *p = s->name; *p; p++) {
        if (*p == '"' || *p == '\\')
            buf_putc(b, '\\');
        if (*p == '\n') {
            buf_puts(b, "\\n");
            continue;
        }
        buf_putc(b, *p);
    }
    buf_puts(b, "\"}");
}

void api_streams_prometheus(buf *b)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } M[] = {
        {"queen_stream_cycles_total", "Stream cycles committed (with a source ack)", offsetof(stream_stat, cycles)},
        {"queen_stream_flushes_total", "Ack-less stream cycles committed (idle flushes)", offsetof(stream_stat, flushes)},
        {"queen_stream_sink_pushes_total", "Sink records written by stream cycles", offsetof(stream_stat, sink_pushes)},
        {"queen_stream_sink_duplicates_total", "Sink records of stream cycles found already written",
         offsetof(stream_stat, sink_duplicates)},
        {"queen_stream_state_ops_total", "State upserts and deletes applied", offsetof(stream_stat, state_ops)},
        {"queen_stream_source_acked_total", "Source records acked by stream cycles", offsetof(stream_stat, acked)},
        {"queen_stream_conflicts_total", "Registrations refused with 409 (config_hash changed)",
         offsetof(stream_stat, conflicts)},
        {"queen_stream_aborted_cycles_total", "Stream cycles aborted on an expired or foreign lease",
         offsetof(stream_stat, aborted)},
        {"queen_stream_failed_cycles_total", "Stream cycles that failed for another reason (rolled back)",
         offsetof(stream_stat, failed)},
    };
    for (size_t m = 0; m < sizeof M / sizeof M[0]; m++) {
        buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", M[m].name, M[m].help, M[m].name);
        for (uint32_t i = 0; i < g_nstats; i++) {
            buf_puts(b, M[m].name);
            prom_label(b, &g_stats[i]);
            buf_printf(b, " %llu\n", (unsigned long long)*(const uint64_t *)((const char *)&g_stats[i] + M[m].off));
        }
    }
}

/* ------------------------------------------------------------------ helpers */

/* Refuses a key the route does not know (the earlier release dropped them silently). `known`
 * is NULL-terminated. */
static int refuse_unknown(http_req *r, json_doc *d, int obj, const char *const *known, const char *where)
{
    int k = json_unknown_key(d, obj, known);
    if (k < 0)
        return 0;
    buf t;
    buf_init(&t, 0);
    json_str_decode(d, k, &t);
    http_respond_error_code(r, 400, "unknown_field", "Unknown field%s%s: %s", where ? " in " : "", where ? where : "",
                            buf_cstr(&t));
    buf_free(&t);
    return -1;
}

/* A required non-empty string field; answers 400 `<name> is required` (the earlier release's
 * sentence) when missing, mistyped or empty. */
static int required_str(http_req *r, json_doc *d, const char *key, const char **out, size_t *len)
{
    int rc = api_str_field(r, d, 0, key, out, len);
    if (rc == API_STR_NUL) {
        http_respond_error(r, 400, "%s must not hold a NUL character (\\u0000)", key);
        return -1;
    }
    if (rc != 1 || *len == 0) {
        http_respond_error(r, 400, "%s is required", key);
        return -1;
    }
    return 0;
}

static int required_uuid(http_req *r, json_doc *d, const char *key, uuid *out)
{
    const char *s;
    size_t len;
    if (required_str(r, d, key, &s, &len) < 0)
        return -1;
    if (uuid_parse(s, len, out) < 0) {
        http_respond_error_code(r, 400, "invalid_uuid", "%s must be a UUID", key);
        return -1;
    }
    return 0;
}

static void iso_or_null(buf *b, const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col)) {
        buf_puts(b, "null");
        return;
    }
    char t[32];
    format_iso_ms(db_get_i64(res, row, col), t);
    buf_printf(b, "\"%s\"", t);
}

static void text_or_null(buf *b, const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        buf_puts(b, "null");
    else
        jw_string(b, PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col));
}

static void uuid_col(const PGresult *res, int row, int col, char out[37])
{
    format_uuid_text((const uint8_t *)PQgetvalue(res, row, col), out);
}

/* ------------------------------------------------------------------ POST /streams/v1/queries */

typedef struct reg_ctx {
    http_req *http;
    app *a;
    const char *name;
    char tenant[37], id[37];
    const char *values[7];
    int lengths[7];
    int formats[7];
    db_req dbr;
} reg_ctx;

static void reg_done(db_req *d)
{
    reg_ctx *c = d->arg;
    http_req *r = c->http;
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res || PQntuples(res) != 1) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    char qid[37];
    uuid_col(res, 0, SREG_QUERY_ID, qid);
    const char *outcome = PQgetvalue(res, 0, SREG_OUTCOME);
    uuid u;
    uuid_parse(qid, 36, &u);
    stream_stat *st = stat_for(&u, r->tenant, c->name);
    g_registers++;
    buf b;
    buf_init(&b, 0);
    if (strcmp(outcome, "conflict") == 0) {
        if (st)
            st->conflicts++;
        buf_printf(&b, "{\"success\":false,\"query_id\":\"%s\",\"name\":", qid);
        jw_cstr(&b, c->name);
        buf_puts(&b, ",\"error\":");
        buf msg;
        buf_init(&msg, 0);
        buf_printf(&msg,
                   "config_hash mismatch: operator chain changed for queryId '%s'. Pass reset:true to wipe existing "
                   "state, or use a new queryId.",
                   c->name);
        jw_cstr(&b, buf_cstr(&msg));
        buf_free(&msg);
        buf_puts(&b, ",\"code\":\"config_hash_mismatch\",\"config_hash\":");
        text_or_null(&b, res, 0, SREG_CONFIG_HASH);
        buf_putc(&b, '}');
        db_req_clear(d);
        http_respond_json(r, 409, &b);
        buf_free(&b);
        return;
    }
    buf_printf(&b, "{\"success\":true,\"query_id\":\"%s\",\"name\":", qid);
    jw_cstr(&b, c->name);
    buf_puts(&b, ",\"config_hash\":");
    text_or_null(&b, res, 0, SREG_CONFIG_HASH);
    buf_printf(&b, ",\"fresh\":%s,\"reset\":%s,\"state_rows_deleted\":%lld}",
               strcmp(outcome, "fresh") == 0 ? "true" : "false", strcmp(outcome, "reset") == 0 ? "true" : "false",
               (long long)db_get_i64(res, 0, SREG_STATE_ROWS));
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_streams_register(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 2) < 0)
        return;
    static const char *const known[] = {"name", "source_queue", "sink_queue", "config_hash", "reset", NULL};
    const char *name, *src, *hash, *sink = NULL;
    size_t nl, sl, hl, kl = 0;
    if (required_str(r, &d, "name", &name, &nl) < 0 || required_str(r, &d, "source_queue", &src, &sl) < 0 ||
        required_str(r, &d, "config_hash", &hash, &hl) < 0 || refuse_unknown(r, &d, 0, known, NULL) < 0) {
        json_doc_free(&d);
        return;
    }
    int rc = api_str_field(r, &d, 0, "sink_queue", &sink, &kl);
    if (rc < 0) {
        json_doc_free(&d);
        http_respond_error(r, 400, "sink_queue must be a string");
        return;
    }
    if (nl > NAME_MAX_BYTES || sl > NAME_MAX_BYTES || kl > NAME_MAX_BYTES || hl > 1024) {
        json_doc_free(&d);
        http_respond_error(r, 400, "name, source_queue and sink_queue must be at most %d bytes, config_hash 1024",
                           NAME_MAX_BYTES);
        return;
    }
    int reset = 0;
    int t = json_get(&d, 0, "reset");
    if (t >= 0 && json_type_of(&d, t) != JSON_NULL) {
        if (json_type_of(&d, t) == JSON_TRUE)
            reset = 1;
        else if (json_type_of(&d, t) != JSON_FALSE) {
            json_doc_free(&d);
            http_respond_error(r, 400, "reset must be a boolean");
            return;
        }
    }
    json_doc_free(&d);
    reg_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    c->name = name;
    uuid id;
    uuid_v7(&id);
    uuid_format(&id, c->id);
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->values[1] = c->id;
    c->values[2] = name;
    c->values[3] = src;
    c->values[4] = sink && kl ? sink : NULL;
    c->values[5] = hash;
    c->values[6] = reset ? "true" : "false";
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_register_v1($1::uuid, $2::uuid, $3, $4, $5, $6, $7::boolean)",
                               7, c->values, c->lengths, c->formats, 1};
    c->dbr.done = reg_done;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(c->a->db, &c->dbr) < 0)
        api_respond_db_error(r, &c->dbr);
}

/* ------------------------------------------------------------------ GET / DELETE queries */

typedef struct q_ctx {
    http_req *http;
    app *a;
    char tenant[37];
    const char *values[3];
    int lengths[3];
    int formats[3];
    db_req dbr;
    int one;
} q_ctx;

static void query_object(buf *b, const PGresult *res, int i)
{
    char id[37];
    uuid_col(res, i, SQ_QUERY_ID, id);
    buf_printf(b, "{\"query_id\":\"%s\",\"name\":", id);
    text_or_null(b, res, i, SQ_NAME);
    buf_puts(b, ",\"source_queue\":");
    text_or_null(b, res, i, SQ_SOURCE);
    buf_puts(b, ",\"sink_queue\":");
    text_or_null(b, res, i, SQ_SINK);
    buf_puts(b, ",\"config_hash\":");
    text_or_null(b, res, i, SQ_HASH);
    buf_puts(b, ",\"consumer_group\":");
    buf g;
    buf_init(&g, 0);
    buf_puts(&g, "streams.");
    buf_append(&g, PQgetvalue(res, i, SQ_NAME), (size_t)PQgetlength(res, i, SQ_NAME));
    jw_string(b, g.data, g.len);
    buf_free(&g);
    buf_puts(b, ",\"created_at\":");
    iso_or_null(b, res, i, SQ_CREATED);
    buf_puts(b, ",\"updated_at\":");
    iso_or_null(b, res, i, SQ_UPDATED);
    buf_printf(b, ",\"state_rows\":%lld,\"partitions\":%lld,\"last_cycle_at\":",
               (long long)db_get_i64(res, i, SQ_STATE_ROWS), (long long)db_get_i64(res, i, SQ_PARTITIONS));
    iso_or_null(b, res, i, SQ_LAST_CYCLE);
    uuid u;
    uuid_parse(id, 36, &u);
    for (uint32_t k = 0; k < g_nstats; k++)
        if (memcmp(g_stats[k].id.b, u.b, 16) == 0) {
            buf_puts(b, ",\"metrics\":");
            json_stat(b, &g_stats[k]);
        }
}

static void queries_done(db_req *d)
{
    q_ctx *c = d->arg;
    http_req *r = c->http;
    if (d->err != DB_OK || !d->res[0] || (c->one && !d->res[1])) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    PGresult *res = d->res[0];
    int n = PQntuples(res);
    buf b;
    buf_init(&b, 0);
    if (c->one) {
        if (n != 1) {
            db_req_clear(d);
            buf_free(&b);
            http_respond_error_code(r, 404, "query_not_found", "No streaming query named '%s'", r->params[0]);
            return;
        }
        query_object(&b, res, 0);
        buf_puts(&b, ",\"partitions_detail\":[");
        PGresult *pr = d->res[1];
        for (int i = 0; i < PQntuples(pr); i++) {
            char pu[37];
            uuid_col(pr, i, SP_PARTITION_UUID, pu);
            buf_printf(&b, "%s{\"partition_id\":\"%s\",\"partition\":", i ? "," : "", pu);
            text_or_null(&b, pr, i, SP_PARTITION_NAME);
            buf_printf(&b, ",\"state_rows\":%lld,\"last_cycle_at\":", (long long)db_get_i64(pr, i, SP_STATE_ROWS));
            iso_or_null(&b, pr, i, SP_LAST_CYCLE);
            buf_putc(&b, '}');
        }
        buf_puts(&b, "]}");
    } else {
        buf_puts(&b, "{\"queries\":[");
        for (int i = 0; i < n; i++) {
            if (i)
                buf_putc(&b, ',');
            query_object(&b, res, i);
            buf_putc(&b, '}');
        }
        buf_printf(&b, "],\"total\":%d}", n);
    }
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void queries_submit(http_req *r, int one)
{
    q_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    c->one = one;
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->values[1] = one ? r->params[0] : NULL;
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_queries_v1($1::uuid, $2)", 2, c->values, c->lengths,
                               c->formats, 1};
    if (one) {
        c->dbr.nstmt = 2;
        c->dbr.stmt[1] = (db_stmt){"SELECT p.* FROM queen.stream_queries q, "
                                   "LATERAL queen.streams_partitions_v1($1::uuid, q.id, NULL) p "
                                   "WHERE q.tenant_id = $1::uuid AND q.name = $2",
                                   2, c->values, c->lengths, c->formats, 1};
    }
    c->dbr.done = queries_done;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(c->a->db, &c->dbr) < 0)
        api_respond_db_error(r, &c->dbr);
}

void api_streams_list(http_req *r) { queries_submit(r, 0); }
void api_streams_get(http_req *r) { queries_submit(r, 1); }

static void drop_done(db_req *d)
{
    q_ctx *c = d->arg;
    http_req *r = c->http;
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    if (PQntuples(res) != 1) {
        db_req_clear(d);
        http_respond_error_code(r, 404, "query_not_found", "No streaming query named '%s'", r->params[0]);
        return;
    }
    char id[37];
    uuid_col(res, 0, SDROP_QUERY_ID, id);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"success\":true,\"query_id\":\"%s\",\"name\":", id);
    jw_cstr(&b, r->params[0]);
    buf_printf(&b, ",\"state_rows_deleted\":%lld}", (long long)db_get_i64(res, 0, SDROP_STATE_ROWS));
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_streams_drop(http_req *r)
{
    q_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->values[1] = r->params[0];
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_drop_v1($1::uuid, $2)", 2, c->values, c->lengths,
                               c->formats, 1};
    c->dbr.done = drop_done;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(c->a->db, &c->dbr) < 0)
        api_respond_db_error(r, &c->dbr);
}

/* ------------------------------------------------------------------ POST /streams/v1/state/get */

typedef struct sg_ctx {
    http_req *http;
    app *a;
    int partitions_mode;
    int versions; /* "versions": true: each row carries its version (our SDKs send it back) */
    char tenant[37], query[37], part[37], since[24], ripe[40];
    pgarray keys;
    const char *values[6];
    int lengths[6];
    int formats[6];
    db_req dbr;
} sg_ctx;

static void sg_done(db_req *d)
{
    sg_ctx *c = d->arg;
    http_req *r = c->http;
    PGresult *res = d->res[0];
    pgarray_free(&c->keys);
    if (d->err != DB_OK || !res) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    buf b;
    buf_init(&b, 0);
    int n = PQntuples(res);
    if (c->partitions_mode) {
        buf_puts(&b, "{\"success\":true,\"partitions\":[");
        for (int i = 0; i < n; i++) {
            char pu[37];
            uuid_col(res, i, SP_PARTITION_UUID, pu);
            buf_printf(&b, "%s{\"partition_id\":\"%s\",\"partition\":", i ? "," : "", pu);
            text_or_null(&b, res, i, SP_PARTITION_NAME);
            buf_printf(&b, ",\"state_rows\":%lld,\"last_cycle_at\":", (long long)db_get_i64(res, i, SP_STATE_ROWS));
            iso_or_null(&b, res, i, SP_LAST_CYCLE);
            buf_putc(&b, '}');
        }
        buf_puts(&b, "]}");
    } else {
        buf_puts(&b, "{\"success\":true,\"rows\":[");
        for (int i = 0; i < n; i++) {
            buf_puts(&b, i ? ",{\"key\":" : "{\"key\":");
            text_or_null(&b, res, i, SSG_KEY);
            buf_puts(&b, ",\"value\":");
            /* jsonb as text: already JSON */
            buf_append(&b, PQgetvalue(res, i, SSG_VALUE), (size_t)PQgetlength(res, i, SSG_VALUE));
            buf_puts(&b, ",\"updated_at\":");
            iso_or_null(&b, res, i, SSG_UPDATED);
            if (c->versions)
                buf_printf(&b, ",\"version\":%lld", (long long)db_get_i64(res, i, SSG_UPDATED));
            buf_putc(&b, '}');
        }
        buf_puts(&b, "]}");
    }
    db_req_clear(d);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_streams_state_get(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 3) < 0)
        return;
    static const char *const known[] = {"query_id", "partition_id", "keys", "key_prefix", "ripe_at_or_before",
                                        "touched_within_ms", "versions", NULL};
    uuid q, p;
    if (required_uuid(r, &d, "query_id", &q) < 0 || refuse_unknown(r, &d, 0, known, NULL) < 0) {
        json_doc_free(&d);
        return;
    }
    sg_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    int vt = json_get(&d, 0, "versions");
    if (vt >= 0 && json_type_of(&d, vt) != JSON_NULL && json_type_of(&d, vt) != JSON_TRUE &&
        json_type_of(&d, vt) != JSON_FALSE) {
        json_doc_free(&d);
        http_respond_error(r, 400, "versions must be a boolean");
        return;
    }
    c->versions = vt >= 0 && json_type_of(&d, vt) == JSON_TRUE;
    format_uuid_text(r->tenant, c->tenant);
    uuid_format(&q, c->query);
    c->values[0] = c->tenant;
    c->values[1] = c->query;
    int tw = json_get(&d, 0, "touched_within_ms");
    if (tw >= 0 && json_type_of(&d, tw) != JSON_NULL) {
        /* the idle-flush sweep: the partitions this query committed a cycle on lately */
        int64_t ms;
        if (api_int_field(&d, 0, "touched_within_ms", 1, 366LL * 86400 * 1000, &ms) != 1) {
            json_doc_free(&d);
            http_respond_error(r, 400, "touched_within_ms must be a positive integer (milliseconds)");
            return;
        }
        json_doc_free(&d);
        c->partitions_mode = 1;
        snprintf(c->since, sizeof c->since, "%lld", (long long)(wall_us() - ms * 1000));
        c->values[2] = c->since;
        pgarray_begin(&c->keys, OID_TEXT);
        c->dbr.nstmt = 1;
        c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_partitions_v1($1::uuid, $2::uuid, $3::int8)", 3,
                                   c->values, c->lengths, c->formats, 1};
    } else {
        const char *ps;
        size_t psl;
        if (required_str(r, &d, "partition_id", &ps, &psl) < 0) {
            json_doc_free(&d);
            return;
        }
        if (api_partition_ref(ps, psl, &p) < 0) {
            http_respond_error_code(r, 400, "invalid_uuid", "partition_id must be a UUID");
            json_doc_free(&d);
            return;
        }
        uuid_format(&p, c->part);
        c->values[2] = c->part;
        pgarray_begin(&c->keys, OID_TEXT);
        int k = json_get(&d, 0, "keys");
        if (k >= 0 && json_type_of(&d, k) == JSON_ARRAY) {
            int e = json_first(&d, k);
            for (uint32_t i = 0; i < d.toks[k].count; i++, e = json_next(&d, e)) {
                const char *s;
                size_t len;
                if (json_type_of(&d, e) != JSON_STRING || api_json_text(r, &d, e, &s, &len) < 0) {
                    json_doc_free(&d);
                    pgarray_free(&c->keys);
                    http_respond_error(r, 400, "keys[%u] must be a string without NUL characters", i);
                    return;
                }
                pgarray_add(&c->keys, s, len);
            }
        } else if (k >= 0 && json_type_of(&d, k) != JSON_NULL) {
            json_doc_free(&d);
            pgarray_free(&c->keys);
            http_respond_error(r, 400, "keys must be an array of strings");
            return;
        }
        pgarray_finish(&c->keys);
        c->values[3] = c->keys.b.data;
        c->lengths[3] = (int)c->keys.b.len;
        c->formats[3] = 1;
        const char *pre;
        size_t pl;
        int rc = api_str_field(r, &d, 0, "key_prefix", &pre, &pl);
        if (rc < 0) {
            json_doc_free(&d);
            pgarray_free(&c->keys);
            http_respond_error(r, 400, "key_prefix must be a string without NUL characters");
            return;
        }
        c->values[4] = rc == 1 && pl > 0 ? pre : NULL;
        int rp = json_get(&d, 0, "ripe_at_or_before");
        if (rp >= 0 && json_type_of(&d, rp) == JSON_NUMBER) {
            size_t nl;
            const char *raw = json_raw(&d, rp, &nl);
            if (nl >= sizeof c->ripe)
                nl = sizeof c->ripe - 1;
            memcpy(c->ripe, raw, nl);
            c->values[5] = c->ripe;
        } else if (rp >= 0 && json_type_of(&d, rp) != JSON_NULL) {
            json_doc_free(&d);
            pgarray_free(&c->keys);
            http_respond_error(r, 400, "ripe_at_or_before must be a number (epoch milliseconds)");
            return;
        }
        json_doc_free(&d);
        c->dbr.nstmt = 1;
        c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_state_get_v1($1::uuid, $2::uuid, $3::uuid, "
                                   "$4::text[], $5, $6::numeric)",
                                   6, c->values, c->lengths, c->formats, 1};
    }
    g_state_gets++;
    c->dbr.done = sg_done;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(c->a->db, &c->dbr) < 0) {
        pgarray_free(&c->keys);
        api_respond_db_error(r, &c->dbr);
    }
}

/* ------------------------------------------------------------------ POST /streams/v1/cycle */

#define CY_PARAMS 26
#define CY_MAX_ATTEMPTS 5
#define CY_BATCH_MAX 100

typedef struct cy_ctx {
    http_req *http;
    app *a;
    uint32_t elem;        /* index in an array body; 0 for an object body */
    uuid query, part;
    char tenant[37], query_s[37], part_s[37];
    const char *group;
    pgarray ops[4]; /* types, keys, values, versions */
    uint32_t nops;
    push_req pr;
    push_enc enc;
    int enc_init;
    int has_ack, release;
    const char *ack_txn, *ack_status, *ack_error;
    int has_lease;
    uuid lease;
    char lease_s[37];
    int has_count;
    int64_t count;
    char count_s[24];
    int replay;
    int salted; /* its ids were derived again with its windows' incarnations */
    cycle_req q;
    const char *values[CY_PARAMS];
    int lengths[CY_PARAMS];
    int formats[CY_PARAMS];
    db_req dbr;
    int attempts, refusals, resubmits;
    /* the element's answer (array bodies): set once it is final */
    int done;
    buf answer;
} cy_ctx;

static void cy_free(cy_ctx *c)
{
    if (c->enc_init)
        push_enc_free(&c->enc);
    c->enc_init = 0;
    for (int k = 0; k < 4; k++)
        pgarray_free(&c->ops[k]);
}

static void cy_encode(cy_ctx *c)
{
    push_enc_build(&c->enc, &c->pr, pusher_dedup_window_us(c->a->push));
    for (int k = 0; k < PUSH_PARAMS; k++) {
        c->values[8 + k] = c->enc.values[k];
        c->lengths[8 + k] = c->enc.lengths[k];
        c->formats[8 + k] = c->enc.formats[k];
    }
    c->values[25] = c->replay ? "true" : "false";
}

static void cy_failure_json(const cy_ctx *c, buf *b, const char *msg)
{
    buf_printf(b, "{\"success\":false,\"query_id\":\"%s\",\"partition_id\":\"%s\",\"queueName\":null,"
                  "\"state_ops_applied\":0,\"push_results\":[],\"ack_result\":null,\"error\":",
               c->query_s, c->part_s);
    jw_cstr(b, msg);
    buf_putc(b, '}');
}

/* A cycle that failed: counted, answered (object body) or kept (array body). */
static void cy_fail(cy_ctx *c, const char *sqlstate, const char *msg)
{
    stream_stat *st = stat_for(&c->query, c->http->tenant, NULL);
    if (st) {
        if (sqlstate && strcmp(sqlstate, "QS001") == 0)
            st->aborted++;
        else
            st->failed++;
    }
    cy_failure_json(c, &c->answer, msg);
    c->done = 1;
}

/* The success answer of a committed cycle, from its summary row (row `i` of res), into c->answer. */
static void cy_success(cy_ctx *c, PGresult *res, int i)
{
    push_enc_settle(&c->pr);
    int applied = 0, flags = 0;
    int64_t acked = 0;
    const char *qname = NULL;
    int qlen = 0;
    if (i >= 0) {
        applied = db_get_i32(res, i, SCY_IDX);
        acked = db_get_i64(res, i, SCY_OFF);
        flags = (int)db_get_i64(res, i, SCY_TS);
        if (!PQgetisnull(res, i, SCY_QNAME)) {
            qname = PQgetvalue(res, i, SCY_QNAME);
            qlen = PQgetlength(res, i, SCY_QNAME);
        }
    }
    buf *b = &c->answer;
    buf_printf(b, "{\"success\":true,\"query_id\":\"%s\",\"partition_id\":\"%s\",\"queueName\":", c->query_s,
               c->part_s);
    if (qname)
        jw_string(b, qname, (size_t)qlen);
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"state_ops_applied\":%d,\"push_results\":[", applied);
    uint64_t written = 0, dupn = 0;
    for (uint32_t j = 0; j < c->pr.n; j++) {
        push_item *it = &c->pr.items[j];
        uuid mid;
        uuid_message_id(it->partition_id, it->offset, &mid);
        char ms[37], pu[37];
        uuid_format(&mid, ms);
        format_uuid_text(it->partition_uuid, pu);
        int dup = it->status == PUSH_DUPLICATE;
        if (dup)
            dupn++;
        else
            written++;
        buf_printf(b, "%s{\"index\":%u,\"transaction_id\":", j ? "," : "", j);
        jw_string(b, it->txn, it->txn_len);
        buf_printf(b, ",\"status\":\"%s\",\"message_id\":\"%s\",\"partition_id\":\"%s\",\"offset\":%llu,\"queueName\":",
                   dup ? "duplicate" : "queued", ms, pu, (unsigned long long)it->offset);
        jw_string(b, it->queue, it->queue_len);
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"ack_result\":");
    if (c->has_ack) {
        buf_printf(b, "{\"success\":true,\"count\":%lld,\"lease_released\":%s,\"dlq\":%s", (long long)acked,
                   (flags & SCY_LEASE_RELEASED) ? "true" : "false", (flags & SCY_DLQ) ? "true" : "false");
        if (c->has_count)
            buf_printf(b, ",\"count_requested\":%lld,\"count_matched\":%s", (long long)c->count,
                       (flags & SCY_COUNT_DIFFERS) ? "false" : "true");
        buf_putc(b, '}');
    } else {
        buf_puts(b, "null");
    }
    buf_printf(b, ",\"replay\":%s}", (c->replay || (flags & SCY_REPLAY)) ? "true" : "false");
    stream_stat *st = stat_for(&c->query, c->http->tenant, NULL);
    if (st) {
        if (c->has_ack)
            st->cycles++;
        else
            st->flushes++;
        st->sink_pushes += written;
        st->sink_duplicates += dupn;
        st->state_ops += (uint64_t)applied;
        st->acked += (uint64_t)acked;
    }
    for (uint32_t g = 0; g < c->enc.ngroups; g++)
        notifier_changed(c->a->notify, c->enc.groups[g].tenant, c->enc.groups[g].queue, c->enc.groups[g].queue_len);
    if (c->has_ack && qname)
        notifier_changed(c->a->notify, c->http->tenant, qname, (size_t)qlen);
    c->done = 1;
}

/* After a QE001 refusal of the element's pushes: 1 when they are sealed now and the cycle must
 * run again; 0 when it failed for good (answered in c->answer). */
static int cy_sealed_again(cy_ctx *c, const push_group *refused)
{
    if (!seal_node_key()) {
        char msg[400];
        push_enc_no_key_error(refused, msg, sizeof msg);
        cy_fail(c, NULL, msg);
        return 0;
    }
    if (++c->refusals > (int)c->enc.ngroups + 1) {
        cy_fail(c, NULL, "streams_cycle_v2 kept refusing sealed records as not sealed");
        return 0;
    }
    for (uint32_t i = 0; i < c->pr.n; i++)
        if (c->pr.items[i].status != PUSH_DUPLICATE)
            c->pr.items[i].status = PUSH_PENDING;
    return 1;
}

/* Applies the element's push rows; 1 when it must run again (duplicates found: they answer
 * duplicate and the cycle runs without them), 0 when final (c->answer set) */
static int cy_apply(cy_ctx *c, PGresult *res, int col, int32_t val, int summary_row)
{
    int dups, full;
    push_enc_apply_where(&c->enc, res, col, val, &dups, &full);
    if (full) {
        cy_fail(c, NULL, "PUSH operation failed: a sink queue is full (maxSize)");
        return 0;
    }
    if (dups) {
        c->replay = 1;
        if (++c->resubmits > (int)c->pr.n + 1) {
            cy_fail(c, NULL, "streams_cycle_v2 kept finding duplicates");
            return 0;
        }
        return 1;
    }
    cy_success(c, res, summary_row);
    return 0;
}

static void cy_released(db_req *d)
{
    cy_ctx *c = d->arg;
    if (d->err != DB_OK)
        api_log_db_error(c->http, d);
    db_req_clear(d);
    http_respond_json(c->http, 200, &c->answer);
    buf_free(&c->answer);
    cy_free(c);
}

static void cy_release(cy_ctx *c)
{
    c->values[0] = c->tenant;
    c->values[1] = c->group;
    c->values[2] = c->part_s;
    c->values[3] = c->ack_txn;
    c->values[4] = c->lease_s;
    for (int k = 0; k < 5; k++) {
        c->lengths[k] = 0;
        c->formats[k] = 0;
    }
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.ack_v1($1::uuid, $2, ARRAY[$3::uuid], ARRAY[$4], ARRAY['retry'], "
                               "ARRAY[$5::uuid], ARRAY[NULL::text])",
                               5, c->values, c->lengths, c->formats, 0};
    c->dbr.done = cy_released;
    c->dbr.arg = c;
    if (db_submit(c->a->db, &c->dbr) < 0) {
        db_req_clear(&c->dbr);
        http_respond_json(c->http, 200, &c->answer);
        buf_free(&c->answer);
        cy_free(c);
    }
}

static int cy_reincarnate(cy_ctx *c, PGresult *res, int col, int32_t val);

static void cy_done(db_req *d)
{
    cy_ctx *c = d->arg;
    http_req *r = c->http;
    PGresult *res = d->res[0];
    const push_group *refused = d->err == DB_SQL ? push_enc_refused(&c->enc, d->sqlstate, d->errmsg) : NULL;
    if (refused) {
        /* plaintext for a sink queue with encryptionEnabled: seal it and run the cycle again */
        db_req_clear(d);
        if (!seal_node_key()) {
            char msg[400];
            push_enc_no_key_error(refused, msg, sizeof msg);
            http_respond_error(r, PUSH_NO_KEY_STATUS, "%s", msg);
        } else if (cy_sealed_again(c, refused)) {
            cy_encode(c);
            if (db_submit(c->a->db, d) == 0)
                return;
            api_respond_db_error(r, d);
        } else {
            http_respond_error(r, 500, "streams_cycle_v2 kept refusing sealed records as not sealed");
        }
        buf_free(&c->answer);
        cy_free(c);
        return;
    }
    if (d->err != DB_OK || !res) {
        int retryable = d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0);
        if (retryable && ++c->attempts < CY_MAX_ATTEMPTS) {
            db_req_clear(d);
            if (db_submit(c->a->db, d) == 0)
                return;
        }
        if (d->err == DB_SQL && strcmp(d->sqlstate, "QS005") == 0 && c->has_ack && c->has_lease) {
            /* stale state: the batch must be folded again from the rows as they are now;
             * release the lease (a retry, nothing counted) so it comes back at once rather
             * than when the lease expires */
            cy_fail(c, d->sqlstate, d->errmsg);
            db_req_clear(d);
            cy_release(c);
            return;
        }
        if (d->err == DB_SQL && strncmp(d->sqlstate, "QS", 2) == 0) {
            cy_fail(c, d->sqlstate, d->errmsg);
            http_respond_json(r, 200, &c->answer);
        } else {
            stream_stat *st = stat_for(&c->query, r->tenant, NULL);
            if (st)
                st->failed++;
            api_respond_db_error(r, d);
        }
        db_req_clear(d);
        buf_free(&c->answer);
        cy_free(c);
        return;
    }
    int summary = -1, incarnation = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        if (db_get_i32(res, i, SCY_KIND) == SCY_ROW_SUMMARY)
            summary = i;
        if (db_get_i32(res, i, SCY_KIND) == SCY_ROW_INCARNATION)
            incarnation = 1;
    }
    if (incarnation ? cy_reincarnate(c, res, -1, 0) : cy_apply(c, res, -1, 0, summary)) {
        db_req_clear(d);
        cy_encode(c);
        if (db_submit(c->a->db, d) == 0)
            return;
        api_respond_db_error(r, d);
        buf_free(&c->answer);
        cy_free(c);
        return;
    }
    db_req_clear(d);
    cy_free(c);
    http_respond_json(r, 200, &c->answer);
    buf_free(&c->answer);
}

/* Reads one cycle object (token `o`, through streams/cyclereq.c) into c. Returns 0; -1 after
 * answering 400 (the request is refused whole); 1 when the cycle failed as the earlier release
 * fails it, with 200 success:false (answer in c->answer, c->done). `at` prefixes messages of
 * array elements. */
static int cy_parse(http_req *r, json_doc *d, int o, cy_ctx *c, const char *at)
{
    cycle_err err;
    cycle_req *q = &c->q;
    cycle_rc rc = cycle_read(&r->ar, d, o, at, q, &err);
    c->query = q->query;
    c->part = q->part;
    uuid_format(&c->query, c->query_s);
    uuid_format(&c->part, c->part_s);
    if (rc == CYCLE_BAD) {
        if (err.reason)
            http_respond_refusal(r, 400, err.code, err.reason, "%s", err.text);
        else
            http_respond_error_code(r, 400, err.code, "%s", err.text);
        return -1;
    }
    c->has_ack = q->has_ack;
    if (rc == CYCLE_FAILED) {
        cy_fail(c, NULL, err.text);
        return 1;
    }
    /* sink pushes are pushes: a cluster that may not push (push_blocked, at its storage
     * ceiling) has the cycle refused as /api/v1/push would be; a cycle without pushes (state,
     * ack) goes on, so its consumers drain (docs/control-plane.md) */
    if (q->nitems > 0 && api_cp_push_refused(r))
        return -1;
    c->group = q->group;
    c->release = q->release;
    c->ack_txn = q->ack_txn;
    c->ack_status = q->ack_status;
    c->ack_error = q->ack_error;
    c->has_lease = q->has_lease;
    c->lease = q->lease;
    c->has_count = q->has_count;
    c->count = q->count;
    for (uint32_t i = 0; i < q->nops; i++) {
        const cycle_op *op = &q->ops[i];
        pgarray_add(&c->ops[0], op->del ? "delete" : "upsert", 6);
        pgarray_add(&c->ops[1], op->key, op->key_len);
        if (op->del)
            pgarray_add_null(&c->ops[2]);
        else
            pgarray_add(&c->ops[2], op->value, op->value_len);
        if (op->has_version)
            pgarray_add_i64(&c->ops[3], op->version);
        else
            pgarray_add_null(&c->ops[3]);
    }
    c->nops = q->nops;
    push_req *pr = &c->pr;
    memcpy(pr->tenant, r->tenant, 16);
    if (r->subject) {
        pr->producer = r->subject;
        pr->producer_len = (uint32_t)strlen(r->subject);
    }
    pr->items = q->items;
    pr->n = q->nitems;
    return 0;
}

/* A flush whose derived ids were all known while its windows are open again (kind 7 rows:
 * the rows' created_us per delete): a later incarnation of those windows — the ids are
 * derived again with the incarnations and it runs as a new flush. 1 when it must run again,
 * 0 when it failed (c->answer set). */
static int cy_reincarnate(cy_ctx *c, PGresult *res, int col, int32_t val)
{
    if (c->salted) {
        cy_fail(c, "QS005", "stale flush: its windows were closed and opened again while it ran; read them again");
        return 0;
    }
    buf salt;
    buf_init(&salt, 0);
    for (int i = 0; i < PQntuples(res); i++) {
        if (db_get_i32(res, i, SCY_KIND) != SCY_ROW_INCARNATION || (col >= 0 && db_get_i32(res, i, col) != val))
            continue;
        buf_printf(&salt, "%d:%lld,", db_get_i32(res, i, SCY_IDX), (long long)db_get_i64(res, i, SCY_OFF));
    }
    cycle_rederive(&c->http->ar, &c->q, salt.data ? salt.data : "", salt.len);
    buf_free(&salt);
    c->salted = 1;
    c->replay = 0;
    return 1;
}

static cy_ctx *cy_new(http_req *r, uint32_t elem)
{
    cy_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    c->a = r->app;
    c->elem = elem;
    buf_init(&c->answer, 0);
    for (int k = 0; k < 3; k++)
        pgarray_begin(&c->ops[k], OID_TEXT);
    pgarray_begin(&c->ops[3], OID_INT8);
    return c;
}

/* Fills the element's parameters of streams_cycle_v2 (and its encoder). */
static void cy_prepare(cy_ctx *c)
{
    http_req *r = c->http;
    for (int k = 0; k < 4; k++)
        pgarray_finish(&c->ops[k]);
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->values[1] = c->query_s;
    c->values[2] = c->part_s;
    c->values[3] = c->group;
    for (int k = 0; k < 4; k++) {
        c->values[4 + k] = c->ops[k].b.data;
        c->lengths[4 + k] = (int)c->ops[k].b.len;
        c->formats[4 + k] = 1;
    }
    c->values[18] = c->has_ack ? c->ack_txn : NULL;
    if (c->has_lease) {
        uuid_format(&c->lease, c->lease_s);
        c->values[19] = c->lease_s;
    }
    c->values[20] = c->has_ack ? c->ack_status : NULL;
    if (c->has_count) {
        snprintf(c->count_s, sizeof c->count_s, "%lld", (long long)c->count);
        c->values[21] = c->count_s;
    }
    c->values[22] = c->release ? "true" : "false";
    c->values[23] = c->ack_error;
    c->values[24] = c->has_ack ? "false" : "true";
    push_enc_init(&c->enc);
    c->enc_init = 1;
    c->enc.sq = pusher_sealq(c->a->push);
    cy_encode(c);
}

/* ---- array bodies: several cycles in one transaction, each in its own savepoint */

#define CYB_ARRAYS 28 /* every parameter of streams_cycles_v2 but the tenant and the window */

typedef struct cyb_ctx {
    http_req *http;
    app *a;
    cy_ctx **els;
    uint32_t n;
    cy_ctx **sub; /* the elements of the submission in flight, in lock order */
    uint32_t nsub;
    char tenant[37];
    pgarray arr[CYB_ARRAYS];
    const char *values[CYB_ARRAYS + 2];
    int lengths[CYB_ARRAYS + 2];
    int formats[CYB_ARRAYS + 2];
    db_req dbr;
    int attempts, rounds;
} cyb_ctx;

static void cyb_free(cyb_ctx *b)
{
    for (int k = 0; k < CYB_ARRAYS; k++)
        pgarray_free(&b->arr[k]);
    for (uint32_t i = 0; i < b->n; i++) {
        cy_free(b->els[i]);
        buf_free(&b->els[i]->answer);
    }
}

static int cy_order(const void *x, const void *y)
{
    const cy_ctx *a = *(cy_ctx *const *)x, *b = *(cy_ctx *const *)y;
    int c = memcmp(a->query.b, b->query.b, 16);
    if (!c)
        c = memcmp(a->part.b, b->part.b, 16);
    return c ? c : (a->elem < b->elem ? -1 : a->elem > b->elem);
}

static void cyb_done(db_req *d);

/* Builds and submits the parameters of the elements not final yet; answers when none is left. */
static void cyb_submit(cyb_ctx *b)
{
    http_req *r = b->http;
    b->nsub = 0;
    for (uint32_t i = 0; i < b->n; i++)
        if (!b->els[i]->done)
            b->sub[b->nsub++] = b->els[i];
    if (b->nsub == 0 || ++b->rounds > CY_BATCH_MAX + 8) {
        buf out;
        buf_init(&out, 0);
        buf_putc(&out, '[');
        for (uint32_t i = 0; i < b->n; i++) {
            cy_ctx *c = b->els[i];
            if (i)
                buf_putc(&out, ',');
            if (!c->done)
                cy_failure_json(c, &c->answer, "the cycle kept needing another round");
            /* each element's answer with its index first */
            buf_printf(&out, "{\"idx\":%u,", c->elem);
            buf_append(&out, c->answer.data + 1, c->answer.len - 1);
        }
        buf_putc(&out, ']');
        cyb_free(b);
        http_respond_json(r, 200, &out);
        buf_free(&out);
        return;
    }
    qsort(b->sub, b->nsub, sizeof *b->sub, cy_order);
    static const uint32_t oids[CYB_ARRAYS] = {
        OID_INT4, OID_UUID, OID_UUID, OID_TEXT,                                    /* elem, query, source, group */
        OID_INT4, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8,                          /* op_n, ops, versions */
        OID_INT4, OID_UUID, OID_TEXT, OID_TEXT, OID_INT4, OID_INT4, OID_BYTEA,     /* g_n, push groups */
        OID_INT4, OID_INT4, OID_INT4, OID_TEXT,                                    /* dd_n, dedup */
        OID_TEXT, OID_UUID, OID_TEXT, OID_INT4, OID_BOOL, OID_TEXT, OID_BOOL, OID_BOOL, /* ack .. replay */
    };
    for (int k = 0; k < CYB_ARRAYS; k++) {
        pgarray_free(&b->arr[k]);
        pgarray_begin(&b->arr[k], oids[k]);
    }
    for (uint32_t s = 0; s < b->nsub; s++) {
        cy_ctx *c = b->sub[s];
        cy_encode(c);
        pgarray *A = b->arr;
        pgarray_add_i32(&A[0], (int32_t)c->elem);
        pgarray_add(&A[1], c->query.b, 16);
        pgarray_add(&A[2], c->part.b, 16);
        pgarray_add(&A[3], c->group, strlen(c->group));
        pgarray_add_i32(&A[4], (int32_t)c->nops);
        for (int k = 0; k < 4; k++)
            pgarray_append_array(&A[5 + k], &c->ops[k]);
        /* the encoder's arrays, in push_v1's parameter order: tenant, queue, partition, count,
         * bytes, data (one per group), then the dedup group, position, transactionId */
        pgarray_add_i32(&A[9], (int32_t)c->enc.arr[1].count);
        for (int k = 0; k < 6; k++)
            pgarray_append_array(&A[10 + k], &c->enc.arr[k]);
        pgarray_add_i32(&A[16], (int32_t)c->enc.arr[6].count);
        for (int k = 0; k < 3; k++)
            pgarray_append_array(&A[17 + k], &c->enc.arr[6 + k]);
        if (c->has_ack)
            pgarray_add(&A[20], c->ack_txn, strlen(c->ack_txn));
        else
            pgarray_add_null(&A[20]);
        if (c->has_lease)
            pgarray_add(&A[21], c->lease.b, 16);
        else
            pgarray_add_null(&A[21]);
        if (c->has_ack)
            pgarray_add(&A[22], c->ack_status, strlen(c->ack_status));
        else
            pgarray_add_null(&A[22]);
        if (c->has_count)
            pgarray_add_i32(&A[23], (int32_t)c->count);
        else
            pgarray_add_null(&A[23]);
        pgarray_add(&A[24], c->release ? "\1" : "\0", 1);
        if (c->ack_error)
            pgarray_add(&A[25], c->ack_error, strlen(c->ack_error));
        else
            pgarray_add_null(&A[25]);
        pgarray_add(&A[26], c->has_ack ? "\0" : "\1", 1);
        pgarray_add(&A[27], c->replay ? "\1" : "\0", 1);
    }
    format_uuid_text(r->tenant, b->tenant);
    b->values[0] = b->tenant;
    b->lengths[0] = 0;
    b->formats[0] = 0;
    /* $2..$21: elem .. dd_txn; $22: the window; $23..$30: ack .. replay */
    for (int k = 0; k < CYB_ARRAYS; k++) {
        pgarray_finish(&b->arr[k]);
        int slot = k < 20 ? 1 + k : 2 + k;
        b->values[slot] = b->arr[k].b.data;
        b->lengths[slot] = (int)b->arr[k].b.len;
        b->formats[slot] = 1;
    }
    cy_ctx *c0 = b->sub[0];
    b->values[21] = c0->enc.values[9]; /* the dedup window, the same for every element */
    b->lengths[21] = c0->enc.lengths[9];
    b->formats[21] = c0->enc.formats[9];
    memset(&b->dbr, 0, sizeof b->dbr);
    b->dbr.nstmt = 1;
    b->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_cycles_v2($1::uuid, $2::int4[], $3::uuid[], $4::uuid[], "
                               "$5::text[], $6::int4[], $7::text[], $8::text[], $9::text[], $10::int8[], $11::int4[], "
                               "$12::uuid[], $13::text[], $14::text[], $15::int4[], $16::int4[], $17::bytea[], "
                               "$18::int4[], $19::int4[], $20::int4[], $21::text[], $22::int8, $23::text[], "
                               "$24::uuid[], $25::text[], $26::int4[], $27::bool[], $28::text[], $29::bool[], "
                               "$30::bool[])",
                               30, b->values, b->lengths, b->formats, 1};
    b->dbr.done = cyb_done;
    b->dbr.arg = b;
    if (db_submit(b->a->db, &b->dbr) < 0) {
        api_respond_db_error(r, &b->dbr);
        cyb_free(b);
    }
}

static void cyb_done(db_req *d)
{
    cyb_ctx *b = d->arg;
    http_req *r = b->http;
    PGresult *res = d->res[0];
    if (d->err != DB_OK || !res) {
        int retryable = d->err == DB_SQL && (strcmp(d->sqlstate, "40001") == 0 || strcmp(d->sqlstate, "40P01") == 0);
        if (retryable && ++b->attempts < CY_MAX_ATTEMPTS) {
            db_req_clear(d);
            if (db_submit(b->a->db, d) == 0)
                return;
        }
        for (uint32_t i = 0; i < b->nsub; i++) {
            stream_stat *st = stat_for(&b->sub[i]->query, r->tenant, NULL);
            if (st)
                st->failed++;
        }
        api_respond_db_error(r, d);
        db_req_clear(d);
        cyb_free(b);
        return;
    }
    int rows = PQntuples(res);
    for (uint32_t s = 0; s < b->nsub; s++) {
        cy_ctx *c = b->sub[s];
        int summary = -1, failed = -1, incarnation = 0;
        for (int i = 0; i < rows; i++) {
            if (db_get_i32(res, i, SCB_ELEM) != (int32_t)c->elem)
                continue;
            int kind = db_get_i32(res, i, SCB_KIND);
            if (kind == SCY_ROW_SUMMARY)
                summary = i;
            else if (kind == SCY_ROW_FAILED)
                failed = i;
            else if (kind == SCY_ROW_INCARNATION)
                incarnation = 1;
        }
        if (incarnation && failed < 0) {
            cy_reincarnate(c, res, SCB_ELEM, (int32_t)c->elem);
            continue;
        }
        if (failed >= 0) {
            const char *state = PQgetvalue(res, failed, SCB_ERRSTATE);
            const char *msg = PQgetvalue(res, failed, SCB_QNAME);
            const push_group *refused = push_enc_refused(&c->enc, state, msg);
            if (refused) {
                cy_sealed_again(c, refused);
            } else if (strncmp(state, "QS", 2) == 0) {
                cy_fail(c, state, msg);
            } else {
                /* not the client's text: the log has PostgreSQL's */
                log_warn("streams", "cycle element %u of request %s failed: %s (SQLSTATE %s)", c->elem, r->request_id,
                         msg, state);
                cy_fail(c, state, "the cycle failed in the database (the node's log has the reason under this request's id)");
            }
            continue;
        }
        cy_apply(c, res, SCB_ELEM, (int32_t)c->elem, summary);
    }
    db_req_clear(d);
    cyb_submit(b);
}

static void cy_array(http_req *r, json_doc *d)
{
    uint32_t n = d->toks[0].count;
    if (n == 0 || n > CY_BATCH_MAX) {
        json_doc_free(d);
        http_respond_error(r, 400, "an array of cycles holds 1 to %d elements", CY_BATCH_MAX);
        return;
    }
    cyb_ctx *b = arena_alloc(&r->ar, sizeof *b);
    memset(b, 0, sizeof *b);
    b->http = r;
    b->a = r->app;
    b->els = arena_alloc(&r->ar, n * sizeof *b->els);
    b->sub = arena_alloc(&r->ar, n * sizeof *b->sub);
    int o = json_first(d, 0);
    for (uint32_t i = 0; i < n; i++, o = json_next(d, o)) {
        cy_ctx *c = cy_new(r, i);
        b->els[b->n++] = c;
        char at[24];
        snprintf(at, sizeof at, "[%u]", i);
        int rc = cy_parse(r, d, o, c, at);
        if (rc < 0) {
            json_doc_free(d);
            cyb_free(b);
            return;
        }
        cy_prepare(c);
    }
    json_doc_free(d);
    http_async(r);
    cyb_submit(b);
}

void api_streams_cycle(http_req *r)
{
    app *a = r->app;
    json_doc d;
    memset(&d, 0, sizeof d);
    if (!r->body || r->body_len == 0) {
        http_respond_error(r, 400, "Empty request body");
        return;
    }
    /* root → push_items → item → payload; an array body one level deeper */
    json_opts jo = {.max_tokens = 0, .token_depth = 5};
    if (json_parse(&d, r->body, r->body_len, &jo) < 0) {
        http_respond_error(r, 400, "Invalid JSON: %s", d.err);
        json_doc_free(&d);
        return;
    }
    if (json_type_of(&d, 0) == JSON_ARRAY) {
        cy_array(r, &d);
        return;
    }
    if (json_type_of(&d, 0) != JSON_OBJECT) {
        json_doc_free(&d);
        http_respond_error(r, 400, "request body must be a JSON object");
        return;
    }
    cy_ctx *c = cy_new(r, 0);
    int rc = cy_parse(r, &d, 0, c, NULL);
    json_doc_free(&d);
    if (rc != 0) {
        if (rc > 0)
            http_respond_json(r, 200, &c->answer);
        buf_free(&c->answer);
        cy_free(c);
        return;
    }
    cy_prepare(c);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){"SELECT * FROM queen.streams_cycle_v2($1::uuid, $2::uuid, $3::uuid, $4, "
                               "$5::text[], $6::text[], $7::text[], $8::int8[], "
                               "$9::uuid[], $10::text[], $11::text[], $12::int4[], $13::int4[], $14::bytea[], "
                               "$15::int4[], $16::int4[], $17::text[], $18::int8, "
                               "$19, $20::uuid, $21, $22::int4, $23::boolean, $24, $25::boolean, $26::boolean)",
                               CY_PARAMS, c->values, c->lengths, c->formats, 1};
    c->dbr.done = cy_done;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        api_respond_db_error(r, &c->dbr);
        buf_free(&c->answer);
        cy_free(c);
    }
}
