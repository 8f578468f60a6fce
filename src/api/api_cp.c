/* api_cp.c — the embedded proxy (docs/control-plane.md): its gate, the admission of data-plane
 * requests of cluster tenants (on both ports), and the control-plane routes under /api/cp/.
 *
 * The proxy listens on QUEEN_PROXY_PORT when QUEEN_PROXY_CP_TOKEN is set. It serves
 *  - /api/cp/... for the operator, authenticated by x-queen-cp-token (compared in constant
 *    time, never logged);
 *  - the data plane (the broker's routes, less the node-wide /metrics and /status) for the
 *    clusters: a request carries a cluster's token (Authorization: Bearer qcp_...) or, with
 *    JWT_ENABLED, a JWT whose tenant is a cluster's; it acts for that cluster's tenant only.
 * The broker port keeps serving as before; a JWT there whose tenant is a cluster's is admitted
 * by the same rules (status and quotas). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/arena.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "core/uuid.h"
#include "core/base64.h"
#include "cp/cp.h"
#include "cp/cp_results.h"
#include "crypto/seal.h"
#include "sink/sinkdoc.h"

/* ------------------------------------------------------------------ admission */

enum route_class { RC_READ, RC_PUSH, RC_WRITE };

static enum route_class route_class_of(http_req *r)
{
    const char *p = http_route_pattern(r);
    if (strcmp(r->method, "POST") == 0 && (strcmp(p, "/api/v1/push") == 0 || strcmp(p, "/api/v1/timers") == 0 ||
                                           strcmp(p, "/api/v1/ephemeral/push") == 0))
        return RC_PUSH;
    /* the KV writes: the per-key routes' PUT/POST, and the 2.x batch (POST /api/v1/kv, refused
     * whole over the ceiling, as the client expects of a mixed batch) */
    if ((strncmp(p, "/api/v1/kv/", 11) == 0 || strcmp(p, "/api/v1/kv") == 0) && strcmp(r->method, "GET") != 0 &&
        strcmp(r->method, "DELETE") != 0)
        return RC_WRITE;
    return RC_READ;
}

/* Answers a refusal; 1 when it did. */
static int respond_verdict(http_req *r, enum cp_verdict v, const cp_cluster *c, int64_t retry_ms)
{
    const char *name = c ? c->name : "?";
    switch (v) {
    case CPV_OK: return 0;
    case CPV_RATE_LIMITED: {
        char *ra = arena_alloc(&r->ar, 24);
        snprintf(ra, 24, "%lld", (long long)((retry_ms + 999) / 1000));
        r->retry_after = ra;
        http_respond_error_code(r, 429, "rate_limited",
                                "cluster %s is over its request rate quota of %lld requests per second", name,
                                (long long)(c ? c->rps : 0));
        return 1;
    }
    case CPV_SUSPENDED: http_respond_error_code(r, 403, "cluster_suspended", "cluster %s is suspended", name); return 1;
    case CPV_PUSH_BLOCKED:
        http_respond_error_code(r, 403, "forbidden", "cluster %s is push_blocked: pushes are refused, consumers may drain",
                                name);
        return 1;
    case CPV_STORAGE_EXCEEDED:
        http_respond_error_code(r, 403, "storage_quota_exceeded",
                                "cluster %s holds %lld bytes, at or over its storage ceiling of %lld bytes", name,
                                (long long)(c ? c->storage_bytes : 0), (long long)(c ? c->max_storage : 0));
        return 1;
    }
    return 0;
}

void api_cp_admit_proceed(http_req *r)
{
    app *a = r->app;
    if (a->cp) {
        enum route_class rc = route_class_of(r);
        int64_t retry = 0;
        enum cp_verdict v = cp_admit(a->cp, r->tenant, rc == RC_PUSH ? 2 : rc == RC_WRITE ? 1 : 0, &retry);
        if (v != CPV_OK) {
            respond_verdict(r, v, cp_by_tenant(a->cp, r->tenant), retry);
            return;
        }
    }
    http_proceed(r);
}

