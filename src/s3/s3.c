/* s3.c — the S3 client of s3.h on libcurl: requests signed by curl's built-in SigV4, driven
 * through one CURLM per client from the calling thread, with retries, backoff, multipart
 * uploads (parts in parallel on the same CURLM) and the bucket probe.
 *
 * Everything a call sends is a request (s3_req): method, URL, headers, body span, and what
 * came back. run_reqs() runs a set of them on the client's CURLM with bounded concurrency,
 * each with its own attempts and backoff; a single PUT/GET/HEAD is a set of one, a multipart
 * upload's parts a set of many. The signing pitfalls of curl 7.88 (docs/s3-client.md,
 * ../shared/TESTING.md) shape the headers: x-amz-content-sha256 is always ours, the path and
 * query are written already canonical (encoded, sorted, "uploads="), the size is always
 * known (no chunked uploads), and no header of ours is one curl would sign without sending. */
#include "s3.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "s3xml.h"

/* Error and XML answers are small; one past this is cut (and never parsed whole). */
#define S3_SMALL_BODY_MAX ((size_t)1 << 20)
/* The connect phase gets at most this much of a request's timeout. */
#define S3_CONNECT_TIMEOUT_MAX_MS 10000
/* Headers of ours on one request: sha256, type, MD5, two SSE. */
#define S3_REQ_MAX_HEADERS 8
/* Backoff sleeps wake up this often to look at *cancel. */
#define S3_CANCEL_POLL_MS 50

struct s3_client {
    s3_config cfg; /* strings below are owned copies */
    char *endpoint, *region, *bucket, *access_key, *secret_key, *sse;
    char sigv4[160]; /* "aws:amz:<region>:s3" */
    s3_observer_fn obs;
    void *obs_arg;
    CURLM *multi;
    CURL *easy[S3_MAX_INFLIGHT_PARTS + 1];
    int easy_busy[S3_MAX_INFLIGHT_PARTS + 1];
    uint64_t rng;
};

enum req_state { RQ_PENDING, RQ_RUNNING, RQ_OK, RQ_FAILED };

typedef struct s3_req {
    const char *op;     /* the observer's name */
    const char *method; /* GET HEAD PUT POST DELETE */
    buf url;
    /* our headers (names are literals, values owned); the curl list is built per attempt */
    const char *hname[S3_REQ_MAX_HEADERS];
    char *hval[S3_REQ_MAX_HEADERS];
    int nh;
    int sign_self; /* signed here rather than by curl (see sign_request) */
    struct curl_slist *slist;
    const char *body; /* upload span (borrowed), NULL for none */
    size_t body_len, body_off;
    int upload; /* sends a body (even an empty one) with Content-Length */
    int part_number;
    size_t resp_max;
    /* per attempt */
    buf resp;
    char etag[256];
    char bucket_region[64];
    int64_t retry_after_ms; /* -1 none */
    long status;
    CURLcode cc;
    int too_big;
    char curl_err[CURL_ERROR_SIZE];
    /* across attempts */
    int attempts;
    uint64_t not_before_ms;
    enum req_state state;
    char error[512];
    int slot; /* easy handle index while running */
} s3_req;

/* Error texts are cut to their buffer on purpose (S3's messages can be long). */
static void errf(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

/* ---- pure helpers ---- */

static const char HEX[] = "0123456789ABCDEF";

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

static void encode(buf *out, const char *s, size_t len, int keep_slash)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/'))
            buf_putc(out, (char)c);
        else {
            char t[3] = {'%', HEX[c >> 4], HEX[c & 15]};
            buf_append(out, t, 3);
        }
    }
}

void s3_encode_path(buf *out, const char *key, size_t len)
{
    encode(out, key, len, 1);
}

void s3_encode_query(buf *out, const char *s, size_t len)
{
    encode(out, s, len, 0);
}

