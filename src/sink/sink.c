/* sink.c — the S3 sink's node: its sinks, the queen-s3 threads (workers that run queue tasks,
 * one keeper for leases, presence and the bucket probe), status and metrics (sink.h). */
#include "sink.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "crypto/seal.h"
#include "json/json.h"
#include "sink/layout.h"
#include "sink/sinkdoc.h"
#include "sink/sink_int.h"
#include "storage/logread.h"

static const uint8_t DEFAULT_TENANT_ID[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

s3_node *s3_node_new(const s3_node_opts *o, s3_node_knobs *knobs)
{
    s3_node *n = xcalloc(1, sizeof *n);
    n->o.conninfo = xstrdup(o->conninfo);
    n->o.node_id = xstrdup(o->node_id ? o->node_id : "");
    n->o.statement_timeout_ms = o->statement_timeout_ms;
    n->o.connect_timeout_ms = o->connect_timeout_ms;
    n->k = *knobs;
    memset(knobs, 0, sizeof *knobs);
    n->control_plane = o->control_plane;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    return n;
}

int64_t s3_node_grace_ms(const s3_node *n)
{
    return n->k.shutdown_grace_ms;
}

/* Adds a task for queue (under n->mu or before the threads start). */
static void add_task(s3_sink *s, const char *queue)
{
    s3_node *n = s->node;
    for (int i = 0; i < n->ntasks; i++)
        if (n->tasks[i]->sink == s && strcmp(n->tasks[i]->queue, queue) == 0)
            return;
    if (n->ntasks == n->captasks) {
        n->captasks = n->captasks ? n->captasks * 2 : 16;
        n->tasks = xrealloc(n->tasks, (size_t)n->captasks * sizeof *n->tasks);
    }
    s3_qtask *t = qtask_new(s, queue);
    t->due_ms = mono_ms();
    n->tasks[n->ntasks++] = t;
}

static void crash_between_parts(void *arg, int part_number)
{
    (void)arg;
    log_warn(S3_LOG, "QUEEN_S3_CRASH_AT=mid_upload reached after part %d: killing the process", part_number);
    raise(SIGKILL);
    _exit(137);
}

/* Builds a sink (nothing runs yet): takes the config over, logs its start line. inert_phase:
 * SP_STARTING for a sink that runs, SP_STOPPED or SP_ERROR (with why) for one that runs none of
 * its queues. */
static s3_sink *sink_make(s3_node *n, s3_sink_config *c, const char *source, enum sink_phase inert_phase,
                          const char *why)
{
    s3_sink *s = xcalloc(1, sizeof *s);
    s->node = n;
    s->c = *c;
    memset(c, 0, sizeof *c);
    snprintf(s->source, sizeof s->source, "%s", source);
    s->codec = s3_sink_object_codec(&s->c);
    buf b;
    buf_init(&b, 0);
    s3_writer_name(s->c.format, s->codec, &b);
    snprintf(s->writer, sizeof s->writer, "%s", buf_cstr(&b));
    uuid u;
    uuid_v7(&u);
    uuid_format(&u, s->incarnation);
    if (memcmp(s->c.tenant, DEFAULT_TENANT_ID, 16) != 0)
        snprintf(s->tenant_label, sizeof s->tenant_label, ",tenant=\"%s\"", s->c.tenant_text);
    s->s3.endpoint = s->c.endpoint;
    s->s3.region = s->c.region;
    s->s3.bucket = s->c.bucket;
    s->s3.access_key = s->c.access_key;
    s->s3.secret_key = s->c.secret_key;
    s->s3.path_style = s->c.path_style;
    if (s->c.sse == S3_SSE_AES256) {
        s->s3.sse = "AES256";
    } else if (s->c.sse == S3_SSE_KMS) {
        if (s->c.sse_kms_key_id) {
            snprintf(s->sse, sizeof s->sse, "aws:kms:%s", s->c.sse_kms_key_id);
            s->s3.sse = s->sse;
        } else {
            s->s3.sse = "aws:kms";
        }
    }
    s->s3.multipart_threshold = (size_t)n->k.multipart_threshold_mb << 20;
    s->s3.cancel = &n->hard_stop;
    s->s3.content_md5 = 1;
    if (n->k.crash_at == S3_CRASH_MID_UPLOAD) {
        /* the multipart half of the fault; the single-PUT half is in qtask.c, after the first
         * data object */
        s->s3.on_part_uploaded = crash_between_parts;
        s->s3.hook_arg = s;
    }
    s->phase = SP_STARTING;
    s->bucket_state = -1;
    s->probe_backoff_ms = 1000;
    if (inert_phase != SP_STARTING) {
        s->inert = 1;
        s->phase = inert_phase;
        snprintf(s->error, sizeof s->error, "%s", why ? why : "");
        buf_free(&b);
        return s;
    }
    qerr_detail cerr;
    if (s3_config_check(&s->s3, &cerr) != QERR_OK) {
        /* sinkcfg checked every field already; this is the client's own word on them */
        s->phase = SP_ERROR;
        s->inert = 1;
        snprintf(s->error, sizeof s->error, "the S3 client refuses the settings: %s", cerr.text);
        log_error(S3_LOG, "%s", s->error);
    }
    buf_reset(&b);
    s3_sink_boot_line(&s->c, &n->k, &b);
    log_info(S3_LOG, "%s", buf_cstr(&b));
    buf_free(&b);
    return s;
}

/* Puts a sink in the node's list with its tasks (under n->mu once the threads run). */
static void sink_insert(s3_node *n, s3_sink *s)
{
    n->sinks = xrealloc(n->sinks, (size_t)(n->nsinks + 1) * sizeof *n->sinks);
    n->sinks[n->nsinks++] = s;
    if (!s->inert && !s->c.queues_all)
        for (int i = 0; i < s->c.nqueues; i++)
            add_task(s, s->c.queues[i]);
}

static void sink_free(s3_sink *s)
{
    for (int i = 0; i < S3_MAX_WORKERS; i++)
        s3_client_free(s->wclients[i]);
    s3_client_free(s->keeper_s3);
    s3_sink_config_free(&s->c);
    free(s);
}

void s3_node_add_sink(s3_node *n, s3_sink_config *c, const char *source)
{
    sink_insert(n, sink_make(n, c, source, SP_STARTING, NULL));
}

void s3_node_poke(s3_node *n)
{
    if (!n)
        return;
    atomic_store(&n->cp_poke, 1);
    pthread_mutex_lock(&n->mu);
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

int task_stopping(const s3_qtask *t)
{
    return atomic_load(&t->node->stopping) || atomic_load(&t->sink->retiring);
}

/* ---- shared helpers for qtask.c ---- */

s3_client *worker_client(s3_worker *w, s3_sink *s)
{
    if (!s->wclients[w->id])
        s->wclients[w->id] = s3_client_new(&s->s3, sink_observe_request, s);
    return s->wclients[w->id];
}

void sink_observe_request(void *arg, const char *op, long status)
{
    s3_sink *s = arg;
    pthread_mutex_lock(&s->node->mu);
    int i;
    for (i = 0; i < s->nreq; i++)
        if (s->req[i].code == status && strcmp(s->req[i].op, op) == 0)
            break;
    if (i == s->nreq && s->nreq < S3_REQ_SLOTS) {
        s->req[i].op = op;
        s->req[i].code = status;
        s->req[i].n = 0;
        s->nreq++;
    }
    if (i < s->nreq)
        s->req[i].n++;
    pthread_mutex_unlock(&s->node->mu);
}

void sink_status_update(s3_qtask *t)
{
    s3_node *n = t->node;
    pthread_mutex_lock(&n->mu);
    s3_qstatus *st = &t->st;
    st->state = t->state;
    pthread_mutex_lock(&t->lease_mu);
    st->owned = t->held && !t->lease_lost;
    pthread_mutex_unlock(&t->lease_mu);
    st->k = t->committed.k;
    st->t_end = t->committed.t_end;
    int running = st->owned && (t->state == Q_FILLING || t->state == Q_INTENT || t->state == Q_UPLOAD ||
                                t->state == Q_COMMIT || t->state == Q_RESTORING);
    if (running) {
        st->safe_time = t->safe_time;
        st->now_us = t->now_us;
        if (t->buf.n == 0 && !t->pend.active && t->nlost == 0)
            st->complete_through = t->w.read_to;
        else
            st->complete_through = t->committed.t_end;
        st->lag_reported_ms = mono_ms();
    } else {
        st->safe_time = 0;
        st->complete_through = 0;
    }
    st->buffered = t->buf.bytes;
    st->partitions = t->npos;
    st->ckpt_k = t->last_ckpt_k;
    pthread_mutex_unlock(&n->mu);
}

void sink_set_error(s3_qtask *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&t->node->mu);
    int repeat = strcmp(t->st.last_error, msg) == 0;
    snprintf(t->st.last_error, sizeof t->st.last_error, "%s", msg);
    t->st.last_error_ms = wall_us() / 1000;
    pthread_mutex_unlock(&t->node->mu);
    if (!repeat)
        log_warn(S3_LOG, "queue=%s: %s", t->queue, msg);
}

uint64_t node_held_count(s3_node *n)
{
    uint64_t held = 0;
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < n->ntasks; i++)
        held += n->tasks[i]->st.owned || n->tasks[i]->st.state == Q_RESTORING;
    pthread_mutex_unlock(&n->mu);
    return held;
}