int api_cp_refused(http_req *r, int kind)
{
    app *a = r->app;
    if (!a->cp)
        return 0;
    enum cp_verdict v = cp_push_verdict(a->cp, r->tenant, kind);
    return respond_verdict(r, v, cp_by_tenant(a->cp, r->tenant), 0);
}

int api_cp_push_refused(http_req *r)
{
    return api_cp_refused(r, 2);
}

/* ------------------------------------------------------------------ the proxy's gate */

static int is_cp_path(const char *p)
{
    return strncmp(p, "/api/cp/", 8) == 0 || strcmp(p, "/api/cp") == 0;
}

void api_proxy_gate(http_req *r, enum http_access access)
{
    app *a = r->app;
    if (is_cp_path(r->path)) {
        const char *t = http_header(r, "x-queen-cp-token");
        if (!t || !cp_token_equal(t, strlen(t), a->cpcfg->token, strlen(a->cpcfg->token))) {
            http_respond_error_code(r, 401, "unauthorized", "a valid x-queen-cp-token is required");
            return;
        }
        http_proceed(r);
        return;
    }
    if (access == ACCESS_PUBLIC) {
        http_proceed(r);
        return;
    }
    const char *h = http_header(r, "authorization"), *tok;
    size_t len;
    if (!h || auth_bearer(h, &tok, &len) < 0) {
        http_respond_error_code(r, 401, "unauthorized", "Authentication required");
        return;
    }
    if (len == CP_DP_TOKEN_LEN && memcmp(tok, CP_DP_TOKEN_PREFIX, 4) == 0) {
        uint8_t hash[32];
        cp_sha256(tok, len, hash);
        const cp_cluster *c = cp_by_token(a->cp, hash);
        if (!c) {
            http_respond_error_code(r, 401, "unauthorized", "Invalid cluster token");
            return;
        }
        /* a cluster's token acts for its tenant with every access level of the data plane:
         * nothing it reaches is outside that tenant */
        memcpy(r->tenant, c->tenant, 16);
        api_cp_admit_proceed(r);
        return;
    }
    if (!a->auth) {
        http_respond_error_code(r, 401, "unauthorized", "Invalid cluster token");
        return;
    }
    api_auth_jwt(r, access, 1);
}

/* ------------------------------------------------------------------ the control plane */

typedef struct cp_op {
    http_req *r;
    int status;      /* of the answer */
    const char *name;
    char token[CP_DP_TOKEN_LEN + 1]; /* a token to show once (create, rotate), or "" */
    int kind;        /* OP_* */
    int found;       /* purge/delete */
} cp_op;

enum { OP_SHOW, OP_LIST, OP_TOKEN, OP_PURGE, OP_DELETE };

static void put_cluster(buf *b, const cp_cluster *c)
{
    char u[UUID_STR_LEN + 1];
    uuid_format((const uuid *)c->tenant, u);
    buf_puts(b, "{\"name\":");
    jw_cstr(b, c->name);
    buf_printf(b, ",\"tenant\":\"%s\",\"status\":\"%s\",\"effectiveStatus\":\"%s\"", u, cp_status_name(c->status),
               cp_status_name(c->effective));
    buf_printf(b, ",\"quotas\":{\"requestsPerSecond\":%lld,\"maxStorageBytes\":%lld}", (long long)c->rps,
               (long long)c->max_storage);
    buf_puts(b, ",\"usage\":{\"storageBytes\":");
    if (c->storage_bytes >= 0)
        buf_printf(b, "%lld", (long long)c->storage_bytes);
    else
        buf_puts(b, "null");
    char ts[32];
    format_iso_us(c->created_us, ts);
    buf_printf(b, "},\"createdAt\":\"%s\"", ts);
    format_iso_us(c->updated_us, ts);
    buf_printf(b, ",\"updatedAt\":\"%s\"}", ts);
}