void s3_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(data ? data : "", len, md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = "0123456789abcdef"[md[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[md[i] & 15];
    }
    out[64] = '\0';
}

void s3_md5_base64(const void *data, size_t len, char out[25])
{
    unsigned char md[16];
    unsigned int n = 0;
    EVP_Digest(data ? data : "", len, md, &n, EVP_md5(), NULL);
    EVP_EncodeBlock((unsigned char *)out, md, 16); /* 24 chars + NUL */
}

void s3_complete_xml(buf *out, char *const *etags, int n)
{
    buf_puts(out, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (int i = 0; i < n; i++) {
        buf_printf(out, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1);
        /* an ETag is quoted hex; escape anyway, it came from the network */
        for (const char *p = etags[i]; *p; p++) {
            switch (*p) {
            case '&': buf_puts(out, "&amp;"); break;
            case '<': buf_puts(out, "&lt;"); break;
            case '>': buf_puts(out, "&gt;"); break;
            case '"': buf_puts(out, "&quot;"); break;
            default: buf_putc(out, *p);
            }
        }
        buf_puts(out, "</ETag></Part>");
    }
    buf_puts(out, "</CompleteMultipartUpload>");
}

/* Splits "scheme://host[:port][/path]" (a trailing '/' dropped). */
typedef struct endpoint_parts {
    const char *scheme;
    size_t scheme_len;
    const char *host; /* host[:port] */
    size_t host_len;
    const char *path; /* "" or "/base" */
    size_t path_len;
} endpoint_parts;

static int split_endpoint(const char *ep, endpoint_parts *o)
{
    if (!ep)
        return -1;
    const char *sep = strstr(ep, "://");
    if (!sep)
        return -1;
    o->scheme = ep;
    o->scheme_len = (size_t)(sep - ep);
    if (!((o->scheme_len == 4 && strncmp(ep, "http", 4) == 0) || (o->scheme_len == 5 && strncmp(ep, "https", 5) == 0)))
        return -1;
    o->host = sep + 3;
    const char *slash = strchr(o->host, '/');
    o->host_len = slash ? (size_t)(slash - o->host) : strlen(o->host);
    if (o->host_len == 0 || memchr(o->host, '@', o->host_len) || memchr(o->host, '?', o->host_len))
        return -1;
    o->path = slash ? slash : "";
    o->path_len = strlen(o->path);
    while (o->path_len && o->path[o->path_len - 1] == '/')
        o->path_len--;
    return 0;
}

static int dns_bucket(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return 0;
    }
    return b[0] != '-' && b[0] != '.' && b[n - 1] != '-' && b[n - 1] != '.';
}

int s3_object_url(const s3_config *cfg, const char *key, buf *out)
{
    endpoint_parts e;
    if (!cfg->bucket || !*cfg->bucket || split_endpoint(cfg->endpoint, &e) < 0)
        return -1;
    buf_append(out, e.scheme, e.scheme_len);
    buf_puts(out, "://");
    if (cfg->path_style) {
        buf_append(out, e.host, e.host_len);
        buf_append(out, e.path, e.path_len);
        buf_putc(out, '/');
        s3_encode_path(out, cfg->bucket, strlen(cfg->bucket));
        if (key) {
            buf_putc(out, '/');
            s3_encode_path(out, key, strlen(key));
        }
    } else {
        if (!dns_bucket(cfg->bucket))
            return -1;
        buf_puts(out, cfg->bucket);
        buf_putc(out, '.');
        buf_append(out, e.host, e.host_len);
        buf_append(out, e.path, e.path_len);
        buf_putc(out, '/');
        if (key)
            s3_encode_path(out, key, strlen(key));
    }
    return out->overflow ? -1 : 0;
}

qerr s3_config_check(const s3_config *cfg, qerr_detail *err)
{
    endpoint_parts e;
    const char *why = NULL;
    if (!cfg->endpoint || split_endpoint(cfg->endpoint, &e) < 0)
        why = "endpoint must be http://host[:port] or https://host[:port]";
    else if (!cfg->bucket || !*cfg->bucket)
        why = "bucket is required";
    else if (!cfg->path_style && !dns_bucket(cfg->bucket))
        why = "virtual-host style needs a DNS-safe bucket name (3-63 of a-z 0-9 . -)";
    else if (!cfg->path_style && e.host_len && (e.host[0] == '[' || (e.host[0] >= '0' && e.host[0] <= '9' &&
                                                                     strspn(e.host, "0123456789.:") == e.host_len)))
        why = "virtual-host style needs a host name endpoint, not an IP address (use path style)";
    else if (!cfg->region || !*cfg->region || strlen(cfg->region) > 64 || strpbrk(cfg->region, ":/ \r\n"))
        why = "region is required (at most 64 bytes, no ':', '/' or spaces)";
    else if (!cfg->access_key || !*cfg->access_key || !cfg->secret_key || !*cfg->secret_key)
        why = "access key and secret key are required";
    else if (cfg->sse && *cfg->sse && strcmp(cfg->sse, "AES256") != 0 && strcmp(cfg->sse, "aws:kms") != 0 &&
             strncmp(cfg->sse, "aws:kms:", 8) != 0)
        why = "sse must be AES256, aws:kms or aws:kms:<key id>";
    else if (cfg->sse && strncmp(cfg->sse, "aws:kms:", 8) == 0 && (!cfg->sse[8] || strpbrk(cfg->sse + 8, "\r\n")))
        why = "sse aws:kms:<key id> needs a key id";
    else if (cfg->max_inflight_parts < 0 || cfg->max_inflight_parts > S3_MAX_INFLIGHT_PARTS)
        why = "max_inflight_parts must be 0..16";
    return why ? qerr_set(err, QERR_BAD_INPUT, NULL, "%s", why) : QERR_OK;
}

/* ---- results ---- */

void s3_result_init(s3_result *r)
{
    r->status = 0;
    r->attempts = 0;
    r->error[0] = '\0';
    buf_init(&r->body, 0);
}

void s3_result_free(s3_result *r)
{
    buf_free(&r->body);
}

static void result_reset(s3_result *r)
{
    r->status = 0;
    r->attempts = 0;
    r->error[0] = '\0';
    buf_reset(&r->body);
}

/* ---- the client ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_sigv4_sort_bug; /* curl < 8.10: see sign_request */
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl_sigv4_sort_bug = curl_version_info(CURLVERSION_NOW)->version_num < 0x080a00;
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

s3_client *s3_client_new(const s3_config *cfg, s3_observer_fn obs, void *obs_arg)
{
    if (s3_config_check(cfg, NULL) != QERR_OK)
        return NULL;
    pthread_once(&curl_once, curl_init_once);
    s3_client *c = xcalloc(1, sizeof *c);
    c->cfg = *cfg;
    c->cfg.endpoint = c->endpoint = xstrdup(cfg->endpoint);
    c->cfg.region = c->region = xstrdup(cfg->region);
    c->cfg.bucket = c->bucket = xstrdup(cfg->bucket);
    c->cfg.access_key = c->access_key = xstrdup(cfg->access_key);
    c->cfg.secret_key = c->secret_key = xstrdup(cfg->secret_key);
    c->cfg.sse = c->sse = (cfg->sse && *cfg->sse) ? dup_or_null(cfg->sse) : NULL;
    if (!c->cfg.multipart_threshold)
        c->cfg.multipart_threshold = S3_DEFAULT_MULTIPART_THRESHOLD;
    if (!c->cfg.part_size)
        c->cfg.part_size = S3_DEFAULT_PART_SIZE;
    if (c->cfg.max_attempts <= 0)
        c->cfg.max_attempts = S3_DEFAULT_MAX_ATTEMPTS;
    if (c->cfg.backoff_base_ms <= 0)
        c->cfg.backoff_base_ms = S3_DEFAULT_BACKOFF_BASE_MS;
    if (c->cfg.backoff_max_ms <= 0)
        c->cfg.backoff_max_ms = S3_DEFAULT_BACKOFF_MAX_MS;
    if (c->cfg.backoff_max_ms < c->cfg.backoff_base_ms)
        c->cfg.backoff_max_ms = c->cfg.backoff_base_ms;
    if (c->cfg.timeout_ms <= 0)
        c->cfg.timeout_ms = S3_DEFAULT_TIMEOUT_MS;
    if (c->cfg.max_inflight_parts <= 0)
        c->cfg.max_inflight_parts = S3_DEFAULT_INFLIGHT_PARTS;
    if (!c->cfg.max_get_bytes)
        c->cfg.max_get_bytes = S3_DEFAULT_MAX_GET_BYTES;
    snprintf(c->sigv4, sizeof c->sigv4, "aws:amz:%s:s3", c->region);
    c->obs = obs;
    c->obs_arg = obs_arg;
    c->multi = curl_multi_init();
    /* keep one connection per transfer that can run at once */
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)c->cfg.max_inflight_parts + 1);
    c->rng = mono_us() ^ (uint64_t)(uintptr_t)c ^ ((uint64_t)wall_us() << 17);
    if (!c->rng)
        c->rng = 0x9E3779B97F4A7C15ull;
    return c;
}

