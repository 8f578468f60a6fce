/* api_groups.c — consumer-group management: listing with real lag, lagging partitions, one
 * group's positions, deletion, subscription start, and seeks (replay) by end, start,
 * timestamp or offset: parsing, access and status here; the answers' JSON in
 * admin/answers_groups.c. Shapes follow the earlier release (docs/http-api.md). Lag is computed
 * from dense offsets by queen.group_lag_v1, so it is exact. */
#include <stdio.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/admin_answers.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"

/* ---- GET /api/v1/consumer-groups --------------------------------------------------------- */

static void on_groups(api_query *q, PGresult *const *res)
{
    buf b;
    buf_init(&b, 0);
    answer_groups(&b, res[0]);
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
    buf b;
    buf_init(&b, 0);
    answer_lagging(&b, res[0]);
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
    buf b;
    buf_init(&b, 0);
    answer_group_detail(&b, res[0]);
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
    if (strcmp(res_text(res[0], 0, DELETE_GROUP_STATUS, NULL), "queue_not_found") == 0) {
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
    answer_group_deleted(&b, res[0], c->group, c->queue, c->metadata);
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
    answer_subscription(&b, res[0], c->group, c->ts);
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

/* Reads the seek body: {"toEnd":true} | {"toStart":true} | {"timestamp":ISO} | {"offset":n}.
 * An empty body is `def_mode` (NULL: required). Answers 400 and returns -1 on bad input. */
static int seek_body_or_respond(http_req *r, admin_seek *c, const char *def_mode)
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
    admin_seek *c = q->arg;
    http_req *r = q->http;
    const char *status = admin_seek_status(res[0]);
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
    answer_seek(&b, res[0], c);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void seek_route(http_req *r, const char *partition, const char *def_mode)
{
    admin_seek *c = arena_alloc(&r->ar, sizeof *c);
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
