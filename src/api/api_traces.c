/* api_traces.c — message traces (docs/http-api.md, "Traces"): POST /api/v1/traces (what a
 * consumer's message["trace"](...) sends), the traces of one record, the traces carrying one
 * name, and the list of names.
 *
 * A trace is stored in queen.message_traces (080_traces) against its partition, found through
 * the request's tenant, and the record's transactionId as the client names it, with the
 * record's offset (106_trace_offsets): the record must exist. The proof is cheap for the
 * traces a consumer sends while it handles a message (its lease names the transactionId, or
 * the dedup window does) and is made in the insert itself; a trace without it looks the record
 * up as GET /api/v1/messages/:p/:t does (api_message_locate), then goes in the next batch with
 * the offset found, or is answered 404 message_not_found. A trace may outlive the record under
 * retention, and goes with the partition. `data` is stored as the JSON text the client sent, byte for byte,
 * and handed back as that same text. Inserts are group-committed: the requests that arrive
 * while a batch commits go together in the next statement (trace_flush). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/answers_traces.h"
#include "app.h"
#include "core/util.h"
#include "core/uuid.h"
#include "db/pgarray.h"

#define TRACE_TXN_MAX 255          /* as a push's transactionId */
#define TRACE_GROUP_MAX 255
#define TRACE_EVENT_MAX 100
#define TRACE_NAME_MAX 255
#define TRACE_NAMES_MAX 32
#define TRACE_DATA_MAX (1024 * 1024) /* bytes of the raw JSON value */
#define TRACE_LIST_MAX 10000         /* traces of one record answered at most */

static const char *const TRACE_FIELDS[] = {"transactionId", "partitionId", "consumerGroup", "traceNames",
                                           "eventType", "data", NULL};

/* ---- POST /api/v1/traces ----------------------------------------------------------------- */

/* Group commit of traces: a trace is one small insert, and a commit costs a disk flush, so one
 * statement per request caps a node at a few hundred traces a second. Requests queue while a
 * batch is in flight and go together in the next one (no timer: the batch is whatever arrived
 * during the last commit). Loop thread only. */
#define TRACE_BATCH_MAX 512
#define TRACE_BATCH_BYTES (8 * 1024 * 1024)
#define TRACE_INFLIGHT_MAX 2

typedef struct trace_item {
    http_req *r;
    uuid id;
    int64_t off;         /* the record's offset, found by api_message_locate; -1 = not looked up */
    uint8_t part[16];
    const char *part_text, *txn, *group, *event, *names, *data;
    size_t txn_len, group_len, event_len, names_len, data_len;
    struct trace_item *next;
} trace_item;

typedef struct trace_batch {
    db_req dbr;
    trace_item *items;
    pgarray arr[9];
    const char *values[10];
    int lengths[10], formats[10];
} trace_batch;

static struct {
    trace_item *head, *tail;
    int inflight;
} tq;

static void trace_flush(app *a);

static void batch_free(trace_batch *b)
{
    for (int k = 0; k < 9; k++)
        pgarray_free(&b->arr[k]);
    free(b);
}

static void trace_enqueue(app *a, trace_item *it)
{
    it->next = NULL;
    if (tq.tail)
        tq.tail->next = it;
    else
        tq.head = it;
    tq.tail = it;
    trace_flush(a);
}

static void respond_no_partition(trace_item *it)
{
    http_respond_error_code(it->r, 404, "partition_not_found", "Partition not found: %s", it->part_text);
}

static void respond_no_message(trace_item *it)
{
    /* the earlier release's text, and a code (it answered 500) */
    http_respond_error_code(it->r, 404, "message_not_found", "Message not found");
}

/* The record looked up (no cheap proof in the insert): trace it with its offset, or 404. */
static void on_located(http_req *r, void *arg, int64_t off)
{
    trace_item *it = arg;
    if (off == -2) {
        respond_no_partition(it);
        return;
    }
    if (off < 0) {
        respond_no_message(it);
        return;
    }
    it->off = off;
    trace_enqueue(r->app, it);
}

static void answer_item(trace_item *it, int row, int inserted, const uint8_t *puuid)
{
    if (row < 0) {
        respond_no_partition(it);
        return;
    }
    if (!inserted) {
        if (it->off >= 0) {
            respond_no_message(it); /* found, then gone from the log (retention) before the insert */
            return;
        }
        api_message_locate(it->r, puuid, it->txn, it->txn_len, on_located, it);
        return;
    }
    buf b;
    buf_init(&b, 0);
    answer_trace_added(&b, &it->id);
    http_respond_json(it->r, 201, &b);
    buf_free(&b);
}

