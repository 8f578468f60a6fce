/* auth_node.c — the node's authenticator: the keys in use, the JWKS refresher, and the checks
 * that wait for it.
 *
 * The JWKS is fetched with libcurl on a thread of its own (queen-jwks), never on the loop: at
 * boot, every JWT_JWKS_REFRESH_INTERVAL, and when a token names a key id the set does not hold
 * (at most once per AUTH_JWKS_MISS_COOLDOWN_MS). The thread hands each result to the loop
 * through a uv_async; only the loop reads or replaces the key set, so verification takes no
 * lock. A check that needs the set waits in a list until the fetch it asked for ends (bounded
 * by JWT_JWKS_TIMEOUT_MS), then runs again against the new set; a failed fetch keeps the old
 * set and answers the waiting checks 500 "Failed to fetch JWKS", as the earlier release did.
 *
 * Thread handoff: want_fetch, stop and the ready slot are under `mu`; the thread sends the
 * async only while holding `mu` and only before `stop`, so it never touches the handle once
 * auth_stop has closed it. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "auth.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "metrics/metrics.h"

/* Checks waiting for one fetch; past this they are answered 503 at once. */
#define AUTH_MAX_WAITING 4096

/* A token that passed, remembered for AUTH_CACHE_TTL_S (never past its exp). Looked up by the
 * exact bytes: the hash only picks the slot. */
typedef struct cached {
    char *tok;
    size_t len;
    int64_t until_s;
    auth_claims claims; /* owned */
} cached;

typedef struct waiter {
    struct waiter *next;
    char *tok;
    size_t len;
    auth_done_fn done;
    void *arg;
} waiter;

struct auth {
    uv_loop_t *loop;
    const auth_config *cfg;
    auth_key static_key;
    int has_static;
    auth_keyset *jwks;         /* loop thread only */
    waiter *head, *tail;       /* loop thread only */
    int nwaiting;
    int fetching;              /* the loop asked for a fetch whose result has not come back */
    uint64_t last_fetch_ms;    /* when the last result came back (mono); 0 before the first */
    int last_fetch_failed;
    int stopped;
    uv_async_t async;
    int async_open;
    /* the refresher thread */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int want_fetch, stop;      /* under mu */
    atomic_int abort_fetch;    /* set by auth_stop: a fetch in progress gives up */
    int ready;                 /* under mu: a result is in the slot */
    auth_keyset *ready_set;    /* under mu */
    char ready_err[300];       /* under mu */
    cached cache[AUTH_CACHE_SLOTS]; /* loop thread only */
    /* metrics */
    mcounter ok, invalid, cache_hits, fetch_ok, fetch_failed;
};

/* ---- the refresher thread ------------------------------------------------------------------ */

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    buf *b = arg;
    size_t n = size * nmemb;
    return buf_append(b, p, n) == 0 ? n : 0;
}

/* libcurl's progress callback: a non-zero answer aborts the transfer (at shutdown). */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return atomic_load(&((auth *)arg)->abort_fetch);
}

/* One fetch: a key set, or NULL with err. */
static auth_keyset *fetch_jwks(auth *a, char *err, size_t errlen)
{
    const auth_config *c = a->cfg;
    buf body;
    buf_init(&body, AUTH_JWKS_MAX_BYTES);
    auth_keyset *s = NULL;
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(err, errlen, "cannot start a libcurl handle");
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, c->jwks_url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->jwks_timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->jwks_timeout_ms);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "queen-jwks");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, a);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (body.overflow)
        snprintf(err, errlen, "the JWKS is larger than %u bytes", AUTH_JWKS_MAX_BYTES);
    else if (rc != CURLE_OK)
        snprintf(err, errlen, "%s", curl_easy_strerror(rc));
    else if (code != 200)
        snprintf(err, errlen, "the JWKS URL answered HTTP %ld", code);
    else if ((s = auth_jwks_parse(body.data ? body.data : "", body.len, err, errlen)) && s->n == 0) {
        snprintf(err, errlen, "the JWKS holds no RS256 or Ed25519 signing key");
        auth_keyset_free(s);
        s = NULL;
    }