void s3_client_free(s3_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < ARRAY_LEN(c->easy); i++)
        if (c->easy[i])
            curl_easy_cleanup(c->easy[i]);
    curl_multi_cleanup(c->multi);
    if (c->secret_key)
        explicit_bzero(c->secret_key, strlen(c->secret_key));
    free(c->endpoint);
    free(c->region);
    free(c->bucket);
    free(c->access_key);
    free(c->secret_key);
    free(c->sse);
    free(c);
}

static uint64_t rng_next(s3_client *c)
{
    /* xorshift64*: jitter only, no need for more */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return c->rng * 0x2545F4914F6CDD1Dull;
}

/* The wait before attempt n+1 after n attempts: base·2^(n-1) capped at max, then "equal
 * jitter" (half fixed, half random) so clients that failed together spread out; a server's
 * Retry-After raises it, still capped at max. */
static int64_t backoff_ms(s3_client *c, int attempts, int64_t retry_after_ms)
{
    int64_t d = c->cfg.backoff_base_ms;
    for (int i = 1; i < attempts && d < c->cfg.backoff_max_ms; i++)
        d *= 2;
    if (d > c->cfg.backoff_max_ms)
        d = c->cfg.backoff_max_ms;
    int64_t half = d / 2;
    d = half + (int64_t)(rng_next(c) % (uint64_t)(d - half + 1));
    if (retry_after_ms > d)
        d = retry_after_ms < c->cfg.backoff_max_ms ? retry_after_ms : c->cfg.backoff_max_ms;
    return d;
}

static int cancelled(const s3_client *c)
{
    return c->cfg.cancel && *c->cfg.cancel;
}

/* ---- requests ---- */

static void req_init(s3_req *q, const char *op, const char *method)
{
    memset(q, 0, sizeof *q);
    q->op = op;
    q->method = method;
    buf_init(&q->url, 0);
    buf_init(&q->resp, S3_SMALL_BODY_MAX);
    q->resp_max = S3_SMALL_BODY_MAX;
    q->state = RQ_PENDING;
    q->slot = -1;
}

static void req_free(s3_req *q)
{
    buf_free(&q->url);
    buf_free(&q->resp);
    for (int i = 0; i < q->nh; i++)
        free(q->hval[i]);
    q->nh = 0;
    curl_slist_free_all(q->slist);
    q->slist = NULL;
}

static void req_header(s3_req *q, const char *name, const char *value)
{
    if (q->nh >= S3_REQ_MAX_HEADERS)
        abort(); /* a fixed set of call sites; more is a bug here */
    q->hname[q->nh] = name;
    q->hval[q->nh] = xstrdup(value);
    q->nh++;
}

/* Every request signs the hash of what it sends (curl 7.88 adds no x-amz-content-sha256 and
 * would hash an upload's body as empty): the empty string's for GET, HEAD and DELETE. */
static void req_payload_hash(s3_req *q, const void *data, size_t len)
{
    char sha[65];
    s3_sha256_hex(data, len, sha);
    req_header(q, "x-amz-content-sha256", sha);
}

/* A request that sends a body (possibly empty) of a known size: PUT and POST. Bodies over
 * 1 MiB go with curl's own "Expect: 100-continue" (unsigned, as S3 wants); switching it off
 * with an "Expect:" header is not an option, because curl 7.88 signs that empty header
 * without sending it (the unit test's verifier caught it). */
static void req_body(s3_req *q, const void *data, size_t len, int md5)
{
    req_payload_hash(q, data, len);
    if (md5) {
        char m[25];
        s3_md5_base64(data, len, m);
        req_header(q, "Content-MD5", m);
    }
    q->body = data;
    q->body_len = len;
    q->upload = 1;
}

