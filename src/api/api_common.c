/* api_common.c — route table and the helpers every handler shares. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/util.h"

const uint8_t DEFAULT_TENANT[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

void api_register(app *a)
{
    http_server *s = a->http;
    http_route(s, "GET", "/health", api_health, ACCESS_PUBLIC);
    http_route(s, "GET", "/status", api_status, ACCESS_READ_ONLY);
    http_route(s, "GET", "/metrics/prometheus", api_metrics_prometheus, ACCESS_PUBLIC);
    http_route(s, "GET", "/metrics", api_metrics_json, ACCESS_PUBLIC);
    http_route(s, "POST", "/api/v1/push", api_push, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/configure", api_configure, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/fetch", api_fetch, ACCESS_READ_ONLY);
    http_route(s, "POST", "/api/v1/partitions/changed", api_partitions_changed, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/pop", api_pop_namespace, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/pop/queue/:queue", api_pop_queue, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/pop/queue/:queue/partition/:partition", api_pop_partition, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ack", api_ack, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/ack/batch", api_ack_batch, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/lease/:leaseId/extend", api_lease_extend, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/transaction", api_transaction, ACCESS_READ_WRITE);
    /* KV store (docs/http-api.md#kv-store) */
    http_route(s, "POST", "/api/v1/kv/batch", api_kv_batch, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/kv/:namespace", api_kv_list, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/kv/:namespace/:key", api_kv_get, ACCESS_READ_ONLY);
    http_route(s, "PUT", "/api/v1/kv/:namespace/:key", api_kv_put, ACCESS_READ_WRITE);
    http_route(s, "DELETE", "/api/v1/kv/:namespace/:key", api_kv_delete, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/kv/:namespace/:key/putIfAbsent", api_kv_put_if_absent, ACCESS_READ_WRITE);
    http_route(s, "POST", "/api/v1/kv/:namespace/:key/incr", api_kv_incr, ACCESS_READ_WRITE);
    /* timers (docs/http-api.md#timers) */
    http_route(s, "POST", "/api/v1/timers", api_timer_create, ACCESS_READ_WRITE);
    http_route(s, "GET", "/api/v1/timers", api_timer_list, ACCESS_READ_ONLY);
    http_route(s, "GET", "/api/v1/timers/:id", api_timer_get, ACCESS_READ_ONLY);
    http_route(s, "DELETE", "/api/v1/timers/:id", api_timer_cancel, ACCESS_READ_WRITE);
}

int api_parse_body_or_respond(http_req *r, json_doc *d, uint32_t token_depth)
{
    memset(d, 0, sizeof *d);
    if (!r->body || r->body_len == 0) {
        http_respond_error(r, 400, "Empty request body");
        return -1;
    }
    json_opts o = {.max_tokens = 0, .token_depth = token_depth};
    if (json_parse(d, r->body, r->body_len, &o) < 0) {
        http_respond_error(r, 400, "Invalid JSON: %s", d->err);
        json_doc_free(d);
        return -1;
    }
    if (json_type_of(d, 0) != JSON_OBJECT) {
        http_respond_error(r, 400, "request body must be a JSON object");
        json_doc_free(d);
        return -1;
    }
    return 0;
}

int api_str_field(http_req *r, const json_doc *d, int obj, const char *key, const char **out, size_t *len)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    const char *p;
    size_t n;
    if (json_str_span(d, t, &p, &n) == 0) {
        *out = arena_strndup(&r->ar, p, n);
        *len = n;
        return 1;
    }
    buf b;
    buf_init(&b, 0);
    json_str_decode(d, t, &b);
    *out = arena_strndup(&r->ar, b.data ? b.data : "", b.len);
    *len = b.len;
    buf_free(&b);
    return 1;
}

int api_int_field(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    int64_t v;
    if (json_int64(d, t, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 1;
}

int api_query_int(http_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = http_query(r, name);
    if (!v || !*v)
        return 0;
    const char *p = v;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return -1;
    errno = 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 1;
}

void api_respond_db_error(http_req *r, const db_req *d)
{
    if (d->err == DB_SQL)
        http_respond_error(r, 500, "database error: %s", d->errmsg);
    else
        http_respond_error(r, 503, "%s", d->errmsg[0] ? d->errmsg : "database unavailable");
}
