/* api_read.c — the lease-free reads in the 2.x shape: POST /api/v1/fetch (records of partitions
 * by offset) and POST /api/v1/partitions/changed (partition discovery with safeTime). Both take
 * many entries and answer exactly one result per entry, in order. Bodies and limits are in
 * docs/http-api.md; the SQL and decoders are storage/logread.c's. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "storage/logread.h"

typedef struct read_ctx {
    db_req dbr;
    sql_params sp;
    fetch_args fa;
    changed_args ca;
    http_req *http;
    buf out;     /* the entries' JSON, built while decoding */
    int first;   /* no record (fetch) / partition (changed) written yet in the current entry */
    int64_t safe_min;
    int have_safe;
} read_ctx;

/* ---- POST /api/v1/fetch ------------------------------------------------------------------- */

static void fetch_begin(void *arg, const fetch_result *e)
{
    read_ctx *c = arg;
    if (e->index)
        buf_putc(&c->out, ',');
    buf_puts(&c->out, "{\"records\":[");
    c->first = 1;
}

static int fetch_record(void *arg, const fetch_result *e, const record_view *v, int64_t ts)
{
    (void)e;
    read_ctx *c = arg;
    if (!c->first)
        buf_putc(&c->out, ',');
    c->first = 0;
    fetch_record_json(&c->out, v, ts);
    return 0;
}

static void fetch_end(void *arg, const fetch_result *e)
{
    read_ctx *c = arg;
    buf_printf(&c->out, "],\"highWatermark\":%lld,\"logStartOffset\":%lld", (long long)e->high_watermark,
               (long long)e->log_start);
    const char *err = fetch_error_name(e->error);
    if (err)
        buf_printf(&c->out, ",\"error\":\"%s\"", err);
    buf_putc(&c->out, '}');
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
    buf_puts(&c->out, "{\"entries\":[");
    static const fetch_callbacks cb = {fetch_begin, fetch_record, fetch_end};
    fetch_summary sum;
    int rc = fetch_decode(d->res[0], &c->fa, &cb, c, &sum);
    db_req_clear(d);
    if (rc < 0) {
        log_error("http", "fetch: a stored segment could not be decoded");
        http_respond_error_code(r, 500, "corrupt_segment", "a stored segment could not be decoded");
    } else {
        buf_puts(&c->out, "]}");
        http_respond_json(r, 200, &c->out);
    }
    buf_free(&c->out);
}

/* Parses a body with `parse` (readreq.h); on failure answers 400 and returns -1. */
static int parse_or_respond(http_req *r, json_doc *d, qerr e, const qerr_detail *err)
{
    json_doc_free(d);
    if (e == QERR_OK)
        return 0;
    http_respond_qerr(r, e, err);
    return -1;
}

static void respond_text(http_req *r, const char *json)
{
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, json);
    http_respond_json(r, 200, &b);
    buf_free(&b);
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
    memcpy(c->fa.tenant, r->tenant, 16);
    qerr_detail err;
    qerr e = fetch_parse_request(&d, &r->ar, &c->fa, &err);
    if (parse_or_respond(r, &d, e, &err) < 0)
        return;
    if (c->fa.n == 0) {
        respond_text(r, "{\"entries\":[]}");
        return;
    }
    fetch_params(&c->fa, &c->sp);
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

/* ---- POST /api/v1/partitions/changed ------------------------------------------------------ */

static void changed_begin(void *arg, const changed_result *e)
{
    read_ctx *c = arg;
    if (e->index)
        buf_putc(&c->out, ',');
    buf_puts(&c->out, "{\"partitions\":[");
    c->first = 1;
    if (e->known && (!c->have_safe || e->safe_time < c->safe_min)) {
        c->safe_min = e->safe_time;
        c->have_safe = 1;
    }
}

static void changed_row_json(void *arg, const changed_result *e, const changed_row *row)
{
    (void)e;
    read_ctx *c = arg;
    char u[37], iso[32];
    format_uuid_text(row->uuid, u);
    format_iso_us(row->last_ts, iso);
    if (!c->first)
        buf_putc(&c->out, ',');
    c->first = 0;
    buf_puts(&c->out, "{\"name\":");
    jw_string(&c->out, row->name, row->name_len);
    buf_printf(&c->out, ",\"id\":\"%s\",\"lastOffset\":%lld,\"logStart\":%lld,\"lastWriteAt\":\"%s\"}", u,
               (long long)row->end_offset - 1, (long long)row->start_offset, iso);
}

static void changed_end(void *arg, const changed_result *e)
{
    read_ctx *c = arg;
    buf_puts(&c->out, "],\"next\":");
    if (e->has_next)
        buf_printf(&c->out, "\"%lld\"", (long long)e->next_after);
    else
        buf_puts(&c->out, "null");
    if (!e->known)
        buf_puts(&c->out, ",\"error\":\"UNKNOWN_TOPIC_OR_PARTITION\"");
    buf_putc(&c->out, '}');
}

static void on_changed(db_req *d)
{
    read_ctx *c = d->arg;
    http_req *r = c->http;
    sql_params_free(&c->sp);
    /* statement 0 is the tick: a failed tick (a clock row busy) only leaves safeTime older */
    if (!d->res[1] || (d->err != DB_OK && d->failed_stmt != 0)) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        return;
    }
    buf_init(&c->out, 0);
    static const changed_callbacks cb = {changed_begin, changed_row_json, changed_end};
    int rc = changed_decode(d->res[1], &c->ca, &cb, c);
    db_req_clear(d);
    if (rc < 0) {
        buf_free(&c->out);
        log_error("http", "partitions/changed: the answer did not have a row for every entry");
        http_respond_error_code(r, 500, "database_error", "partitions/changed: the database answered short");
        return;
    }
    /* every safeTime is spelled at the same width, so the 2.x client's string minimum over
     * pages is the earliest */
    buf final;
    buf_init(&final, 0);
    buf_puts(&final, "{\"safeTime\":");
    if (c->have_safe) {
        char iso[32];
        format_iso_us(c->safe_min, iso);
        buf_printf(&final, "\"%s\"", iso);
    } else {
        buf_puts(&final, "null");
    }
    buf_puts(&final, ",\"entries\":[");
    buf_append(&final, c->out.data, c->out.len);
    buf_puts(&final, "]}");
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
    memcpy(c->ca.tenant, r->tenant, 16);
    qerr_detail err;
    qerr e = changed_parse_request(&d, &r->ar, &c->ca, &err);
    if (parse_or_respond(r, &d, e, &err) < 0)
        return;
    if (c->ca.n == 0) {
        respond_text(r, "{\"safeTime\":null,\"entries\":[]}");
        return;
    }
    /* statement 0 ticks the clocks of the queues named (its own transaction); statement 1
     * reads clocks and partitions in one snapshot. The tick's parameters are the first two of
     * the read's. */
    changed_params(&c->ca, &c->sp);
    c->dbr.nstmt = 2;
    c->dbr.stmt[0] = (db_stmt){TICK_QUEUES_SQL, 2, c->sp.values, c->sp.lengths, c->sp.formats, 1};
    c->dbr.stmt[1] = (db_stmt){CHANGED_SQL, c->sp.n, c->sp.values, c->sp.lengths, c->sp.formats, 1};
    c->dbr.done = on_changed;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        sql_params_free(&c->sp);
        api_respond_db_error(r, &c->dbr);
    }
}
