/* server.c — libh2o server, route table, request contexts, CORS, per-route metrics. */
#include "server.h"

#include <errno.h>
#include <h2o.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "json/json.h"

#define MAX_ROUTES 128
#define MAX_STATUSES 16

typedef struct route_stats {
    int n;
    struct {
        int status;
        mcounter count;
    } s[MAX_STATUSES];
    mhist seconds;
} route_stats;

typedef struct route {
    const char *method;
    const char *pattern;
    char *pattern_copy; /* owned: the segments of pats[i] point into it */
    http_handler fn;
    enum http_access access;
    route_stats stats;
} route;

struct http_server {
    uv_loop_t *loop;
    void *app;
    char *host;
    int port;
    size_t max_body;
    uint8_t default_tenant[16];
    char metric_requests[96], metric_seconds[96];
    h2o_globalconf_t config;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    uv_tcp_t listener;
    int listening;
    int stopping;
    int inflight;
    route routes[MAX_ROUTES];
    url_route pats[MAX_ROUTES]; /* routes[i]'s pattern, for url_route_match */
    int nroutes;
    route other; /* unmatched requests, for metrics */
    http_gate_fn gate;
};

typedef struct handler_box {
    h2o_handler_t super;
    http_server *srv;
} handler_box;

static const double latency_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

static void stats_count(route *rt, int status, uint64_t us)
{
    route_stats *st = &rt->stats;
    for (int i = 0; i < st->n; i++) {
        if (st->s[i].status == status) {
            mc_add(&st->s[i].count, 1);
            goto lat;
        }
    }
    if (st->n < MAX_STATUSES) {
        st->s[st->n].status = status;
        mc_add(&st->s[st->n].count, 1);
        st->n++;
    }
lat:
    mhist_observe(&st->seconds, us);
}

static void ctx_free(http_req *r)
{
    http_server *s = r->srv;
    if (r->async)
        s->inflight--;
    free(r->body);
    arena_free(&r->ar);
    free(r);
}

typedef struct ctx_handle {
    http_req *r;
} ctx_handle;

static void on_h2o_dispose(void *p)
{
    ctx_handle *h = p;
    http_req *r = h->r;
    r->h2o_req = NULL;
    if (!r->async || r->responded)
        ctx_free(r);
    else if (r->on_abandon)
        r->on_abandon(r);
}

int http_client_gone(const http_req *r)
{
    if (r->h2o_req == NULL)
        return 1;
    /* h2o reads no more of an HTTP/1 connection while its request is being answered, so a client
     * that closed it during a long poll is not noticed until the answer is written: look at the
     * socket. 0 bytes readable = the peer's FIN; a reset or another error = gone too; data or
     * nothing yet (EAGAIN) = still there. */
    h2o_req_t *req = r->h2o_req;
    h2o_conn_t *conn = req->conn;
    if (!conn || !conn->callbacks || !conn->callbacks->get_socket)
        return 0;
    h2o_socket_t *sock = conn->callbacks->get_socket(conn);
    if (!sock)
        return 0;
    int fd = h2o_socket_get_fd(sock);
    if (fd < 0)
        return 0;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
        return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return 1;
    return 0;
}

const char *http_route_pattern(const http_req *r)
{
    return r->route >= 0 ? r->srv->routes[r->route].pattern : "other";
}

void http_async(http_req *r)
{
    if (!r->async) {
        r->async = 1;
        r->srv->inflight++;
    }
}

