/* fuzz_url — the request URL as a client sends it: the path against a route table and the
 * query string. Whatever the bytes: no crash; a decoded name is valid UTF-8 without NUL or it
 * was refused; what percent-encoding writes, decoding reads back; a match is a route whose
 * fixed segments are the path's, with one non-empty raw segment per parameter; and the lossy
 * JSON writer always writes JSON that reads back as valid UTF-8. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "http/url.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_url: check failed at line %d: %s\n", __LINE__, #c);                         \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

/* A slice of the broker's route table: fixed paths, parameters, the same path under two
 * methods, and a fixed route before a parameter route that would also match it. */
static const char *const ROUTES[][2] = {
    {"GET", "/health"},
    {"POST", "/api/v1/push"},
    {"GET", "/api/v1/pop/queue/:queue"},
    {"GET", "/api/v1/pop/queue/:queue/partition/:partition"},
    {"GET", "/api/v1/consumer-groups/lagging"},
    {"GET", "/api/v1/consumer-groups/:group"},
    {"DELETE", "/api/v1/consumer-groups/:group"},
    {"POST", "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek"},
    {"PUT", "/api/v1/kv/:namespace/:key"},
    {"GET", "/api/v1/messages/:partitionId/:transactionId"},
    {"GET", "/api/v1/timers/:queue"},
    {"DELETE", "/api/v1/timers/:queue/*timerKey"},
};
#define NR (sizeof ROUTES / sizeof ROUTES[0])
static url_route g_routes[NR];
static char g_pats[NR][96];
static int g_init;

static void percent_encode(buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
            buf_putc(b, (char)c);
        } else {
            buf_putc(b, '%');
            buf_putc(b, hex[c >> 4]);
            buf_putc(b, hex[c & 15]);
        }
    }
}

static void check_query(arena *ar, const char *q, size_t n)
{
    url_query uq;
    const char *bad = NULL;
    enum url_err e = url_query_parse(ar, q, n, &uq, &bad);
    if (e != URL_OK) {
        CHECK(e == URL_BAD_ESCAPE || e == URL_BAD_UTF8 || e == URL_NUL || e == URL_TOO_MANY);
        if (bad)
            CHECK(url_name_check(bad, strlen(bad)) == URL_OK);
        return;
    }
    CHECK(uq.n <= URL_MAX_QUERY_PARAMS);
    buf again;
    buf_init(&again, 0);
    for (int i = 0; i < uq.n; i++) {
        const url_param *p = &uq.p[i];
        CHECK(url_name_check(p->name, p->name_len) == URL_OK);
        CHECK(url_name_check(p->value, p->value_len) == URL_OK);
        CHECK(strlen(p->name) == p->name_len && strlen(p->value) == p->value_len);
        /* the first parameter of a name is the one found */
        const char *got = url_query_get(&uq, p->name);
        CHECK(got != NULL);
        int first = 1;
        for (int k = 0; k < i; k++)
            if (strcmp(uq.p[k].name, p->name) == 0)
                first = 0;
        if (first)
            CHECK(got == p->value);
        if (i)
            buf_putc(&again, '&');
        percent_encode(&again, p->name, p->name_len);
        buf_putc(&again, '=');
        percent_encode(&again, p->value, p->value_len);
    }
    /* encoding what was decoded and decoding it again gives the same parameters */
    url_query uq2;
    CHECK(url_query_parse(ar, again.data ? again.data : "", again.len, &uq2, &bad) == URL_OK);
    CHECK(uq2.n == uq.n);
    for (int i = 0; i < uq.n; i++) {
        CHECK(uq2.p[i].name_len == uq.p[i].name_len && memcmp(uq2.p[i].name, uq.p[i].name, uq.p[i].name_len) == 0);
        CHECK(uq2.p[i].value_len == uq.p[i].value_len &&
              memcmp(uq2.p[i].value, uq.p[i].value, uq.p[i].value_len) == 0);
    }
    buf_free(&again);
}