out:
    if (h)
        curl_easy_cleanup(h);
    buf_free(&body);
    return s;
}

static void *refresher_main(void *arg)
{
    auth *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        if (!a->want_fetch) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += (time_t)a->cfg->jwks_refresh_s;
            while (!a->want_fetch && !a->stop)
                if (pthread_cond_timedwait(&a->cv, &a->mu, &until) != 0)
                    a->want_fetch = 1; /* the refresh interval passed */
            if (a->stop)
                break;
        }
        a->want_fetch = 0;
        pthread_mutex_unlock(&a->mu);
        char err[300] = "";
        auth_keyset *s = fetch_jwks(a, err, sizeof err);
        pthread_mutex_lock(&a->mu);
        auth_keyset_free(a->ready_set); /* a result the loop never took: superseded */
        a->ready_set = s;
        snprintf(a->ready_err, sizeof a->ready_err, "%s", err);
        a->ready = 1;
        if (!a->stop)
            uv_async_send(&a->async);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Loop thread: asks the refresher for a fetch now. */
static void request_fetch(auth *a)
{
    if (a->fetching || !a->thread_started)
        return;
    a->fetching = 1;
    pthread_mutex_lock(&a->mu);
    a->want_fetch = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* ---- checks -------------------------------------------------------------------------------- */

static int64_t now_s(void)
{
    return wall_us() / 1000000;
}

static cached *cache_slot(auth *a, const char *tok, size_t len)
{
    return &a->cache[hash_bytes(tok, len, 0x6a77) & (AUTH_CACHE_SLOTS - 1)];
}

static void cache_clear_slot(cached *c)
{
    free(c->tok);
    auth_claims_free(&c->claims);
    memset(c, 0, sizeof *c);
}

static const cached *cache_get(auth *a, const char *tok, size_t len, int64_t now)
{
    cached *c = cache_slot(a, tok, len);
    if (!c->tok || c->len != len || memcmp(c->tok, tok, len) != 0)
        return NULL;
    if (now > c->until_s) {
        cache_clear_slot(c);
        return NULL;
    }
    return c;
}

static void cache_put(auth *a, const char *tok, size_t len, const auth_claims *cl, int64_t now)
{
    cached *c = cache_slot(a, tok, len);
    cache_clear_slot(c);
    c->tok = xstrndup(tok, len);
    c->len = len;
    c->until_s = now + AUTH_CACHE_TTL_S < cl->valid_until_s ? now + AUTH_CACHE_TTL_S : cl->valid_until_s;
    c->claims = *cl;
    c->claims.sub = cl->sub ? xstrdup(cl->sub) : NULL;
}

static void answer(auth *a, const char *tok, size_t len, auth_result *res, enum auth_outcome o, auth_done_fn done,
                   void *arg)
{
    if (o == AUTH_OK) {
        mc_add(&a->ok, 1);
        cache_put(a, tok, len, &res->claims, now_s());
        done(arg, 200, "", &res->claims);
        auth_claims_free(&res->claims);
        return;
    }
    mc_add(&a->invalid, 1);
    done(arg, res->status, res->msg, NULL);
}

static void park(auth *a, const char *tok, size_t len, auth_done_fn done, void *arg)
{
    if (a->nwaiting >= AUTH_MAX_WAITING) {
        done(arg, 503, "too many requests are waiting for the JWKS; try again", NULL);
        return;
    }
    waiter *w = xcalloc(1, sizeof *w);
    w->tok = xstrndup(tok, len);
    w->len = len;
    w->done = done;
    w->arg = arg;
    if (a->tail)
        a->tail->next = w;
    else
        a->head = w;
    a->tail = w;
    a->nwaiting++;
}

void auth_check(auth *a, const char *tok, size_t len, auth_done_fn done, void *arg)
{
    int64_t now = now_s();
    const cached *c = cache_get(a, tok, len, now);
    if (c) {
        mc_add(&a->ok, 1);
        mc_add(&a->cache_hits, 1);
        /* borrowed for the call: nothing reaches the cache until `done` returns */
        done(arg, 200, "", &c->claims);
        return;
    }
    auth_result res;
    enum auth_outcome o = auth_verify(a->cfg, a->has_static ? &a->static_key : NULL, a->jwks, tok, len, now, &res);
    if (o != AUTH_UNKNOWN_KID) {
        answer(a, tok, len, &res, o, done, arg);
        return;
    }
    if (a->stopped) {
        done(arg, 503, "server is shutting down", NULL);
        return;
    }
    if (!a->thread_started) {
        answer(a, tok, len, &res, AUTH_DENIED, done, arg);
        return;
    }
    /* a key we do not hold: fetch the set again, unless a fetch ended a moment ago (then its
     * outcome stands: the key is unknown, or the JWKS could not be fetched) */
    if (!a->fetching && a->last_fetch_ms && mono_ms() - a->last_fetch_ms < AUTH_JWKS_MISS_COOLDOWN_MS) {
        if (a->last_fetch_failed) {
            mc_add(&a->invalid, 1);
            done(arg, 500, "Failed to fetch JWKS", NULL);
        } else {
            answer(a, tok, len, &res, AUTH_DENIED, done, arg);
        }
        return;
    }
    request_fetch(a);
    park(a, tok, len, done, arg);
}

static void on_async(uv_async_t *h)
{
    auth *a = h->data;
    pthread_mutex_lock(&a->mu);
    int ready = a->ready;
    auth_keyset *s = a->ready_set;
    char err[300];
    snprintf(err, sizeof err, "%s", a->ready_err);
    a->ready = 0;
    a->ready_set = NULL;
    pthread_mutex_unlock(&a->mu);
    if (!ready)
        return;
    a->fetching = 0;
    a->last_fetch_ms = mono_ms();
    a->last_fetch_failed = s == NULL;
    if (s) {
        mc_add(&a->fetch_ok, 1);
        log_info("auth", "JWKS fetched from %s: %d key%s", a->cfg->jwks_url, s->n, s->n == 1 ? "" : "s");
        auth_keyset_free(a->jwks);
        a->jwks = s;
    } else {
        mc_add(&a->fetch_failed, 1);
        log_warn("auth", "JWKS fetch from %s failed: %s%s", a->cfg->jwks_url, err,
                 a->jwks ? " (the keys fetched earlier stay in use)" : "");
    }
    /* the waiting checks run again against the set now at hand; none waits twice */
    waiter *w = a->head;
    a->head = a->tail = NULL;
    a->nwaiting = 0;
    while (w) {
        waiter *next = w->next;
        auth_result res;
        enum auth_outcome o = auth_verify(a->cfg, a->has_static ? &a->static_key : NULL, a->jwks, w->tok, w->len,
                                          now_s(), &res);
        if (o == AUTH_UNKNOWN_KID && !s) {
            mc_add(&a->invalid, 1);
            w->done(w->arg, 500, "Failed to fetch JWKS", NULL);
        } else {
            answer(a, w->tok, w->len, &res, o == AUTH_UNKNOWN_KID ? AUTH_DENIED : o, w->done, w->arg);
        }
        free(w->tok);
        free(w);
        w = next;
    }
}

auth *auth_new(uv_loop_t *loop, const auth_config *c, qerr_detail *err)
{
    auth *a = xcalloc(1, sizeof *a);
    a->loop = loop;
    a->cfg = c;
    if (c->public_key) {
        char why[200];
        if (auth_key_from_pem(c->public_key, strlen(c->public_key), &a->static_key, why, sizeof why) < 0) {
            qerr_set(err, QERR_BAD_INPUT, NULL, "JWT_PUBLIC_KEY cannot be loaded: %s", why);
            free(a);
            return NULL;
        }
        a->has_static = 1;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (c->secret && strlen(c->secret) < 32 && (c->algorithm == AUTH_ALG_HS256 || c->algorithm == AUTH_ALG_AUTO))
        log_warn("auth", "JWT_SECRET is %zu bytes; HS256 keys should be at least 32 (RFC 7518 section 3.2)",
                 strlen(c->secret));
    /* the JWKS is used only when no static key is configured (the static key wins) */
    if (c->jwks_url && !a->has_static && c->algorithm != AUTH_ALG_HS256) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            qerr_set(err, QERR_INTERNAL, NULL, "libcurl cannot be initialised for JWT_JWKS_URL");
            auth_free(a);
            return NULL;
        }
        uv_async_init(loop, &a->async, on_async);
        a->async.data = a;
        uv_unref((uv_handle_t *)&a->async);
        a->async_open = 1;
        a->want_fetch = 1; /* the first fetch, at once */
        a->fetching = 1;
        if (pthread_create(&a->thread, NULL, refresher_main, a) != 0) {
            qerr_set(err, QERR_INTERNAL, NULL, "cannot start the JWKS refresher thread");
            curl_global_cleanup();
            uv_close((uv_handle_t *)&a->async, NULL);
            a->async_open = 0;
            auth_free(a);
            return NULL;
        }
        pthread_setname_np(a->thread, "queen-jwks");
        a->thread_started = 1;
    }
    static const char *const names[] = {"HS256", "RS256", "EdDSA", "auto"};
    log_info("auth", "JWT authentication on: algorithm %s%s%s%s", names[c->algorithm],
             a->has_static ? ", static public key" : "", a->thread_started ? ", JWKS " : "",
             a->thread_started ? c->jwks_url : "");
    return a;
}