static void req_sse(const s3_client *c, s3_req *q)
{
    if (!c->sse)
        return;
    if (strcmp(c->sse, "AES256") == 0)
        req_header(q, "x-amz-server-side-encryption", "AES256");
    else {
        req_header(q, "x-amz-server-side-encryption", "aws:kms");
        if (strncmp(c->sse, "aws:kms:", 8) == 0)
            req_header(q, "x-amz-server-side-encryption-aws-kms-key-id", c->sse + 8);
    }
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    s3_req *q = arg;
    size_t n = size * nmemb;
    if (q->resp.len + n > q->resp_max) {
        q->too_big = 1;
        return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
    }
    if (buf_append(&q->resp, ptr, n) < 0) {
        q->too_big = 1;
        return 0;
    }
    return n;
}

static size_t on_read(char *ptr, size_t size, size_t nmemb, void *arg)
{
    s3_req *q = arg;
    size_t n = size * nmemb, left = q->body_len - q->body_off;
    if (n > left)
        n = left;
    if (n)
        memcpy(ptr, q->body + q->body_off, n);
    q->body_off += n;
    return n;
}

/* curl rewinds a body when it must send it again on a new connection. */
static int on_seek(void *arg, curl_off_t offset, int origin)
{
    s3_req *q = arg;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > q->body_len)
        return CURL_SEEKFUNC_CANTSEEK;
    q->body_off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static void header_value(const char *line, size_t n, size_t name_len, char *out, size_t cap)
{
    const char *v = line + name_len;
    const char *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    size_t len = (size_t)(e - v);
    if (len >= cap)
        len = cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
}

/* Is line "<name>:..." (name given with its colon, any case)? */
static int header_is(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && ascii_ieq(line, k, name);
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
{
    s3_req *q = arg;
    size_t n = size * nmemb;
    if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* a new response (after a 100 Continue or on a retried connection) */
        q->etag[0] = '\0';
        q->bucket_region[0] = '\0';
        q->retry_after_ms = -1;
        return n;
    }
    if (header_is(line, n, "etag:"))
        header_value(line, n, 5, q->etag, sizeof q->etag);
    else if (header_is(line, n, "x-amz-bucket-region:"))
        header_value(line, n, strlen("x-amz-bucket-region:"), q->bucket_region, sizeof q->bucket_region);
    else if (header_is(line, n, "retry-after:")) {
        char v[32];
        header_value(line, n, strlen("retry-after:"), v, sizeof v);
        char *end;
        long s = strtol(v, &end, 10);
        if (end != v && *end == '\0' && s >= 0 && s < 86400)
            q->retry_after_ms = (int64_t)s * 1000;
    }
    return n;
}

/* ---- signing ----
 *
 * curl's CURLOPT_AWS_SIGV4 signs every request, except where curl before 8.10 gets it wrong:
 * it sorts the canonical headers as whole "name:value" lines, so a header whose name is a
 * prefix of another's ("x-amz-server-side-encryption" and "...-aws-kms-key-id", the SSE-KMS
 * pair) lands after it, and S3 answers SignatureDoesNotMatch (curl PR #14370). Those requests
 * are signed here instead, with the same algorithm: canonical request (method, the path and
 * query as written — already canonical —, the headers sorted by name, the payload hash),
 * string to sign, the derived key. */

static int lower_cmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int x = (*a >= 'A' && *a <= 'Z') ? *a + 32 : *a, y = (*b >= 'A' && *b <= 'Z') ? *b + 32 : *b;
        if (x != y || !x)
            return x - y;
    }
}

static int curl_sorts_wrong(const s3_req *q)
{
    if (!curl_sigv4_sort_bug)
        return 0;
    for (int i = 0; i < q->nh; i++)
        for (int j = 0; j < q->nh; j++) {
            size_t n = strlen(q->hname[i]);
            if (i != j && strlen(q->hname[j]) > n && strncasecmp(q->hname[i], q->hname[j], n) == 0)
                return 1;
        }
    return 0;
}

static void hmac256(const void *key, size_t klen, const char *msg, size_t mlen, unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen, out, &n);
}

/* The URL's authority (host[:port]) and path+query, as the request line and Host carry them. */
static void url_split(const char *url, const char **auth, size_t *auth_len, const char **path, const char **query)
{
    const char *a = strstr(url, "://");
    a = a ? a + 3 : url;
    const char *p = strchr(a, '/');
    if (!p)
        p = a + strlen(a);
    *auth = a;
    *auth_len = (size_t)(p - a);
    *path = p;
    *query = strchr(p, '?');
}