static void add_cors(h2o_req_t *req)
{
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-origin"), 0, NULL,
                          H2O_STRLIT("*"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-methods"), 0, NULL,
                          H2O_STRLIT("GET, POST, PUT, DELETE, OPTIONS"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-headers"), 0, NULL,
                          H2O_STRLIT("Content-Type, Authorization"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-max-age"), 0, NULL,
                          H2O_STRLIT("86400"));
}

static const char *reason_for(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "OK";
    }
}

void http_respond(http_req *r, int status, const char *content_type, const char *body, size_t len)
{
    if (r->responded)
        return;
    r->responded = 1;
    http_server *s = r->srv;
    route *rt = r->route >= 0 ? &s->routes[r->route] : &s->other;
    stats_count(rt, status, mono_us() - r->start_us);
    h2o_req_t *req = r->h2o_req;
    if (!req) {
        /* the client went away while we worked: nothing to send, and h2o is done with us */
        ctx_free(r);
        return;
    }
    req->res.status = status;
    req->res.reason = reason_for(status);
    if (content_type)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type, strlen(content_type));
    add_cors(req);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL, r->request_id,
                          strlen(r->request_id));
    if (r->retry_after)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, r->retry_after,
                       strlen(r->retry_after));
    req->res.content_length = len;
    h2o_send_inline(req, body, len);
    /* the context is freed by on_h2o_dispose once h2o is done with the response */
}

void http_respond_json(http_req *r, int status, const buf *json)
{
    http_respond(r, status, "application/json", json->data ? json->data : "", json->len);
}

const char *http_status_code(int status)
{
    switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 409: return "conflict";
    case 413: return "payload_too_large";
    case 417: return "expectation_failed";
    case 422: return "unprocessable";
    case 429: return "too_many_requests";
    case 503: return "unavailable";
    default: return status >= 500 ? "internal_error" : "bad_request";
    }
}

void http_error_open(buf *b, const http_req *r, int status, const char *code, const char *msg)
{
    buf_puts(b, "{\"error\":");
    jw_string_lossy(b, msg, strlen(msg));
    buf_puts(b, ",\"code\":");
    jw_cstr(b, code ? code : http_status_code(status));
    if (status >= 500 && r) {
        buf_puts(b, ",\"requestId\":");
        jw_cstr(b, r->request_id);
    }
}

/* A 500 is logged with its request id, once (unless a line was written for it already). */
static void log_500_once(http_req *r, int status, const char *msg)
{
    if (status == 500 && !r->error_logged) {
        log_error("http", "request %s (%s %s): answered 500: %s", r->request_id, r->method, http_route_pattern(r),
                  msg);
        r->error_logged = 1;
    }
}

static void respond_error_v(http_req *r, int status, const char *code, const char *param, const char *fmt,
                            va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_500_once(r, status, msg);
    buf b;
    buf_init(&b, 0);
    http_error_open(&b, r, status, code, msg);
    if (param) {
        buf_puts(&b, ",\"parameter\":");
        jw_string_lossy(&b, param, strlen(param));
    }
    buf_putc(&b, '}');
    http_respond_json(r, status, &b);
    buf_free(&b);
}

void http_respond_error(http_req *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    respond_error_v(r, status, NULL, NULL, fmt, ap);
    va_end(ap);
}

void http_respond_qerr(http_req *r, qerr e, const qerr_detail *d)
{
    int status = qerr_http_status(e);
    const char *text = d && d->text[0] ? d->text : qerr_str(e);
    if (qerr_client_visible(e)) {
        http_respond_error_code(r, status, d ? d->code : NULL, "%s", text);
        return;
    }
    if (!r->error_logged) {
        log_error("http", "request %s (%s %s): answered %d %s: %s", r->request_id, r->method, http_route_pattern(r),
                  status, qerr_name(e), text);
        r->error_logged = 1;
    }
    http_respond_error_code(r, status, d && d->code ? d->code : NULL, "%s", qerr_str(e));
}

void http_respond_error_code(http_req *r, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    respond_error_v(r, status, code, NULL, fmt, ap);
    va_end(ap);
}

void http_refusal_open(buf *b, int status, const char *code, const char *reason, const char *detail)
{
    if (!code)
        code = http_status_code(status);
    buf_puts(b, "{\"error\":");
    jw_cstr(b, code);
    buf_puts(b, ",\"code\":");
    jw_cstr(b, code);
    buf_puts(b, ",\"reason\":");
    jw_cstr(b, reason ? reason : code);
    buf_puts(b, ",\"detail\":");
    jw_string_lossy(b, detail, strlen(detail));
}