static void on_refreshed(void *arg, int ok)
{
    cp_op *op = arg;
    http_req *r = op->r;
    app *a = r->app;
    if (!ok) {
        http_respond_error_code(r, 503, "database_unavailable", "the control plane could not read the clusters");
        return;
    }
    buf b;
    buf_init(&b, 0);
    if (op->kind == OP_LIST) {
        buf_puts(&b, "{\"clusters\":[");
        for (uint32_t i = 0;; i++) {
            const cp_cluster *c = cp_cluster_at(a->cp, i);
            if (!c)
                break;
            if (i)
                buf_putc(&b, ',');
            put_cluster(&b, c);
        }
        buf_puts(&b, "]}");
        http_respond_json(r, 200, &b);
        buf_free(&b);
        return;
    }
    if (op->kind == OP_PURGE || op->kind == OP_DELETE) {
        if (!op->found) {
            buf_free(&b);
            http_respond_error_code(r, 404, "cluster_not_found", "no cluster named %s", op->name);
            return;
        }
        buf_puts(&b, "{\"cluster\":");
        jw_cstr(&b, op->name);
        buf_puts(&b, op->kind == OP_PURGE ? ",\"purged\":true}" : ",\"removed\":true}");
        http_respond_json(r, 200, &b);
        buf_free(&b);
        return;
    }
    const cp_cluster *c = cp_by_name(a->cp, op->name);
    if (!c) {
        buf_free(&b);
        http_respond_error_code(r, 404, "cluster_not_found", "no cluster named %s", op->name);
        return;
    }
    put_cluster(&b, c);
    if (op->token[0]) {
        b.len--; /* reopen the object */
        buf_printf(&b, ",\"token\":\"%s\"}", op->token);
    }
    http_respond_json(r, op->status, &b);
    buf_free(&b);
}

static cp_op *op_new(http_req *r, int kind, const char *name)
{
    cp_op *op = arena_alloc(&r->ar, sizeof *op);
    memset(op, 0, sizeof *op);
    op->r = r;
    op->kind = kind;
    op->status = 200;
    op->name = name;
    return op;
}

static void refresh_and_answer(cp_op *op)
{
    app *a = op->r->app;
    if (strcmp(op->r->method, "GET") != 0)
        s3_node_poke(a->s3); /* a status, purge or delete reaches this node's tenant sinks at once */
    http_async(op->r);
    cp_node_refresh(a->cp, on_refreshed, op);
}

static const char *name_param_or_respond(http_req *r)
{
    const char *n = r->params[0];
    if (!cp_name_valid(n, r->param_lens[0])) {
        http_respond_bad_param(r, "cluster", "cluster names are 1..63 characters of a-z, 0-9 and '-', not starting "
                                             "with '-'");
        return NULL;
    }
    return n;
}

static int refuse_unknown(http_req *r, const json_doc *d, int obj, const char *const *known, const char *where)
{
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        int ok = 0;
        for (const char *const *p = known; *p; p++)
            if (json_str_eq(d, k, *p))
                ok = 1;
        if (!ok) {
            buf t;
            buf_init(&t, 256);
            json_str_decode(d, k, &t);
            http_respond_error_code(r, 400, "unknown_field", "Unknown field%s%s: %s", where ? " in " : "",
                                    where ? where : "", buf_cstr(&t));
            buf_free(&t);
            return -1;
        }
    }
    return 0;
}

/* The optional fields shared by create and update: status and quotas. Out values are -1 when
 * absent. */