/* Adds Host, x-amz-date and Authorization to l for q, signed with c's credentials. */
static struct curl_slist *sign_request(const s3_client *c, const s3_req *q, struct curl_slist *l)
{
    char date[20], day[9];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
    memcpy(day, date, 8);
    day[8] = '\0';
    const char *auth, *path, *query;
    size_t auth_len;
    url_split(q->url.data, &auth, &auth_len, &path, &query);
    size_t path_len = query ? (size_t)(query - path) : strlen(path);
    /* the headers to sign, by lowercase name */
    const char *names[S3_REQ_MAX_HEADERS + 2];
    const char *vals[S3_REQ_MAX_HEADERS + 2];
    int n = 0;
    for (int i = 0; i < q->nh; i++) {
        names[n] = q->hname[i];
        vals[n++] = q->hval[i];
    }
    names[n] = "x-amz-date";
    vals[n++] = date;
    for (int i = 1; i < n; i++) /* insertion sort: a handful of names */
        for (int j = i; j > 0 && lower_cmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
            t = vals[j];
            vals[j] = vals[j - 1];
            vals[j - 1] = t;
        }
    buf cr, sh;
    buf_init(&cr, 0);
    buf_init(&sh, 0);
    buf_printf(&cr, "%s\n", q->method);
    buf_append(&cr, path, path_len);
    buf_printf(&cr, "\n%s\n", query ? query + 1 : "");
    int host_done = 0;
    const char *payload = "";
    for (int i = 0; i <= n; i++) {
        /* "host" sorts among the others */
        if (!host_done && (i == n || lower_cmp("host", names[i]) < 0)) {
            buf_puts(&cr, "host:");
            buf_append(&cr, auth, auth_len);
            buf_putc(&cr, '\n');
            buf_puts(&sh, sh.len ? ";host" : "host");
            host_done = 1;
        }
        if (i == n)
            break;
        if (sh.len)
            buf_putc(&sh, ';');
        for (const char *p = names[i]; *p; p++) {
            char ch = (*p >= 'A' && *p <= 'Z') ? (char)(*p + 32) : *p;
            buf_putc(&cr, ch);
            buf_putc(&sh, ch);
        }
        buf_printf(&cr, ":%s\n", vals[i]);
        if (lower_cmp(names[i], "x-amz-content-sha256") == 0)
            payload = vals[i];
    }
    buf_printf(&cr, "\n%s\n%s", buf_cstr(&sh), payload);
    char cr_hash[65];
    s3_sha256_hex(cr.data, cr.len, cr_hash);
    buf sts;
    buf_init(&sts, 0);
    buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", date, day, c->region, cr_hash);
    buf k0;
    buf_init(&k0, 0);
    buf_printf(&k0, "AWS4%s", c->secret_key);
    unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
    hmac256(k0.data, k0.len, day, 8, k1);
    hmac256(k1, 32, c->region, strlen(c->region), k2);
    hmac256(k2, 32, "s3", 2, k3);
    hmac256(k3, 32, "aws4_request", 12, k4);
    hmac256(k4, 32, sts.data, sts.len, sig);
    explicit_bzero(k0.data, k0.len);
    buf_free(&k0);
    buf h;
    buf_init(&h, 0);
    buf_puts(&h, "Host: ");
    buf_append(&h, auth, auth_len);
    l = curl_slist_append(l, buf_cstr(&h));
    buf_reset(&h);
    buf_printf(&h, "x-amz-date: %s", date);
    l = curl_slist_append(l, buf_cstr(&h));
    buf_reset(&h);
    buf_printf(&h, "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, SignedHeaders=%s, Signature=",
               c->access_key, day, c->region, buf_cstr(&sh));
    for (int i = 0; i < 32; i++)
        buf_printf(&h, "%02x", sig[i]);
    l = curl_slist_append(l, buf_cstr(&h));
    buf_free(&h);
    buf_free(&cr);
    buf_free(&sh);
    buf_free(&sts);
    return l;
}

/* The header list for one attempt (a self-signed request gets a fresh date each time). */
static void req_build_headers(const s3_client *c, s3_req *q)
{
    curl_slist_free_all(q->slist);
    q->slist = NULL;
    buf h;
    buf_init(&h, 0);
    for (int i = 0; i < q->nh; i++) {
        buf_reset(&h);
        buf_printf(&h, "%s: %s", q->hname[i], q->hval[i]);
        q->slist = curl_slist_append(q->slist, buf_cstr(&h));
    }
    buf_free(&h);
    if (q->sign_self)
        q->slist = sign_request(c, q, q->slist);
}

/* Sets up slot's easy handle for q's next attempt and adds it to the CURLM. */
static int req_start(s3_client *c, s3_req *q)
{
    int slot = -1;
    for (int i = 0; i <= c->cfg.max_inflight_parts && i < (int)ARRAY_LEN(c->easy); i++)
        if (!c->easy_busy[i]) {
            slot = i;
            break;
        }
    if (slot < 0)
        return -1;
    if (!c->easy[slot])
        c->easy[slot] = curl_easy_init();
    CURL *e = c->easy[slot];
    if (!e)
        return -1;
    curl_easy_reset(e);
    buf_reset(&q->resp);
    q->etag[0] = q->bucket_region[0] = q->curl_err[0] = '\0';
    q->retry_after_ms = -1;
    q->status = 0;
    q->cc = CURLE_OK;
    q->too_big = 0;
    q->body_off = 0;
    int64_t connect_ms = c->cfg.timeout_ms < S3_CONNECT_TIMEOUT_MAX_MS ? c->cfg.timeout_ms : S3_CONNECT_TIMEOUT_MAX_MS;

    curl_easy_setopt(e, CURLOPT_URL, buf_cstr(&q->url));
    curl_easy_setopt(e, CURLOPT_PRIVATE, q);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "queen-s3/2.0.0");
    q->sign_self = c->cfg.sigv4_self || curl_sorts_wrong(q);
    req_build_headers(c, q);
    if (!q->sign_self) {
        curl_easy_setopt(e, CURLOPT_AWS_SIGV4, c->sigv4);
        curl_easy_setopt(e, CURLOPT_USERNAME, c->access_key);
        curl_easy_setopt(e, CURLOPT_PASSWORD, c->secret_key);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->slist);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->cfg.timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->curl_err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, q);
    if (strcmp(q->method, "HEAD") == 0)
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(q->method, "GET") == 0)
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    else if (q->upload) {
        /* PUT and POST both go as an upload of a known size: Content-Length, never chunked */
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->body_len);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, q);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, q);
        if (strcmp(q->method, "PUT") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
    } else
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
        return -1;
    c->easy_busy[slot] = 1;
    q->slot = slot;
    q->state = RQ_RUNNING;
    q->attempts++;
    return 0;
}

static void req_detach(s3_client *c, s3_req *q)
{
    if (q->slot < 0)
        return;
    curl_multi_remove_handle(c->multi, c->easy[q->slot]);
    c->easy_busy[q->slot] = 0;
    q->slot = -1;
}