void http_respond_refusal(http_req *r, int status, const char *code, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_500_once(r, status, msg);
    buf b;
    buf_init(&b, 0);
    http_refusal_open(&b, status, code, reason, msg);
    if (status >= 500) {
        buf_puts(&b, ",\"requestId\":");
        jw_cstr(&b, r->request_id);
    }
    buf_putc(&b, '}');
    http_respond_json(r, status, &b);
    buf_free(&b);
}

void http_respond_qerr_refusal(http_req *r, qerr e, const qerr_detail *d)
{
    if (!qerr_client_visible(e) || !d) {
        http_respond_qerr(r, e, d);
        return;
    }
    int status = qerr_http_status(e);
    buf b;
    buf_init(&b, 0);
    http_refusal_open(&b, status, d->code, d->reason, d->text[0] ? d->text : qerr_str(e));
    if (d->index >= 0)
        buf_printf(&b, ",\"index\":%d", d->index);
    buf_putc(&b, '}');
    http_respond_json(r, status, &b);
    buf_free(&b);
}

void http_respond_bad_param(http_req *r, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    respond_error_v(r, 400, "invalid_parameter", name, fmt, ap);
    va_end(ap);
}

const char *http_query(http_req *r, const char *name)
{
    return url_query_get(&r->q, name);
}

const char *http_header(http_req *r, const char *name)
{
    h2o_req_t *req = r->h2o_req;
    if (!req)
        return NULL;
    size_t nl = strlen(name);
    for (size_t i = 0; i < req->headers.size; i++) {
        h2o_header_t *h = &req->headers.entries[i];
        if (h->name->len == nl && ascii_ieq(h->name->base, nl, name))
            return arena_strndup(&r->ar, h->value.base, h->value.len);
    }
    return NULL;
}