static int read_settings(http_req *r, const json_doc *d, int *status, int64_t *rps, int64_t *storage)
{
    *status = -1;
    *rps = *storage = -1;
    const char *s;
    size_t n;
    int rc = api_str_field(r, d, 0, "status", &s, &n);
    if (rc < 0 || (rc == 1 && (*status = cp_status_parse(s, n)) < 0)) {
        http_respond_error_code(r, 400, "invalid_status", "status must be one of active, push_blocked, suspended");
        return -1;
    }
    int q = json_get(d, 0, "quotas");
    if (q >= 0 && json_type_of(d, q) != JSON_NULL) {
        if (json_type_of(d, q) != JSON_OBJECT) {
            http_respond_error_code(r, 400, "invalid_quota", "quotas must be an object");
            return -1;
        }
        static const char *const known[] = {"requestsPerSecond", "maxStorageBytes", NULL};
        if (refuse_unknown(r, d, q, known, "quotas") < 0)
            return -1;
        if (api_int_field(d, q, "requestsPerSecond", 0, 1000000000, rps) < 0) {
            http_respond_error_code(r, 400, "invalid_quota",
                                    "quotas.requestsPerSecond must be an integer in 0..=1000000000 (0: no limit)");
            return -1;
        }
        if (api_int_field(d, q, "maxStorageBytes", 0, INT64_MAX, storage) < 0) {
            http_respond_error_code(r, 400, "invalid_quota",
                                    "quotas.maxStorageBytes must be a non-negative integer (0: no ceiling)");
            return -1;
        }
    }
    return 0;
}

static void hex32(const uint8_t h[32], char out[65])
{
    static const char x[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = x[h[i] >> 4];
        out[2 * i + 1] = x[h[i] & 15];
    }
    out[64] = '\0';
}

static void on_written(api_query *q, PGresult *const *res)
{
    cp_op *op = q->arg;
    if (op->kind == OP_PURGE || op->kind == OP_DELETE) {
        op->found = PQntuples(res[0]) == 1 && res_bool(res[0], 0, CPP_FOUND);
    } else if (PQntuples(res[0]) == 0) {
        if (op->status == 201)
            http_respond_error_code(op->r, 409, "cluster_exists", "a cluster named %s, or one with that tenant, exists",
                                    op->name);
        else
            http_respond_error_code(op->r, 404, "cluster_not_found", "no cluster named %s", op->name);
        return;
    }
    refresh_and_answer(op);
}

static void api_cp_create(http_req *r)
{
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 4) < 0)
        return;
    static const char *const known[] = {"name", "tenant", "status", "quotas", NULL};
    if (json_type_of(&d, 0) != JSON_OBJECT) {
        http_respond_error_code(r, 400, "invalid_request", "the body must be a JSON object");
        goto out;
    }
    if (refuse_unknown(r, &d, 0, known, NULL) < 0)
        goto out;
    const char *name, *ts;
    size_t nlen, tlen;
    if (api_str_field(r, &d, 0, "name", &name, &nlen) != 1 || !cp_name_valid(name, nlen)) {
        http_respond_error_code(r, 400, "invalid_name",
                                "name is required: 1..63 characters of a-z, 0-9 and '-', not starting with '-'");
        goto out;
    }
    uuid tenant;
    int rc = api_str_field(r, &d, 0, "tenant", &ts, &tlen);
    if (rc < 0 || (rc == 1 && uuid_parse(ts, tlen, &tenant) < 0)) {
        http_respond_error_code(r, 400, "invalid_tenant", "tenant must be a UUID");
        goto out;
    }
    if (rc == 0)
        uuid_v7(&tenant);
    if (memcmp(tenant.b, DEFAULT_TENANT, 16) == 0) {
        http_respond_error_code(r, 400, "invalid_tenant", "the default tenant cannot be a cluster");
        goto out;
    }
    if (memcmp(tenant.b, CP_PROXY_TENANT, 16) == 0) {
        http_respond_error_code(r, 400, "invalid_tenant", "the proxy's own tenant cannot be a cluster");
        goto out;
    }
    int status;
    int64_t rps, storage;
    if (read_settings(r, &d, &status, &rps, &storage) < 0)
        goto out;
    cp_op *op = op_new(r, OP_SHOW, name);
    op->status = 201;
    if (cp_dp_token_new(op->token) < 0) {
        http_respond_error(r, 500, "no random bytes for the cluster's token");
        goto out;
    }
    uint8_t h[32];
    cp_sha256(op->token, CP_DP_TOKEN_LEN, h);
    char *hx = arena_alloc(&r->ar, 65);
    hex32(h, hx);
    api_query *q = api_query_new(r, on_written, op);
    int s = api_query_stmt(q, "WITH t AS (INSERT INTO queen.tenants (id, name) VALUES ($2::uuid, $1) "
                              "ON CONFLICT (id) DO NOTHING) "
                              "INSERT INTO queen.cp_clusters (name, tenant_id, status, requests_per_second, "
                              "max_storage_bytes, token_sha256) VALUES ($1, $2::uuid, $3, $4::int8, $5::int8, "
                              "decode($6, 'hex')) ON CONFLICT DO NOTHING RETURNING name");
    api_param_text(q, s, name);
    api_param_uuid(q, s, tenant.b);
    api_param_text(q, s, cp_status_name(status < 0 ? CP_ACTIVE : status));
    api_param_i64(q, s, rps < 0 ? 0 : rps);
    api_param_i64(q, s, storage < 0 ? 0 : storage);
    api_param_text(q, s, hx);
    api_query_submit(q);
