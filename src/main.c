/* main.c — boot and shutdown of a queen node.
 *
 * Boot: read the environment (a bad value prints the one FATAL line and exits 2), bring up the
 * database (the embedded cluster unless one is configured), apply migrations, then start the
 * loop: database pool, group commit, background jobs (dedup cleanup, KV reclaim, timer
 * firing), JWT authentication when JWT_ENABLED, HTTP. SIGTERM/SIGINT: stop accepting, answer what is in
 * flight (up to QUEEN_SHUTDOWN_TIMEOUT_MS), close the pool, stop the embedded cluster, exit 0. */
#include <libpq-fe.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "api/app.h"
#include "config/config.h"
#include "consume/popbatch.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "core/uuid.h"
#include "cp/cp.h"
#include "cp/cpcfg.h"
#include "crypto/seal.h"
#include "db/embedded.h"
#include "db/migrate.h"
#include "db/pg.h"
#include "http/server.h"
#include "queue/options.h"
#include "sink/sink.h"
#include "sink/sinkcfg.h"
#include "storage/push.h"

static app g_app;
static uv_signal_t g_sigterm, g_sigint;
static uv_timer_t g_drain;
static uint64_t g_drain_deadline_ms;
static uint64_t g_s3_deadline_ms;

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* Connects (blocking) with retries while the database comes up; NULL after max_wait_ms. */
static PGconn *connect_blocking(const queen_config *c, const char *conninfo, int64_t max_wait_ms)
{
    db_conn_params cp;
    db_conn_params_init(&cp, conninfo, c->db_statement_timeout_ms, c->db_connect_timeout_ms);
    uint64_t deadline = mono_ms() + (uint64_t)max_wait_ms;
    int delay = 200;
    for (;;) {
        PGconn *pg = PQconnectdbParams(cp.keys, cp.vals, 1);
        if (PQstatus(pg) == CONNECTION_OK)
            return pg;
        char why[512];
        snprintf(why, sizeof why, "%s", PQerrorMessage(pg));
        size_t n = strlen(why);
        while (n && (why[n - 1] == '\n' || why[n - 1] == ' '))
            why[--n] = '\0';
        PQfinish(pg);
        if (mono_ms() >= deadline) {
            log_error("boot", "cannot connect to PostgreSQL: %s", why);
            return NULL;
        }
        log_warn("boot", "waiting for PostgreSQL: %s", why);
        usleep((useconds_t)delay * 1000);
        delay = delay < 2000 ? delay * 2 : 2000;
    }
}

static void on_pushed(void *arg, const uint8_t tenant[16], const char *queue, size_t qlen, uint64_t partition_id)
{
    app *a = arg;
    pop_lanes_hint(tenant, queue, qlen, partition_id);
    notifier_changed(a->notify, tenant, queue, qlen);
}

static void on_pool_closed(void *arg)
{
    app *a = arg;
    uv_stop(a->loop);
}

static void on_drain_check(uv_timer_t *t)
{
    app *a = t->data;
    /* a firing round in flight is let finish: cutting it only rolls it back, but letting it
     * commit saves the next node the work */
    int busy = http_server_inflight(a->http) + (a->proxy ? http_server_inflight(a->proxy) : 0) +
               pusher_inflight(a->push) + pusher_queued(a->push) + timer_job_busy(a->timers);
    if (busy > 0 && mono_ms() < g_drain_deadline_ms)
        return;
    if (busy > 0)
        log_warn("shutdown", "%d requests still in flight after the shutdown timeout; closing anyway", busy);
    /* the sink drains beside the listener: wait for what is left of its grace */
    if (a->s3 && !s3_node_drained(a->s3) && mono_ms() < g_s3_deadline_ms)
        return;
    uv_timer_stop(t);
    db_pool_close(a->db, on_pool_closed, a);
}

static void on_signal(uv_signal_t *h, int sig)
{
    app *a = h->data;
    if (a->shutting_down) {
        log_warn("shutdown", "second signal %d: exiting now", sig);
        if (a->emb)
            embedded_stop(a->emb);
        _exit(1);
    }
    a->shutting_down = 1;
    log_info("shutdown", "signal %d: no longer accepting; answering requests in flight", sig);
    http_server_stop_accepting(a->http);
    if (a->proxy)
        http_server_stop_accepting(a->proxy);
    cp_node_stop(a->cp);
    if (a->emb)
        embedded_supervise_stop(a->emb);
    maint_stop(a->maint);
    retention_stop(a->retention);
    /* parked long-polls answer now (empty), so the drain does not wait out their timeouts */
    waitq_close(a->wq);
    waitq_close(a->eph_wq);
    notifier_stop(a->notify);
    kv_reaper_stop(a->kvr);
    timer_job_stop(a->timers);
    if (a->s3) {
        s3_node_stop(a->s3);
        g_s3_deadline_ms = mono_ms() + (uint64_t)s3_node_grace_ms(a->s3);
    }
    auth_stop(a->auth);
    g_drain_deadline_ms = mono_ms() + (uint64_t)a->cfg->shutdown_timeout_ms;
    uv_timer_start(&g_drain, on_drain_check, 0, 10);
}

