/* api_read.c — the lease-free reads: POST /api/v1/fetch and POST /api/v1/partitions/changed.
 * Bodies are documented in docs/http-api.md. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/util.h"
#include "storage/logread.h"

typedef struct read_ctx {
    db_req dbr;
    sql_params sp;
    fetch_args fa;
    changed_args ca;
    http_req *http;
    buf out;
    int first;
} read_ctx;

static int on_fetch_record(void *arg, const fetch_partition *p, const record_view *v, int64_t ts)
{
    read_ctx *c = arg;
    if (!c->first)
        buf_putc(&c->out, ',');
    c->first = 0;
    fetch_record_json(&c->out, p, v, ts);
    return 0;
}

typedef struct part_list {
    buf b;
    int n;
} part_list;

static void on_fetch_partition(void *arg, const fetch_partition *p)
{
    part_list *pl = arg;
    char u[37];
    format_uuid_text(p->uuid, u);
    if (pl->n++)
        buf_putc(&pl->b, ',');
    buf_puts(&pl->b, "{\"partition\":");
    jw_string(&pl->b, p->name, p->name_len);
    buf_printf(&pl->b, ",\"partitionId\":\"%s\",\"fromOffset\":%lld,\"nextOffset\":%lld,\"startOffset\":%lld,"
                       "\"endOffset\":%lld,\"records\":%u}",
               u, (long long)p->from, (long long)p->next_offset, (long long)p->start_offset, (long long)p->end_offset,
               p->delivered);
}

typedef struct both {
    read_ctx *c;
    part_list pl;
} both;

static int both_record(void *arg, const fetch_partition *p, const record_view *v, int64_t ts)
{
    return on_fetch_record(((both *)arg)->c, p, v, ts);
}
static void both_partition(void *arg, const fetch_partition *p)
{
    on_fetch_partition(&((both *)arg)->pl, p);
}

static void on_fetched(db_req *d)
{
    read_ctx *c = d->arg;
    http_req *r = c->http;
    sql_params_free(&c->sp);
    if (d->err != DB_OK || !d->res[0]) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    buf_init(&c->out, 0);
    buf_puts(&c->out, "{\"queue\":");
    jw_cstr(&c->out, c->fa.queue);
    buf_puts(&c->out, ",\"records\":[");
    c->first = 1;
    both bb = {.c = c};
    buf_init(&bb.pl.b, 0);
    fetch_summary sum;
    enum fetch_result fr = fetch_decode(d->res[0], &c->fa, both_record, both_partition, &bb, &sum);
    db_req_clear(d);
    if (fr == FETCH_NO_QUEUE) {
        http_respond_error(r, 404, "queue not found: %s", c->fa.queue);
    } else if (fr == FETCH_NO_PARTITION) {
        http_respond_error(r, 404, "partition not found: %s", c->fa.partition);
    } else if (fr == FETCH_CORRUPT) {
        http_respond_error(r, 500, "a stored segment of queue %s could not be decoded", c->fa.queue);
    } else {
        buf_puts(&c->out, "],\"partitions\":[");
        if (bb.pl.b.len)
            buf_append(&c->out, bb.pl.b.data, bb.pl.b.len);
        buf_printf(&c->out, "],\"more\":%s}", sum.more ? "true" : "false");
        http_respond_json(r, 200, &c->out);
    }
    buf_free(&bb.pl.b);
    buf_free(&c->out);
}

void api_fetch(http_req *r)
{
    app *a = r->app;
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    read_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    fetch_args *fa = &c->fa;
    memcpy(fa->tenant, r->tenant, 16);
    fa->max_records = 1000;
    fa->max_bytes = 1 << 20;
    size_t len;
    const char *err = NULL;
    char msg[128];
    int rc;
    if ((rc = api_str_field(r, &d, 0, "queue", &fa->queue, &len)) <= 0 || len == 0)
        err = api_str_field_msg(rc, "queue", "queue is required (a non-empty string)", msg, sizeof msg);
    else if ((rc = api_str_field(r, &d, 0, "partition", &fa->partition, &len)) < 0)
        err = api_str_field_msg(rc, "partition", "partition must be a string", msg, sizeof msg);
    else if (api_int_field(&d, 0, "fromOffset", 0, INT64_MAX, &fa->from_offset) < 0)
        err = "fromOffset must be an integer >= 0";
    else if (api_int_field(&d, 0, "maxRecords", 1, FETCH_MAX_RECORDS_LIMIT, &fa->max_records) < 0)
        err = "maxRecords must be an integer between 1 and 100000";
    else if (api_int_field(&d, 0, "maxBytes", 1, FETCH_MAX_BYTES_LIMIT, &fa->max_bytes) < 0)
        err = "maxBytes must be an integer between 1 and 67108864";
    else if (api_int_field(&d, 0, "maxTs", 1, INT64_MAX, &fa->max_ts) < 0)
        err = "maxTs must be a positive integer (microseconds since the epoch)";
    if (!err) {
        int o = json_get(&d, 0, "offsets");
        if (o >= 0 && json_type_of(&d, o) != JSON_NULL) {
            if (json_type_of(&d, o) != JSON_OBJECT) {
                err = "offsets must be an object of partition name to offset";
            } else {
                uint32_t n = d.toks[o].count;
                fa->names = arena_alloc(&r->ar, (n + 1) * sizeof *fa->names);
                int64_t *offs = arena_alloc(&r->ar, (n + 1) * sizeof *offs);
                fa->offsets = offs;
                int k = json_first(&d, o);
                for (uint32_t m = 0; m < n && !err; m++, k = json_next(&d, k + 1)) {
                    size_t nl;
                    if (api_json_text(r, &d, k, &fa->names[m], &nl) == API_STR_NUL)
                        err = "offsets: a partition name must not hold a NUL character (\\u0000)";
                    else if (json_int64(&d, k + 1, &offs[m]) < 0 || offs[m] < 0)
                        err = "offsets values must be integers >= 0";
                }
                fa->noffsets = n;
            }
        }
    }
    json_doc_free(&d);
    if (err) {
        http_respond_error(r, 400, "%s", err);
        return;
    }
    fetch_params(fa, &c->sp);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){FETCH_SQL, c->sp.n, c->sp.values, c->sp.lengths, c->sp.formats, 1};
    c->dbr.done = on_fetched;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        sql_params_free(&c->sp);
        api_respond_db_error(r, &c->dbr);
    }
}

static void on_changed_row(void *arg, const changed_row *row)
{
    read_ctx *c = arg;
    char u[37];
    format_uuid_text(row->uuid, u);
    if (!c->first)
        buf_putc(&c->out, ',');
    c->first = 0;
    buf_puts(&c->out, "{\"partition\":");
    jw_string(&c->out, row->name, row->name_len);
    buf_printf(&c->out, ",\"partitionId\":\"%s\",\"startOffset\":%lld,\"lastOffset\":%lld,\"endOffset\":%lld,"
                        "\"lastTs\":%lld}",
               u, (long long)row->start_offset, (long long)row->end_offset - 1, (long long)row->end_offset,
               (long long)row->last_ts);
    c->ca.after = arena_strndup(&c->http->ar, row->name, row->name_len);
}

static void on_changed(db_req *d)
{
    read_ctx *c = d->arg;
    http_req *r = c->http;
    sql_params_free(&c->sp);
    if (!d->res[1] || (d->err != DB_OK && d->failed_stmt != 0)) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    buf_init(&c->out, 0);
    c->first = 1;
    int64_t safe = 0;
    int more = 0;
    buf_puts(&c->out, "{\"partitions\":[");
    c->ca.after = NULL;
    int rc = changed_decode(d->res[1], c->ca.limit, &safe, on_changed_row, c, &more);
    db_req_clear(d);
    if (rc < 0) {
        buf_free(&c->out);
        http_respond_error(r, 404, "queue not found: %s", c->ca.queue);
        return;
    }
    /* the list was built first; the answer puts queue, since and safeTime before it */
    buf final;
    buf_init(&final, 0);
    buf_puts(&final, "{\"queue\":");
    jw_cstr(&final, c->ca.queue);
    buf_printf(&final, ",\"since\":%lld,\"safeTime\":%lld,", (long long)c->ca.since, (long long)safe);
    buf_append(&final, c->out.data + 1, c->out.len - 1);
    buf_printf(&final, "],\"more\":%s,\"after\":", more ? "true" : "false");
    if (c->ca.after)
        jw_cstr(&final, c->ca.after);
    else
        buf_puts(&final, "null");
    buf_putc(&final, '}');
    http_respond_json(r, 200, &final);
    buf_free(&final);
    buf_free(&c->out);
}