out:
    json_doc_free(&d);
}

static void api_cp_list(http_req *r)
{
    refresh_and_answer(op_new(r, OP_LIST, NULL));
}

static void api_cp_get(http_req *r)
{
    const char *n = name_param_or_respond(r);
    if (n)
        refresh_and_answer(op_new(r, OP_SHOW, n));
}

static void update(http_req *r, int status_only)
{
    const char *n = name_param_or_respond(r);
    if (!n)
        return;
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 4) < 0)
        return;
    static const char *const known_all[] = {"status", "quotas", NULL};
    static const char *const known_status[] = {"status", NULL};
    if (json_type_of(&d, 0) != JSON_OBJECT) {
        http_respond_error_code(r, 400, "invalid_request", "the body must be a JSON object");
        goto out;
    }
    if (refuse_unknown(r, &d, 0, status_only ? known_status : known_all, NULL) < 0)
        goto out;
    int status;
    int64_t rps, storage;
    if (read_settings(r, &d, &status, &rps, &storage) < 0)
        goto out;
    if (status_only && status < 0) {
        http_respond_error_code(r, 400, "invalid_status", "status is required: active, push_blocked or suspended");
        goto out;
    }
    cp_op *op = op_new(r, OP_SHOW, n);
    api_query *q = api_query_new(r, on_written, op);
    int s = api_query_stmt(q, "UPDATE queen.cp_clusters SET status = COALESCE($2, status), "
                              "requests_per_second = COALESCE($3::int8, requests_per_second), "
                              "max_storage_bytes = COALESCE($4::int8, max_storage_bytes), updated_at = now() "
                              "WHERE name = $1 RETURNING name");
    api_param_text(q, s, n);
    if (status >= 0)
        api_param_text(q, s, cp_status_name(status));
    else
        api_param_null(q, s);
    if (rps >= 0)
        api_param_i64(q, s, rps);
    else
        api_param_null(q, s);
    if (storage >= 0)
        api_param_i64(q, s, storage);
    else
        api_param_null(q, s);
    api_query_submit(q);
out:
    json_doc_free(&d);
}

static void api_cp_update(http_req *r)
{
    update(r, 0);
}

static void api_cp_status(http_req *r)
{
    update(r, 1);
}