static int request_id_ok(const char *s, size_t n)
{
    if (n == 0 || n > HTTP_REQUEST_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

static void make_request_id(char out[HTTP_REQUEST_ID_MAX + 1])
{
    uuid u;
    uuid_v7(&u);
    uuid_format(&u, out);
}

/* The client's x-request-id when it is a safe token, else a fresh UUIDv7. */
static void set_request_id(http_req *r, h2o_req_t *req)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
    if (i >= 0 && request_id_ok(req->headers.entries[i].value.base, req->headers.entries[i].value.len)) {
        memcpy(r->request_id, req->headers.entries[i].value.base, req->headers.entries[i].value.len);
        r->request_id[req->headers.entries[i].value.len] = '\0';
        return;
    }
    make_request_id(r->request_id);
}

/* Decodes and checks the path parameters and the query string (url.h); answers 400 naming the
 * parameter at fault and returns -1 when one is not a usable name. */
static int decode_params_or_respond(http_req *r, const url_match *m)
{
    for (int i = 0; i < m->nparams; i++) {
        enum url_err e = url_decode_name(&r->ar, m->raw[i], m->raw_len[i], 0, &r->params[i], &r->param_lens[i]);
        if (e == URL_BAD_ESCAPE) {
            http_respond_bad_param(r, m->name[i], "invalid percent-encoding in the path");
            return -1;
        }
        if (e != URL_OK) {
            http_respond_bad_param(r, m->name[i], "%s %s", m->name[i], url_err_text(e));
            return -1;
        }
    }
    const char *bad = NULL;
    enum url_err e = url_query_parse(&r->ar, r->query, strlen(r->query), &r->q, &bad);
    if (e == URL_TOO_MANY) {
        http_respond_bad_param(r, NULL, "the query string has more than %d parameters", URL_MAX_QUERY_PARAMS);
        return -1;
    }
    if (e != URL_OK) {
        if (bad)
            http_respond_bad_param(r, bad, "query parameter %s %s", bad, url_err_text(e));
        else
            http_respond_bad_param(r, NULL, "the name of a query parameter %s", url_err_text(e));
        return -1;
    }
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    http_server *s = ((handler_box *)self)->srv;
    http_req *r = xcalloc(1, sizeof *r);
    r->srv = s;
    r->app = s->app;
    r->h2o_req = req;
    r->route = -1;
    r->start_us = mono_us();
    arena_init(&r->ar);
    set_request_id(r, req);
    memcpy(r->tenant, s->default_tenant, 16);
    ctx_handle *h = h2o_mem_alloc_shared(&req->pool, sizeof *h, on_h2o_dispose);
    h->r = r;
    r->method = arena_strndup(&r->ar, req->method.base, req->method.len);
    size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    r->query = req->query_at != SIZE_MAX ? arena_strndup(&r->ar, req->path.base + req->query_at + 1,
                                                         req->path.len - req->query_at - 1)
                                         : "";
    char *raw = arena_strndup(&r->ar, req->path.base, plen);
    r->path = raw;

    if (strcmp(r->method, "OPTIONS") == 0) {
        http_respond(r, 204, NULL, "", 0);
        return 0;
    }
    /* match on the raw path (so an encoded '/' inside a name stays inside its segment), then
     * decode each parameter */
    char *work = arena_strndup(&r->ar, raw, plen);
    int mismatch = 0;
    url_match m;
    int idx = url_route_match(s->pats, s->nroutes, r->method, work, &m, &mismatch);
    if (idx < 0) {
        if (mismatch)
            http_respond_error(r, 405, "method %s is not allowed on %s", r->method, r->path);
        else
            http_respond_error(r, 404, "Not found");
        return 0;
    }
    r->route = idx;
    if (decode_params_or_respond(r, &m) < 0)
        return 0;
    if (s->stopping) {
        http_respond_error_code(r, 503, "shutting_down", "server is shutting down");
        return 0;
    }
    if (req->entity.base) {
        if (req->entity.len > s->max_body) {
            http_respond_error(r, 413, "request body of %zu bytes is larger than the limit of %zu bytes",
                               req->entity.len, s->max_body);
            return 0;
        }
        r->body = xmalloc(req->entity.len + 1);
        memcpy(r->body, req->entity.base, req->entity.len);
        r->body[req->entity.len] = '\0';
        r->body_len = req->entity.len;
    }
    if (s->gate)
        s->gate(r, s->routes[idx].access);
    else
        s->routes[idx].fn(r);
    return 0;
}

void http_server_set_gate(http_server *s, http_gate_fn gate)
{
    s->gate = gate;
}

void http_proceed(http_req *r)
{
    r->srv->routes[r->route].fn(r);
}

/* Errors h2o answers itself, before any handler runs (h2o_send_error_generic): a body past
 * max_request_entity_size (413), a broken Content-Length or chunked encoding and an unknown
 * Transfer-Encoding (400), an unknown Expect (417), HTTP/2 headers it refuses (400). They go
 * through the host's fallback path, so a filter there turns h2o's plain-text answer into the
 * broker's JSON error shape, keeping h2o's sentence, with the CORS headers and a request id
 * like every other answer. What h2o's HTTP/1 parser refuses (a request head past
 * H2O_MAX_REQLEN, more than H2O_MAX_HEADERS headers, a malformed request line) it writes to the
 * socket directly, with no hook: those stay plain text (docs/http-api.md, "Limits"). */
typedef struct json_error_filter {
    h2o_filter_t super;
    http_server *srv;
} json_error_filter;

typedef struct replace_ostream {
    h2o_ostream_t super;
    int status;
    const char *reason;
    size_t max_body;
    char request_id[HTTP_REQUEST_ID_MAX + 1];
    char said[256]; /* h2o's body text, collected as it is sent */
    size_t said_len;
} replace_ostream;

static void replace_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t st)
{
    replace_ostream *o = (replace_ostream *)self;
    for (size_t i = 0; i < n; i++) {
        size_t room = sizeof o->said - 1 - o->said_len;
        size_t k = bufs[i].len < room ? bufs[i].len : room;
        memcpy(o->said + o->said_len, bufs[i].base, k);
        o->said_len += k;
    }
    if (h2o_send_state_is_in_progress(st)) {
        h2o_ostream_send_next(&o->super, req, NULL, 0, st);
        return;
    }
    char msg[512];
    if (o->status == 413)
        snprintf(msg, sizeof msg, "request body is larger than the limit of %zu bytes (QUEEN_MAX_BODY_BYTES)",
                 o->max_body);
    else
        snprintf(msg, sizeof msg, "%s: %.*s", o->reason ? o->reason : "bad request", (int)o->said_len, o->said);
    buf b;
    buf_init(&b, 0);
    http_error_open(&b, NULL, o->status, NULL, msg);
    if (o->status >= 500) {
        buf_puts(&b, ",\"requestId\":");
        jw_cstr(&b, o->request_id);
    }
    buf_putc(&b, '}');
    h2o_iovec_t body = h2o_strdup(&req->pool, b.data, b.len);
    buf_free(&b);
    h2o_ostream_send_next(&o->super, req, &body, 1, st);
}