void sink_share(const s3_qtask *me, int *held, int *share)
{
    s3_sink *s = me->sink;
    s3_node *n = s->node;
    pthread_mutex_lock(&n->mu);
    int h = 0, queues = 0;
    for (int i = 0; i < n->ntasks; i++) {
        const s3_qtask *t = n->tasks[i];
        if (t->sink != s)
            continue;
        if (t->st.owned)
            h++;
        if (t->st.state != Q_MISSING || t == me)
            queues++;
    }
    int nodes = s->nodes > 0 ? s->nodes : 1;
    *held = h;
    *share = (queues + nodes - 1) / nodes;
    pthread_mutex_unlock(&n->mu);
}

/* Placement (spec "The queues spread over the nodes by themselves"): the fair share is
 * ceil(queues / nodes); a node that has held more than its share for a whole TTL gives back
 * one queue at a time, the one with the least buffered, after draining it as a stop would,
 * and the next only once another node holds the last one (or a TTL passed). Keeper thread. */
static void rebalance(s3_node *n, s3_sink *s)
{
    uint64_t now = mono_ms();
    uint64_t ttl = (uint64_t)n->k.lease_ttl_ms;
    pthread_mutex_lock(&n->mu);
    int queues = 0, held = 0;
    s3_qtask *least = NULL, *giving = NULL;
    for (int i = 0; i < n->ntasks; i++) {
        s3_qtask *t = n->tasks[i];
        if (t->sink != s || t->st.state == Q_MISSING)
            continue;
        queues++;
        if (s->giving_back[0] && strcmp(t->queue, s->giving_back) == 0)
            giving = t;
        if (!t->st.owned)
            continue;
        held++;
        if (t->st.state == Q_FILLING && !t->give_back && (!least || t->st.buffered < least->st.buffered))
            least = t;
    }
    int nodes = s->nodes > 0 ? s->nodes : 1;
    s->share = queues ? (queues + nodes - 1) / nodes : 0;
    if (s->giving_back[0] && (!giving || giving->st.state == Q_HELD ||
                              (!giving->give_back && now - s->gave_back_at_ms > ttl)))
        s->giving_back[0] = '\0';
    if (s->share > 0 && held > s->share && !atomic_load(&n->stopping) && !atomic_load(&s->retiring)) {
        if (!s->over_share_since_ms) {
            s->over_share_since_ms = now;
        } else if (now - s->over_share_since_ms >= ttl && !s->giving_back[0] && least) {
            least->give_back = 1;
            least->due_ms = now;
            snprintf(s->giving_back, sizeof s->giving_back, "%s", least->queue);
            s->gave_back_at_ms = now;
            log_info(S3_LOG, "holding %d queues, more than the share of %d (%d queues, %d nodes): giving back %s", held,
                     s->share, queues, nodes, least->queue);
            pthread_cond_broadcast(&n->cv);
        }
    } else {
        s->over_share_since_ms = 0;
    }
    pthread_mutex_unlock(&n->mu);
}

int node_memory_pressure(s3_node *n, const s3_qtask *t)
{
    uint64_t limit = (uint64_t)n->k.memory_mb << 20;
    if (atomic_load(&n->buffered_total) < limit || t->buf.bytes == 0)
        return 0;
    int largest = 1;
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < n->ntasks; i++)
        if (n->tasks[i] != t && n->tasks[i]->st.buffered > t->buf.bytes)
            largest = 0;
    pthread_mutex_unlock(&n->mu);
    return largest;
}