/* Retryable network errors: everything but a request we built wrong. */
static int cc_retryable(CURLcode cc)
{
    switch (cc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_OUT_OF_MEMORY:
        return 0;
    default:
        return 1;
    }
}

static int status_retryable(long st)
{
    return st >= 500 || st == 429 || st == 408;
}

/* A 200 whose body is an <Error> (CompleteMultipartUpload): these codes are worth another try. */
static int code_retryable(const char *code)
{
    return strcmp(code, "InternalError") == 0 || strcmp(code, "SlowDown") == 0 ||
           strcmp(code, "ServiceUnavailable") == 0 || strcmp(code, "RequestTimeout") == 0;
}

/* Fills q->error from the answer; returns 1 when it says "try again". */
static int describe_failure(const s3_client *c, s3_req *q)
{
    if (q->too_big) {
        errf(q->error, sizeof q->error, "answer larger than %zu bytes", q->resp_max);
        return 0;
    }
    if (q->cc != CURLE_OK) {
        errf(q->error, sizeof q->error, "%s", q->curl_err[0] ? q->curl_err : curl_easy_strerror(q->cc));
        return cc_retryable(q->cc);
    }
    char code[128], msg[384];
    int x = s3xml_error(q->resp.data, q->resp.len, code, sizeof code, msg, sizeof msg);
    if (x == 1 && (code[0] || msg[0]))
        errf(q->error, sizeof q->error, "%s: %s", code[0] ? code : "Error", msg);
    else if (strcmp(q->op, "head_bucket") == 0 && q->status == 403)
        errf(q->error, sizeof q->error,
                 "HTTP 403: the bucket refused these credentials (check the access key, secret key and region)");
    else if (strcmp(q->op, "head_bucket") == 0 && q->status == 404)
        errf(q->error, sizeof q->error, "HTTP 404: no bucket named %s at %s", c->bucket, c->endpoint);
    else
        errf(q->error, sizeof q->error, "HTTP %ld", q->status);
    if (q->bucket_region[0] && strcmp(q->bucket_region, c->region) != 0) {
        size_t n = strlen(q->error);
        errf(q->error + n, sizeof q->error - n, " (the bucket is in region %s, not %s)", q->bucket_region,
                 c->region);
    }
    return status_retryable(q->status);
}

/* A finished attempt: 1 done, 0 retry later, -1 failed for good. */
static int req_finish(s3_client *c, s3_req *q)
{
    curl_easy_getinfo(c->easy[q->slot], CURLINFO_RESPONSE_CODE, &q->status);
    if (q->cc != CURLE_OK)
        q->status = 0;
    req_detach(c, q);
    if (c->obs)
        c->obs(c->obs_arg, q->op, q->status);
    int retry;
    if (q->cc == CURLE_OK && q->status >= 200 && q->status < 300) {
        if (strcmp(q->op, "complete_multipart") == 0) {
            /* S3 may answer 200 and then fail: the body says which */
            char code[128], msg[384];
            int x = s3xml_error(q->resp.data, q->resp.len, code, sizeof code, msg, sizeof msg);
            if (x == 1) {
                errf(q->error, sizeof q->error, "%s: %s", code[0] ? code : "Error", msg);
                retry = code_retryable(code);
                goto failed;
            }
            if (x < 0) {
                errf(q->error, sizeof q->error, "HTTP %ld with a body that is not XML", q->status);
                retry = 1;
                goto failed;
            }
        }
        if (strcmp(q->op, "upload_part") == 0 && !q->etag[0]) {
            errf(q->error, sizeof q->error, "HTTP %ld without an ETag", q->status);
            retry = 1;
            goto failed;
        }
        q->state = RQ_OK;
        q->error[0] = '\0';
        return 1;
    }
    retry = describe_failure(c, q);
failed:
    if (retry && q->attempts < c->cfg.max_attempts && !cancelled(c)) {
        int64_t d = backoff_ms(c, q->attempts, q->retry_after_ms);
        log_debug("queen-s3", "s3 %s attempt %d failed (%s), next in %lld ms", q->op, q->attempts, q->error,
                  (long long)d);
        q->not_before_ms = mono_ms() + (uint64_t)d;
        q->state = RQ_PENDING;
        return 0;
    }
    if (retry && cancelled(c) && q->attempts < c->cfg.max_attempts) {
        size_t n = strlen(q->error);
        errf(q->error + n, sizeof q->error - n, " (not retried: stopping)");
    }
    q->state = RQ_FAILED;
    return -1;
}

/* Runs reqs[0..n) on the CURLM, at most conc at once (started in order), each until it
 * succeeds or fails for good; adds every attempt to *attempts. With fail_fast, the first
 * failure stops the set: transfers in flight are dropped (their connections closed) and the
 * ones not started are not sent. Returns -1 when all succeeded, else the index of the first
 * request that failed. */
