/* cp.c — see cp.h. */
#include "cp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "cp/cp_results.h"

const uint8_t CP_PROXY_TENANT[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

#define CP_STORAGE_EVERY 5 /* rounds */
#define CP_MAX_WAITERS 256

typedef struct cp_waiter {
    void (*cb)(void *, int);
    void *arg;
} cp_waiter;

enum { CPR_RATE, CPR_SUSPENDED, CPR_PUSH_BLOCKED, CPR_STORAGE, CPR_N };
static const char *const REFUSAL_CODE[CPR_N] = {"rate_limited", "cluster_suspended", "forbidden",
                                                "storage_quota_exceeded"};

struct cp_node {
    uv_loop_t *loop;
    db_pool *db;
    char *node_id;
    uv_timer_t timer;
    int started, stopping;
    /* the clusters, and the two indexes into them (keys borrowed from the array) */
    cp_cluster *cl;
    uint32_t ncl;
    strmap by_tenant, by_token;
    int ready;
    uint64_t rounds;
    /* the round in flight */
    db_req req;
    int busy;
    char p_window[24];
    buf p_tenants, p_counts;
    const char *values[4];
    const char *values1[1];
    int storage_round;
    cp_waiter inflight[CP_MAX_WAITERS], pending[CP_MAX_WAITERS];
    int ninflight, npending;
    int again; /* a refresh was asked for while busy */
    char last_error[256];
    mcounter rounds_ok, rounds_failed;
};

static void round_start(cp_node *n);

static void index_rebuild(cp_node *n)
{
    strmap_clear(&n->by_tenant);
    strmap_clear(&n->by_token);
    int ins;
    for (uint32_t i = 0; i < n->ncl; i++) {
        strmap_put(&n->by_tenant, n->cl[i].tenant, 16, i, &ins);
        strmap_put(&n->by_token, n->cl[i].token_hash, 32, i, &ins);
    }
}

const cp_cluster *cp_by_tenant(cp_node *n, const uint8_t tenant[16])
{
    uint32_t *v = n ? strmap_get(&n->by_tenant, tenant, 16) : NULL;
    return v ? &n->cl[*v] : NULL;
}

const cp_cluster *cp_by_token(cp_node *n, const uint8_t hash[32])
{
    uint32_t *v = n ? strmap_get(&n->by_token, hash, 32) : NULL;
    return v ? &n->cl[*v] : NULL;
}

const cp_cluster *cp_by_name(cp_node *n, const char *name)
{
    for (uint32_t i = 0; n && i < n->ncl; i++)
        if (strcmp(n->cl[i].name, name) == 0)
            return &n->cl[i];
    return NULL;
}

int cp_node_ready(const cp_node *n)
{
    return n && n->ready;
}

const char *cp_node_last_error(const cp_node *n)
{
    return n ? n->last_error : "";
}

static enum cp_verdict status_verdict(cp_cluster *c, int kind)
{
    if (c->effective == CP_SUSPENDED) {
        c->refused[CPR_SUSPENDED]++;
        return CPV_SUSPENDED;
    }
    if (kind >= 2 && c->effective == CP_PUSH_BLOCKED) {
        c->refused[CPR_PUSH_BLOCKED]++;
        return CPV_PUSH_BLOCKED;
    }
    if (kind >= 1 && c->max_storage > 0 && c->storage_bytes >= c->max_storage) {
        c->refused[CPR_STORAGE]++;
        return CPV_STORAGE_EXCEEDED;
    }
    return CPV_OK;
}

enum cp_verdict cp_admit(cp_node *n, const uint8_t tenant[16], int kind, int64_t *retry_after_ms)
{
    uint32_t *v = n ? strmap_get(&n->by_tenant, tenant, 16) : NULL;
    if (!v)
        return CPV_OK;
    cp_cluster *c = &n->cl[*v];
    enum cp_verdict st = status_verdict(c, kind);
    if (st != CPV_OK)
        return st;
    if (c->rps > 0 && !cp_rate_admit(&c->rate, c->rps, wall_us(), retry_after_ms)) {
        c->refused[CPR_RATE]++;
        return CPV_RATE_LIMITED;
    }
    return CPV_OK;
}

enum cp_verdict cp_push_verdict(cp_node *n, const uint8_t tenant[16], int kind)
{
    uint32_t *v = n ? strmap_get(&n->by_tenant, tenant, 16) : NULL;
    return v ? status_verdict(&n->cl[*v], kind) : CPV_OK;
}

const cp_cluster *cp_cluster_at(cp_node *n, uint32_t i)
{
    return n && i < n->ncl ? &n->cl[i] : NULL;
}

static void waiters_run(cp_waiter *w, int count, int ok)
{
    for (int i = 0; i < count; i++)
        w[i].cb(w[i].arg, ok);
}

static int read_clusters(cp_node *n, const PGresult *res)
{
    if (PQnfields(res) != CPC_NCOLS)
        return -1;
    int rows = PQntuples(res);
    cp_cluster *cl = rows ? xcalloc((size_t)rows, sizeof *cl) : NULL;
    for (int i = 0; i < rows; i++) {
        cp_cluster *c = &cl[i];
        int len = PQgetlength(res, i, CPC_NAME);
        if (len > CP_NAME_MAX || PQgetlength(res, i, CPC_TENANT) != 16 || PQgetlength(res, i, CPC_TOKEN) != 32) {
            free(cl);
            return -1;
        }
        memcpy(c->name, PQgetvalue(res, i, CPC_NAME), (size_t)len);
        memcpy(c->tenant, PQgetvalue(res, i, CPC_TENANT), 16);
        memcpy(c->token_hash, PQgetvalue(res, i, CPC_TOKEN), 32);
        c->status = cp_status_parse(PQgetvalue(res, i, CPC_STATUS), (size_t)PQgetlength(res, i, CPC_STATUS));
        c->effective =
            cp_status_parse(PQgetvalue(res, i, CPC_EFFECTIVE), (size_t)PQgetlength(res, i, CPC_EFFECTIVE));
        if (c->status < 0)
            c->status = CP_SUSPENDED;
        if (c->effective < 0)
            c->effective = CP_SUSPENDED;
        c->rps = db_get_i64(res, i, CPC_RPS);
        c->max_storage = db_get_i64(res, i, CPC_MAX_STORAGE);
        c->storage_bytes = db_get_i64(res, i, CPC_STORAGE);
        c->created_us = db_get_i64(res, i, CPC_CREATED);
        c->updated_us = db_get_i64(res, i, CPC_UPDATED);
        /* what this node counted, and the storage measured before, survive the refresh */
        const cp_cluster *old = cp_by_tenant(n, c->tenant);
        if (old) {
            c->rate = old->rate;
            memcpy(c->refused, old->refused, sizeof c->refused);
            if (c->storage_bytes < 0)
                c->storage_bytes = old->storage_bytes;
        }
    }
    free(n->cl);
    n->cl = cl;
    n->ncl = (uint32_t)rows;
    index_rebuild(n);
    return 0;
}

static void read_sync(cp_node *n, const PGresult *res)
{
    for (uint32_t i = 0; i < n->ncl; i++) {
        n->cl[i].rate.others = 0;
        n->cl[i].rate.other_nodes = 0;
    }
    if (PQnfields(res) != CPS_NCOLS)
        return;
    for (int i = 0; i < PQntuples(res); i++) {
        if (PQgetlength(res, i, CPS_TENANT) != 16)
            continue;
        uint32_t *v = strmap_get(&n->by_tenant, PQgetvalue(res, i, CPS_TENANT), 16);
        if (!v)
            continue;
        n->cl[*v].rate.others = db_get_i64(res, i, CPS_OTHERS);
        n->cl[*v].rate.other_nodes = db_get_i32(res, i, CPS_OTHER_NODES);
    }
}

static void on_round(db_req *d)
{
    cp_node *n = d->arg;
    int ok = d->err == DB_OK;
    if (ok && read_clusters(n, d->res[1]) < 0) {
        ok = 0;
        snprintf(n->last_error, sizeof n->last_error, "cp_clusters_v1 answered rows of an unexpected shape");
    } else if (!ok) {
        snprintf(n->last_error, sizeof n->last_error, "reading the clusters failed: %s (%.180s)", db_errname(d->err),
                 d->errmsg);
    }
    if (ok) {
        read_sync(n, d->res[0]);
        n->last_error[0] = '\0';
        n->ready = 1;
        mc_add(&n->rounds_ok, 1);
    } else {
        mc_add(&n->rounds_failed, 1);
        log_warn("cp", "%s", n->last_error);
    }
    db_req_clear(d);
    n->busy = 0;
    int count = n->ninflight;
    cp_waiter w[CP_MAX_WAITERS];
    memcpy(w, n->inflight, (size_t)count * sizeof *w);
    n->ninflight = 0;
    waiters_run(w, count, ok);
    if ((n->again || n->npending) && !n->stopping)
        round_start(n);
}

static void round_start(cp_node *n)
{
    if (n->busy)
        return;
    n->again = 0;
    memcpy(n->inflight, n->pending, (size_t)n->npending * sizeof *n->pending);
    n->ninflight = n->npending;
    n->npending = 0;
    int64_t now = wall_us();
    int64_t window = now / 1000000 - 1;
    buf_reset(&n->p_tenants);
    buf_reset(&n->p_counts);
    buf_putc(&n->p_tenants, '{');
    buf_putc(&n->p_counts, '{');
    int first = 1;
    for (uint32_t i = 0; i < n->ncl; i++) {
        cp_rate *r = &n->cl[i].rate;
        cp_rate_tick(r, now);
        if (r->done_sec != window || r->done_count <= 0)
            continue;
        char u[UUID_STR_LEN + 1];
        uuid_format((const uuid *)n->cl[i].tenant, u);
        buf_printf(&n->p_tenants, "%s%s", first ? "" : ",", u);
        buf_printf(&n->p_counts, "%s%lld", first ? "" : ",", (long long)r->done_count);
        first = 0;
    }
    buf_putc(&n->p_tenants, '}');
    buf_putc(&n->p_counts, '}');
    snprintf(n->p_window, sizeof n->p_window, "%lld", (long long)window);
    n->values[0] = n->node_id;
    n->values[1] = n->p_window;
    n->values[2] = buf_cstr(&n->p_tenants);
    n->values[3] = buf_cstr(&n->p_counts);
    /* a round a control-plane write asked for measures too, so a new ceiling applies at once */
    n->storage_round = n->rounds % CP_STORAGE_EVERY == 0 || n->ninflight > 0;
    n->values1[0] = n->storage_round ? "true" : "false";
    n->rounds++;
    memset(&n->req, 0, sizeof n->req);
    n->req.nstmt = 2;
    n->req.stmt[0] = (db_stmt){"SELECT * FROM queen.cp_sync_v1($1::text, $2::int8, $3::uuid[], $4::int8[])", 4,
                               n->values, NULL, NULL, 1};
    n->req.stmt[1] = (db_stmt){"SELECT * FROM queen.cp_clusters_v1($1::bool)", 1, n->values1, NULL, NULL, 1};
    n->req.done = on_round;
    n->req.arg = n;
    if (db_submit(n->db, &n->req) == 0) {
        n->busy = 1;
        return;
    }
    snprintf(n->last_error, sizeof n->last_error, "reading the clusters failed: %s (%.180s)", db_errname(n->req.err),
             n->req.errmsg);
    mc_add(&n->rounds_failed, 1);
    int count = n->ninflight;
    n->ninflight = 0;
    waiters_run(n->inflight, count, 0);
}

/* Milliseconds to the next round: 100 ms into the next wall-clock second. Each round arms the
 * next one from the clock (a repeating timer drifts by every callback's lateness: on a loaded
 * node its rounds crept through the second until one second had none, and for that second the
 * other nodes counted this one absent and admitted the whole limit each). */
static uint64_t next_round_ms(void)
{
    int64_t into = wall_us() % 1000000;
    int64_t us = into < 100000 ? 100000 - into : 1100000 - into;
    uint64_t ms = (uint64_t)((us + 999) / 1000);
    return ms ? ms : 1;
}

static void on_timer(uv_timer_t *t)
{
    cp_node *n = t->data;
    if (n->stopping)
        return;
    uv_timer_start(&n->timer, on_timer, next_round_ms(), 0);
    if (n->busy)
        n->again = 1;
    else
        round_start(n);
}

void cp_node_refresh(cp_node *n, void (*cb)(void *arg, int ok), void *arg)
{
    if (n->npending >= CP_MAX_WAITERS || n->stopping) {
        cb(arg, 0);
        return;
    }
    n->pending[n->npending++] = (cp_waiter){cb, arg};
    if (!n->busy)
        round_start(n);
}

cp_node *cp_node_new(uv_loop_t *loop, db_pool *db, const char *node_id)
{
    cp_node *n = xcalloc(1, sizeof *n);
    n->loop = loop;
    n->db = db;
    n->node_id = xstrdup(node_id);
    strmap_init(&n->by_tenant);
    strmap_init(&n->by_token);
    buf_init(&n->p_tenants, 0);
    buf_init(&n->p_counts, 0);
    uv_timer_init(loop, &n->timer);
    n->timer.data = n;
    return n;
}

void cp_node_start(cp_node *n)
{
    /* the rounds fire 100 ms into each wall-clock second, so every node reports the second
     * that just ended before the others read it */
    uv_timer_start(&n->timer, on_timer, next_round_ms(), 0);
    n->started = 1;
    round_start(n);
}

static void on_timer_closed(uv_handle_t *h)
{
    (void)h;
}

void cp_node_stop(cp_node *n)
{
    if (!n || n->stopping)
        return;
    n->stopping = 1;
    uv_timer_stop(&n->timer);
    uv_close((uv_handle_t *)&n->timer, on_timer_closed);
    int count = n->npending;
    n->npending = 0;
    waiters_run(n->pending, count, 0);
}

void cp_node_metrics(cp_node *n, buf *b)
{
    if (!n)
        return;
    metric_help(b, "queen_cp_rounds_total", "counter", "Control-plane reads of the clusters, by result");
    metric_u64(b, "queen_cp_rounds_total", "result=\"ok\"", mc_get(&n->rounds_ok));
    metric_u64(b, "queen_cp_rounds_total", "result=\"failed\"", mc_get(&n->rounds_failed));
    metric_help(b, "queen_cp_clusters", "gauge", "Clusters this node knows");
    metric_u64(b, "queen_cp_clusters", NULL, n->ncl);
    metric_help(b, "queen_cp_refused_total", "counter",
                "Data-plane requests of a cluster this node refused, by the code of the answer");
    for (uint32_t i = 0; i < n->ncl; i++) {
        char u[UUID_STR_LEN + 1];
        uuid_format((const uuid *)n->cl[i].tenant, u);
        for (int k = 0; k < CPR_N; k++) {
            char lab[160];
            snprintf(lab, sizeof lab, "tenant=\"%s\",cluster=\"%s\",code=\"%s\"", u, n->cl[i].name, REFUSAL_CODE[k]);
            metric_u64(b, "queen_cp_refused_total", lab, n->cl[i].refused[k]);
        }
    }
}

void cp_node_free(cp_node *n)
{
    if (!n)
        return;
    free(n->cl);
    strmap_free(&n->by_tenant);
    strmap_free(&n->by_token);
    buf_free(&n->p_tenants);
    buf_free(&n->p_counts);
    free(n->node_id);
    free(n);
}