/* ---- threads ---- */

static void name_thread(void)
{
    pthread_setname_np(pthread_self(), "queen-s3");
}

static int all_finished(s3_node *n)
{
    for (int i = 0; i < n->ntasks; i++)
        if (!n->tasks[i]->finished)
            return 0;
    return 1;
}

static void timed_wait(s3_node *n, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&n->cv, &n->mu, &ts);
}

int node_read_acquire(s3_node *n, int wait)
{
    int got = 0, waited = 0;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        if (n->reads_in_flight < n->k.fetch_concurrency) {
            n->reads_in_flight++;
            if (n->reads_in_flight > n->reads_peak)
                n->reads_peak = n->reads_in_flight;
            got = 1;
            break;
        }
        if (!waited)
            n->reads_waited++;
        waited = 1;
        if (!wait || n->hard_stop)
            break;
        timed_wait(n, 100);
    }
    pthread_mutex_unlock(&n->mu);
    return got;
}

void node_read_release(s3_node *n)
{
    pthread_mutex_lock(&n->mu);
    n->reads_in_flight--;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

static void *worker_main(void *arg)
{
    s3_worker *w = arg;
    s3_node *n = w->node;
    name_thread();
    pthread_mutex_lock(&n->mu);
    for (;;) {
        if (n->hard_stop)
            break;
        int stopping = atomic_load(&n->stopping);
        if (stopping && all_finished(n))
            break;
        uint64_t now = mono_ms();
        s3_qtask *pick = NULL;
        uint64_t next = now + 1000;
        for (int i = 0; i < n->ntasks; i++) {
            s3_qtask *t = n->tasks[i];
            if (t->running || t->finished)
                continue;
            if (t->sink->bucket_state != 1) {
                /* no queue starts before the bucket answered the probe */
                if (stopping || atomic_load(&t->sink->retiring))
                    t->finished = 1;
                continue;
            }
            if (t->due_ms <= now && (!pick || t->due_ms < pick->due_ms))
                pick = t;
            else if (t->due_ms < next)
                next = t->due_ms;
        }
        if (!pick) {
            if (stopping && all_finished(n))
                break;
            timed_wait(n, next > now ? next - now : 1);
            continue;
        }
        pick->running = 1;
        pthread_mutex_unlock(&n->mu);
        uint64_t delay = qtask_step(pick, w);
        pthread_mutex_lock(&n->mu);
        pick->running = 0;
        if (delay == UINT64_MAX)
            pick->finished = 1;
        else
            pick->due_ms = mono_ms() + delay;
        /* a stop wakes tasks that sleep a long time */
        if (task_stopping(pick) && pick->due_ms > mono_ms() + 100 && !pick->finished)
            pick->due_ms = mono_ms() + 100;
        pthread_cond_broadcast(&n->cv);
    }
    n->workers_done++;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    sinkdb_close(&w->db);
    free(w);
    return NULL;
}

static void probe_bucket(s3_node *n, s3_sink *s)
{
    if (!s->keeper_s3) {
        /* one attempt per probe, bounded: the keeper backs off itself, and it must not sit in
         * a probe while leases of other sinks need refreshing */
        s3_config probe = s->s3;
        probe.max_attempts = 1;
        probe.timeout_ms = 5000;
        s->keeper_s3 = s3_client_new(&probe, sink_observe_request, s);
    }
    s3_result r;
    s3_result_init(&r);
    int rc = s3_head_bucket(s->keeper_s3, &r);
    char msg[1100] = "";
    if (rc < 0) {
        const char *hint = r.status == 403   ? "check QUEEN_S3_ACCESS_KEY and QUEEN_S3_SECRET_KEY, and that they may "
                                               "s3:ListBucket, s3:PutObject and s3:GetObject on the prefix"
                           : r.status == 404 ? "the bucket does not exist: create it, or check QUEEN_S3_BUCKET and "
                                               "QUEEN_S3_PATH_STYLE (most gateways need path-style)"
                           : r.status == 0   ? "nothing answered: check QUEEN_S3_ENDPOINT"
                                             : "the store refused the probe";
        snprintf(msg, sizeof msg, "cannot reach the bucket %s at %s: %s%s(HTTP %ld); %s", s->c.bucket, s->c.endpoint,
                 r.error[0] ? r.error : "", r.error[0] ? " " : "", r.status, hint);
    }
    s3_result_free(&r);
    pthread_mutex_lock(&n->mu);
    s->bucket_checked_ms = wall_us() / 1000;
    if (rc == 0) {
        if (s->bucket_state != 1)
            log_info(S3_LOG, "bucket %s answers; starting the queues", s->c.bucket);
        s->bucket_state = 1;
        s->bucket_error[0] = '\0';
        s->phase = SP_RUNNING;
        s->error[0] = '\0';
        pthread_cond_broadcast(&n->cv);
    } else {
        if (s->bucket_state != 0 || strcmp(s->bucket_error, msg) != 0)
            log_error(S3_LOG, "%s; retrying", msg);
        s->bucket_state = 0;
        snprintf(s->bucket_error, sizeof s->bucket_error, "%s", msg);
        snprintf(s->error, sizeof s->error, "%s", msg);
        s->phase = SP_BACKOFF;
        s->next_probe_ms = mono_ms() + (uint64_t)s->probe_backoff_ms;
        s->probe_backoff_ms = s->probe_backoff_ms * 2 > S3_BACKOFF_MAX_MS ? S3_BACKOFF_MAX_MS : s->probe_backoff_ms * 2;
    }
    pthread_mutex_unlock(&n->mu);
}

static void presence(s3_node *n, s3_sink *s, sinkdb *db, int leave)
{
    buf key, doc, prefix;
    buf_init(&key, 0);
    buf_init(&doc, 0);
    buf_init(&prefix, 0);
    s3_kv_presence_key(&key, s->c.sink, n->k.instance);
    kv_outcome o;
    if (leave) {
        if (!s->presence_written)
            goto out;
        kv_op op = kv_op_delete(S3_KV_NAMESPACE, buf_cstr(&key));
        if (sinkdb_kv(db, s->c.tenant, &op, 1, &o) == 0)
            kv_outcome_clear(&o);
        goto out;
    }
    s3_lease_doc d;
    memset(&d, 0, sizeof d);
    snprintf(d.instance, sizeof d.instance, "%s", n->k.instance);
    snprintf(d.incarnation, sizeof d.incarnation, "%s", s->incarnation);
    d.since_ms = wall_us() / 1000;
    s3_lease_doc_json(&doc, &d);
    kv_op op = kv_op_put(S3_KV_NAMESPACE, buf_cstr(&key), buf_cstr(&doc), n->k.lease_ttl_ms);
    if (sinkdb_kv(db, s->c.tenant, &op, 1, &o) == 0) {
        kv_outcome_clear(&o);
        s->presence_written = 1;
    }
    s3_kv_presence_prefix(&prefix, s->c.sink);
    int64_t count;
    if (sinkdb_kv_count(db, s->c.tenant, S3_KV_NAMESPACE, buf_cstr(&prefix), &count) == 0) {
        pthread_mutex_lock(&n->mu);
        s->nodes = (int)count;
        pthread_mutex_unlock(&n->mu);
    }
out:
    buf_free(&key);
    buf_free(&doc);
    buf_free(&prefix);
}

/* ---- the control plane's tenant sinks (keeper thread) ---- */

static s3_sink *cp_sink_of(s3_node *n, const uint8_t tenant[16])
{
    for (int i = 0; i < n->nsinks; i++)
        if (strcmp(n->sinks[i]->source, "cp") == 0 && memcmp(n->sinks[i]->c.tenant, tenant, 16) == 0)
            return n->sinks[i];
    return NULL;
}

static int row_wanted(const sinkdb_cp_row *row)
{
    return row->enabled && strcmp(row->effective, "suspended") != 0;
}

/* Stops a sink at run time: its tasks drain as at SIGTERM (a window in its commit sequence is
 * finished, the one filling committed when worth it, every lease given back); the keeper frees
 * it once every task is done (reap). */
static void sink_retire(s3_node *n, s3_sink *s, const char *why)
{
    pthread_mutex_lock(&n->mu);
    atomic_store(&s->retiring, 1);
    uint64_t now = mono_ms();
    for (int i = 0; i < n->ntasks; i++)
        if (n->tasks[i]->sink == s && n->tasks[i]->due_ms > now)
            n->tasks[i]->due_ms = now;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    if (!s->inert)
        log_info(S3_LOG, "tenant=%s sink=%s: stopping (%s): its queues drain and give their leases back",
                 s->c.tenant_text, s->c.sink, why);
}

/* Frees every retiring sink whose tasks are all done. Returns how many. */
static int reap(s3_node *n, sinkdb *db)
{
    int reaped = 0;
    for (int i = 0; i < n->nsinks;) {
        s3_sink *s = n->sinks[i];
        if (!atomic_load(&s->retiring)) {
            i++;
            continue;
        }
        pthread_mutex_lock(&n->mu);
        int done = 1;
        for (int j = 0; j < n->ntasks && done; j++)
            if (n->tasks[j]->sink == s && (!n->tasks[j]->finished || n->tasks[j]->running))
                done = 0;
        if (!done) {
            pthread_mutex_unlock(&n->mu);
            i++;
            continue;
        }
        s3_qtask **gone = NULL;
        int ngone = 0, w = 0;
        for (int j = 0; j < n->ntasks; j++) {
            if (n->tasks[j]->sink == s) {
                gone = xrealloc(gone, (size_t)(ngone + 1) * sizeof *gone);
                gone[ngone++] = n->tasks[j];
            } else {
                n->tasks[w++] = n->tasks[j];
            }
        }
        n->ntasks = w;
        memmove(&n->sinks[i], &n->sinks[i + 1], (size_t)(n->nsinks - i - 1) * sizeof *n->sinks);
        n->nsinks--;
        pthread_mutex_unlock(&n->mu);
        if (!s->inert && !n->hard_stop)
            presence(n, s, db, 1);
        for (int j = 0; j < ngone; j++)
            qtask_free(gone[j]);
        free(gone);
        if (!s->inert)
            log_info(S3_LOG, "tenant=%s sink=%s: stopped", s->c.tenant_text, s->c.sink);
        sink_free(s);
        reaped++;
    }
    return reaped;
}

/* The sink a control-plane row asks for: running, or inert (stopped: disabled or suspended;
 * error: the settings or the secret cannot be used on this node). */
static s3_sink *cp_build(s3_node *n, const sinkdb_cp_row *row)
{
    int wanted = row_wanted(row);
    s3_sink_doc doc;
    s3_doc_refusal why;
    char msg[1100] = "";
    s3_sink *s;
    if (s3_sink_doc_parse(row->config, strlen(row->config), row->tenant, 1, &doc, &why) < 0) {
        s3_sink_config c;
        memset(&c, 0, sizeof c);
        memcpy(c.tenant, row->tenant, 16);
        format_uuid_text(row->tenant, c.tenant_text);
        c.sink = xstrdup(S3_DEFAULT_SINK);
        c.endpoint = xstrdup("");
        c.region = xstrdup("");
        c.bucket = xstrdup("");
        c.prefix = xstrdup("");
        c.access_key = xstrdup("");
        snprintf(msg, sizeof msg, "the stored settings are refused: %s", why.msg);
        log_error(S3_LOG, "tenant=%s: %s; running none of its queues", c.tenant_text, msg);
        s = sink_make(n, &c, "cp", SP_ERROR, msg);
    } else if (!wanted) {
        s = sink_make(n, &doc.cfg, "cp", SP_STOPPED,
                      !row->enabled ? "the sink is disabled (enabled: false)" : "the cluster is suspended");
        s3_sink_doc_free(&doc);
    } else {
        const seal_key *k = seal_node_key();
        buf sealed, plain;
        buf_init(&sealed, 0);
        buf_init(&plain, 0);
        if (!row->sealed) {
            snprintf(msg, sizeof msg, "no secret key is stored for the tenant's sink");
        } else if (b64_decode_buf(row->sealed, strlen(row->sealed), &sealed, 0) != 0) {
            snprintf(msg, sizeof msg, "the stored secret key is not a sealed envelope");
        } else {
            enum seal_result r = seal_open(k, sealed.data, sealed.len, &plain);
            if (r != SEAL_OK) {
                char d[400];
                seal_describe(k, sealed.data, sealed.len, r, d, sizeof d);
                snprintf(msg, sizeof msg,
                         "cannot open the tenant's S3 secret key: %s (every node needs the QUEEN_ENCRYPTION_KEY that "
                         "sealed it)",
                         d);
            } else {
                doc.cfg.secret_key = xstrndup(plain.data, plain.len);
                memset(plain.data, 0, plain.len);
            }
        }
        buf_free(&sealed);
        buf_free(&plain);
        if (msg[0])
            log_error(S3_LOG, "tenant=%s: %s; running none of its queues", doc.cfg.tenant_text, msg);
        s = sink_make(n, &doc.cfg, "cp", msg[0] ? SP_ERROR : SP_STARTING, msg);
        s3_sink_doc_free(&doc);
    }
    s->cp_updated_us = row->updated_us;
    s->cp_wanted = wanted;
    return s;
}

/* Reads the control plane's rows and makes the node's tenant sinks match: one per row, rebuilt
 * when its row was written (updated_at moved) or its cluster's status crossed suspended; a sink
 * whose row is gone is stopped. A replacement starts once the sink it replaces is freed. */
static void cp_read(s3_node *n, sinkdb *db)
{
    sinkdb_cp_row *rows;
    int nr;
    if (sinkdb_cp_sinks(db, &rows, &nr) < 0) {
        /* status shows a sentence of its own (no answer carries PostgreSQL's text); the log
         * has the database's */
        const char *what = db->c ? "cannot read the control plane's sinks: the query failed (the node's log has the "
                                   "details); the tenant sinks stay as they are"
                                 : "cannot read the control plane's sinks: PostgreSQL is unreachable; the tenant sinks "
                                   "stay as they are";
        pthread_mutex_lock(&n->mu);
        int repeat = strcmp(n->cp_error, what) == 0;
        snprintf(n->cp_error, sizeof n->cp_error, "%s", what);
        pthread_mutex_unlock(&n->mu);
        if (!repeat)
            log_warn(S3_LOG, "%s; the tenant sinks stay as they are", db->err);
        return;
    }
    pthread_mutex_lock(&n->mu);
    int had_error = n->cp_error[0] != '\0';
    n->cp_error[0] = '\0';
    pthread_mutex_unlock(&n->mu);
    if (had_error)
        log_info(S3_LOG, "the control plane's sinks are read again");
    for (int i = 0; i < n->nsinks; i++) {
        s3_sink *s = n->sinks[i];
        if (strcmp(s->source, "cp") != 0 || atomic_load(&s->retiring))
            continue;
        const sinkdb_cp_row *row = NULL;
        for (int r = 0; r < nr && !row; r++)
            if (memcmp(rows[r].tenant, s->c.tenant, 16) == 0)
                row = &rows[r];
        if (!row)
            sink_retire(n, s, "its control-plane row is gone");
        else if (row->updated_us != s->cp_updated_us)
            sink_retire(n, s, "its control-plane row was written: rebuilding it");
        else if (row_wanted(row) != s->cp_wanted)
            sink_retire(n, s, row_wanted(row) ? "its cluster may run it again" : "its cluster is suspended");
    }
    for (int r = 0; r < nr; r++) {
        if (cp_sink_of(n, rows[r].tenant))
            continue; /* running, or still draining before its replacement starts */
        s3_sink *s = cp_build(n, &rows[r]);
        pthread_mutex_lock(&n->mu);
        sink_insert(n, s);
        pthread_cond_broadcast(&n->cv);
        pthread_mutex_unlock(&n->mu);
    }
    sinkdb_cp_rows_free(rows, nr);
}

static void *keeper_main(void *arg)
{
    s3_node *n = arg;
    name_thread();
    sinkdb db;
    sinkdb_init(&db, n->o.conninfo, n->o.statement_timeout_ms, n->o.connect_timeout_ms);
    s3_qtask **snap = NULL;
    int nsnap = 0;
    for (;;) {
        uint64_t now = mono_ms();
        int stopping = atomic_load(&n->stopping);
        if (n->control_plane && !stopping && !n->hard_stop) {
            if (reap(n, &db) > 0)
                atomic_store(&n->cp_poke, 1); /* a replacement may be waiting */
            if (atomic_exchange(&n->cp_poke, 0) || now >= n->next_cp_ms) {
                cp_read(n, &db);
                n->next_cp_ms = now + S3_CP_READ_MS;
            }
        }
        for (int i = 0; i < n->nsinks && !n->hard_stop; i++) {
            s3_sink *s = n->sinks[i];
            if (s->inert || atomic_load(&s->retiring)) {
                if (s->inert)
                    continue;
                if (s->bucket_state == 1)
                    rebalance(n, s);
                continue;
            }
            pthread_mutex_lock(&n->mu);
            int state = s->bucket_state;
            pthread_mutex_unlock(&n->mu);
            if (state != 1 && !stopping && now >= s->next_probe_ms && s->phase != SP_ERROR)
                probe_bucket(n, s);
            if (s->c.queues_all && state == 1 && !stopping && now >= s->next_list_ms) {
                char **names;
                int nn;
                if (sinkdb_queues(&db, s->c.tenant, &names, &nn) == 0) {
                    pthread_mutex_lock(&n->mu);
                    for (int q = 0; q < nn; q++)
                        add_task(s, names[q]);
                    pthread_cond_broadcast(&n->cv);
                    pthread_mutex_unlock(&n->mu);
                    sinkdb_names_free(names, nn);
                }
                s->next_list_ms = now + S3_RELIST_MS;
            }
            if (!stopping && now >= s->next_presence_ms) {
                presence(n, s, &db, 0);
                s->next_presence_ms = now + (uint64_t)n->k.lease_ttl_ms / 3;
            }
            if (state == 1)
                rebalance(n, s);
        }
        /* lease refreshes */
        pthread_mutex_lock(&n->mu);
        if (nsnap < n->ntasks)
            snap = xrealloc(snap, (size_t)n->ntasks * sizeof *snap);
        nsnap = n->ntasks;
        if (nsnap)
            memcpy(snap, n->tasks, (size_t)nsnap * sizeof *snap);
        int done = n->workers_done == n->nworkers;
        pthread_mutex_unlock(&n->mu);
        for (int i = 0; i < nsnap && !n->hard_stop; i++)
            qtask_refresh_lease(snap[i], &db);
        if (done || n->hard_stop)
            break;
        pthread_mutex_lock(&n->mu);
        timed_wait(n, 200);
        pthread_mutex_unlock(&n->mu);
    }
    if (!n->hard_stop)
        for (int i = 0; i < n->nsinks; i++)
            if (!n->sinks[i]->inert)
                presence(n, n->sinks[i], &db, 1);
    for (int i = 0; i < n->nsinks; i++) {
        s3_client_free(n->sinks[i]->keeper_s3);
        n->sinks[i]->keeper_s3 = NULL;
    }
    free(snap);
    sinkdb_close(&db);
    pthread_mutex_lock(&n->mu);
    n->keeper_done = 1;
    for (int i = 0; i < n->nsinks; i++)
        n->sinks[i]->phase = SP_STOPPED;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

int s3_node_start(s3_node *n)
{
    if (n->k.nignored > 0)
        log_warn(S3_LOG, "%s%s%s set but ignored: the sink runs inside the broker, which serves its status and metrics "
                         "and owns the log format",
                 n->k.ignored[0], n->k.nignored > 1 ? " and " : "", n->k.nignored > 1 ? n->k.ignored[1] : "");
    if (n->k.crash_at != S3_CRASH_NEVER)
        log_warn(S3_LOG, "QUEEN_S3_CRASH_AT=%s is set: this node kills itself at that point of the commit sequence",
                 s3_crash_name(n->k.crash_at));
    srand((unsigned)(mono_us() ^ (uint64_t)getpid()));
    n->started = 1;
    int workers = S3_WORKERS;
    if (n->k.fetch_concurrency > workers)
        workers = n->k.fetch_concurrency > S3_MAX_WORKERS ? S3_MAX_WORKERS : (int)n->k.fetch_concurrency;
    for (int i = 0; i < workers; i++) {
        s3_worker *w = xcalloc(1, sizeof *w);
        w->node = n;
        w->id = i;
        sinkdb_init(&w->db, n->o.conninfo, n->o.statement_timeout_ms, n->o.connect_timeout_ms);
        if (pthread_create(&n->workers[i], NULL, worker_main, w) != 0) {
            log_error(S3_LOG, "cannot start a queen-s3 thread: %s", strerror(errno));
            sinkdb_close(&w->db);
            free(w);
            break;
        }
        n->nworkers++;
    }
    if (pthread_create(&n->keeper, NULL, keeper_main, n) != 0) {
        log_error(S3_LOG, "cannot start the queen-s3 keeper thread: %s", strerror(errno));
        return -1;
    }
    n->keeper_started = 1;
    return n->nworkers > 0 ? 0 : -1;
}

void s3_node_stop(s3_node *n)
{
    if (atomic_exchange(&n->stopping, 1))
        return;
    log_info(S3_LOG, "stopping: no new reads; windows in flight are finished, leases given back");
    pthread_mutex_lock(&n->mu);
    uint64_t now = mono_ms();
    for (int i = 0; i < n->ntasks; i++)
        if (n->tasks[i]->due_ms > now)
            n->tasks[i]->due_ms = now;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

int s3_node_drained(s3_node *n)
{
    pthread_mutex_lock(&n->mu);
    int d = !n->started || (n->workers_done == n->nworkers && (!n->keeper_started || n->keeper_done));
    pthread_mutex_unlock(&n->mu);
    return d;
}

void s3_node_free(s3_node *n)
{
    if (!n)
        return;
    if (n->started && !s3_node_drained(n)) {
        n->hard_stop = 1;
        pthread_mutex_lock(&n->mu);
        pthread_cond_broadcast(&n->cv);
        pthread_mutex_unlock(&n->mu);
        for (int i = 0; i < 100 && !s3_node_drained(n); i++)
            usleep(10000);
        if (!s3_node_drained(n)) {
            log_warn(S3_LOG, "the sink did not stop within its grace; the next owner redoes any window in flight");
            return; /* threads still blocked die with the process */
        }
    }
    if (n->started) {
        for (int i = 0; i < n->nworkers; i++)
            pthread_join(n->workers[i], NULL);
        if (n->keeper_started)
            pthread_join(n->keeper, NULL);
    }
    for (int i = 0; i < n->ntasks; i++)
        qtask_free(n->tasks[i]);
    free(n->tasks);
    for (int i = 0; i < n->nsinks; i++)
        sink_free(n->sinks[i]);
    free(n->sinks);
    s3_node_knobs_free(&n->k);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    free((char *)n->o.conninfo);
    free((char *)n->o.node_id);
    free(n);
}

/* ---- status ---- */

static void json_iso(buf *b, int64_t us)
{
    if (us <= 0) {
        buf_puts(b, "null");
        return;
    }
    char iso[32];
    format_iso_us(us, iso);
    jw_cstr(b, iso);
}

static void json_seconds(buf *b, int64_t us)
{
    buf_printf(b, "%.6f", (double)(us < 0 ? 0 : us) / 1e6);
}

static const char *phase_name(enum sink_phase p)
{
    static const char *const names[] = {"starting", "running", "backoff", "stopped", "error"};
    return names[p];
}

static int64_t limit_ms_of(const s3_sink *s)
{
    int64_t l = s->c.max_window_ms * S3_STALE_WINDOWS;
    return l < S3_MIN_STALE_MS ? S3_MIN_STALE_MS : l;
}

/* The lag of a running queue as of now, in ms: the last report grown by the time since. */
static int64_t stale_ms_of(const s3_qtask *t, uint64_t now)
{
    const s3_qstatus *st = &t->st;
    if (st->lag_reported_ms && st->complete_through && st->safe_time)
        return (st->safe_time - st->complete_through) / 1000 + (int64_t)(now - st->lag_reported_ms);
    return (int64_t)(now - st->running_since_ms);
}

static void queue_json(buf *b, const s3_qtask *t)
{
    const s3_qstatus *st = &t->st;
    buf_puts(b, "{\"queue\":");
    jw_string(b, t->queue, t->qlen);
    buf_puts(b, ",\"name\":");
    jw_string(b, t->queue, t->qlen);
    buf_printf(b, ",\"ownedHere\":%s,\"heldBy\":", st->owned ? "true" : "false");
    if ((st->owned || st->state == Q_HELD) && st->held_by[0])
        jw_cstr(b, st->held_by);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"state\":");
    jw_cstr(b, qstate_name(st->state));
    buf_printf(b, ",\"k\":%llu,\"tEnd\":", (unsigned long long)st->k);
    json_iso(b, st->k > 0 ? st->t_end : 0);
    buf_puts(b, ",\"completeThrough\":");
    json_iso(b, st->complete_through);
    buf_puts(b, ",\"safeTime\":");
    json_iso(b, st->safe_time);
    buf_puts(b, ",\"lagSeconds\":");
    if (st->complete_through && st->safe_time)
        json_seconds(b, st->safe_time - st->complete_through);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"safeLagSeconds\":");
    if (st->safe_time && st->now_us)
        json_seconds(b, st->now_us - st->safe_time);
    else
        buf_puts(b, "null");
    buf_printf(b,
               ",\"redo\":%s,\"bufferedBytes\":%llu,\"partitions\":%u,\"windowsCommitted\":%llu,\"records\":%llu,"
               "\"bytes\":%llu,\"recordsLost\":%llu,\"lastError\":",
               st->redo ? "true" : "false", (unsigned long long)st->buffered, st->partitions,
               (unsigned long long)st->windows, (unsigned long long)st->records, (unsigned long long)st->bytes,
               (unsigned long long)st->lost);
    if (st->last_error[0]) {
        buf_puts(b, "{\"at\":");
        json_iso(b, st->last_error_ms * 1000);
        buf_puts(b, ",\"message\":");
        jw_cstr(b, st->last_error);
        buf_putc(b, '}');
    } else {
        buf_puts(b, "null");
    }
    buf_putc(b, '}');
}

static void sink_json(buf *b, s3_node *n, s3_sink *s)
{
    uint64_t now = mono_ms();
    int held = 0, running = 0;
    const s3_qtask *stale = NULL;
    int64_t stale_ms = 0, limit = limit_ms_of(s);
    for (int i = 0; i < n->ntasks; i++) {
        const s3_qtask *t = n->tasks[i];
        if (t->sink != s)
            continue;
        if (t->st.owned) {
            held++;
            running++;
            int64_t sm = stale_ms_of(t, now);
            if (sm > limit && (!stale || strcmp(t->queue, stale->queue) < 0)) {
                stale = t;
                stale_ms = sm;
            }
        }
    }
    int health_ok = stale == NULL;
    int bucket_ok = s->bucket_state != 0;
    buf_puts(b, "{\"tenant\":");
    jw_cstr(b, s->c.tenant_text);
    buf_puts(b, ",\"source\":");
    jw_cstr(b, s->source);
    buf_puts(b, ",\"phase\":");
    jw_cstr(b, phase_name(s->phase));
    buf_puts(b, ",\"error\":");
    if (s->error[0])
        jw_cstr(b, s->error);
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"ok\":%s,\"sink\":", health_ok && bucket_ok && s->bucket_state == 1 ? "true" : "false");
    jw_cstr(b, s->c.sink);
    buf_puts(b, ",\"instance\":");
    jw_cstr(b, n->k.instance);
    buf_printf(b, ",\"version\":\"%s\",\"running\":%s,\"bucket\":{\"reachable\":", S3_WRITER_VERSION,
               s->phase == SP_RUNNING ? "true" : "false");
    buf_puts(b, s->bucket_state < 0 ? "null" : s->bucket_state ? "true" : "false");
    buf_puts(b, ",\"error\":");
    if (s->bucket_error[0])
        jw_cstr(b, s->bucket_error);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"checkedAt\":");
    json_iso(b, s->bucket_checked_ms * 1000);
    buf_puts(b, ",\"name\":");
    jw_cstr(b, s->c.bucket);
    buf_puts(b, ",\"endpoint\":");
    jw_cstr(b, s->c.endpoint);
    buf_puts(b, ",\"region\":");
    jw_cstr(b, s->c.region);
    buf_puts(b, ",\"prefix\":");
    jw_cstr(b, s->c.prefix);
    buf_puts(b, "},\"format\":");
    jw_cstr(b, s3_format_name(s->c.format));
    buf_puts(b, ",\"compression\":");
    jw_cstr(b, s3_compression_name(s->codec));
    buf_puts(b, ",\"layout\":");
    jw_cstr(b, s3_layout_name(s->c.layout));
    buf_puts(b, ",\"align\":");
    jw_cstr(b, s3_align_name(s->c.align));
    if (health_ok) {
        buf_printf(b, ",\"health\":{\"ok\":true,\"queues\":%d}", running);
    } else {
        buf_puts(b, ",\"health\":{\"ok\":false,\"queue\":");
        jw_string(b, stale->queue, stale->qlen);
        buf_printf(b, ",\"staleMs\":%lld,\"limitMs\":%lld}", (long long)stale_ms, (long long)limit);
    }
    int nodes = s->nodes > 0 ? s->nodes : 1;
    int placed = 0;
    for (int i = 0; i < n->ntasks; i++)
        if (n->tasks[i]->sink == s && n->tasks[i]->st.state != Q_MISSING)
            placed++;
    int share = placed ? (placed + nodes - 1) / nodes : 0;
    buf_puts(b, ",\"placement\":{\"givingBack\":");
    if (s->giving_back[0])
        jw_cstr(b, s->giving_back);
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"held\":%d,\"nodes\":%d,\"queues\":%d,\"share\":%d}", held, nodes, placed, share);
    uint64_t buffered = 0;
    for (int i = 0; i < n->ntasks; i++)
        if (n->tasks[i]->sink == s)
            buffered += n->tasks[i]->st.buffered;
    buf_printf(b, ",\"memory\":{\"bufferedBytes\":%llu,\"limitBytes\":%llu}", (unsigned long long)buffered,
               (unsigned long long)((uint64_t)n->k.memory_mb << 20));
    buf_puts(b, ",\"queues\":[");
    int first = 1;
    for (int i = 0; i < n->ntasks; i++) {
        if (n->tasks[i]->sink != s)
            continue;
        if (!first)
            buf_putc(b, ',');
        first = 0;
        queue_json(b, n->tasks[i]);
    }
    buf_puts(b, "]}");
}