static int run_reqs(s3_client *c, s3_req **reqs, size_t n, int conc, int fail_fast, int *attempts)
{
    int failed = -1;
    int running = 0;
    for (;;) {
        uint64_t now = mono_ms();
        uint64_t wake = now + S3_CANCEL_POLL_MS;
        size_t done = 0;
        for (size_t i = 0; i < n; i++) {
            s3_req *q = reqs[i];
            if (q->state == RQ_OK || q->state == RQ_FAILED) {
                done++;
                continue;
            }
            if (q->state != RQ_PENDING || (fail_fast && failed >= 0))
                continue;
            if (q->attempts > 0 && cancelled(c)) {
                size_t m = strlen(q->error);
                errf(q->error + m, sizeof q->error - m, " (not retried: stopping)");
                q->state = RQ_FAILED;
                if (failed < 0)
                    failed = (int)i;
                done++;
                continue;
            }
            if (q->not_before_ms > now) {
                if (q->not_before_ms < wake)
                    wake = q->not_before_ms;
                continue;
            }
            /* a request waiting for its retry does not hold back later ones */
            if (running < conc) {
                if (req_start(c, q) < 0) {
                    errf(q->error, sizeof q->error, "could not start a transfer");
                    q->state = RQ_FAILED;
                    if (failed < 0)
                        failed = (int)i;
                    continue;
                }
                running++;
                (*attempts)++;
            }
        }
        if (fail_fast && failed >= 0) {
            for (size_t i = 0; i < n; i++) {
                s3_req *q = reqs[i];
                if (q->state == RQ_RUNNING) {
                    req_detach(c, q);
                    errf(q->error, sizeof q->error, "dropped: another request failed");
                    q->state = RQ_FAILED;
                } else if (q->state == RQ_PENDING) {
                    errf(q->error, sizeof q->error, "not sent: another request failed");
                    q->state = RQ_FAILED;
                }
            }
            return failed;
        }
        if (done == n)
            return failed;
        int still = 0;
        curl_multi_perform(c->multi, &still);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(c->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            s3_req *q = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
            if (!q)
                continue;
            q->cc = m->data.result;
            running--;
            int r = req_finish(c, q);
            if (r < 0 && failed < 0) {
                for (size_t i = 0; i < n; i++)
                    if (reqs[i] == q)
                        failed = (int)i;
            }
            if (r > 0 && q->part_number && c->cfg.on_part_uploaded)
                c->cfg.on_part_uploaded(c->cfg.hook_arg, q->part_number);
        }
        if (failed >= 0 && fail_fast)
            continue; /* drop the rest at the top */
        now = mono_ms();
        long timeout = wake > now ? (long)(wake - now) : 0;
        if (timeout > S3_CANCEL_POLL_MS)
            timeout = S3_CANCEL_POLL_MS;
        if (running > 0 || timeout > 0)
            curl_multi_poll(c->multi, NULL, 0, (int)timeout, NULL);
    }
}

static void result_from(s3_result *r, const s3_req *q, const char *prefix)
{
    r->status = q->status;
    if (q->state == RQ_FAILED) {
        if (prefix)
            errf(r->error, sizeof r->error, "%s: %s", prefix, q->error);
        else
            errf(r->error, sizeof r->error, "%s", q->error);
    }
}

/* One request, with its retries. 0 success, -1 failed (r says why). */
static int run_one(s3_client *c, s3_req *q, s3_result *r, const char *prefix)
{
    s3_req *set[1] = {q};
    int failed = run_reqs(c, set, 1, 1, 1, &r->attempts);
    result_from(r, q, prefix);
    return failed >= 0 ? -1 : 0;
}

static int req_url(s3_client *c, s3_req *q, const char *key, const char *query)
{
    if (s3_object_url(&c->cfg, key, &q->url) < 0)
        return -1;
    if (query) {
        buf_putc(&q->url, '?');
        buf_puts(&q->url, query);
    }
    return 0;
}

static int put_single(s3_client *c, const char *key, const void *data, size_t len, const char *content_type,
                      int if_absent, s3_result *r)
{
    s3_req q;
    req_init(&q, "put", "PUT");
    int rc = -1;
    if (req_url(c, &q, key, NULL) < 0) {
        errf(r->error, sizeof r->error, "cannot build the URL for this key");
        goto out;
    }
    req_body(&q, data, len, c->cfg.content_md5);
    if (content_type && *content_type)
        req_header(&q, "Content-Type", content_type);
    if (if_absent)
        req_header(&q, "If-None-Match", "*");
    req_sse(c, &q);
    rc = run_one(c, &q, r, NULL);
    if (rc < 0 && if_absent && q.status == 412)
        rc = 1; /* PreconditionFailed: an object is already there */
out:
    req_free(&q);
    return rc;
}

/* AbortMultipartUpload, best effort: its outcome is only logged, r keeps the failure that
 * made us abort. Sent even when stopping (one attempt), so no parts are left behind. */
static void abort_upload(s3_client *c, const char *key, const char *upload_id, s3_result *r)
{
    s3_req q;
    req_init(&q, "abort_multipart", "DELETE");
    buf qs;
    buf_init(&qs, 0);
    buf_puts(&qs, "uploadId=");
    s3_encode_query(&qs, upload_id, strlen(upload_id));
    if (req_url(c, &q, key, buf_cstr(&qs)) == 0) {
        req_payload_hash(&q, NULL, 0);
        s3_req *set[1] = {&q};
        if (run_reqs(c, set, 1, 1, 1, &r->attempts) >= 0)
            log_warn("queen-s3", "s3 abort of multipart upload %s of %s failed: %s (a lifecycle rule cleans it up)",
                     upload_id, key, q.error);
    }
    buf_free(&qs);
    req_free(&q);
}