static void on_batch(db_req *d)
{
    trace_batch *b = d->arg;
    app *a = NULL;
    PGresult *res = d->res[0];
    for (trace_item *it = b->items, *nx; it; it = nx) {
        nx = it->next;
        a = it->r->app;
        if (d->err != DB_OK || !res) {
            api_respond_db_error(it->r, d);
            continue;
        }
        uint8_t puuid[16];
        int inserted;
        int row = trace_insert_row(res, &it->id, &inserted, puuid);
        answer_item(it, row, inserted, puuid);
    }
    db_req_clear(d);
    batch_free(b);
    tq.inflight--;
    if (a)
        trace_flush(a);
}

static void trace_flush(app *a)
{
    while (tq.head && tq.inflight < TRACE_INFLIGHT_MAX) {
        trace_batch *b = xcalloc(1, sizeof *b);
        static const uint32_t oids[9] = {OID_UUID, OID_UUID, OID_UUID, OID_TEXT, OID_TEXT,
                                         OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8};
        for (int k = 0; k < 9; k++)
            pgarray_begin(&b->arr[k], oids[k]);
        trace_item **tail = &b->items;
        size_t bytes = 0;
        int n = 0;
        while (tq.head && n < TRACE_BATCH_MAX && (n == 0 || bytes + tq.head->data_len <= TRACE_BATCH_BYTES)) {
            trace_item *it = tq.head;
            tq.head = it->next;
            it->next = NULL;
            *tail = it;
            tail = &it->next;
            pgarray_add(&b->arr[0], it->id.b, 16);
            pgarray_add(&b->arr[1], it->r->tenant, 16);
            pgarray_add(&b->arr[2], it->part, 16);
            pgarray_add(&b->arr[3], it->txn, it->txn_len);
            pgarray_add(&b->arr[4], it->group, it->group_len);
            pgarray_add(&b->arr[5], it->event, it->event_len);
            pgarray_add(&b->arr[6], it->names, it->names_len);
            pgarray_add(&b->arr[7], it->data, it->data_len);
            if (it->off >= 0)
                pgarray_add_i64(&b->arr[8], it->off);
            else
                pgarray_add_null(&b->arr[8]);
            bytes += it->data_len;
            n++;
        }
        if (!tq.head)
            tq.tail = NULL;
        for (int k = 0; k < 9; k++) {
            int v = k < 8 ? k : 9; /* $9 is the node id */
            pgarray_finish(&b->arr[k]);
            b->values[v] = b->arr[k].b.data;
            b->lengths[v] = (int)b->arr[k].b.len;
            b->formats[v] = 1;
        }
        b->values[8] = a->cfg->node_id;
        b->lengths[8] = 0;
        b->formats[8] = 0;
        b->dbr.nstmt = 1;
        b->dbr.stmt[0] = (db_stmt){TRACE_INSERT_SQL, 10, b->values, b->lengths, b->formats, 1};
        b->dbr.done = on_batch;
        b->dbr.arg = b;
        tq.inflight++;
        if (db_submit(a->db, &b->dbr) < 0) {
            /* refused at once (no connection, shutting down): every request of it answers so */
            tq.inflight--;
            for (trace_item *it = b->items; it; it = it->next)
                api_respond_db_error(it->r, &b->dbr);
            db_req_clear(&b->dbr);
            batch_free(b);
        }
    }
}

/* A string field within [1, max] bytes: 1 present, 0 absent/null, -1 answered. */
static int trace_str(http_req *r, const json_doc *d, const char *key, size_t max, const char **out, size_t *len)
{
    int rc = api_str_field(r, d, 0, key, out, len);
    if (rc == 0)
        return 0;
    if (rc == 1 && *len >= 1 && *len <= max)
        return 1;
    char msg[160], other[120];
    snprintf(other, sizeof other, "%s must be a string of 1 to %zu bytes", key, max);
    http_respond_error(r, 400, "%s", api_str_field_msg(rc, key, other, msg, sizeof msg));
    return -1;
}

