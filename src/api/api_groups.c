/* api_groups.c — consumer-group management: listing with real lag, lagging partitions, one
 * group's positions, deletion, subscription start, and seeks (replay) by end, start,
 * timestamp or offset. Shapes follow the earlier release (docs/http-api.md). Lag is computed
 * from dense offsets by queen.group_lag_v1, so it is exact. */
#include <stdio.h>
#include <string.h>

#include "admin/admin.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"

/* Seek answers list at most this many partitions (partitionsUpdated counts them all). */
#define SEEK_MAX_LISTED 1000

static int64_t whole_seconds(int64_t us)
{
    return us > 0 ? us / 1000000 : 0;
}

/* ---- GET /api/v1/consumer-groups --------------------------------------------------------- */

static void on_groups(api_query *q, PGresult *const *res)
{
    PGresult *g = res[0];
    buf b;
    buf_init(&b, 0);
    buf_putc(&b, '[');
    int n = PQntuples(g);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        int64_t max_lag_us = res_i64(g, i, 6);
        buf_puts(&b, "{\"name\":");
        res_json_str(&b, g, i, 1);
        buf_puts(&b, ",\"topics\":[");
        res_json_str(&b, g, i, 0);
        buf_puts(&b, "],\"queueName\":");
        res_json_str(&b, g, i, 0);
        buf_printf(&b, ",\"members\":%lld,\"partitions\":%lld,\"partitionsWithLag\":%lld,\"totalLag\":%lld,"
                       "\"maxTimeLag\":%lld,\"maxTimeLagMs\":%lld,\"state\":\"%s\",\"activeLeases\":%lld,\"lastConsumedAt\":",
                   (long long)res_i64(g, i, 2), (long long)res_i64(g, i, 3), (long long)res_i64(g, i, 4),
                   (long long)res_i64(g, i, 5), (long long)whole_seconds(max_lag_us), (long long)(max_lag_us / 1000),
                   admin_group_state(max_lag_us, res_bool(g, i, 7)), (long long)res_i64(g, i, 8));
        admin_iso_ms_or_null(&b, res_i64(g, i, 12));
        buf_puts(&b, ",\"subscriptionMode\":");
        res_json_str(&b, g, i, 9);
        buf_puts(&b, ",\"subscriptionTimestamp\":");
        admin_iso_ms_or_null(&b, res_null(g, i, 10) ? 0 : res_i64(g, i, 10));
        buf_puts(&b, ",\"subscriptionCreatedAt\":");
        admin_iso_ms_or_null(&b, res_i64(g, i, 11));
        buf_putc(&b, '}');
    }
    buf_putc(&b, ']');
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_groups_list(http_req *r)
{
    api_query *q = api_query_new(r, on_groups, NULL);
    int s = api_query_stmt(q, ADMIN_GROUPS_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, ADMIN_MAX_PAIRS);
    api_query_submit(q);
}

/* ---- GET /api/v1/consumer-groups/lagging ------------------------------------------------- */