const auth_config *auth_cfg(const auth *a)
{
    return a->cfg;
}

void auth_stop(auth *a)
{
    if (!a || a->stopped)
        return;
    a->stopped = 1;
    atomic_store(&a->abort_fetch, 1);
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    waiter *w = a->head;
    a->head = a->tail = NULL;
    a->nwaiting = 0;
    while (w) {
        waiter *next = w->next;
        w->done(w->arg, 503, "server is shutting down", NULL);
        free(w->tok);
        free(w);
        w = next;
    }
    if (a->async_open) {
        uv_close((uv_handle_t *)&a->async, NULL);
        a->async_open = 0;
    }
}

void auth_free(auth *a)
{
    if (!a)
        return;
    auth_stop(a);
    if (a->thread_started) {
        pthread_join(a->thread, NULL); /* a fetch in progress is aborted (on_progress) */
        curl_global_cleanup();
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    auth_keyset_free(a->ready_set);
    auth_keyset_free(a->jwks);
    auth_key_clear(&a->static_key);
    for (int i = 0; i < AUTH_CACHE_SLOTS; i++)
        cache_clear_slot(&a->cache[i]);
    free(a);
}

void auth_render_metrics(auth *a, buf *b)
{
    metric_help(b, "queen_auth_tokens_total", "counter", "Bearer tokens checked, by result");
    metric_u64(b, "queen_auth_tokens_total", "result=\"valid\"", mc_get(&a->ok));
    metric_u64(b, "queen_auth_tokens_total", "result=\"invalid\"", mc_get(&a->invalid));
    metric_help(b, "queen_auth_token_cache_hits_total", "counter",
                "Valid tokens answered from the cache of tokens that passed (no signature check)");
    metric_u64(b, "queen_auth_token_cache_hits_total", NULL, mc_get(&a->cache_hits));
    if (!a->cfg->jwks_url || a->has_static)
        return;
    metric_help(b, "queen_auth_jwks_fetches_total", "counter", "JWKS fetches, by result");
    metric_u64(b, "queen_auth_jwks_fetches_total", "result=\"ok\"", mc_get(&a->fetch_ok));
    metric_u64(b, "queen_auth_jwks_fetches_total", "result=\"failed\"", mc_get(&a->fetch_failed));
    metric_help(b, "queen_auth_jwks_keys", "gauge", "Signing keys in the JWKS in use");
    metric_u64(b, "queen_auth_jwks_keys", NULL, a->jwks ? (uint64_t)a->jwks->n : 0);
}
