/* notify.c — LISTEN/NOTIFY wake-ups between nodes. */
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "storage/logread.h"

#define NOTIFY_CHANNEL "queen_wake"
#define NOTIFY_COALESCE_MS 5
/* PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; split below that. */
#define NOTIFY_PAYLOAD_MAX 7000

struct notifier {
    uv_loop_t *loop;
    db_pool *db;
    waitq *wq;
    char *node_id;
    db_conn_params params;
    char *conninfo;
    /* listening connection (blocking-free: connect and read driven by uv_poll) */
    PGconn *pg;
    uv_poll_t *poll;
    int fd;
    int state; /* 0 down, 1 connecting, 2 sent LISTEN, 3 listening */
    uv_timer_t retry;
    int backoff_ms;
    /* sending */
    uv_timer_t flush;
    int flush_armed;
    strmap pending; /* lines "<node>\t<tenant>\t<queue>" waiting to be sent */
    arena pending_keys; /* owns the map's keys until the next flush */
    db_req req;
    int sending;
    char *payload; /* owned while req is in flight */
    const char *values[1];
    int stopping;
    uint64_t sent, received;
};

static void listen_start(notifier *n);

/* The retry timer is a member of the notifier, not its start: reach it through data. */
static void on_retry(uv_timer_t *t)
{
    listen_start(t->data);
}

static void poll_closed(uv_handle_t *h)
{
    free(h);
}

static void listen_drop(notifier *n, const char *why)
{
    /* `why` is often PQerrorMessage of the connection closed below: keep a copy */
    char msg[256];
    snprintf(msg, sizeof msg, "%s", why ? why : "");
    if (n->poll) {
        uv_poll_stop(n->poll);
        uv_close((uv_handle_t *)n->poll, poll_closed);
        n->poll = NULL;
    }
    if (n->pg) {
        PQfinish(n->pg);
        n->pg = NULL;
    }
    if (n->state == 3 && why)
        log_warn("notify", "listening connection lost: %s", msg);
    n->state = 0;
    n->fd = -1;
    if (!n->stopping) {
        uv_timer_start(&n->retry, on_retry, (uint64_t)n->backoff_ms, 0);
        n->backoff_ms = MIN(n->backoff_ms * 2, 2000);
    }
}

/* payload lines: "<node>\t<tenant-uuid>\t<queue>" per changed queue, '\n'-separated */
static void handle_payload(notifier *n, const char *p)
{
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *t1 = memchr(p, '\t', len);
        const char *t2 = t1 ? memchr(t1 + 1, '\t', len - (size_t)(t1 + 1 - p)) : NULL;
        if (t1 && t2) {
            size_t nodelen = (size_t)(t1 - p);
            int self = nodelen == strlen(n->node_id) && memcmp(p, n->node_id, nodelen) == 0;
            uuid tenant;
            if (!self && uuid_parse(t1 + 1, (size_t)(t2 - t1 - 1), &tenant) == 0)
                waitq_wake(n->wq, tenant.b, t2 + 1, len - (size_t)(t2 + 1 - p));
        }
        if (!eol)
            break;
        p = eol + 1;
    }
}

static void on_listen_poll(uv_poll_t *h, int status, int events)
{
    notifier *n = h->data;
    (void)events;
    if (n->poll != h)
        return;
    if (status < 0) {
        listen_drop(n, uv_strerror(status));
        return;
    }
    if (n->state == 1) {
        PostgresPollingStatusType st = PQconnectPoll(n->pg);
        if (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING) {
            int fd = PQsocket(n->pg);
            if (fd != n->fd) {
                listen_drop(n, "socket changed during connect");
                return;
            }
            uv_poll_start(n->poll, st == PGRES_POLLING_READING ? UV_READABLE : UV_WRITABLE, on_listen_poll);
            return;
        }
        if (st != PGRES_POLLING_OK) {
            listen_drop(n, PQerrorMessage(n->pg));
            return;
        }
        PQsetnonblocking(n->pg, 1);
        if (!PQsendQuery(n->pg, "LISTEN " NOTIFY_CHANNEL)) {
            listen_drop(n, PQerrorMessage(n->pg));
            return;
        }
        PQflush(n->pg);
        n->state = 2;
        uv_poll_start(n->poll, UV_READABLE, on_listen_poll);
        return;
    }
    if (!PQconsumeInput(n->pg)) {
        listen_drop(n, PQerrorMessage(n->pg));
        return;
    }
    while (!PQisBusy(n->pg)) {
        PGresult *r = PQgetResult(n->pg);
        if (!r)
            break;
        if (n->state == 2) {
            if (PQresultStatus(r) == PGRES_COMMAND_OK) {
                n->state = 3;
                n->backoff_ms = 100;
                log_debug("notify", "listening on %s", NOTIFY_CHANNEL);
                /* anything could have changed while we were not listening */
                waitq_wake_all(n->wq);
            } else {
                char why[256];
                snprintf(why, sizeof why, "%s", PQresultErrorMessage(r));
                PQclear(r);
                listen_drop(n, why);
                return;
            }
        }
        PQclear(r);
    }
    PGnotify *nt;
    while ((nt = PQnotifies(n->pg)) != NULL) {
        n->received++;
        handle_payload(n, nt->extra);
        PQfreemem(nt);
    }
    if (PQstatus(n->pg) == CONNECTION_BAD)
        listen_drop(n, PQerrorMessage(n->pg));
}