static void on_lagging(api_query *q, PGresult *const *res)
{
    PGresult *g = res[0];
    buf b;
    buf_init(&b, 0);
    buf_putc(&b, '[');
    int n = PQntuples(g);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        char pu[37], lease[37];
        res_uuid(g, i, 3, pu);
        res_uuid(g, i, 4, lease);
        int64_t lag_us = res_i64(g, i, 6);
        buf_puts(&b, "{\"consumer_group\":");
        res_json_str(&b, g, i, 0);
        buf_puts(&b, ",\"queue_name\":");
        res_json_str(&b, g, i, 1);
        buf_puts(&b, ",\"partition_name\":");
        res_json_str(&b, g, i, 2);
        buf_printf(&b, ",\"partition_id\":\"%s\",\"worker_id\":", pu);
        if (lease[0])
            buf_printf(&b, "\"%s\"", lease);
        else
            buf_puts(&b, "null");
        buf_printf(&b, ",\"offset_lag\":%lld,\"time_lag_seconds\":%lld,\"lag_hours\":%.3f,\"oldest_unconsumed_at\":",
                   (long long)res_i64(g, i, 5), (long long)whole_seconds(lag_us), (double)lag_us / 3.6e9);
        admin_iso_us_or_null(&b, res_i64(g, i, 7));
        buf_puts(&b, ",\"last_consumed_at\":");
        admin_iso_ms_or_null(&b, res_i64(g, i, 8));
        buf_printf(&b, ",\"next_offset\":%lld,\"end_offset\":%lld}", (long long)res_i64(g, i, 9),
                   (long long)res_i64(g, i, 10));
    }
    buf_putc(&b, ']');
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_groups_lagging(http_req *r)
{
    int64_t min_lag, limit;
    if (api_query_int_or_respond(r, "minLagSeconds", 3600, 0, 10LL * 365 * 86400, &min_lag) < 0 ||
        api_query_int_or_respond(r, "limit", 1000, 1, ADMIN_MAX_LAGGING, &limit) < 0)
        return;
    api_query *q = api_query_new(r, on_lagging, NULL);
    int s = api_query_stmt(q, ADMIN_LAGGING_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_i64(q, s, ADMIN_MAX_PAIRS);
    api_param_i64(q, s, min_lag * 1000000);
    api_param_i64(q, s, limit);
    api_query_submit(q);
}

/* ---- GET /api/v1/consumer-groups/:group -------------------------------------------------- */

static void on_group_detail(api_query *q, PGresult *const *res)
{
    PGresult *g = res[0];
    buf b;
    buf_init(&b, 0);
    buf_putc(&b, '{');
    int n = PQntuples(g);
    const char *cur = NULL;
    size_t cur_len = 0;
    int nparts = 0;
    int64_t total = 0, max_us = 0;
    for (int i = 0; i <= n; i++) {
        size_t ql = 0;
        const char *qn = i < n ? res_text(g, i, 0, &ql) : NULL;
        if (cur && (!qn || ql != cur_len || memcmp(qn, cur, ql) != 0)) {
            buf_printf(&b, "],\"totalLag\":%lld,\"maxTimeLag\":%lld}", (long long)total, (long long)whole_seconds(max_us));
            cur = NULL;
        }
        if (i == n)
            break;
        if (!cur) {
            if (b.len > 1)
                buf_putc(&b, ',');
            jw_string(&b, qn, ql);
            buf_puts(&b, ":{\"partitions\":[");
            cur = qn;
            cur_len = ql;
            nparts = 0;
            total = 0;
            max_us = 0;
        }
        if (res_null(g, i, 1))
            continue; /* a queue without partitions */
        char pu[37], lease[37];
        res_uuid(g, i, 2, pu);
        res_uuid(g, i, 8, lease);
        int64_t lag = res_i64(g, i, 6), lag_us = res_i64(g, i, 7);
        total += lag;
        if (lag_us > max_us)
            max_us = lag_us;
        if (nparts++)
            buf_putc(&b, ',');
        buf_puts(&b, "{\"partition\":");
        res_json_str(&b, g, i, 1);
        buf_printf(&b, ",\"partitionId\":\"%s\",\"workerId\":", pu);
        if (lease[0])
            buf_printf(&b, "\"%s\"", lease);
        else
            buf_puts(&b, "null");
        buf_puts(&b, ",\"lastConsumedAt\":");
        admin_iso_ms_or_null(&b, res_i64(g, i, 11));
        buf_printf(&b, ",\"totalConsumed\":%lld,\"offsetLag\":%lld,\"timeLagSeconds\":%lld,\"leaseActive\":%s,"
                       "\"leaseExpiresAt\":",
                   (long long)res_i64(g, i, 10), (long long)lag, (long long)whole_seconds(lag_us),
                   res_bool(g, i, 9) ? "true" : "false");
        admin_iso_ms_or_null(&b, res_i64(g, i, 12));
        buf_printf(&b, ",\"hasCursor\":%s,\"nextOffset\":%lld,\"startOffset\":%lld,\"endOffset\":%lld}",
                   res_bool(g, i, 3) ? "true" : "false", (long long)res_i64(g, i, 4), (long long)res_i64(g, i, 13),
                   (long long)res_i64(g, i, 5));
    }
    buf_putc(&b, '}');
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_group_detail(http_req *r)
{
    api_query *q = api_query_new(r, on_group_detail, NULL);
    int s = api_query_stmt(q, ADMIN_GROUP_DETAIL_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, r->params[0]);
    api_param_i64(q, s, ADMIN_MAX_PAIRS);
    api_query_submit(q);
}

/* ---- DELETE /api/v1/consumer-groups/:group[/queues/:queue] ------------------------------- */

typedef struct group_ctx {
    const char *group;
    const char *queue;
    int metadata;
} group_ctx;

static void on_group_deleted(api_query *q, PGresult *const *res)
{
    group_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *d = res[0];
    if (strcmp(res_text(d, 0, DELETE_GROUP_STATUS, NULL), "queue_not_found") == 0) {
        http_respond_error(r, 404, "queue not found: %s", c->queue);
        return;
    }
    if (c->queue) {
        /* a pop of this group parked on the queue may have records again */
        app *a = r->app;
        notifier_changed(a->notify, r->tenant, c->queue, strlen(c->queue));
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":true,\"consumerGroup\":");
    jw_cstr(&b, c->group);
    if (c->queue) {
        buf_puts(&b, ",\"queueName\":");
        jw_cstr(&b, c->queue);
    }
    buf_printf(&b, ",\"deletedPartitions\":%lld,\"metadataDeleted\":%s,\"subscriptionsDeleted\":%lld}",
               (long long)res_i64(d, 0, DELETE_GROUP_CURSORS), c->metadata ? "true" : "false",
               (long long)res_i64(d, 0, DELETE_GROUP_SUBSCRIPTIONS));
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void group_delete(http_req *r, const char *queue)
{
    group_ctx *c = arena_alloc(&r->ar, sizeof *c);
    c->group = r->params[0];
    c->queue = queue;
    if (api_query_bool_or_respond(r, "deleteMetadata", 1, &c->metadata) < 0)
        return;
    api_query *q = api_query_new(r, on_group_deleted, c);
    int s = api_query_stmt(q, ADMIN_DELETE_GROUP_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->group);
    api_param_text(q, s, queue);
    api_param_bool(q, s, c->metadata);
    api_query_submit(q);
}

void api_group_delete(http_req *r)
{
    group_delete(r, NULL);
}

void api_group_queue_delete(http_req *r)
{
    group_delete(r, r->params[1]);
}

/* ---- POST /api/v1/consumer-groups/:group/subscription ------------------------------------ */

typedef struct sub_ctx {
    const char *group;
    int64_t ts;
} sub_ctx;

static void on_subscription(api_query *q, PGresult *const *res)
{
    sub_ctx *c = q->arg;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":true,\"consumerGroup\":");
    jw_cstr(&b, c->group);
    buf_puts(&b, ",\"newTimestamp\":");
    admin_iso_ms_or_null(&b, c->ts);
    buf_printf(&b, ",\"rowsUpdated\":%lld}", (long long)res_i64(res[0], 0, SET_SUBSCRIPTION_N));
    http_respond_json(q->http, 200, &b);
    buf_free(&b);
}

void api_group_subscription(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    sub_ctx *c = arena_alloc(&r->ar, sizeof *c);
    c->group = r->params[0];
    const char *ts;
    size_t len;
    int rc = api_str_field(r, &d, 0, "subscriptionTimestamp", &ts, &len);
    json_doc_free(&d);
    if (rc == 0) {
        http_respond_error(r, 400, "Missing subscriptionTimestamp in request body");
        return;
    }
    if (rc < 0 || parse_iso_us(ts, len, &c->ts) < 0) {
        http_respond_error(r, 400, "subscriptionTimestamp must be an ISO-8601 timestamp");
        return;
    }
    if (strcmp(c->group, ADMIN_QUEUE_MODE) == 0) {
        http_respond_error(r, 400, "queue mode (%s) always reads from the start of the log; it has no subscription",
                           ADMIN_QUEUE_MODE);
        return;
    }
    api_query *q = api_query_new(r, on_subscription, c);
    int s = api_query_stmt(q, ADMIN_SUBSCRIPTION_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->group);
    api_param_i64(q, s, c->ts);
    api_query_submit(q);
}

/* ---- POST .../seek ----------------------------------------------------------------------- */

typedef struct seek_ctx {
    const char *group, *queue, *partition;
    const char *mode; /* end, start, ts, offset */
    int64_t ts;
    int64_t offset;
} seek_ctx;

/* Reads the seek body: {"toEnd":true} | {"toStart":true} | {"timestamp":ISO} | {"offset":n}.
 * An empty body is `def_mode` (NULL: required). Answers 400 and returns -1 on bad input. */
static int seek_body_or_respond(http_req *r, seek_ctx *c, const char *def_mode)
{
    if (!r->body || r->body_len == 0) {
        if (!def_mode) {
            http_respond_error(r, 400, "Must specify either 'toEnd': true, 'toStart': true, 'timestamp' or 'offset'");
            return -1;
        }
        c->mode = def_mode;
        return 0;
    }
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return -1;
    int given = 0;
    const char *err = NULL;
    int t = json_get(&d, 0, "toEnd");
    if (t >= 0 && json_type_of(&d, t) != JSON_NULL) {
        if (json_type_of(&d, t) != JSON_TRUE && json_type_of(&d, t) != JSON_FALSE)
            err = "toEnd must be true or false";
        else if (json_type_of(&d, t) == JSON_TRUE)
            given++, c->mode = "end";
    }
    t = json_get(&d, 0, "toStart");
    if (!err && t >= 0 && json_type_of(&d, t) != JSON_NULL) {
        if (json_type_of(&d, t) != JSON_TRUE && json_type_of(&d, t) != JSON_FALSE)
            err = "toStart must be true or false";
        else if (json_type_of(&d, t) == JSON_TRUE)
            given++, c->mode = "start";
    }
    const char *ts;
    size_t len;
    int rc = err ? 0 : api_str_field(r, &d, 0, "timestamp", &ts, &len);
    if (rc < 0 || (rc == 1 && parse_iso_us(ts, len, &c->ts) < 0))
        err = "timestamp must be an ISO-8601 timestamp";
    else if (rc == 1)
        given++, c->mode = "ts";
    if (!err) {
        rc = api_int_field(&d, 0, "offset", 0, INT64_MAX, &c->offset);
        if (rc < 0)
            err = "offset must be an integer >= 0";
        else if (rc == 1)
            given++, c->mode = "offset";
    }
    json_doc_free(&d);
    if (!err && given > 1)
        err = "Specify only one of 'toEnd', 'toStart', 'timestamp' and 'offset'";
    if (!err && given == 0) {
        if (def_mode)
            c->mode = def_mode;
        else
            err = "Must specify either 'toEnd': true, 'toStart': true, 'timestamp' or 'offset'";
    }
    if (err) {
        http_respond_error(r, 400, "%s", err);
        return -1;
    }
    return 0;
}

static void respond_not_found(http_req *r, const char *what)
{
    buf b;
    buf_init(&b, 0);
    http_error_open(&b, r, 404, NULL, what);
    buf_puts(&b, ",\"success\":false}");
    http_respond_json(r, 404, &b);
    buf_free(&b);
}

static void on_seek(api_query *q, PGresult *const *res)
{
    seek_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *s = res[0];
    int n = PQntuples(s);
    const char *status = n > 0 ? res_text(s, 0, SEEK_STATUS, NULL) : "ok";
    if (strcmp(status, "queue_not_found") == 0) {
        respond_not_found(r, "Queue not found");
        return;
    }
    if (strcmp(status, "partition_not_found") == 0) {
        respond_not_found(r, "Partition not found");
        return;
    }
    /* a seek backwards gives records back: wake pops parked on the queue */
    app *a = r->app;
    notifier_changed(a->notify, r->tenant, c->queue, strlen(c->queue));
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"success\":true,\"consumerGroup\":");
    jw_cstr(&b, c->group);
    buf_puts(&b, ",\"queueName\":");
    jw_cstr(&b, c->queue);
    if (c->partition) {
        buf_puts(&b, ",\"partitionName\":");
        jw_cstr(&b, c->partition);
        int64_t next = n > 0 ? res_i64(s, 0, SEEK_NEXT_OFFSET) : 0;
        buf_printf(&b, ",\"updated\":%s,\"cursorMovedTo\":", n > 0 ? "true" : "false");
        /* the id of the last record now behind the cursor (null at the start of the log) */
        if (n > 0 && next > 0) {
            uuid mid;
            uuid_message_id((uint64_t)res_i64(s, 0, SEEK_PARTITION_ID), (uint64_t)(next - 1), &mid);
            char ms[37];
            uuid_format(&mid, ms);
            buf_printf(&b, "\"%s\"", ms);
        } else {
            buf_puts(&b, "null");
        }
        buf_printf(&b, ",\"nextOffset\":%lld,\"previousOffset\":", (long long)next);
        if (n > 0 && !res_null(s, 0, SEEK_PREVIOUS_OFFSET))
            buf_printf(&b, "%lld", (long long)res_i64(s, 0, SEEK_PREVIOUS_OFFSET));
        else
            buf_puts(&b, "null");
    } else {
        buf_printf(&b, ",\"seekToEnd\":%s,\"seekToStart\":%s,\"targetTimestamp\":",
                   strcmp(c->mode, "end") == 0 ? "true" : "false", strcmp(c->mode, "start") == 0 ? "true" : "false");
        admin_iso_ms_or_null(&b, strcmp(c->mode, "ts") == 0 ? c->ts : 0);
        buf_puts(&b, ",\"targetOffset\":");
        if (strcmp(c->mode, "offset") == 0)
            buf_printf(&b, "%lld", (long long)c->offset);
        else
            buf_puts(&b, "null");
        buf_printf(&b, ",\"partitionsUpdated\":%d,\"partitions\":[", n);
        for (int i = 0; i < n && i < SEEK_MAX_LISTED; i++) {
            char pu[37];
            res_uuid(s, i, SEEK_PARTITION_UUID, pu);
            if (i)
                buf_putc(&b, ',');
            buf_puts(&b, "{\"partition\":");
            res_json_str(&b, s, i, SEEK_PARTITION_NAME);
            buf_printf(&b, ",\"partitionId\":\"%s\",\"nextOffset\":%lld,\"previousOffset\":", pu,
                       (long long)res_i64(s, i, SEEK_NEXT_OFFSET));
            if (res_null(s, i, SEEK_PREVIOUS_OFFSET))
                buf_puts(&b, "null}");
            else
                buf_printf(&b, "%lld}", (long long)res_i64(s, i, SEEK_PREVIOUS_OFFSET));
        }
        buf_putc(&b, ']');
    }
    buf_putc(&b, '}');
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void seek_route(http_req *r, const char *partition, const char *def_mode)
{
    seek_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->group = r->params[0];
    c->queue = r->params[1];
    c->partition = partition;
    if (seek_body_or_respond(r, c, def_mode) < 0)
        return;
    api_query *q = api_query_new(r, on_seek, c);
    int s = api_query_stmt(q, ADMIN_SEEK_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->group);
    api_param_text(q, s, c->queue);
    api_param_text(q, s, partition);
    api_param_text(q, s, c->mode);
    if (strcmp(c->mode, "ts") == 0)
        api_param_i64(q, s, c->ts);
    else
        api_param_null(q, s);
    if (strcmp(c->mode, "offset") == 0)
        api_param_i64(q, s, c->offset);
    else
        api_param_null(q, s);
    api_query_submit(q);
}

void api_group_seek(http_req *r)
{
    seek_route(r, NULL, NULL);
}

void api_group_partition_seek(http_req *r)
{
    /* the earlier release took no body here and moved to the end; a body may say otherwise */
    seek_route(r, r->params[2], "end");
}