void s3_node_status_json(s3_node *n, buf *out, const uint8_t *tenant)
{
    pthread_mutex_lock(&n->mu);
    const char *phase = !n->started ? "starting" : atomic_load(&n->stopping) ? (n->keeper_done ? "stopped" : "stopping")
                                                                               : "running";
    buf_puts(out, "{\"phase\":");
    jw_cstr(out, phase);
    buf_printf(out, ",\"threads\":%d,\"instance\":", n->nworkers + (n->keeper_started ? 1 : 0));
    jw_cstr(out, n->k.instance);
    buf_puts(out, ",\"controlPlaneError\":");
    if (n->cp_error[0])
        jw_cstr(out, n->cp_error);
    else
        buf_puts(out, "null");
    buf_printf(out, ",\"memory\":{\"bufferedBytes\":%llu,\"limitBytes\":%llu}",
               (unsigned long long)atomic_load(&n->buffered_total), (unsigned long long)((uint64_t)n->k.memory_mb << 20));
    buf_printf(out, ",\"reads\":{\"limit\":%lld,\"inFlight\":%d,\"peak\":%d,\"waited\":%llu},\"sinks\":[",
               (long long)n->k.fetch_concurrency, n->reads_in_flight, n->reads_peak, (unsigned long long)n->reads_waited);
    int listed = 0;
    for (int i = 0; i < n->nsinks; i++) {
        if (tenant && memcmp(tenant, n->sinks[i]->c.tenant, 16) != 0)
            continue;
        if (listed++)
            buf_putc(out, ',');
        sink_json(out, n, n->sinks[i]);
    }
    buf_puts(out, "]}");
    pthread_mutex_unlock(&n->mu);
}

