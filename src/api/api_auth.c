/* api_auth.c — the gate in front of every route (http_server_set_gate). With JWT on, a
 * route that is not public and not in JWT_SKIP_PATHS needs a valid bearer token whose role
 * reaches the route's access level; the request then acts for the token's tenant (the
 * JWT_TENANT_CLAIM claim, else the default tenant) and its subject (the JWT sub, stamped on
 * pushed records). With JWT off every request is the default tenant's, without a subject.
 *
 * Tenants are created on first use: the first request of a tenant this node has not seen yet
 * inserts its queen.tenants row (ON CONFLICT DO NOTHING, so concurrent first requests on any
 * number of nodes all succeed) before the handler runs; the node then remembers the tenant.
 * Queues, KV keys and timers reference that row. */
#include <string.h>

#include "app.h"
#include "auth/auth.h"
#include "core/arena.h"
#include "core/strmap.h"

/* Tenants this node knows to have their row; forgotten all at once past this many (the next
 * request of each inserts again, which costs one statement and changes nothing). */
#define KNOWN_TENANTS_MAX 65536

static strmap g_known;
static arena g_known_keys; /* the 16-byte keys of g_known */
static int g_known_init;

static int tenant_known(const uint8_t t[16])
{
    return memcmp(t, DEFAULT_TENANT, 16) == 0 || (g_known_init && strmap_get(&g_known, t, 16));
}

static void tenant_remember(const uint8_t t[16])
{
    if (!g_known_init) {
        strmap_init(&g_known);
        arena_init(&g_known_keys);
        g_known_init = 1;
    }
    if (g_known.count >= KNOWN_TENANTS_MAX) {
        strmap_clear(&g_known);
        arena_free(&g_known_keys);
        arena_init(&g_known_keys);
    }
    if (strmap_get(&g_known, t, 16))
        return;
    uint8_t *k = arena_alloc(&g_known_keys, 16);
    memcpy(k, t, 16);
    int ins;
    strmap_put(&g_known, k, 16, 1, &ins);
}

static void on_tenant_row(api_query *q, PGresult *const *res)
{
    (void)res;
    tenant_remember(q->http->tenant);
    api_cp_admit_proceed(q->http);
}

static enum auth_role role_needed(enum http_access a)
{
    switch (a) {
    case ACCESS_READ_ONLY: return AUTH_ROLE_READ_ONLY;
    case ACCESS_READ_WRITE: return AUTH_ROLE_READ_WRITE;
    case ACCESS_ADMIN: return AUTH_ROLE_ADMIN;
    default: return AUTH_ROLE_NONE;
    }
}

typedef struct gate_ctx {
    http_req *http;
    enum http_access access;
    int proxy;
} gate_ctx;

static void on_checked(void *arg, int status, const char *msg, const auth_claims *cl)
{
    gate_ctx *g = arg;
    http_req *r = g->http;
    if (status != 200) {
        http_respond_error(r, status, "%s", msg);
        return;
    }
    if (cl->role < role_needed(g->access)) {
        http_respond_error(r, 403, "Insufficient permissions");
        return;
    }
    if (http_client_gone(r)) {
        /* it waited for the JWKS and left: nobody to answer, but the context must go */
        http_respond_error(r, 503, "the client went away");
        return;
    }
    if (cl->has_tenant)
        memcpy(r->tenant, cl->tenant, 16);
    if (cl->sub)
        r->subject = arena_strndup(&r->ar, cl->sub, strlen(cl->sub));
    if (memcmp(r->tenant, CP_PROXY_TENANT, 16) == 0) {
        /* the proxy's own tenant holds the clusters' sealed S3 secrets: no credential reaches it */
        http_respond_error_code(r, 403, "forbidden", "the token's tenant is reserved for the control plane");
        return;
    }
    if (g->proxy && !cp_by_tenant(((app *)r->app)->cp, r->tenant)) {
        http_respond_error_code(r, 403, "forbidden", "the token's tenant is not a cluster of this control plane");
        return;
    }
    if (tenant_known(r->tenant)) {
        api_cp_admit_proceed(r);
        return;
    }
    api_query *q = api_query_new(r, on_tenant_row, NULL);
    int s = api_query_stmt(q, "INSERT INTO queen.tenants (id) VALUES ($1::uuid) ON CONFLICT (id) DO NOTHING");
    api_param_uuid(q, s, r->tenant);
    api_query_submit(q);
}

void api_auth_gate(http_req *r, enum http_access access)
{
    app *a = r->app;
    if (!a->auth || access == ACCESS_PUBLIC || auth_skip_path(auth_cfg(a->auth), r->path)) {
        /* the default tenant: never a cluster's, so admission has nothing to say */
        http_proceed(r);
        return;
    }
    api_auth_jwt(r, access, 0);
}

void api_auth_jwt(http_req *r, enum http_access access, int proxy)
{
    app *a = r->app;
    const char *h = http_header(r, "authorization"), *tok;
    size_t len;
    if (!h || auth_bearer(h, &tok, &len) < 0) {
        http_respond_error(r, 401, "Authentication required");
        return;
    }
    gate_ctx *g = arena_alloc(&r->ar, sizeof *g);
    g->http = r;
    g->access = access;
    g->proxy = proxy;
    http_async(r);
    auth_check(a->auth, tok, len, on_checked, g);
}