/* One trace name into the JSON array of names (duplicates dropped); -1 answered. */
static int add_name(http_req *r, const json_doc *d, int t, buf *names, const char **seen, int *nseen)
{
    const char *s;
    size_t n;
    if (json_type_of(d, t) != JSON_STRING) {
        http_respond_error(r, 400, "traceNames must be a string or an array of strings");
        return -1;
    }
    if (api_json_text(r, d, t, &s, &n) == API_STR_NUL) {
        http_respond_error(r, 400, "traceNames must not hold a NUL character (\\u0000)");
        return -1;
    }
    if (n == 0 || n > TRACE_NAME_MAX) {
        http_respond_error(r, 400, "a trace name must be a string of 1 to %d bytes", TRACE_NAME_MAX);
        return -1;
    }
    for (int i = 0; i < *nseen; i++)
        if (strcmp(seen[i], s) == 0)
            return 0;
    if (*nseen >= TRACE_NAMES_MAX) {
        http_respond_error(r, 400, "traceNames holds more than %d names", TRACE_NAMES_MAX);
        return -1;
    }
    seen[(*nseen)++] = s;
    if (names->len > 1)
        buf_putc(names, ',');
    jw_string(names, s, n);
    return 0;
}

void api_trace_add(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    /* unknown fields are refused, not dropped */
    uint32_t cnt = d.toks[0].count;
    int k = json_first(&d, 0);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(&d, json_next(&d, k))) {
        int ok = 0;
        for (const char *const *f = TRACE_FIELDS; *f && !ok; f++)
            ok = json_str_eq(&d, k, *f);
        if (!ok) {
            buf key;
            buf_init(&key, 0);
            json_str_decode(&d, k, &key);
            http_respond_error_code(r, 400, "unknown_field", "unknown field \"%.*s\"",
                                    (int)(key.len > 200 ? 200 : key.len), key.data ? key.data : "");
            buf_free(&key);
            json_doc_free(&d);
            return;
        }
    }
    const char *txn = NULL, *part = NULL, *group = NULL, *event = NULL;
    size_t txn_len = 0, part_len = 0, group_len = 0, event_len = 0;
    int rt = api_str_field(r, &d, 0, "transactionId", &txn, &txn_len);
    int rp = api_str_field(r, &d, 0, "partitionId", &part, &part_len);
    if (rt == 0 || rp == 0 || (rt == 1 && txn_len == 0) || (rp == 1 && part_len == 0)) {
        http_respond_error(r, 400, "transactionId and partitionId are required");
        goto out;
    }
    if (rt != 1 || txn_len > TRACE_TXN_MAX) {
        char msg[160], other[120];
        snprintf(other, sizeof other, "transactionId must be a string of 1 to %d bytes", TRACE_TXN_MAX);
        http_respond_error(r, 400, "%s", api_str_field_msg(rt, "transactionId", other, msg, sizeof msg));
        goto out;
    }
    uuid pu;
    if (rp != 1 || api_partition_ref(part, part_len, &pu) < 0) {
        http_respond_error(r, 400, "partitionId must be a UUID or a framed pop's decimal partition id");
        goto out;
    }
    int td = json_get(&d, 0, "data");
    if (td < 0 || json_type_of(&d, td) == JSON_NULL) {
        http_respond_error(r, 400, "data is required");
        goto out;
    }
    size_t data_len;
    const char *data = json_raw(&d, td, &data_len);
    if (data_len > TRACE_DATA_MAX) {
        http_respond_error_code(r, 413, "trace_data_too_large", "data is %zu bytes of JSON, more than %d", data_len,
                                TRACE_DATA_MAX);
        goto out;
    }
    int rg = trace_str(r, &d, "consumerGroup", TRACE_GROUP_MAX, &group, &group_len);
    if (rg < 0)
        goto out;
    int re = trace_str(r, &d, "eventType", TRACE_EVENT_MAX, &event, &event_len);
    if (re < 0)
        goto out;
    buf names;
    buf_init(&names, 0);
    buf_putc(&names, '[');
    const char *seen[TRACE_NAMES_MAX];
    int nseen = 0;
    int tn = json_get(&d, 0, "traceNames");
    int tnt = json_type_of(&d, tn);
    if (tnt == JSON_STRING) {
        if (add_name(r, &d, tn, &names, seen, &nseen) < 0) {
            buf_free(&names);
            goto out;
        }
    } else if (tnt == JSON_ARRAY) {
        uint32_t ne = d.toks[tn].count;
        int e = json_first(&d, tn);
        for (uint32_t i = 0; i < ne; i++, e = json_next(&d, e)) {
            if (add_name(r, &d, e, &names, seen, &nseen) < 0) {
                buf_free(&names);
                goto out;
            }
        }
    } else if (tn >= 0 && tnt != JSON_NULL) {
        http_respond_error(r, 400, "traceNames must be a string or an array of strings");
        buf_free(&names);
        goto out;
    }
    buf_putc(&names, ']');
    app *a = r->app;
    trace_item *it = arena_alloc(&r->ar, sizeof *it);
    memset(it, 0, sizeof *it);
    it->r = r;
    it->off = -1;
    uuid_v7(&it->id);
    memcpy(it->part, pu.b, 16);
    it->part_text = arena_strndup(&r->ar, part, part_len);
    it->txn = txn;
    it->txn_len = txn_len;
    it->group = rg == 1 ? group : ADMIN_QUEUE_MODE;
    it->group_len = rg == 1 ? group_len : strlen(ADMIN_QUEUE_MODE);
    it->event = re == 1 ? event : "info";
    it->event_len = re == 1 ? event_len : 4;
    it->names = arena_strndup(&r->ar, names.data, names.len);
    it->names_len = names.len;
    it->data = arena_strndup(&r->ar, data, data_len);
    it->data_len = data_len;
    buf_free(&names);
    json_doc_free(&d);
    http_async(r);
    trace_enqueue(a, it);
    return;