static void check_route(arena *ar, const char *method, const char *path, size_t n)
{
    char *work = arena_strndup(ar, path, n);
    char *orig = arena_strndup(ar, path, n);
    url_match m;
    int mismatch = 0;
    int idx = url_route_match(g_routes, (int)NR, method, work, &m, &mismatch);
    if (idx < 0) {
        CHECK(m.nparams == 0);
        return;
    }
    CHECK(idx < (int)NR);
    const url_route *rt = &g_routes[idx];
    CHECK(strcmp(rt->method, method) == 0);
    int params = 0;
    for (int k = 0; k < rt->nsegs; k++)
        params += rt->segs[k][0] == ':' || rt->segs[k][0] == '*';
    CHECK(m.nparams == params);
    for (int k = 0; k < m.nparams; k++) {
        CHECK(m.raw_len[k] > 0);
        CHECK(m.raw[k] >= work && m.raw[k] + m.raw_len[k] <= work + n);
        /* a segment holds no slash; the rest of the path runs to the end of the path */
        if (rt->rest && k == m.nparams - 1)
            CHECK(m.raw[k] + m.raw_len[k] == work + strlen(orig) && !memchr(m.raw[k], '\0', m.raw_len[k]));
        else
            CHECK(memchr(m.raw[k], '/', m.raw_len[k]) == NULL);
        /* the raw segment is the bytes of the original path at that place */
        CHECK(memcmp(orig + (m.raw[k] - work), m.raw[k], m.raw_len[k]) == 0);
        /* decoding it: a usable name, or a refusal */
        const char *d;
        size_t dl;
        enum url_err e = url_decode_name(ar, m.raw[k], m.raw_len[k], 0, &d, &dl);
        if (e == URL_OK)
            CHECK(url_name_check(d, dl) == URL_OK && dl <= m.raw_len[k]);
    }
    /* the fixed segments of the route are in the path, in order */
    const char *at = orig;
    for (int k = 0; k < rt->nsegs; k++) {
        if (rt->segs[k][0] == ':' || rt->segs[k][0] == '*')
            continue;
        const char *hit = strstr(at, rt->segs[k]);
        CHECK(hit != NULL);
        at = hit + strlen(rt->segs[k]);
    }
}

static void check_lossy(const char *s, size_t n)
{
    buf b;
    buf_init(&b, 0);
    CHECK(jw_string_lossy(&b, s, n) == 0);
    json_doc d;
    memset(&d, 0, sizeof d);
    CHECK(json_parse(&d, b.data, b.len, NULL) == 0);
    CHECK(d.ntok == 1 && d.toks[0].type == JSON_STRING);
    buf out;
    buf_init(&out, 0);
    CHECK(json_str_decode(&d, 0, &out) == 0);
    CHECK(utf8_valid((const uint8_t *)out.data, out.len) == 0);
    if (utf8_valid((const uint8_t *)s, n) == 0)
        CHECK(out.len == n && (n == 0 || memcmp(out.data, s, n) == 0));
    buf_free(&out);
    json_doc_free(&d);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_init) {
        for (size_t i = 0; i < NR; i++) {
            snprintf(g_pats[i], sizeof g_pats[i], "%s", ROUTES[i][1]);
            CHECK(url_route_init(&g_routes[i], ROUTES[i][0], g_pats[i]) == 0);
        }
        g_init = 1;
    }
    if (size == 0)
        return 0;
    /* first byte: the method; the rest is a request target "path?query" */
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE"};
    const char *method = methods[data[0] & 3];
    const char *target = (const char *)data + 1;
    size_t tn = size - 1;
    arena ar;
    arena_init(&ar);
    const char *qm = memchr(target, '?', tn);
    size_t pn = qm ? (size_t)(qm - target) : tn;
    /* a path with a NUL cannot come from h2o's parser as a C string: stop at it, as on_req does */
    const char *nul = memchr(target, '\0', pn);
    check_route(&ar, method, target, nul ? (size_t)(nul - target) : pn);
    if (qm)
        check_query(&ar, qm + 1, tn - pn - 1);
    else
        check_query(&ar, target, tn);
    check_lossy(target, tn);
    /* decoding never writes more than it reads, and fails only on a bad escape */
    char *out = arena_alloc(&ar, tn + 1);
    long dl = url_decode(target, tn, out, data[0] & 4);
    CHECK(dl == -1 || (dl >= 0 && (size_t)dl <= tn));
    arena_free(&ar);
    return 0;
}