void api_partitions_changed(http_req *r)
{
    app *a = r->app;
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    read_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    changed_args *ca = &c->ca;
    memcpy(ca->tenant, r->tenant, 16);
    ca->limit = 1000;
    ca->after = "";
    size_t len;
    const char *err = NULL;
    char msg[128];
    int rc;
    if ((rc = api_str_field(r, &d, 0, "queue", &ca->queue, &len)) <= 0 || len == 0)
        err = api_str_field_msg(rc, "queue", "queue is required (a non-empty string)", msg, sizeof msg);
    else if (api_int_field(&d, 0, "since", 0, INT64_MAX, &ca->since) < 0)
        err = "since must be an integer >= 0 (microseconds since the epoch)";
    else if ((rc = api_str_field(r, &d, 0, "after", &ca->after, &len)) < 0)
        err = api_str_field_msg(rc, "after", "after must be a string (a partition name)", msg, sizeof msg);
    else if (api_int_field(&d, 0, "limit", 1, CHANGED_LIMIT_MAX, &ca->limit) < 0)
        err = "limit must be an integer between 1 and 10000";
    json_doc_free(&d);
    if (err) {
        http_respond_error(r, 400, "%s", err);
        return;
    }
    if (!ca->after)
        ca->after = "";
    /* statement 0 ticks the queue clock (its own transaction); statement 1 reads clock and
     * partitions in one snapshot */
    changed_params(ca, &c->sp);
    /* the tick's parameters are the first two of the changed query's: reuse them */
    c->dbr.nstmt = 2;
    c->dbr.stmt[0] = (db_stmt){TICK_QUEUE_SQL, 2, c->sp.values, c->sp.lengths, c->sp.formats, 1};
    c->dbr.stmt[1] = (db_stmt){CHANGED_SQL, c->sp.n, c->sp.values, c->sp.lengths, c->sp.formats, 1};
    c->dbr.done = on_changed;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        sql_params_free(&c->sp);
        api_respond_db_error(r, &c->dbr);
    }
}