out:
    json_doc_free(&d);
}

/* ---- reads ------------------------------------------------------------------------------- */

static void on_record_traces(api_query *q, PGresult *const *res)
{
    buf b;
    buf_init(&b, 0);
    answer_traces_of_record(&b, res[0]);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_traces_for_message(http_req *r)
{
    uuid pu;
    if (api_partition_ref(r->params[0], r->param_lens[0], &pu) < 0) {
        http_respond_bad_param(r, "partitionId", "partitionId must be a UUID or a framed pop's decimal partition id");
        return;
    }
    if (r->param_lens[1] > TRACE_TXN_MAX) {
        http_respond_bad_param(r, "transactionId", "transactionId must be 1 to %d bytes", TRACE_TXN_MAX);
        return;
    }
    api_query *q = api_query_new(r, on_record_traces, NULL);
    int s = api_query_stmt(q, TRACE_BY_RECORD_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    api_param_text(q, s, r->params[1]);
    api_param_i64(q, s, TRACE_LIST_MAX);
    api_query_submit(q);
}

typedef struct page_ctx {
    int64_t limit, offset;
} page_ctx;

/* the statements of a paged read, in order: the page, then the total */
enum { PAGE_STMT_ROWS, PAGE_STMT_COUNT };

static void on_name_traces(api_query *q, PGresult *const *res)
{
    page_ctx *c = q->arg;
    buf b;
    buf_init(&b, 0);
    answer_traces_by_name(&b, res[PAGE_STMT_ROWS], res[PAGE_STMT_COUNT], c->limit, c->offset);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

static page_ctx *page_or_respond(http_req *r, int64_t def_limit)
{
    page_ctx *c = arena_alloc(&r->ar, sizeof *c);
    if (api_query_int_or_respond(r, "limit", def_limit, 1, 1000, &c->limit) < 0 ||
        api_query_int_or_respond(r, "offset", 0, 0, 1000000, &c->offset) < 0)
        return NULL;
    return c;
}

void api_traces_by_name(http_req *r)
{
    if (r->param_lens[0] > TRACE_NAME_MAX) {
        http_respond_bad_param(r, "traceName", "a trace name must be 1 to %d bytes", TRACE_NAME_MAX);
        return;
    }
    page_ctx *c = page_or_respond(r, 100);
    if (!c)
        return;
    api_query *q = api_query_new(r, on_name_traces, c);
    int s = api_query_stmt(q, TRACE_BY_NAME_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, r->params[0]);
    api_param_i64(q, s, c->limit);
    api_param_i64(q, s, c->offset);
    s = api_query_stmt(q, TRACE_BY_NAME_COUNT_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, r->params[0]);
    api_query_submit(q);
}

static void on_names(api_query *q, PGresult *const *res)
{
    page_ctx *c = q->arg;
    buf b;
    buf_init(&b, 0);
    answer_trace_names(&b, res[PAGE_STMT_ROWS], res[PAGE_STMT_COUNT], c->limit, c->offset);
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_trace_names(http_req *r)
{
    page_ctx *c = page_or_respond(r, 50);
    if (!c)
        return;
    api_query *q = api_query_new(r, on_names, c);
    int s = api_query_stmt(q, TRACE_NAMES_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, c->limit);
    api_param_i64(q, s, c->offset);
    s = api_query_stmt(q, TRACE_NAMES_COUNT_SQL);
    api_param_uuid(q, s, r->tenant);
    api_query_submit(q);
}
