/* server.h — the HTTP front: libh2o on the libuv loop, a route table, per-request contexts.
 *
 * Request lifecycle. Each request gets an http_req (heap) that outlives h2o's request object:
 * h2o frees its request when the client goes away, even while a handler still waits for the
 * database. The handler marks itself async (http_async), and whoever finishes last frees the
 * context: h2o's dispose callback if the response was sent, or http_respond if the client was
 * already gone. Handlers therefore always end by calling one of the http_respond* functions
 * exactly once, and never touch the context afterwards.
 *
 * A handler receives the request body as an owned copy (ctx->body), so spans into it stay
 * valid across asynchronous work whatever h2o does with its buffers. */
#ifndef QUEEN_HTTP_SERVER_H
#define QUEEN_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/qerr.h"
#include "http/url.h"
#include "metrics/metrics.h"

#define HTTP_MAX_PARAMS URL_MAX_PARAMS
/* A client's (or proxy's) x-request-id is adopted when it is 1..64 characters of
 * [A-Za-z0-9._:-]; anything else is replaced by a UUIDv7, so the id is safe in logs. */
#define HTTP_REQUEST_ID_MAX 64

enum http_access { ACCESS_PUBLIC, ACCESS_READ_ONLY, ACCESS_READ_WRITE, ACCESS_ADMIN };

typedef struct http_server http_server;
typedef struct http_req http_req;
typedef void (*http_handler)(http_req *r);

struct http_req {
    /* read-only for handlers */
    http_server *srv;
    void *app;               /* the application object given to http_server_new */
    const char *method;      /* NUL-terminated, in arena */
    const char *path;        /* decoded path without query, in arena */
    const char *query;       /* raw query string (after '?'), in arena, or "" */
    const char *params[HTTP_MAX_PARAMS]; /* path parameters (:name), decoded, in arena; valid
                                          * UTF-8 without NUL (url.h), checked before the handler */
    size_t param_lens[HTTP_MAX_PARAMS];
    char request_id[HTTP_REQUEST_ID_MAX + 1]; /* also the x-request-id header of the answer */
    int error_logged;        /* a log line names this request's failure (set by whoever wrote it):
                              * a 500 from http_respond_error* then logs nothing more */
    char *body;              /* owned copy of the request body (NUL-terminated), or NULL */
    size_t body_len;
    uint8_t tenant[16];      /* the request's tenant (default tenant until auth says otherwise) */
    const char *subject;     /* authenticated subject (JWT sub), or NULL */
    arena ar;                /* freed with the context */
    /* Called when the client goes away while the handler is async and has not answered; the
     * handler must then answer (http_respond frees the context) once nothing of its own still
     * refers to it. NULL = just wait for the handler to answer. */
    void (*on_abandon)(http_req *r);
    void *abandon_arg;
    const char *retry_after; /* set by a handler: the answer's Retry-After (seconds), or NULL */
    /* private */
    void *h2o_req;           /* NULL once h2o has disposed of the request */
    int async;
    int responded;
    int route;
    uint64_t start_us;
    url_query q;             /* the decoded query parameters (http_query) */
};

typedef struct http_server_opts {
    const char *host;
    int port;
    size_t max_body_bytes;
    const uint8_t *default_tenant;
    const char *metrics_prefix; /* the families' prefix: NULL = "queen_http" */
} http_server_opts;

http_server *http_server_new(uv_loop_t *loop, const http_server_opts *o, void *app);
void http_route(http_server *s, const char *method, const char *pattern, http_handler fn, enum http_access access);
/* The gate runs before the handler of every matched route, with the route's access level
 * (authentication, src/api/api_auth.c). It must answer the request itself or call
 * http_proceed, at once or later (after http_async); the handler sees whatever tenant and
 * subject the gate set. Without a gate the handler runs directly. */
typedef void (*http_gate_fn)(http_req *r, enum http_access access);
void http_server_set_gate(http_server *s, http_gate_fn gate);
void http_proceed(http_req *r);
int http_server_listen(http_server *s);   /* 0, or -1 after logging */
/* Stops accepting; requests already in flight complete. New requests on open connections get 503. */
void http_server_stop_accepting(http_server *s);
int http_server_inflight(const http_server *s);
void http_server_free(http_server *s);
void http_server_render_metrics(http_server *s, buf *b);

/* Handler helpers. */
void http_async(http_req *r);
void http_respond(http_req *r, int status, const char *content_type, const char *body, size_t len);
void http_respond_json(http_req *r, int status, const buf *json);

/* Error answers: {"error": "<sentence>", "code": "<code>"[, "requestId": "<id>"]}. `error` is
 * the human sentence (the earlier release's one field, which its clients show); `code` is a
 * stable snake_case name a program can test (docs/http-api.md lists them); a 5xx answer also
 * carries requestId, the id of the log line that holds what went wrong: a 500 answered here
 * logs its sentence with the id unless error_logged says a line was written already. Message
 * text that is not valid UTF-8 (a cut name) is repaired with U+FFFD. */
/* The status's generic code: bad_request, not_found, internal_error, unavailable, ... */
const char *http_status_code(int status);
/* Answers a module's failure (core/qerr.h): the enum's status; for a 4xx the detail's code
 * (NULL: the status's) and sentence; for a 5xx the detail goes to the log with the request id
 * and the answer carries the enum's generic sentence only. d may be NULL. */
void http_respond_qerr(http_req *r, qerr e, const qerr_detail *d);
/* code NULL = http_status_code(status) */
void http_respond_error_code(http_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void http_respond_error(http_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The refusal envelope of the 2.x families (timers, KV; docs/http-api.md, "Error bodies"):
 * {"error": "<code>", "code": "<code>", "reason": "<stable id>", "detail": "<sentence>"
 * [, "requestId": "<id>"]}. `code` is what a program branches on (the 2.x client reads code,
 * else error: both hold it), `reason` the finer stable name of what was wrong, `detail` the
 * human sentence. code NULL = http_status_code(status), reason NULL = the code. A 5xx carries
 * requestId and a 500 is logged with it, as for http_respond_error. */
void http_respond_refusal(http_req *r, int status, const char *code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A module's refusal (core/qerr.h) in that envelope: for a 4xx the detail's code, reason,
 * sentence and, when d->index >= 0, "index" (the op at fault); a 5xx is http_respond_qerr. */
void http_respond_qerr_refusal(http_req *r, qerr e, const qerr_detail *d);
/* Writes that envelope without its closing brace (and without requestId), for answers that
 * add fields of their own ("index"). */
void http_refusal_open(buf *b, int status, const char *code, const char *reason, const char *detail);
/* 400 invalid_parameter with "parameter": name (a path or query parameter at fault, or NULL). */
void http_respond_bad_param(http_req *r, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Writes the error object without its closing brace, for answers that add fields of their own. */
void http_error_open(buf *b, const http_req *r, int status, const char *code, const char *msg);
/* Query parameter by exact name, decoded (and checked) before the handler ran; NULL when absent. */
const char *http_query(http_req *r, const char *name);
/* A request header value (case-insensitive name), in the arena; NULL when absent. */
const char *http_header(http_req *r, const char *name);
int http_client_gone(const http_req *r);
/* The matched route's pattern ("/api/v1/pop/queue/:queue"), or "other", for logs. */
const char *http_route_pattern(const http_req *r);

#endif