/* ---- metrics ---- */

static void qlabels(buf *b, const s3_qtask *t)
{
    buf_reset(b);
    buf_puts(b, "queue=\"");
    metric_label_escape(b, t->queue, t->qlen);
    buf_putc(b, '"');
    buf_puts(b, t->sink->tenant_label);
}

typedef enum { QM_LAG, QM_SAFE_LAG, QM_BUFFER, QM_PARTS, QM_CKPT_AGE } qgauge;

static int qgauge_value(const s3_qtask *t, qgauge g, double *v)
{
    const s3_qstatus *st = &t->st;
    if (!st->owned)
        return 0; /* a node exports a queue's gauges only while it runs the queue */
    switch (g) {
    case QM_LAG:
        if (!st->complete_through || !st->safe_time)
            return 0;
        *v = (double)(st->safe_time - st->complete_through) / 1e6;
        return 1;
    case QM_SAFE_LAG:
        if (!st->safe_time || !st->now_us)
            return 0;
        *v = (double)(st->now_us - st->safe_time) / 1e6;
        if (*v < 0)
            *v = 0;
        return 1;
    case QM_BUFFER:
        *v = (double)st->buffered;
        return 1;
    case QM_PARTS:
        *v = (double)st->partitions;
        return 1;
    case QM_CKPT_AGE:
        *v = (double)(st->k >= st->ckpt_k ? st->k - st->ckpt_k : 0);
        return 1;
    }
    return 0;
}