static void listen_start(notifier *n)
{
    if (n->stopping)
        return;
    n->pg = PQconnectStartParams(n->params.keys, n->params.vals, 1);
    if (!n->pg || PQstatus(n->pg) == CONNECTION_BAD) {
        listen_drop(n, n->pg ? PQerrorMessage(n->pg) : "out of memory");
        return;
    }
    n->fd = PQsocket(n->pg);
    n->poll = xmalloc(sizeof *n->poll);
    uv_poll_init(n->loop, n->poll, n->fd);
    n->poll->data = n;
    n->state = 1;
    uv_poll_start(n->poll, UV_WRITABLE, on_listen_poll);
}

notifier *notifier_new(uv_loop_t *loop, db_pool *db, const char *conninfo, const char *node_id, waitq *wq,
                       int64_t statement_timeout_ms, int64_t connect_timeout_ms)
{
    notifier *n = xcalloc(1, sizeof *n);
    n->loop = loop;
    n->db = db;
    n->wq = wq;
    n->node_id = xstrdup(node_id);
    n->conninfo = xstrdup(conninfo);
    n->fd = -1;
    n->backoff_ms = 100;
    db_conn_params_init(&n->params, n->conninfo, statement_timeout_ms, connect_timeout_ms);
    strmap_init(&n->pending);
    arena_init(&n->pending_keys);
    uv_timer_init(loop, &n->retry);
    n->retry.data = n;
    uv_timer_init(loop, &n->flush);
    n->flush.data = n;
    listen_start(n);
    return n;
}

static void flush_pending(uv_timer_t *t);

static void on_sent(db_req *d)
{
    notifier *n = d->arg;
    n->sending = 0;
    if (d->err != DB_OK)
        log_debug("notify", "NOTIFY failed: %s", d->errmsg);
    else
        n->sent++;
    db_req_clear(d);
    free(n->payload);
    n->payload = NULL;
    if (n->pending.count && !n->flush_armed && !n->stopping) {
        n->flush_armed = 1;
        uv_timer_start(&n->flush, flush_pending, NOTIFY_COALESCE_MS, 0);
    }
}

static void add_pending(notifier *n, const char *line, size_t len)
{
    if (strmap_get(&n->pending, line, len))
        return;
    char *k = arena_alloc(&n->pending_keys, len);
    memcpy(k, line, len);
    strmap_put(&n->pending, k, len, 0, NULL);
}

static void flush_pending(uv_timer_t *t)
{
    notifier *n = t->data;
    n->flush_armed = 0;
    if (n->sending || n->pending.count == 0 || n->stopping)
        return;
    /* one payload of up to NOTIFY_PAYLOAD_MAX bytes; lines that do not fit wait for the next */
    buf payload, rest;
    buf_init(&payload, 0);
    buf_init(&rest, 0);
    for (uint32_t i = 0; i < n->pending.cap; i++) {
        strmap_slot *sl = &n->pending.slots[i];
        if (!sl->key)
            continue;
        buf *dst = (payload.len && payload.len + sl->len + 1 > NOTIFY_PAYLOAD_MAX) ? &rest : &payload;
        if (dst->len)
            buf_putc(dst, '\n');
        buf_append(dst, sl->key, sl->len);
    }
    strmap_clear(&n->pending);
    arena_free(&n->pending_keys);
    size_t off = 0;
    while (off < rest.len) {
        const char *eol = memchr(rest.data + off, '\n', rest.len - off);
        size_t l = eol ? (size_t)(eol - (rest.data + off)) : rest.len - off;
        add_pending(n, rest.data + off, l);
        off += l + 1;
    }
    buf_free(&rest);
    n->payload = buf_steal(&payload, NULL);
    memset(&n->req, 0, sizeof n->req);
    n->values[0] = n->payload;
    n->req.nstmt = 1;
    n->req.stmt[0] = (db_stmt){"SELECT pg_notify('" NOTIFY_CHANNEL "', $1)", 1, n->values, NULL, NULL, 0};
    n->req.done = on_sent;
    n->req.arg = n;
    if (db_submit(n->db, &n->req) == 0) {
        n->sending = 1;
    } else {
        free(n->payload);
        n->payload = NULL;
    }
}

void notifier_changed(notifier *n, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    waitq_wake(n->wq, tenant, queue, qlen);
    /* a queue name with a newline would split the line; such names are not announced (local
     * waiters were woken above; other nodes find the records at their next wake-up) */
    if (n->stopping || memchr(queue, '\n', qlen))
        return;
    char t[37];
    format_uuid_text(tenant, t);
    buf line;
    buf_init(&line, 0);
    buf_printf(&line, "%s\t%s\t", n->node_id, t);
    buf_append(&line, queue, qlen);
    add_pending(n, line.data, line.len);
    buf_free(&line);
    if (!n->flush_armed && !n->sending) {
        n->flush_armed = 1;
        uv_timer_start(&n->flush, flush_pending, NOTIFY_COALESCE_MS, 0);
    }
}

void notifier_stop(notifier *n)
{
    n->stopping = 1;
    uv_timer_stop(&n->flush);
    uv_timer_stop(&n->retry);
    if (n->poll) {
        uv_poll_stop(n->poll);
        uv_close((uv_handle_t *)n->poll, poll_closed);
        n->poll = NULL;
    }
    if (n->pg) {
        PQfinish(n->pg);
        n->pg = NULL;
    }
}

uint64_t notifier_sent(const notifier *n)
{
    return n->sent;
}

uint64_t notifier_received(const notifier *n)
{
    return n->received;
}

int notifier_listening(const notifier *n)
{
    return n->state == 3;
}