static void on_setup_error_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    http_server *s = ((json_error_filter *)self)->srv;
    if (req->res.status >= 400) {
        ssize_t cur;
        while ((cur = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1)) != -1)
            h2o_delete_header(&req->res.headers, cur);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
        add_cors(req);
        replace_ostream *o = (replace_ostream *)h2o_add_ostream(req, sizeof *o, slot);
        o->super.do_send = replace_do_send;
        o->status = req->res.status;
        o->reason = req->res.reason;
        o->max_body = s->max_body;
        o->said_len = 0;
        make_request_id(o->request_id);
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL, o->request_id,
                              strlen(o->request_id));
        /* the JSON is written once h2o's own text has been seen: its length is not known yet */
        req->res.content_length = SIZE_MAX;
        slot = &o->super.next;
    }
    h2o_setup_next_ostream(req, slot);
}

static void on_conn_close(uv_handle_t *h)
{
    free(h);
}

static void on_accept(uv_stream_t *listener, int status)
{
    http_server *s = listener->data;
    if (status != 0)
        return;
    uv_tcp_t *conn = xmalloc(sizeof *conn);
    uv_tcp_init(s->loop, conn);
    if (uv_accept(listener, (uv_stream_t *)conn) != 0) {
        uv_close((uv_handle_t *)conn, on_conn_close);
        return;
    }
    uv_tcp_nodelay(conn, 1);
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)conn, on_conn_close);
    h2o_accept(&s->accept_ctx, sock);
}