static void api_cp_token(http_req *r)
{
    const char *n = name_param_or_respond(r);
    if (!n)
        return;
    if (r->body_len) {
        http_respond_error_code(r, 400, "invalid_request", "this route takes no body");
        return;
    }
    cp_op *op = op_new(r, OP_SHOW, n);
    if (cp_dp_token_new(op->token) < 0) {
        http_respond_error(r, 500, "no random bytes for the cluster's token");
        return;
    }
    uint8_t h[32];
    cp_sha256(op->token, CP_DP_TOKEN_LEN, h);
    char *hx = arena_alloc(&r->ar, 65);
    hex32(h, hx);
    api_query *q = api_query_new(r, on_written, op);
    int s = api_query_stmt(q, "UPDATE queen.cp_clusters SET token_sha256 = decode($2, 'hex'), updated_at = now() "
                              "WHERE name = $1 RETURNING name");
    api_param_text(q, s, n);
    api_param_text(q, s, hx);
    api_query_submit(q);
}

static void purge(http_req *r, int remove)
{
    const char *n = name_param_or_respond(r);
    if (!n)
        return;
    if (r->body_len) {
        http_respond_error_code(r, 400, "invalid_request", "this route takes no body");
        return;
    }
    cp_op *op = op_new(r, remove ? OP_DELETE : OP_PURGE, n);
    api_query *q = api_query_new(r, on_written, op);
    int s = api_query_stmt(q, "SELECT * FROM queen.cp_purge_v1($1, $2::bool)");
    api_param_text(q, s, n);
    api_param_bool(q, s, remove);
    api_query_submit(q);
}

static void api_cp_purge(http_req *r)
{
    purge(r, 0);
}

static void api_cp_delete(http_req *r)
{
    purge(r, 1);
}

/* ------------------------------------------------------------------ a bucket per tenant */

/* PUT/GET/DELETE /api/cp/clusters/:cluster/s3 (spec/s3-sink.txt, "A bucket per tenant"). The
 * settings are checked with the sink's own rules (sinkdoc.c); the secret key is sealed with
 * QUEEN_ENCRYPTION_KEY and stored in the KV of the proxy's own tenant; the rows are read by
 * every node's sink every five seconds (sink.c), and at once on this node (s3_node_poke). No
 * answer or log line carries the secret. */

typedef struct s3_op {
    http_req *r;
    const char *name;
    uint8_t tenant[16];
    int enabled;
    char *settings; /* the canonical settings (arena) */
    char *sealed;   /* base64 of the envelope (arena), or NULL to keep the stored one */
} s3_op;


static int s3_available_or_respond(http_req *r)
{
    app *a = r->app;
    if (a->s3)
        return 0;
    http_respond_error_code(r, 404, "s3_unavailable",
                            "the S3 sink is not embedded on this node: every node needs QUEEN_S3_EMBEDDED=true");
    return -1;
}

static void put_s3_row(buf *b, const char *name, const PGresult *res)
{
    char t[37];
    res_uuid(res, 0, CPG_TENANT, t);
    buf_puts(b, "{\"cluster\":");
    jw_cstr(b, name);
    buf_printf(b, ",\"tenant\":\"%s\",\"enabled\":%s,\"config\":", t, res_bool(res, 0, CPG_ENABLED) ? "true" : "false");
    size_t n;
    const char *cfg = res_text(res, 0, CPG_CONFIG, &n);
    if (n)
        buf_append(b, cfg, n);
    else
        buf_puts(b, "{}");
    buf_printf(b, ",\"secretKeySet\":%s,\"updatedAt\":", res_bool(res, 0, CPG_SECRET_SET) ? "true" : "false");
    char ts[32];
    format_iso_us(res_i64(res, 0, CPG_UPDATED), ts);
    jw_cstr(b, ts);
    buf_putc(b, '}');
}