static int put_multipart(s3_client *c, const char *key, const char *data, size_t len, const char *content_type,
                         s3_result *r)
{
    int rc = -1;
    char *upload_id = NULL;
    size_t part = c->cfg.part_size;
    if ((len + part - 1) / part > S3_MAX_PARTS)
        part = (len + S3_MAX_PARTS - 1) / S3_MAX_PARTS;
    int nparts = (int)((len + part - 1) / part);
    s3_req *parts = NULL, **set = NULL;
    char **etags = NULL;
    buf xml, qs;
    buf_init(&xml, 0);
    buf_init(&qs, 0);

    /* 1. CreateMultipartUpload: POST ?uploads= carries the object's headers (type, SSE) */
    s3_req cq;
    req_init(&cq, "create_multipart", "POST");
    if (req_url(c, &cq, key, "uploads=") < 0) {
        req_free(&cq);
        errf(r->error, sizeof r->error, "cannot build the URL for this key");
        return -1;
    }
    req_body(&cq, NULL, 0, 0);
    if (content_type && *content_type)
        req_header(&cq, "Content-Type", content_type);
    req_sse(c, &cq);
    if (run_one(c, &cq, r, "create_multipart") < 0) {
        req_free(&cq);
        return -1;
    }
    buf id;
    buf_init(&id, 1024);
    if (s3xml_text(cq.resp.data, cq.resp.len, "InitiateMultipartUploadResult/UploadId", &id) != 1 || id.len == 0) {
        errf(r->error, sizeof r->error, "create_multipart: HTTP %ld without an UploadId", cq.status);
        buf_free(&id);
        req_free(&cq);
        return -1;
    }
    upload_id = buf_steal(&id, NULL);
    req_free(&cq);

    /* 2. the parts, up to max_inflight_parts at once */
    parts = xcalloc((size_t)nparts, sizeof *parts);
    set = xcalloc((size_t)nparts, sizeof *set);
    for (int i = 0; i < nparts; i++) {
        s3_req *q = &parts[i];
        req_init(q, "upload_part", "PUT");
        q->part_number = i + 1;
        buf_reset(&qs);
        buf_printf(&qs, "partNumber=%d&uploadId=", i + 1); /* sorted: p < u */
        s3_encode_query(&qs, upload_id, strlen(upload_id));
        req_url(c, q, key, buf_cstr(&qs));
        size_t off = (size_t)i * part, n = len - off < part ? len - off : part;
        req_body(q, data + off, n, c->cfg.content_md5);
        set[i] = q;
    }
    int failed = run_reqs(c, set, (size_t)nparts, c->cfg.max_inflight_parts, 1, &r->attempts);
    if (failed >= 0) {
        char step[32];
        snprintf(step, sizeof step, "upload_part %d", failed + 1);
        result_from(r, &parts[failed], step);
        goto abort;
    }

    /* 3. CompleteMultipartUpload with every part's ETag, in order */
    etags = xcalloc((size_t)nparts, sizeof *etags);
    for (int i = 0; i < nparts; i++)
        etags[i] = parts[i].etag;
    s3_complete_xml(&xml, etags, nparts);
    s3_req fq;
    req_init(&fq, "complete_multipart", "POST");
    buf_reset(&qs);
    buf_puts(&qs, "uploadId=");
    s3_encode_query(&qs, upload_id, strlen(upload_id));
    req_url(c, &fq, key, buf_cstr(&qs));
    req_body(&fq, xml.data, xml.len, 0);
    req_header(&fq, "Content-Type", "application/xml");
    int crc = run_one(c, &fq, r, "complete_multipart");
    req_free(&fq);
    if (crc < 0)
        goto abort;
    rc = 0;
    goto out;

abort:
    abort_upload(c, key, upload_id, r);
out:
    if (parts)
        for (int i = 0; i < nparts; i++)
            req_free(&parts[i]);
    free(parts);
    free(set);
    free(etags);
    free(upload_id);
    buf_free(&xml);
    buf_free(&qs);
    return rc;
}

int s3_put(s3_client *c, const char *key, const void *data, size_t len, const char *content_type, s3_result *r)
{
    result_reset(r);
    if (len > c->cfg.multipart_threshold)
        return put_multipart(c, key, data, len, content_type, r);
    return put_single(c, key, data, len, content_type, 0, r);
}

int s3_put_new(s3_client *c, const char *key, const void *data, size_t len, const char *content_type, s3_result *r)
{
    result_reset(r);
    if (len > c->cfg.multipart_threshold)
        return put_multipart(c, key, data, len, content_type, r);
    return put_single(c, key, data, len, content_type, 1, r);
}

int s3_get(s3_client *c, const char *key, s3_result *r)
{
    result_reset(r);
    s3_req q;
    req_init(&q, "get", "GET");
    int rc = -1;
    if (req_url(c, &q, key, NULL) < 0) {
        errf(r->error, sizeof r->error, "cannot build the URL for this key");
        goto out;
    }
    req_payload_hash(&q, NULL, 0);
    q.resp_max = c->cfg.max_get_bytes;
    q.resp.max = c->cfg.max_get_bytes;
    rc = run_one(c, &q, r, NULL);
    if (rc == 0) {
        /* hand the body over without a copy */
        buf_free(&r->body);
        r->body = q.resp;
        buf_init(&q.resp, 0);
    } else if (q.status == 404 && strncmp(q.error, "NoSuchBucket:", 13) != 0) {
        rc = 1; /* the key is not there (a missing bucket stays a failure) */
    }
out:
    req_free(&q);
    return rc;
}

int s3_head_bucket(s3_client *c, s3_result *r)
{
    result_reset(r);
    s3_req q;
    req_init(&q, "head_bucket", "HEAD");
    int rc = -1;
    if (req_url(c, &q, NULL, NULL) < 0) {
        errf(r->error, sizeof r->error, "cannot build the bucket URL");
        goto out;
    }
    req_payload_hash(&q, NULL, 0);
    rc = run_one(c, &q, r, NULL);
    if (rc < 0 && q.status == 0) {
        char tmp[sizeof r->error];
        errf(tmp, sizeof tmp, "no answer from %s: %s", c->endpoint, r->error);
        memcpy(r->error, tmp, sizeof tmp);
    }
out:
    req_free(&q);
    return rc;
}
