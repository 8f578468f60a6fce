/* url.h — the pure parts of routing a request: percent-decoding, the query string, and path
 * segments against route patterns. No h2o, no libuv, no I/O: unit-tested and fuzzed offline.
 *
 * Every name a client sends in the URL (a path parameter, a query parameter's name or value)
 * is decoded and checked here, once: it must decode cleanly and be valid UTF-8 (no overlong
 * forms, no surrogates, nothing past U+10FFFF) without NUL, because it ends up as PostgreSQL
 * text, in a C string and in JSON answers. A request that fails is answered 400 before any
 * handler runs (server.c). */
#ifndef QUEEN_HTTP_URL_H
#define QUEEN_HTTP_URL_H

#include <stddef.h>

#include "core/arena.h"

/* Route patterns have at most this many segments ("/api/v1/a/:b/c/:d/..."), and a request
 * path with more than URL_MAX_PATH_SEGS cannot match any route. */
#define URL_MAX_ROUTE_SEGS 12
#define URL_MAX_PATH_SEGS 16
#define URL_MAX_PARAMS 6
/* Query parameters one request may carry: far beyond any route's handful, and a ceiling on the
 * work a hostile "?a&a&a…" of h2o's whole request-head size could cause. */
#define URL_MAX_QUERY_PARAMS 64

enum url_err {
    URL_OK = 0,
    URL_BAD_ESCAPE,  /* '%' not followed by two hex digits */
    URL_BAD_UTF8,    /* decodes to bytes that are not UTF-8 (overlong, surrogate, > U+10FFFF, cut) */
    URL_NUL,         /* decodes to a NUL byte */
    URL_TOO_MANY,    /* more than URL_MAX_QUERY_PARAMS query parameters */
};

/* What was wrong, as the end of a sentence about a name ("must be valid UTF-8"). */
const char *url_err_text(enum url_err e);

/* Percent-decoding ('+' is a space only when plus_is_space) into out (n + 1 bytes; the result
 * is NUL-terminated). Returns the decoded length; -1 on a bad escape. */
long url_decode(const char *in, size_t n, char *out, int plus_is_space);

/* A decoded name is usable: valid UTF-8 and no NUL. */
enum url_err url_name_check(const char *s, size_t n);

/* Decodes in[0..n) into the arena and checks it (url_name_check). */
enum url_err url_decode_name(arena *ar, const char *in, size_t n, int plus_is_space, const char **out,
                             size_t *out_len);

/* ---- the query string ---- */

typedef struct url_param {
    const char *name, *value; /* decoded, NUL-terminated, in the arena */
    size_t name_len, value_len;
} url_param;

typedef struct url_query {
    url_param *p; /* in the arena */
    int n;
} url_query;

/* Parses a raw query string ("a=1&b=%20x", without the '?'): '&'-separated name=value pairs,
 * percent- and '+'-decoded; empty pairs ("&&") are skipped and a pair without '=' has the value
 * "". On failure returns the error and sets *bad to the decoded name of the pair at fault (NULL
 * when the name itself is what failed, or for URL_TOO_MANY). */
enum url_err url_query_parse(arena *ar, const char *q, size_t n, url_query *out, const char **bad);

/* The value of the first parameter of that exact name, or NULL. */
const char *url_query_get(const url_query *q, const char *name);

/* ---- routes ---- */

typedef struct url_route {
    const char *method;
    const char *segs[URL_MAX_ROUTE_SEGS]; /* "api", "v1", ":queue", … (into the pattern copy) */
    int nsegs;
    int rest; /* the last segment is "*name": the rest of the path */
} url_route;

/* Splits a pattern ("/api/v1/pop/queue/:queue") in place; `pattern` must outlive the route.
 * ":name" is one segment; "*name", only as the last segment, is the rest of the path: at least
 * one more segment, slashes, empty segments and a trailing slash included, any number of them
 * (URL_MAX_PATH_SEGS does not bound it). Returns -1 when it has too many segments or too many
 * parameters, or a segment after a "*name". */
int url_route_init(url_route *rt, const char *method, char *pattern);

typedef struct url_match {
    int nparams;
    const char *raw[URL_MAX_PARAMS]; /* the matched segments, still percent-encoded (into path) */
    size_t raw_len[URL_MAX_PARAMS];
    const char *name[URL_MAX_PARAMS]; /* the pattern's parameter names, without ':' */
} url_match;

/* Splits a raw request path (without the query) in place and returns the index of the first
 * route whose segments match and whose method is `method`; -1 when none does, with
 * *method_mismatch = 1 when some route matched the path under another method. Matching is on
 * the raw segments, so an encoded '/' (%2F) stays inside its segment. A trailing slash is
 * ignored; a ":name" parameter never matches an empty segment. A match writes NULs into path
 * (the rest-of-path parameter gets its slashes back). */
int url_route_match(const url_route *routes, int n, const char *method, char *path, url_match *m,
                    int *method_mismatch);

#endif