static void on_s3_got(api_query *q, PGresult *const *res)
{
    s3_op *op = q->arg;
    http_req *r = op->r;
    if (PQntuples(res[0]) != 1) {
        http_respond_error_code(r, 404, "cluster_not_found", "no cluster named %s", op->name);
        return;
    }
    if (!res_bool(res[0], 0, CPG_HAS_SINK)) {
        http_respond_error_code(r, 404, "s3_not_found", "cluster %s has no sink", op->name);
        return;
    }
    buf b;
    buf_init(&b, 0);
    put_s3_row(&b, op->name, res[0]);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void on_s3_put(api_query *q, PGresult *const *res)
{
    s3_op *op = q->arg;
    http_req *r = op->r;
    app *a = r->app;
    int enabled = op->enabled, secret = op->sealed != NULL;
    if (PQntuples(res[0]) != 1) {
        http_respond_error_code(r, 404, "cluster_not_found", "no cluster named %s", op->name);
        return;
    }
    if (!res_bool(res[0], 0, CPG_HAS_SINK)) {
        /* another write removed the stored secret between the read and this write */
        http_respond_error_code(r, 400, "s3_invalid_secret", "secretKey is required: no secret key is stored");
        return;
    }
    s3_node_poke(a->s3);
    log_info("cp", "cluster %s: sink settings written (enabled=%s%s)", op->name, enabled ? "true" : "false",
             secret ? ", secret key replaced" : "");
    buf b;
    buf_init(&b, 0);
    put_s3_row(&b, op->name, res[0]);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void on_s3_read_for_put(api_query *q, PGresult *const *res)
{
    s3_op *op = q->arg;
    http_req *r = op->r;
    if (PQntuples(res[0]) != 1) {
        http_respond_error_code(r, 404, "cluster_not_found", "no cluster named %s", op->name);
        return;
    }
    char t[37];
    res_uuid(res[0], 0, CPG_TENANT, t);
    uuid u;
    if (uuid_parse(t, strlen(t), &u) < 0) {
        http_respond_error(r, 500, "the cluster's tenant is not a UUID");
        return;
    }
    memcpy(op->tenant, u.b, 16);
    int stored = res_bool(res[0], 0, CPG_SECRET_SET);
    s3_doc_refusal why;
    s3_sink_doc doc;
    if (s3_sink_doc_parse(r->body ? r->body : "", r->body_len, op->tenant, stored, &doc, &why) < 0) {
        http_respond_error_code(r, 400, why.code, "%s", why.msg);
        return;
    }
    op->enabled = doc.enabled;
    op->settings = arena_strndup(&r->ar, doc.settings.data ? doc.settings.data : "{}", doc.settings.data ? doc.settings.len : 2);
    if (doc.has_secret) {
        const seal_key *k = seal_node_key();
        if (!k) {
            s3_sink_doc_free(&doc);
            http_respond_error_code(r, 503, "encryption_key_missing",
                                    "no QUEEN_ENCRYPTION_KEY is configured on this node: a cluster's S3 secret key is "
                                    "stored only sealed with it");
            return;
        }
        buf sealed, b64;
        buf_init(&sealed, 0);
        buf_init(&b64, 0);
        const char *sk = doc.cfg.secret_key;
        int rc = seal_seal(k, sk, strlen(sk), &sealed);
        if (rc == 0) {
            b64_encode(&b64, sealed.data, sealed.len);
            op->sealed = arena_strndup(&r->ar, b64.data, b64.len);
        }
        buf_free(&sealed);
        buf_free(&b64);
        if (rc < 0) {
            s3_sink_doc_free(&doc);
            http_respond_error(r, 500, "the secret key could not be sealed");
            return;
        }
    }
    s3_sink_doc_free(&doc); /* wipes the secret key */
    api_query *w = api_query_new(r, on_s3_put, op);
    int s = api_query_stmt(w, "SELECT * FROM queen.cp_s3_put_v1($1, $2::bool, $3, $4)");
    api_param_text(w, s, op->name);
    api_param_bool(w, s, op->enabled);
    api_param_text(w, s, op->settings);
    api_param_text(w, s, op->sealed);
    api_query_submit(w);
}

static s3_op *s3_op_new(http_req *r, const char *name)
{
    s3_op *op = arena_alloc(&r->ar, sizeof *op);
    memset(op, 0, sizeof *op);
    op->r = r;
    op->name = name;
    return op;
}

/* PUT and GET both start from the cluster's row (cp_s3_get_v1); `done` answers or writes */
static void s3_read_row(http_req *r, api_query_fn done)
{
    if (s3_available_or_respond(r) < 0)
        return;
    const char *n = name_param_or_respond(r);
    if (!n)
        return;
    api_query *q = api_query_new(r, done, s3_op_new(r, n));
    int s = api_query_stmt(q, "SELECT * FROM queen.cp_s3_get_v1($1)");
    api_param_text(q, s, n);
    api_query_submit(q);
}

static void api_cp_s3_put(http_req *r)
{
    s3_read_row(r, on_s3_read_for_put);
}

static void api_cp_s3_get(http_req *r)
{
    s3_read_row(r, on_s3_got);
}

static void on_s3_deleted(api_query *q, PGresult *const *res)
{
    s3_op *op = q->arg;
    http_req *r = op->r;
    app *a = r->app;
    if (PQntuples(res[0]) != 1 || res_null(res[0], 0, CPD_REMOVED)) {
        http_respond_error_code(r, 404, "cluster_not_found", "no cluster named %s", op->name);
        return;
    }
    int removed = res_bool(res[0], 0, CPD_REMOVED);
    if (removed) {
        s3_node_poke(a->s3);
        log_info("cp", "cluster %s: sink removed (the bucket's objects are kept)", op->name);
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"cluster\":");
    jw_cstr(&b, op->name);
    buf_printf(&b, ",\"removed\":%s}", removed ? "true" : "false");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void api_cp_s3_delete(http_req *r)
{
    if (s3_available_or_respond(r) < 0)
        return;
    const char *n = name_param_or_respond(r);
    if (!n)
        return;
    if (r->body_len) {
        http_respond_error_code(r, 400, "invalid_request", "this route takes no body");
        return;
    }
    s3_op *op = s3_op_new(r, n);
    api_query *q = api_query_new(r, on_s3_deleted, op);
    int s = api_query_stmt(q, "SELECT * FROM queen.cp_s3_delete_v1($1)");
    api_param_text(q, s, n);
    api_query_submit(q);
}

void api_register_proxy(app *a, http_server *s)
{
    http_server_set_gate(s, api_proxy_gate);
    http_route(s, "POST", "/api/cp/clusters", api_cp_create, ACCESS_ADMIN);
    http_route(s, "GET", "/api/cp/clusters", api_cp_list, ACCESS_ADMIN);
    http_route(s, "GET", "/api/cp/clusters/:cluster", api_cp_get, ACCESS_ADMIN);
    http_route(s, "PATCH", "/api/cp/clusters/:cluster", api_cp_update, ACCESS_ADMIN);
    http_route(s, "DELETE", "/api/cp/clusters/:cluster", api_cp_delete, ACCESS_ADMIN);
    http_route(s, "PUT", "/api/cp/clusters/:cluster/status", api_cp_status, ACCESS_ADMIN);
    http_route(s, "POST", "/api/cp/clusters/:cluster/token", api_cp_token, ACCESS_ADMIN);
    http_route(s, "POST", "/api/cp/clusters/:cluster/purge", api_cp_purge, ACCESS_ADMIN);
    http_route(s, "PUT", "/api/cp/clusters/:cluster/s3", api_cp_s3_put, ACCESS_ADMIN);
    http_route(s, "GET", "/api/cp/clusters/:cluster/s3", api_cp_s3_get, ACCESS_ADMIN);
    http_route(s, "DELETE", "/api/cp/clusters/:cluster/s3", api_cp_s3_delete, ACCESS_ADMIN);
    api_register_data_routes(a, s, 1);
}