int main(void)
{
    static queen_config cfg;
    static auth_config acfg;
    static cp_config cpcfg;
    qerr_detail berr;
    if (config_load(&cfg, env_get, &berr) != QERR_OK || auth_config_load(&acfg, env_get, &berr) != QERR_OK) {
        fprintf(stderr, "%s\n", berr.text);
        return 2;
    }
    if (cp_config_load(&cpcfg, env_get, cfg.port, &berr) != QERR_OK) {
        fprintf(stderr, "%s\n", berr.text);
        return 2;
    }
    log_setup((enum log_level)cfg.log_level, (enum log_format)cfg.log_format);
    signal(SIGPIPE, SIG_IGN);

    /* the S3 sink's variables are read at boot too: a bad one stops the boot */
    struct {
        int embedded;
    } sw = {0};
    static s3_node_knobs knobs;
    static s3_sink_config env_sink;
    int have_env_sink = 0;
    if (s3_embedded_load(&sw.embedded, env_get, &berr) != QERR_OK) {
        fprintf(stderr, "%s\n", berr.text);
        config_free(&cfg);
        return 2;
    }
    if (sw.embedded) {
        if (s3_node_knobs_load(&knobs, env_get, cfg.node_id, &berr) != QERR_OK) {
            fprintf(stderr, "%s\n", berr.text);
            config_free(&cfg);
            return 2;
        }
        if (s3_sink_config_from_env(&env_sink, DEFAULT_TENANT, env_get, &have_env_sink, &berr) != QERR_OK) {
            fprintf(stderr, "%s\n", berr.text);
            s3_node_knobs_free(&knobs);
            config_free(&cfg);
            return 2;
        }
    }

    app *a = &g_app;
    a->cfg = &cfg;
    a->cpcfg = &cpcfg;
    a->started_wall_us = wall_us();
    a->started_mono_us = mono_us();
    log_info("boot", "queen %s starting: node %s, port %lld, database %s", QUEEN_VERSION, cfg.node_id,
             (long long)cfg.port, cfg.pg_external ? "external" : "embedded");
    /* before any thread starts: the key is only read afterwards */
    if (cfg.has_encryption_key) {
        seal_set_node_key(&cfg.encryption_key);
        char fp[9];
        seal_fingerprint_hex(&cfg.encryption_key, fp);
        log_info("boot", "encryption at rest: key fingerprint %s (every node sealing or opening the same queues needs "
                         "the same key)", fp);
    } else {
        log_info("boot", "encryption at rest: no QUEEN_ENCRYPTION_KEY; configuring encryptionEnabled is refused here");
    }

    static embedded_pg emb;
    const char *conninfo = cfg.pg_conninfo;
    if (!cfg.pg_external) {
        if (embedded_start(&emb, cfg.data_dir, cfg.pg_bin_dir) < 0) {
            embedded_free(&emb);
            config_free(&cfg);
            return 1;
        }
        a->emb = &emb;
        conninfo = emb.conninfo;
    }

    PGconn *boot = connect_blocking(&cfg, conninfo, cfg.boot_db_wait_ms);
    if (!boot)
        goto fail;
    buf defaults;
    buf_init(&defaults, 0);
    queue_options_defaults_json(&defaults);
    qerr_detail merr;
    qerr mrc = migrate_apply(boot, buf_cstr(&defaults), &merr);
    buf_free(&defaults);
    if (mrc != QERR_OK) {
        log_error("boot", "schema migration failed: %s", merr.text);
        PQfinish(boot);
        goto fail;
    }
    log_info("boot", "schema at version %d", migrate_schema_version(boot));
    PQfinish(boot);

    a->loop = uv_default_loop();
    a->db = db_pool_new(a->loop, conninfo, (int)cfg.db_pool_size, cfg.db_statement_timeout_ms,
                        cfg.db_connect_timeout_ms);
    a->push = pusher_new(a->db, &cfg);
    a->maint = maint_new(a->loop, a->db, cfg.dedup_window_s);
    a->retention = retention_new(a->loop, a->db, cfg.retention_interval_ms, cfg.eviction_interval_ms,
                                 cfg.retention_batch, cfg.partition_cleanup_days);
    a->wq = waitq_new(a->loop);
    a->eph = eph_new(rand_u64(), cfg.ephemeral_max_bytes);
    a->eph_wq = waitq_new(a->loop);
    a->notify = notifier_new(a->loop, a->db, conninfo, cfg.node_id, a->wq, cfg.db_statement_timeout_ms,
                             cfg.db_connect_timeout_ms);
    pusher_on_commit(a->push, on_pushed, a);
    a->kvr = kv_reaper_new(a->loop, a->db, &a->kvm);
    a->timers = timer_job_new(a->loop, a->db, cfg.dedup_window_s, cfg.timer_fire_batch);
    if (acfg.enabled && !(a->auth = auth_new(a->loop, &acfg, &berr))) {
        log_error("boot", "%s", berr.text);
        goto fail_loop;
    }
    http_server_opts ho = {
        .host = cfg.host,
        .port = (int)cfg.port,
        .max_body_bytes = (size_t)cfg.max_body_bytes,
        .default_tenant = DEFAULT_TENANT,
    };
    a->http = http_server_new(a->loop, &ho, a);
    api_register(a);
    if (http_server_listen(a->http) < 0)
        goto fail_loop;
    if (cpcfg.enabled) {
        /* the embedded proxy: the control plane and the clusters' data plane on a port of its own */
        a->cp = cp_node_new(a->loop, a->db, cfg.node_id);
        cp_node_start(a->cp);
        http_server_opts po = ho;
        po.port = (int)cpcfg.port;
        po.metrics_prefix = "queen_proxy_http";
        a->proxy = http_server_new(a->loop, &po, a);
        api_register_proxy(a, a->proxy);
        if (http_server_listen(a->proxy) < 0)
            goto fail_loop;
        log_info("boot", "embedded proxy on port %lld: control plane under /api/cp/, clusters' data plane beside it",
                 (long long)cpcfg.port);
    }
    if (a->emb)
        embedded_supervise_start(a->emb, a->loop);
    if (sw.embedded) {
        s3_node_opts so = {
            .conninfo = conninfo,
            .statement_timeout_ms = cfg.db_statement_timeout_ms,
            .connect_timeout_ms = cfg.db_connect_timeout_ms,
            .node_id = cfg.node_id,
            .control_plane = cpcfg.enabled,
        };
        a->s3 = s3_node_new(&so, &knobs);
        if (have_env_sink > 0)
            s3_node_add_sink(a->s3, &env_sink, "env");
        else
            log_info("queen-s3", "QUEEN_S3_EMBEDDED=true without QUEEN_S3_QUEUES: no sink from the environment");
        if (s3_node_start(a->s3) < 0)
            goto fail_loop;
    }

    uv_signal_init(a->loop, &g_sigterm);
    uv_signal_init(a->loop, &g_sigint);
    g_sigterm.data = g_sigint.data = a;
    uv_signal_start(&g_sigterm, on_signal, SIGTERM);
    uv_signal_start(&g_sigint, on_signal, SIGINT);
    uv_timer_init(a->loop, &g_drain);
    g_drain.data = a;
    log_info("boot", "ready");

    uv_run(a->loop, UV_RUN_DEFAULT);

    uv_signal_stop(&g_sigterm);
    uv_signal_stop(&g_sigint);
    /* The HTTP server is left as it is: keep-alive connections may still be open, and h2o
     * cannot dispose of a context with live connections. The process exits next. */
    s3_node_free(a->s3);
    a->s3 = NULL;
    cp_node_free(a->cp);
    a->cp = NULL;
    pusher_free(a->push);
    a->push = NULL;
    kv_reaper_free(a->kvr);
    timer_job_free(a->timers);
    auth_free(a->auth);
    if (a->emb) {
        embedded_stop(a->emb);
        embedded_free(a->emb);
    }
    log_info("shutdown", "stopped");
    auth_config_free(&acfg);
    cp_config_free(&cpcfg);
    config_free(&cfg);
    return 0;

fail_loop:
    cp_node_stop(a->cp);
    maint_stop(a->maint);
    kv_reaper_stop(a->kvr);
    timer_job_stop(a->timers);
    auth_stop(a->auth);
    if (a->s3)
        s3_node_stop(a->s3);
    db_pool_close(a->db, on_pool_closed, a);
    uv_run(a->loop, UV_RUN_DEFAULT);
    s3_node_free(a->s3);
    a->s3 = NULL;
    auth_free(a->auth);
fail:
    cp_config_free(&cpcfg);
    s3_node_knobs_free(&knobs);
    s3_sink_config_free(&env_sink);
    if (a->emb) {
        embedded_stop(a->emb);
        embedded_free(a->emb);
    }
    auth_config_free(&acfg);
    config_free(&cfg);
    return 1;
}