void s3_node_metrics(s3_node *n, buf *out)
{
    static const struct {
        const char *name, *help;
        qgauge g;
    } gauges[] = {
        {"queen_s3_lag_seconds", "safeTime minus the stamp below which every record of the queue is in a committed window",
         QM_LAG},
        {"queen_s3_safe_lag_seconds", "how far this node's safeTime trails the database's clock", QM_SAFE_LAG},
        {"queen_s3_buffer_bytes", "bytes buffered for the open window", QM_BUFFER},
        {"queen_s3_discovery_partitions", "partitions the sink tracks for the queue", QM_PARTS},
        {"queen_s3_checkpoint_age_windows", "windows committed since the last checkpoint", QM_CKPT_AGE},
    };
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
        {"queen_s3_windows_committed_total", "windows this node committed", offsetof(s3_qtask, m_windows)},
        {"queen_s3_records_written_total", "records written in committed windows", offsetof(s3_qtask, m_records)},
        {"queen_s3_bytes_written_total", "object bytes written in committed windows", offsetof(s3_qtask, m_bytes)},
        {"queen_s3_records_lost_total", "records retention removed before the sink read them", offsetof(s3_qtask, m_lost)},
        {"queen_s3_fetch_calls_total", "reads of the queue's log", offsetof(s3_qtask, m_fetches)},
        {"queen_s3_commit_precondition_lost_total", "intent or commit batches refused by the fence",
         offsetof(s3_qtask, m_precondition_lost)},
    };
    pthread_mutex_lock(&n->mu);
    buf l;
    buf_init(&l, 0);
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
        metric_help(out, gauges[g].name, "gauge", gauges[g].help);
        for (int i = 0; i < n->ntasks; i++) {
            double v;
            if (qgauge_value(n->tasks[i], gauges[g].g, &v)) {
                qlabels(&l, n->tasks[i]);
                metric_f64(out, gauges[g].name, buf_cstr(&l), v);
            }
        }
    }
    for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
        metric_help(out, counters[c].name, "counter", counters[c].help);
        for (int i = 0; i < n->ntasks; i++) {
            const mcounter *m = (const mcounter *)((const char *)n->tasks[i] + counters[c].off);
            qlabels(&l, n->tasks[i]);
            metric_u64(out, counters[c].name, buf_cstr(&l), mc_get(m));
        }
    }
    metric_help(out, "queen_s3_window_records", "histogram", "records per committed window");
    for (int i = 0; i < n->ntasks; i++) {
        qlabels(&l, n->tasks[i]);
        metric_hist(out, "queen_s3_window_records", buf_cstr(&l), &n->tasks[i]->m_window_records);
    }
    metric_help(out, "queen_s3_window_bytes", "histogram", "object bytes per committed window");
    for (int i = 0; i < n->ntasks; i++) {
        qlabels(&l, n->tasks[i]);
        metric_hist(out, "queen_s3_window_bytes", buf_cstr(&l), &n->tasks[i]->m_window_bytes);
    }
    metric_help(out, "queen_s3_s3_requests_total", "counter", "requests sent to the object store, by operation and status code");
    for (int i = 0; i < n->nsinks; i++) {
        s3_sink *s = n->sinks[i];
        for (int r = 0; r < s->nreq; r++) {
            buf_reset(&l);
            buf_printf(&l, "operation=\"%s\",code=\"%ld\"%s", s->req[r].op, s->req[r].code, s->tenant_label);
            metric_u64(out, "queen_s3_s3_requests_total", buf_cstr(&l), s->req[r].n);
        }
    }
    metric_help(out, "queen_s3_queues_given_back_total", "counter", "queues this node gave back to rebalance");
    for (int i = 0; i < n->nsinks; i++) {
        const char *tl = n->sinks[i]->tenant_label;
        metric_u64(out, "queen_s3_queues_given_back_total", tl[0] ? tl + 1 : "", mc_get(&n->sinks[i]->given_back));
    }
    buf_free(&l);
    pthread_mutex_unlock(&n->mu);
}
