/* url.c — percent-decoding, the query string and route matching (see url.h). */
#include "url.h"

#include <stdint.h>
#include <string.h>

#include "json/json.h"

const char *url_err_text(enum url_err e)
{
    switch (e) {
    case URL_OK: return "is valid";
    case URL_BAD_ESCAPE: return "has an invalid percent-encoding (a '%' must be followed by two hex digits)";
    case URL_BAD_UTF8: return "must be valid UTF-8";
    case URL_NUL: return "must not contain NUL characters";
    case URL_TOO_MANY: return "has too many query parameters";
    }
    return "is not valid";
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long url_decode(const char *in, size_t n, char *out, int plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '%') {
            if (n - i < 3)
                return -1;
            int hi = hexval(in[i + 1]), lo = hexval(in[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out[o++] = ' ';
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return (long)o;
}

enum url_err url_name_check(const char *s, size_t n)
{
    if (memchr(s, '\0', n))
        return URL_NUL;
    if (utf8_valid((const uint8_t *)s, n) < 0)
        return URL_BAD_UTF8;
    return URL_OK;
}

enum url_err url_decode_name(arena *ar, const char *in, size_t n, int plus_is_space, const char **out,
                             size_t *out_len)
{
    char *d = arena_alloc(ar, n + 1);
    long dl = url_decode(in, n, d, plus_is_space);
    if (dl < 0)
        return URL_BAD_ESCAPE;
    enum url_err e = url_name_check(d, (size_t)dl);
    if (e != URL_OK)
        return e;
    *out = d;
    *out_len = (size_t)dl;
    return URL_OK;
}

enum url_err url_query_parse(arena *ar, const char *q, size_t n, url_query *out, const char **bad)
{
    out->p = NULL;
    out->n = 0;
    *bad = NULL;
    /* count the pairs first, so the array is allocated once */
    int pairs = 0;
    for (size_t i = 0; i < n;) {
        const char *amp = memchr(q + i, '&', n - i);
        size_t seg = amp ? (size_t)(amp - (q + i)) : n - i;
        if (seg > 0 && ++pairs > URL_MAX_QUERY_PARAMS)
            return URL_TOO_MANY;
        i += seg + 1;
    }
    if (pairs == 0)
        return URL_OK;
    out->p = arena_alloc(ar, (size_t)pairs * sizeof *out->p);
    for (size_t i = 0; i < n;) {
        const char *s = q + i;
        const char *amp = memchr(s, '&', n - i);
        size_t seg = amp ? (size_t)(amp - s) : n - i;
        i += seg + 1;
        if (seg == 0)
            continue;
        const char *eq = memchr(s, '=', seg);
        size_t klen = eq ? (size_t)(eq - s) : seg;
        url_param *p = &out->p[out->n];
        enum url_err e = url_decode_name(ar, s, klen, 1, &p->name, &p->name_len);
        if (e != URL_OK)
            return e;
        if (eq) {
            e = url_decode_name(ar, eq + 1, seg - klen - 1, 1, &p->value, &p->value_len);
        } else {
            p->value = "";
            p->value_len = 0;
        }
        if (e != URL_OK) {
            *bad = p->name;
            return e;
        }
        out->n++;
    }
    return URL_OK;
}

const char *url_query_get(const url_query *q, const char *name)
{
    size_t nl = strlen(name);
    for (int i = 0; i < q->n; i++)
        if (q->p[i].name_len == nl && memcmp(q->p[i].name, name, nl) == 0)
            return q->p[i].value;
    return NULL;
}

int url_route_init(url_route *rt, const char *method, char *pattern)
{
    memset(rt, 0, sizeof *rt);
    rt->method = method;
    int nparams = 0;
    char *p = pattern;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        if (rt->nsegs == URL_MAX_ROUTE_SEGS || rt->rest)
            return -1; /* too many segments, or a segment after the rest of the path */
        rt->segs[rt->nsegs++] = p;
        if ((*p == ':' || *p == '*') && ++nparams > URL_MAX_PARAMS)
            return -1;
        if (*p == '*')
            rt->rest = 1;
        char *sl = strchr(p, '/');
        if (!sl)
            break;
        *sl = '\0';
        p = sl + 1;
    }
    return 0;
}

int url_route_match(const url_route *routes, int n, const char *method, char *path, url_match *m,
                    int *method_mismatch)
{
    const char *segs[URL_MAX_PATH_SEGS];
    size_t lens[URL_MAX_PATH_SEGS];
    int nsegs = 0;
    int overflow = 0; /* more segments than URL_MAX_PATH_SEGS: only a rest-of-path route can match */
    char *end = path + strlen(path);
    *method_mismatch = 0;
    m->nparams = 0;
    char *p = path;
    while (*p == '/')
        p++;
    while (*p) {
        if (nsegs == URL_MAX_PATH_SEGS) {
            overflow = 1;
            break;
        }
        segs[nsegs] = p;
        char *sl = strchr(p, '/');
        if (sl)
            *sl = '\0';
        lens[nsegs] = strlen(p);
        nsegs++;
        if (!sl)
            break;
        p = sl + 1;
    }
    /* a trailing slash leaves an empty last segment: ignore it (a rest-of-path parameter keeps
     * it: it takes everything to the end of the path) */
    int nraw = nsegs;
    if (nsegs > 0 && lens[nsegs - 1] == 0)
        nsegs--;
    for (int i = 0; i < n; i++) {
        const url_route *rt = &routes[i];
        int fixed = rt->rest ? rt->nsegs - 1 : rt->nsegs;
        if (rt->rest ? nraw <= fixed : (overflow || rt->nsegs != nsegs))
            continue;
        int ok = 1, np = 0;
        for (int k = 0; k < fixed && ok; k++) {
            if (rt->segs[k][0] == ':') {
                if (lens[k] == 0) {
                    ok = 0;
                } else if (np < URL_MAX_PARAMS) {
                    m->raw[np] = segs[k];
                    m->raw_len[np] = lens[k];
                    m->name[np] = rt->segs[k] + 1;
                    np++;
                }
            } else if (strcmp(rt->segs[k], segs[k]) != 0) {
                ok = 0;
            }
        }
        if (!ok)
            continue;
        if (strcmp(rt->method, method) != 0) {
            *method_mismatch = 1;
            continue;
        }
        if (rt->rest && np < URL_MAX_PARAMS) {
            /* the rest of the path, its slashes put back (the split wrote NULs over them) */
            char *r0 = (char *)segs[fixed];
            for (char *c = r0; c < end; c++)
                if (*c == '\0')
                    *c = '/';
            m->raw[np] = r0;
            m->raw_len[np] = (size_t)(end - r0);
            m->name[np] = rt->segs[fixed] + 1;
            np++;
        }
        m->nparams = np;
        return i;
    }
    return -1;
}