http_server *http_server_new(uv_loop_t *loop, const http_server_opts *o, void *app)
{
    http_server *s = xcalloc(1, sizeof *s);
    s->loop = loop;
    s->app = app;
    s->host = xstrdup(o->host);
    s->port = o->port;
    s->max_body = o->max_body_bytes;
    memcpy(s->default_tenant, o->default_tenant, 16);
    const char *mp = o->metrics_prefix ? o->metrics_prefix : "queen_http";
    snprintf(s->metric_requests, sizeof s->metric_requests, "%.40s_requests_total", mp);
    snprintf(s->metric_seconds, sizeof s->metric_seconds, "%.40s_request_duration_seconds", mp);
    h2o_config_init(&s->config);
    s->config.server_name = h2o_iovec_init(H2O_STRLIT("queen"));
    s->config.max_request_entity_size = o->max_body_bytes;
    s->config.http1.upgrade_to_http2 = 1;
    h2o_hostconf_t *host = h2o_config_register_host(&s->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    json_error_filter *jf = (json_error_filter *)h2o_create_filter(&host->fallback_path, sizeof *jf);
    jf->super.on_setup_ostream = on_setup_error_ostream;
    jf->srv = s;
    handler_box *hb = (handler_box *)h2o_create_handler(path, sizeof *hb);
    hb->super.on_req = on_req;
    hb->srv = s;
    h2o_context_init(&s->ctx, loop, &s->config);
    s->accept_ctx.ctx = &s->ctx;
    s->accept_ctx.hosts = s->config.hosts;
    mhist_init(&s->other.stats.seconds, latency_bounds, (int)ARRAY_LEN(latency_bounds), 1e6);
    s->other.pattern = "other";
    return s;
}

void http_route(http_server *s, const char *method, const char *pattern, http_handler fn, enum http_access access)
{
    if (s->nroutes >= MAX_ROUTES)
        abort();
    route *rt = &s->routes[s->nroutes];
    rt->method = method;
    rt->pattern = pattern;
    rt->fn = fn;
    rt->access = access;
    rt->pattern_copy = xstrdup(pattern);
    if (url_route_init(&s->pats[s->nroutes], method, rt->pattern_copy) < 0)
        abort(); /* a pattern of the route table itself: a programming error */
    s->nroutes++;
    mhist_init(&rt->stats.seconds, latency_bounds, (int)ARRAY_LEN(latency_bounds), 1e6);
}

int http_server_listen(http_server *s)
{
    struct sockaddr_storage addr;
    int rc;
    if (strchr(s->host, ':'))
        rc = uv_ip6_addr(s->host, s->port, (struct sockaddr_in6 *)&addr);
    else
        rc = uv_ip4_addr(s->host, s->port, (struct sockaddr_in *)&addr);
    if (rc != 0) {
        log_error("http", "invalid listen address %s: %s", s->host, uv_strerror(rc));
        return -1;
    }
    uv_tcp_init(s->loop, &s->listener);
    s->listener.data = s;
    if ((rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&addr, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&s->listener, 1024, on_accept)) != 0) {
        log_error("http", "cannot listen on %s:%d: %s", s->host, s->port, uv_strerror(rc));
        uv_close((uv_handle_t *)&s->listener, NULL);
        return -1;
    }
    s->listening = 1;
    log_info("http", "listening on %s:%d", s->host, s->port);
    return 0;
}

void http_server_stop_accepting(http_server *s)
{
    s->stopping = 1;
    if (s->listening) {
        uv_close((uv_handle_t *)&s->listener, NULL);
        s->listening = 0;
    }
    h2o_context_request_shutdown(&s->ctx);
}

int http_server_inflight(const http_server *s)
{
    return s->inflight;
}

void http_server_free(http_server *s)
{
    h2o_context_dispose(&s->ctx);
    h2o_config_dispose(&s->config);
    for (int i = 0; i < s->nroutes; i++)
        free(s->routes[i].pattern_copy);
    free(s->host);
    free(s);
}

void http_server_render_metrics(http_server *s, buf *b)
{
    metric_help(b, s->metric_requests, "counter", "HTTP requests answered, by route and status");
    for (int i = 0; i <= s->nroutes; i++) {
        route *rt = i < s->nroutes ? &s->routes[i] : &s->other;
        for (int k = 0; k < rt->stats.n; k++) {
            char lab[256];
            snprintf(lab, sizeof lab, "method=\"%s\",route=\"%s\",status=\"%d\"", rt->method ? rt->method : "",
                     rt->pattern, rt->stats.s[k].status);
            metric_u64(b, s->metric_requests, lab, mc_get(&rt->stats.s[k].count));
        }
    }
    metric_help(b, s->metric_seconds, "histogram", "Time from request to response, by route");
    for (int i = 0; i <= s->nroutes; i++) {
        route *rt = i < s->nroutes ? &s->routes[i] : &s->other;
        if (atomic_load(&rt->stats.seconds.count) == 0)
            continue;
        char lab[256];
        snprintf(lab, sizeof lab, "method=\"%s\",route=\"%s\"", rt->method ? rt->method : "", rt->pattern);
        metric_hist(b, s->metric_seconds, lab, &rt->stats.seconds);
    }
}
