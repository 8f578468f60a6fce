/* Unit tests for the S3 client (src/s3): key and query encoding, URL building, the XML
 * reader, and the bytes on the wire.
 *
 * The wire tests start a tiny HTTP/1.1 server on 127.0.0.1 (a thread per connection) that
 * records every request and answers from a per-test script. Each recorded request is checked
 * for its method, path, query, Host, Content-Length, x-amz-content-sha256 (against the hash
 * of the body that arrived) and SSE headers, and its Authorization header is verified with a
 * SigV4 implementation written here from AWS's description (canonical request, string to
 * sign, signing key; OpenSSL HMAC-SHA256), not with curl's: a wrong signature fails the test.
 * Then retries (500, 500, 200; 429/408; Retry-After; connections closed or hanging; cancel),
 * keep-alive, and multipart uploads (parts in parallel and bounded, retried parts, the
 * Complete body, a 200 whose body is an <Error>, Abort after a permanent failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "s3/s3.h"
#include "s3/s3xml.h"

#define AK "AKIDEXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

/* ------------------------------------------------------------------ pure helpers */

static char *enc_path(const char *s)
{
    buf b;
    buf_init(&b, 0);
    s3_encode_path(&b, s, strlen(s));
    return buf_steal(&b, NULL);
}

static void test_encode_path(void **state)
{
    (void)state;
    char *e = enc_path("queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/hour=06/"
                       "w-0000000001-1791007200000000-1791009458377855.jsonl.zst");
    assert_string_equal(e, "queen/tenant%3D00000000-0000-0000-0000-000000000001/queue%3Dorders/dt%3D2026-10-03/"
                           "hour%3D06/w-0000000001-1791007200000000-1791009458377855.jsonl.zst");
    free(e);
    /* every byte outside A-Za-z0-9-._~/ as uppercase %XX, including '%' of a name the sink
     * already escaped, '+', '*', '!', space, and UTF-8 bytes */
    e = enc_path("a b+c*d!e%20f~g_h.i-j/k\xc3\xbc=&?#:@,;'()[]\\\"");
    assert_string_equal(e, "a%20b%2Bc%2Ad%21e%2520f~g_h.i-j/k%C3%BC%3D%26%3F%23%3A%40%2C%3B%27%28%29%5B%5D%5C%22");
    free(e);
    /* bytes with the high nibble above 9 use uppercase letters */
    e = enc_path("\xff\xab\x01\x7f");
    assert_string_equal(e, "%FF%AB%01%7F");
    free(e);
    buf b;
    buf_init(&b, 0);
    s3_encode_query(&b, "up/1+x=", 7);
    assert_string_equal(buf_cstr(&b), "up%2F1%2Bx%3D");
    buf_free(&b);
}

static s3_config base_cfg(const char *endpoint, int path_style)
{
    s3_config c;
    memset(&c, 0, sizeof c);
    c.endpoint = endpoint;
    c.region = "eu-central-1";
    c.bucket = "lake";
    c.access_key = AK;
    c.secret_key = SK;
    c.path_style = path_style;
    return c;
}

static void expect_url(const s3_config *c, const char *key, const char *want)
{
    buf b;
    buf_init(&b, 0);
    int rc = s3_object_url(c, key, &b);
    if (want) {
        assert_int_equal(rc, 0);
        assert_string_equal(buf_cstr(&b), want);
    } else
        assert_int_equal(rc, -1);
    buf_free(&b);
}

static void test_object_url(void **state)
{
    (void)state;
    s3_config c = base_cfg("http://127.0.0.1:9000", 1);
    expect_url(&c, "queen/tenant=1/a b.json", "http://127.0.0.1:9000/lake/queen/tenant%3D1/a%20b.json");
    expect_url(&c, NULL, "http://127.0.0.1:9000/lake");
    c.endpoint = "http://127.0.0.1:9000/";
    expect_url(&c, "k", "http://127.0.0.1:9000/lake/k");
    c.endpoint = "https://gw.example.com/s3/";
    expect_url(&c, "k", "https://gw.example.com/s3/lake/k");
    c = base_cfg("https://s3.eu-central-1.amazonaws.com", 0);
    expect_url(&c, "queen/x=1", "https://lake.s3.eu-central-1.amazonaws.com/queen/x%3D1");
    expect_url(&c, NULL, "https://lake.s3.eu-central-1.amazonaws.com/");
    c.endpoint = "http://s3.localhost:4568/";
    expect_url(&c, "a/b", "http://lake.s3.localhost:4568/a/b");
    /* refused */
    c.endpoint = "s3.amazonaws.com";
    expect_url(&c, "k", NULL);
    c.endpoint = "ftp://host";
    expect_url(&c, "k", NULL);
    c.endpoint = "https://s3.amazonaws.com";
    c.bucket = "Not_DNS";
    expect_url(&c, "k", NULL);
    c.path_style = 1;
    expect_url(&c, "k", "https://s3.amazonaws.com/Not_DNS/k");
}

static void check_cfg(s3_config c, const char *fragment)
{
    qerr_detail err;
    memset(&err, 0, sizeof err);
    qerr rc = s3_config_check(&c, &err);
    if (!fragment) {
        assert_int_equal(rc, QERR_OK);
        s3_client *cl = s3_client_new(&c, NULL, NULL);
        assert_non_null(cl);
        s3_client_free(cl);
        return;
    }
    assert_int_equal(rc, QERR_BAD_INPUT);
    if (!strstr(err.text, fragment))
        fail_msg("error '%s' does not mention '%s'", err.text, fragment);
    assert_null(s3_client_new(&c, NULL, NULL));
}

static void test_config_check(void **state)
{
    (void)state;
    s3_config c = base_cfg("http://127.0.0.1:9000", 1);
    check_cfg(c, NULL);
    c.sse = "AES256";
    check_cfg(c, NULL);
    c.sse = "aws:kms";
    check_cfg(c, NULL);
    c.sse = "aws:kms:arn:aws:kms:eu-central-1:111122223333:key/abc";
    check_cfg(c, NULL);
    c.sse = "aws:kms:";
    check_cfg(c, "key id");
    c.sse = "DES";
    check_cfg(c, "sse");
    c.sse = NULL;
    c.path_style = 0;
    check_cfg(c, "IP address");
    c.endpoint = "http://s3.localhost:9000";
    check_cfg(c, NULL);
    c.bucket = "UPPER";
    check_cfg(c, "DNS-safe");
    c = base_cfg("localhost:9000", 1);
    check_cfg(c, "endpoint");
    c = base_cfg("http://127.0.0.1:9000", 1);
    c.region = "";
    check_cfg(c, "region");
    c.region = "us-east-1";
    c.secret_key = "";
    check_cfg(c, "secret key");
    c.secret_key = SK;
    c.bucket = NULL;
    check_cfg(c, "bucket");
}

static void test_hashes_and_complete_xml(void **state)
{
    (void)state;
    char h[65], m[25];
    s3_sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    s3_sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    s3_md5_base64("abc", 3, m);
    assert_string_equal(m, "kAFQmDzST7DWlj99KOF/cg==");
    s3_md5_base64("", 0, m);
    assert_string_equal(m, "1B2M2Y8AsgTpgAmY7PhCfg==");
    char e1[] = "\"aa\"", e2[] = "\"b&b\"";
    char *etags[2] = {e1, e2};
    buf b;
    buf_init(&b, 0);
    s3_complete_xml(&b, etags, 2);
    assert_string_equal(buf_cstr(&b), "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                                      "<Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag></Part>"
                                      "<Part><PartNumber>2</PartNumber><ETag>&quot;b&amp;b&quot;</ETag></Part>"
                                      "</CompleteMultipartUpload>");
    /* and the reader gets the ETags back as they were */
    buf t;
    buf_init(&t, 0);
    assert_int_equal(s3xml_text(b.data, b.len, "CompleteMultipartUpload/Part/ETag", &t), 1);
    assert_string_equal(buf_cstr(&t), "\"aa\"");
    buf_free(&t);
    buf_free(&b);
}

/* ------------------------------------------------------------------ XML */

static int xml_text(const char *x, const char *path, char *out, size_t cap)
{
    buf b;
    buf_init(&b, 4096);
    int rc = s3xml_text(x, strlen(x), path, &b);
    snprintf(out, cap, "%s", buf_cstr(&b));
    buf_free(&b);
    return rc;
}

static void test_xml(void **state)
{
    (void)state;
    char code[128], msg[384], t[512];
    const char *err = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
                      "<Message>The specified key does not exist.</Message><Key>a&amp;b</Key>"
                      "<RequestId>4442587FB7D0A2F9</RequestId></Error>";
    assert_int_equal(s3xml_error(err, strlen(err), code, sizeof code, msg, sizeof msg), 1);
    assert_string_equal(code, "NoSuchKey");
    assert_string_equal(msg, "The specified key does not exist.");
    assert_int_equal(xml_text(err, "Error/Key", t, sizeof t), 1);
    assert_string_equal(t, "a&b");
    assert_int_equal(xml_text(err, "Error/Resource", t, sizeof t), 0);
    assert_int_equal(xml_text(err, "Code", t, sizeof t), 0); /* paths start at the root */

    /* CompleteMultipartUpload's 200 that is an error: whitespace first (S3 keeps the
     * connection alive with it), no prolog */
    const char *late = "   \n  \n<Error><Code>InternalError</Code><Message>We encountered an internal error. "
                       "Please try again.</Message></Error>\n";
    assert_int_equal(s3xml_error(late, strlen(late), code, sizeof code, msg, sizeof msg), 1);
    assert_string_equal(code, "InternalError");

    const char *init = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
                       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>lake</Bucket><Key>a/b</Key>"
                       "<UploadId>VXBsb2FkIElE-&#x41;&#66;</UploadId></InitiateMultipartUploadResult>";
    assert_int_equal(xml_text(init, "InitiateMultipartUploadResult/UploadId", t, sizeof t), 1);
    assert_string_equal(t, "VXBsb2FkIElE-AB");
    assert_int_equal(s3xml_error(init, strlen(init), code, sizeof code, msg, sizeof msg), 0);

    const char *done = "<?xml version=\"1.0\"?><!-- c --><s3:CompleteMultipartUploadResult xmlns:s3=\"x\">"
                       "<s3:Location>http://x/lake/k</s3:Location><s3:ETag><![CDATA[\"3858f62230ac3c915f300c664312c11f-9\"]]>"
                       "</s3:ETag></s3:CompleteMultipartUploadResult>";
    assert_int_equal(xml_text(done, "CompleteMultipartUploadResult/ETag", t, sizeof t), 1);
    assert_string_equal(t, "\"3858f62230ac3c915f300c664312c11f-9\"");
    buf root;
    buf_init(&root, 0);
    assert_int_equal(s3xml_root(done, strlen(done), &root), 1);
    assert_string_equal(buf_cstr(&root), "CompleteMultipartUploadResult");
    buf_free(&root);

    /* entities: numeric to UTF-8, all five named */
    assert_int_equal(xml_text("<a><b>&lt;&gt;&amp;&quot;&apos;&#252;&#x1F451;</b></a>", "a/b", t, sizeof t), 1);
    assert_string_equal(t, "<>&\"'\xc3\xbc\xf0\x9f\x91\x91");
    /* self-closing target: found, empty */
    assert_int_equal(xml_text("<a><b/><b>x</b></a>", "a/b", t, sizeof t), 1);
    assert_string_equal(t, "");
    /* the first match wins, nested text is not the element's own */
    assert_int_equal(xml_text("<a><b>1<c>2</c>3</b><b>4</b></a>", "a/b", t, sizeof t), 1);
    assert_string_equal(t, "13");
    /* blank and empty bodies are not errors, just nothing */
    assert_int_equal(s3xml_error("", 0, code, sizeof code, msg, sizeof msg), 0);
    assert_int_equal(s3xml_error(" \r\n", 3, code, sizeof code, msg, sizeof msg), 0);
    assert_int_equal(s3xml_error(NULL, 0, code, sizeof code, msg, sizeof msg), 0);

    /* malformed */
    const char *bad[] = {
        "<a><b></a></b>",   "<a>",          "<a></a><b></b>", "text<a/>",       "<a>&nbsp;</a>",
        "<a>&#0;</a>",      "<a>&#xD800;</a>", "<a>&#x110000;</a>", "<a x=1/>",   "<a x=\"1/>",
        "<!DOCTYPE a><a/>", "<a><![CDATA[x</a>", "<a><!-- x </a>", "</a>",         "<1a/>",
        "<a>&amp</a>",      "<a b=\"1\"c=\"2\"/>", "<?xml",       "<a></a >x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (s3xml_text(bad[i], strlen(bad[i]), "a/b", NULL) != -1)
            fail_msg("accepted malformed %s", bad[i]);
    }
    /* depth bound */
    buf deep;
    buf_init(&deep, 0);
    for (int i = 0; i < S3XML_MAX_DEPTH + 1; i++)
        buf_puts(&deep, "<a>");
    for (int i = 0; i < S3XML_MAX_DEPTH + 1; i++)
        buf_puts(&deep, "</a>");
    assert_int_equal(s3xml_root(deep.data, deep.len, NULL), -1);
    buf_reset(&deep);
    for (int i = 0; i < S3XML_MAX_DEPTH; i++)
        buf_puts(&deep, "<a>");
    for (int i = 0; i < S3XML_MAX_DEPTH; i++)
        buf_puts(&deep, "</a>");
    assert_int_equal(s3xml_root(deep.data, deep.len, NULL), 1);
    buf_free(&deep);
    /* a Message longer than the caller's room is cut, not lost */
    buf big;
    buf_init(&big, 0);
    buf_puts(&big, "<Error><Code>SlowDown</Code><Message>");
    for (int i = 0; i < 1000; i++)
        buf_putc(&big, 'm');
    buf_puts(&big, "</Message></Error>");
    assert_int_equal(s3xml_error(big.data, big.len, code, sizeof code, msg, sizeof msg), 1);
    assert_string_equal(code, "SlowDown");
    assert_int_equal(strlen(msg), sizeof msg - 1);
    buf_free(&big);
}

/* ------------------------------------------------------------------ the test server */

#define MAX_REQS 128
#define MAX_HDRS 40
#define MAX_CONNS 64

typedef struct hdr {
    char name[64]; /* lowercased */
    char value[1024];
} hdr;

typedef struct creq {
    char method[16];
    char path[4096];  /* as sent, still encoded */
    char query[4096]; /* as sent, without the ? */
    hdr h[MAX_HDRS];
    int nh;
    char *body;
    size_t body_len;
    int conn;
    uint64_t at_ms;
} creq;

enum action { ANSWER, CLOSE, HANG };

typedef struct resp {
    enum action action;
    int status;
    char headers[512]; /* extra header lines, each ending in \r\n */
    char body[2048];
    int delay_ms;
} resp;

typedef struct tsrv tsrv;
typedef void (*responder)(tsrv *s, const creq *q, int idx, resp *out);

struct tsrv {
    int lfd, port;
    pthread_t acceptor;
    pthread_t conns[MAX_CONNS];
    int nconns;
    pthread_mutex_t mu;
    creq reqs[MAX_REQS];
    int nreq;
    int active, max_active;
    volatile int stop;
    int no_continue; /* 1: never answer Expect: 100-continue */
    responder fn;
    void *arg;
};

typedef struct conn_arg {
    tsrv *s;
    int fd, id;
} conn_arg;

static const char *hget(const creq *q, const char *name)
{
    for (int i = 0; i < q->nh; i++)
        if (strcmp(q->h[i].name, name) == 0)
            return q->h[i].value;
    return NULL;
}

/* The query parameter's raw (encoded) value, or NULL. */
static int qparam(const creq *q, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    const char *p = q->query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len >= n && strncmp(p, name, n) == 0 && (len == n || p[n] == '=')) {
            size_t vl = len > n ? len - n - 1 : 0;
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, p + n + 1, vl);
            out[vl] = '\0';
            if (len == n)
                out[0] = '\0';
            return 1;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

static int wait_readable(tsrv *s, int fd)
{
    for (;;) {
        if (s->stop)
            return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, 50);
        if (r > 0)
            return 0;
        if (r < 0)
            return -1;
    }
}

static void *conn_main(void *p)
{
    conn_arg *ca = p;
    tsrv *s = ca->s;
    int fd = ca->fd;
    char *in = malloc(1 << 20);
    size_t have = 0, cap = 1 << 20;
    for (;;) {
        /* the head */
        char *eoh;
        while (!(eoh = memmem(in, have, "\r\n\r\n", 4))) {
            if (have == cap || wait_readable(s, fd) < 0)
                goto out;
            ssize_t n = recv(fd, in + have, cap - have, 0);
            if (n <= 0)
                goto out;
            have += (size_t)n;
        }
        creq q;
        memset(&q, 0, sizeof q);
        q.conn = ca->id;
        q.at_ms = mono_ms();
        *eoh = '\0';
        char *line = in, *nl = strstr(line, "\r\n");
        if (nl)
            *nl = '\0';
        char target[4096] = "";
        if (sscanf(line, "%15s %4095s", q.method, target) != 2)
            goto out;
        char *qm = strchr(target, '?');
        if (qm) {
            *qm = '\0';
            snprintf(q.query, sizeof q.query, "%s", qm + 1);
        }
        snprintf(q.path, sizeof q.path, "%s", target);
        char *h = nl ? nl + 2 : NULL;
        while (h && *h && q.nh < MAX_HDRS) {
            char *e = strstr(h, "\r\n");
            if (e)
                *e = '\0';
            char *colon = strchr(h, ':');
            if (colon) {
                size_t nl2 = (size_t)(colon - h);
                if (nl2 >= sizeof q.h[0].name)
                    nl2 = sizeof q.h[0].name - 1;
                for (size_t i = 0; i < nl2; i++) {
                    char c = h[i];
                    q.h[q.nh].name[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
                }
                char *v = colon + 1;
                while (*v == ' ')
                    v++;
                snprintf(q.h[q.nh].value, sizeof q.h[0].value, "%s", v);
                q.nh++;
            }
            h = e ? e + 2 : NULL;
        }
        size_t head_len = (size_t)(eoh - in) + 4;
        const char *ex = hget(&q, "expect");
        if (ex && strcasecmp(ex, "100-continue") == 0 && s->no_continue == 0 &&
            send(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL) < 0)
            goto out;
        const char *cl = hget(&q, "content-length");
        size_t blen = cl ? (size_t)strtoull(cl, NULL, 10) : 0;
        /* no chunked bodies are expected: a request that sends one has no Content-Length and
         * its body stays unread, which the checks below notice */
        while (have < head_len + blen) {
            if (have == cap || wait_readable(s, fd) < 0)
                goto out;
            ssize_t n = recv(fd, in + have, cap - have, 0);
            if (n <= 0)
                goto out;
            have += (size_t)n;
        }
        q.body = malloc(blen + 1);
        memcpy(q.body, in + head_len, blen);
        q.body[blen] = '\0';
        q.body_len = blen;
        memmove(in, in + head_len + blen, have - head_len - blen);
        have -= head_len + blen;

        pthread_mutex_lock(&s->mu);
        int idx = s->nreq;
        if (s->nreq < MAX_REQS)
            s->reqs[s->nreq++] = q;
        else
            free(q.body);
        s->active++;
        if (s->active > s->max_active)
            s->max_active = s->active;
        pthread_mutex_unlock(&s->mu);

        resp r;
        memset(&r, 0, sizeof r);
        r.status = 200;
        s->fn(s, &s->reqs[idx < MAX_REQS ? idx : MAX_REQS - 1], idx, &r);
        if (r.delay_ms)
            usleep((useconds_t)r.delay_ms * 1000);
        pthread_mutex_lock(&s->mu);
        s->active--;
        pthread_mutex_unlock(&s->mu);
        if (r.action == CLOSE)
            goto out;
        if (r.action == HANG) {
            while (!s->stop && wait_readable(s, fd) == 0) {
                char tmp[4096];
                if (recv(fd, tmp, sizeof tmp, 0) <= 0)
                    break;
            }
            goto out;
        }
        char head[1024];
        size_t bl = strlen(r.body);
        int hn = snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s\r\n", r.status, bl,
                          r.headers);
        if (send(fd, head, (size_t)hn, MSG_NOSIGNAL) < 0)
            goto out;
        if (strcmp(q.method, "HEAD") != 0 && bl && send(fd, r.body, bl, MSG_NOSIGNAL) < 0)
            goto out;
    }
out:
    free(in);
    close(fd);
    free(ca);
    return NULL;
}

static void *accept_main(void *p)
{
    tsrv *s = p;
    while (!s->stop) {
        struct pollfd pf = {s->lfd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&s->mu);
        if (s->nconns >= MAX_CONNS) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            continue;
        }
        conn_arg *ca = malloc(sizeof *ca);
        ca->s = s;
        ca->fd = fd;
        ca->id = s->nconns;
        pthread_create(&s->conns[s->nconns], NULL, conn_main, ca);
        s->nconns++;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static tsrv *srv_start(responder fn, void *arg)
{
    tsrv *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->fn = fn;
    s->arg = arg;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 64), 0);
    socklen_t al = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->acceptor, NULL, accept_main, s);
    return s;
}

static void srv_stop(tsrv *s)
{
    s->stop = 1;
    pthread_join(s->acceptor, NULL);
    for (int i = 0; i < s->nconns; i++)
        pthread_join(s->conns[i], NULL);
    close(s->lfd);
    for (int i = 0; i < s->nreq; i++)
        free(s->reqs[i].body);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ------------------------------------------------------------------ an independent SigV4 */

static void hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &n);
}

static void sha_hex(const void *d, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int l;
    EVP_Digest(d, n, md, &l, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* AWS's URI encoding of a decoded string (for S3: once, '/' kept in the path). */
static void uri_encode(buf *out, const char *s, size_t n, int keep_slash)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
            buf_putc(out, (char)c);
        else
            buf_printf(out, "%%%02X", c);
    }
}

static void uri_decode(buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            buf_putc(out, (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2])));
            i += 2;
        } else
            buf_putc(out, s[i]);
    }
}

typedef struct qpair {
    char k[256], v[1024];
} qpair;

static int qpair_cmp(const void *a, const void *b)
{
    const qpair *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

/* Verifies q's Authorization with secret; on failure says why in why. The canonical request
 * is rebuilt from what arrived: the path and query decoded and encoded again AWS's way,
 * parameters sorted, the signed headers' values trimmed, the body's own hash. */
static int sigv4_verify(const creq *q, const char *access, const char *secret, const char *region, char *why,
                        size_t wl)
{
    const char *auth = hget(q, "authorization");
    const char *date = hget(q, "x-amz-date");
    const char *sha = hget(q, "x-amz-content-sha256");
    if (!auth || !date || !sha) {
        snprintf(why, wl, "missing authorization, x-amz-date or x-amz-content-sha256");
        return 0;
    }
    char cred[512], signed_h[512], sig[128];
    const char *pc = strstr(auth, "Credential="), *ps = strstr(auth, "SignedHeaders="), *pg = strstr(auth, "Signature=");
    if (strncmp(auth, "AWS4-HMAC-SHA256 ", 17) != 0 || !pc || !ps || !pg || sscanf(pc, "Credential=%511[^,]", cred) != 1 ||
        sscanf(ps, "SignedHeaders=%511[^,]", signed_h) != 1 || sscanf(pg, "Signature=%127s", sig) != 1) {
        snprintf(why, wl, "unexpected Authorization: %s", auth);
        return 0;
    }
    char scope_want[256];
    char day[9];
    snprintf(day, sizeof day, "%.8s", date);
    snprintf(scope_want, sizeof scope_want, "%s/%s/%s/s3/aws4_request", access, day, region);
    if (strcmp(cred, scope_want) != 0) {
        snprintf(why, wl, "credential %s, want %s", cred, scope_want);
        return 0;
    }
    char body_sha[65];
    sha_hex(q->body ? q->body : "", q->body_len, body_sha);
    if (strcmp(sha, body_sha) != 0) {
        snprintf(why, wl, "x-amz-content-sha256 %s is not the body's %s", sha, body_sha);
        return 0;
    }
    buf cr;
    buf_init(&cr, 0);
    buf_printf(&cr, "%s\n", q->method);
    buf dec;
    buf_init(&dec, 0);
    uri_decode(&dec, q->path, strlen(q->path));
    uri_encode(&cr, dec.data ? dec.data : "", dec.len, 1);
    buf_putc(&cr, '\n');
    qpair pairs[32];
    int np = 0;
    const char *p = q->query;
    while (*p && np < 32) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t kl = eq ? (size_t)(eq - p) : len;
        buf t;
        buf_init(&t, 0);
        uri_decode(&t, p, kl);
        buf e;
        buf_init(&e, 0);
        uri_encode(&e, t.data ? t.data : "", t.len, 0);
        snprintf(pairs[np].k, sizeof pairs[np].k, "%s", buf_cstr(&e));
        buf_reset(&t);
        buf_reset(&e);
        if (eq)
            uri_decode(&t, eq + 1, len - kl - 1);
        uri_encode(&e, t.data ? t.data : "", t.len, 0);
        snprintf(pairs[np].v, sizeof pairs[np].v, "%s", buf_cstr(&e));
        buf_free(&t);
        buf_free(&e);
        np++;
        p += len;
        if (*p == '&')
            p++;
    }
    qsort(pairs, (size_t)np, sizeof pairs[0], qpair_cmp);
    for (int i = 0; i < np; i++)
        buf_printf(&cr, "%s%s=%s", i ? "&" : "", pairs[i].k, pairs[i].v);
    buf_putc(&cr, '\n');
    /* canonical headers, in SignedHeaders' order (which must be sorted) */
    char names[512];
    snprintf(names, sizeof names, "%s", signed_h);
    char prev[64] = "";
    for (char *save = NULL, *n = strtok_r(names, ";", &save); n; n = strtok_r(NULL, ";", &save)) {
        if (strcmp(prev, n) >= 0) {
            snprintf(why, wl, "SignedHeaders not sorted: %s", signed_h);
            goto bad;
        }
        snprintf(prev, sizeof prev, "%s", n);
        const char *v = hget(q, n);
        if (!v) {
            snprintf(why, wl, "signed header %s was not sent", n);
            goto bad;
        }
        buf_printf(&cr, "%s:", n);
        /* trim, and fold runs of spaces */
        while (*v == ' ')
            v++;
        size_t vl = strlen(v);
        while (vl && v[vl - 1] == ' ')
            vl--;
        for (size_t i = 0; i < vl; i++)
            if (!(v[i] == ' ' && i && v[i - 1] == ' '))
                buf_putc(&cr, v[i]);
        buf_putc(&cr, '\n');
    }
    buf_printf(&cr, "\n%s\n%s", signed_h, body_sha);
    char cr_hash[65];
    sha_hex(cr.data, cr.len, cr_hash);
    char sts[1024];
    snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", date, day, region, cr_hash);
    char k0[256];
    snprintf(k0, sizeof k0, "AWS4%s", secret);
    unsigned char k1[32], k2[32], k3[32], k4[32], s[32];
    hmac(k0, strlen(k0), day, k1);
    hmac(k1, 32, region, k2);
    hmac(k2, 32, "s3", k3);
    hmac(k3, 32, "aws4_request", k4);
    hmac(k4, 32, sts, s);
    char got[65];
    for (int i = 0; i < 32; i++)
        sprintf(got + 2 * i, "%02x", s[i]);
    if (strcmp(got, sig) != 0) {
        snprintf(why, wl, "signature %s, want %s; canonical request:\n%s", sig, got, buf_cstr(&cr));
        goto bad;
    }
    buf_free(&cr);
    buf_free(&dec);
    return 1;
bad:
    buf_free(&cr);
    buf_free(&dec);
    return 0;
}

static int signed_list_has(const creq *q, const char *name)
{
    const char *auth = hget(q, "authorization");
    const char *sh = auth ? strstr(auth, "SignedHeaders=") : NULL;
    if (!sh)
        return 0;
    sh += 14;
    size_t n = strlen(name);
    while (*sh && *sh != ',') {
        const char *e = sh + strcspn(sh, ";,");
        if ((size_t)(e - sh) == n && strncmp(sh, name, n) == 0)
            return 1;
        sh = *e == ';' ? e + 1 : e;
    }
    return 0;
}

/* Every check a signed S3 request must pass. */
static void check_signed(const creq *q, const char *region)
{
    char why[4096];
    if (!sigv4_verify(q, AK, SK, region, why, sizeof why))
        fail_msg("%s %s?%s: %s", q->method, q->path, q->query, why);
    /* the verifier can fail: the same request does not verify under another secret */
    if (sigv4_verify(q, AK, "another-secret", region, why, sizeof why))
        fail_msg("signature verified with the wrong secret");
    /* S3 wants every x-amz-* header signed, and host */
    for (int i = 0; i < q->nh; i++)
        if (strncmp(q->h[i].name, "x-amz-", 6) == 0 && !signed_list_has(q, q->h[i].name))
            fail_msg("%s sent but not signed", q->h[i].name);
    assert_true(signed_list_has(q, "host"));
    assert_true(signed_list_has(q, "x-amz-date"));
    assert_true(signed_list_has(q, "x-amz-content-sha256"));
    if (hget(q, "content-type"))
        assert_true(signed_list_has(q, "content-type"));
    if (hget(q, "content-md5"))
        assert_true(signed_list_has(q, "content-md5"));
    /* never chunked, the size always stated for bodies; curl's own Expect is not signed */
    assert_null(hget(q, "transfer-encoding"));
    if (hget(q, "expect")) {
        assert_string_equal(hget(q, "expect"), "100-continue");
        assert_false(signed_list_has(q, "expect"));
    }
    if (strcmp(q->method, "PUT") == 0 || strcmp(q->method, "POST") == 0) {
        assert_non_null(hget(q, "content-length"));
        assert_int_equal(strtoull(hget(q, "content-length"), NULL, 10), q->body_len);
    }
    /* the secret never travels */
    for (int i = 0; i < q->nh; i++)
        assert_null(strstr(q->h[i].value, SK));
}

/* The verifier itself, on AWS's published example (S3 API reference, "Signature Calculations
 * for the Authorization Header", Example: GET Object): it must accept that signature, and
 * refuse it once any signed part of the request changes. */
static void add_h(creq *q, const char *n, const char *v)
{
    snprintf(q->h[q->nh].name, sizeof q->h[0].name, "%s", n);
    snprintf(q->h[q->nh].value, sizeof q->h[0].value, "%s", v);
    q->nh++;
}

static void test_verifier_aws_vector(void **state)
{
    (void)state;
    creq *q = calloc(1, sizeof *q);
    snprintf(q->method, sizeof q->method, "GET");
    snprintf(q->path, sizeof q->path, "/test.txt");
    add_h(q, "host", "examplebucket.s3.amazonaws.com");
    add_h(q, "range", "bytes=0-9");
    add_h(q, "x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    add_h(q, "x-amz-date", "20130524T000000Z");
    add_h(q, "authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    const char *secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    char why[4096];
    if (!sigv4_verify(q, "AKIAIOSFODNN7EXAMPLE", secret, "us-east-1", why, sizeof why))
        fail_msg("AWS's example does not verify: %s", why);
    snprintf(q->h[1].value, sizeof q->h[1].value, "bytes=0-10");
    assert_false(sigv4_verify(q, "AKIAIOSFODNN7EXAMPLE", secret, "us-east-1", why, sizeof why));
    snprintf(q->h[1].value, sizeof q->h[1].value, "bytes=0-9");
    snprintf(q->path, sizeof q->path, "/test.txT");
    assert_false(sigv4_verify(q, "AKIAIOSFODNN7EXAMPLE", secret, "us-east-1", why, sizeof why));
    snprintf(q->path, sizeof q->path, "/test.txt");
    snprintf(q->query, sizeof q->query, "x=1");
    assert_false(sigv4_verify(q, "AKIAIOSFODNN7EXAMPLE", secret, "us-east-1", why, sizeof why));
    q->query[0] = '\0';
    assert_false(sigv4_verify(q, "AKIAIOSFODNN7EXAMPLE", secret, "eu-west-1", why, sizeof why));
    assert_true(sigv4_verify(q, "AKIAIOSFODNN7EXAMPLE", secret, "us-east-1", why, sizeof why));
    free(q);
}

/* ------------------------------------------------------------------ wire tests */

typedef struct obs_log {
    char ops[64][32];
    long st[64];
    int n;
    volatile int *cancel_after_first; /* set on the first answer */
} obs_log;

static void obs_fn(void *arg, const char *op, long status)
{
    obs_log *o = arg;
    if (o->n < 64) {
        snprintf(o->ops[o->n], sizeof o->ops[0], "%s", op);
        o->st[o->n] = status;
        o->n++;
    }
    if (o->cancel_after_first)
        *o->cancel_after_first = 1;
}

static void ok_responder(tsrv *s, const creq *q, int idx, resp *out)
{
    (void)s;
    (void)idx;
    if (strcmp(q->method, "GET") == 0)
        snprintf(out->body, sizeof out->body, "hello, bucket");
    snprintf(out->headers, sizeof out->headers, "ETag: \"abc\"\r\n");
}

static s3_config srv_cfg(tsrv *s, char *ep, size_t epn)
{
    snprintf(ep, epn, "http://127.0.0.1:%d", s->port);
    s3_config c = base_cfg(ep, 1);
    c.backoff_base_ms = 5;
    c.backoff_max_ms = 20;
    c.timeout_ms = 5000;
    return c;
}

static void wire_put_path_style(int sign_self)
{
    tsrv *s = srv_start(ok_responder, NULL);
    char ep[64];
    s3_config c = srv_cfg(s, ep, sizeof ep);
    c.sigv4_self = sign_self;
    c.sse = "AES256";
    c.content_md5 = 1;
    obs_log o = {0};
    s3_client *cl = s3_client_new(&c, obs_fn, &o);
    s3_result r;
    s3_result_init(&r);
    /* a body with every byte value, a key that needs encoding */
    char body[512];
    for (int i = 0; i < 512; i++)
        body[i] = (char)(i * 7);
    const char *key = "queen/tenant=00000000-0000-0000-0000-000000000001/queue=a%20b/dt=2026-10-03/w-1 ü.jsonl.zst";
    assert_int_equal(s3_put(cl, key, body, sizeof body, "application/zstd", &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.attempts, 1);
    /* and an empty body, then the probe and a read */
    assert_int_equal(s3_put(cl, "empty", "", 0, NULL, &r), 0);
    assert_int_equal(s3_head_bucket(cl, &r), 0);
    assert_int_equal(s3_get(cl, "a=b", &r), 0);
    assert_int_equal(r.body.len, 13);
    s3_client_free(cl);
    assert_int_equal(s->nreq, 4);
    const creq *q = &s->reqs[0];
    assert_string_equal(q->method, "PUT");
    assert_string_equal(q->path, "/lake/queen/tenant%3D00000000-0000-0000-0000-000000000001/queue%3Da%2520b/"
                                 "dt%3D2026-10-03/w-1%20%C3%BC.jsonl.zst");
    assert_string_equal(q->query, "");
    char host[64];
    snprintf(host, sizeof host, "127.0.0.1:%d", s->port);
    assert_string_equal(hget(q, "host"), host);
    assert_int_equal(q->body_len, sizeof body);
    assert_memory_equal(q->body, body, sizeof body);
    char sha[65], md5[25];
    s3_sha256_hex(body, sizeof body, sha);
    s3_md5_base64(body, sizeof body, md5);
    assert_string_equal(hget(q, "x-amz-content-sha256"), sha);
    assert_string_equal(hget(q, "content-md5"), md5);
    assert_string_equal(hget(q, "content-type"), "application/zstd");
    assert_string_equal(hget(q, "x-amz-server-side-encryption"), "AES256");
    assert_null(hget(q, "x-amz-server-side-encryption-aws-kms-key-id"));
    check_signed(q, "eu-central-1");
    q = &s->reqs[1];
    assert_string_equal(q->path, "/lake/empty");
    assert_string_equal(hget(q, "content-length"), "0");
    assert_string_equal(hget(q, "x-amz-content-sha256"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_null(hget(q, "content-type"));
    check_signed(q, "eu-central-1");
    q = &s->reqs[2];
    assert_string_equal(q->method, "HEAD");
    assert_string_equal(q->path, "/lake");
    assert_null(hget(q, "x-amz-server-side-encryption"));
    check_signed(q, "eu-central-1");
    q = &s->reqs[3];
    assert_string_equal(q->method, "GET");
    assert_string_equal(q->path, "/lake/a%3Db");
    assert_int_equal(q->body_len, 0);
    check_signed(q, "eu-central-1");
    /* the observer saw each */
    assert_int_equal(o.n, 4);
    assert_string_equal(o.ops[0], "put");
    assert_int_equal(o.st[0], 200);
    assert_string_equal(o.ops[2], "head_bucket");
    assert_string_equal(o.ops[3], "get");
    /* one connection for all: kept alive */
    assert_int_equal(s->nconns, 1);
    s3_result_free(&r);
    srv_stop(s);
}

static void test_wire_put_path_style(void **state)
{
    (void)state;
    wire_put_path_style(0);
}

/* the same bytes through the signer of s3.c */
static void test_wire_put_self_signed(void **state)
{
    (void)state;
    wire_put_path_style(1);
}

static void test_wire_vhost_kms(void **state)
{
    (void)state;
    tsrv *s = srv_start(ok_responder, NULL);
    char ep[64];
    snprintf(ep, sizeof ep, "http://s3.localhost:%d/", s->port);
    s3_config c = base_cfg(ep, 0);
    c.region = "us-west-2";
    c.sse = "aws:kms:arn:aws:kms:us-west-2:111122223333:key/1234abcd";
    s3_client *cl = s3_client_new(&c, NULL, NULL);
    assert_non_null(cl);
    s3_result r;
    s3_result_init(&r);
    assert_int_equal(s3_put(cl, "a/b=c", "xyz", 3, "text/plain", &r), 0);
    assert_int_equal(s3_head_bucket(cl, &r), 0);
    assert_int_equal(s3_get(cl, "a/b=c", &r), 0);
    assert_int_equal(r.body.len, strlen("hello, bucket"));
    assert_memory_equal(r.body.data, "hello, bucket", r.body.len);
    s3_client_free(cl);
    assert_int_equal(s->nreq, 3);
    char host[64];
    snprintf(host, sizeof host, "lake.s3.localhost:%d", s->port);
    const creq *q = &s->reqs[0];
    assert_string_equal(q->method, "PUT");
    assert_string_equal(q->path, "/a/b%3Dc");
    assert_string_equal(hget(q, "host"), host);
    assert_string_equal(hget(q, "x-amz-server-side-encryption"), "aws:kms");
    assert_string_equal(hget(q, "x-amz-server-side-encryption-aws-kms-key-id"),
                        "arn:aws:kms:us-west-2:111122223333:key/1234abcd");
    check_signed(q, "us-west-2");
    q = &s->reqs[1];
    assert_string_equal(q->method, "HEAD");
    assert_string_equal(q->path, "/");
    assert_string_equal(hget(q, "host"), host);
    assert_null(hget(q, "x-amz-server-side-encryption")); /* SSE only where an object is written */
    check_signed(q, "us-west-2");
    q = &s->reqs[2];
    assert_string_equal(q->method, "GET");
    assert_string_equal(q->path, "/a/b%3Dc");
    check_signed(q, "us-west-2");
    s3_result_free(&r);
    srv_stop(s);
}

/* Answers by path: /lake/missing 404 NoSuchKey, HEAD /lake 403 or 404 by arg. */
static void get_head_responder(tsrv *s, const creq *q, int idx, resp *out)
{
    (void)idx;
    const char *mode = s->arg;
    if (strcmp(q->method, "GET") == 0 && strcmp(q->path, "/lake/missing") == 0) {
        out->status = 404;
        snprintf(out->body, sizeof out->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey"
                                              "</Code><Message>The specified key does not exist.</Message></Error>");
    } else if (strcmp(q->method, "GET") == 0 && strcmp(q->path, "/lake/bucket-gone") == 0) {
        out->status = 404;
        snprintf(out->body, sizeof out->body, "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does "
                                              "not exist</Message></Error>");
    } else if (strcmp(q->method, "GET") == 0) {
        snprintf(out->body, sizeof out->body, "{\"k\":1}");
    } else if (strcmp(q->method, "HEAD") == 0) {
        out->status = mode ? atoi(mode) : 200;
        if (out->status == 301)
            snprintf(out->headers, sizeof out->headers, "x-amz-bucket-region: ap-south-1\r\n");
    }
}

static void test_wire_get_head(void **state)
{
    (void)state;
    const char *modes[] = {"200", "403", "404", "301"};
    for (size_t m = 0; m < 4; m++) {
        tsrv *s = srv_start(get_head_responder, (void *)modes[m]);
        char ep[64];
        s3_config c = srv_cfg(s, ep, sizeof ep);
        s3_client *cl = s3_client_new(&c, NULL, NULL);
        s3_result r;
        s3_result_init(&r);
        int rc = s3_head_bucket(cl, &r);
        assert_int_equal(r.attempts, 1); /* none of these is retried */
        if (m == 0) {
            assert_int_equal(rc, 0);
            assert_int_equal(s3_get(cl, "doc.json", &r), 0);
            assert_int_equal(r.status, 200);
            assert_int_equal(r.body.len, 7);
            assert_memory_equal(r.body.data, "{\"k\":1}", 7);
            assert_int_equal(s3_get(cl, "missing", &r), 1);
            assert_int_equal(r.status, 404);
            assert_string_equal(r.error, "NoSuchKey: The specified key does not exist.");
            assert_int_equal(r.attempts, 1);
            /* a missing bucket is a failure, not "no such key" */
            assert_int_equal(s3_get(cl, "bucket-gone", &r), -1);
            assert_string_equal(r.error, "NoSuchBucket: The specified bucket does not exist");
            assert_int_equal(s->nreq, 4);
            assert_string_equal(s->reqs[0].path, "/lake");
            for (int i = 0; i < 4; i++)
                check_signed(&s->reqs[i], "eu-central-1");
        } else {
            assert_int_equal(rc, -1);
            assert_int_equal(r.status, atoi(modes[m]));
            if (m == 1)
                assert_non_null(strstr(r.error, "credentials"));
            if (m == 2)
                assert_non_null(strstr(r.error, "no bucket named lake"));
            if (m == 3)
                assert_non_null(strstr(r.error, "region ap-south-1"));
        }
        s3_client_free(cl);
        s3_result_free(&r);
        srv_stop(s);
    }
    /* nobody listening: status 0, retried, and the error says there was no answer */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", ntohs(a.sin_port));
    close(fd); /* bound, never listening, then closed: connection refused */
    s3_config c = base_cfg(ep, 1);
    c.max_attempts = 3;
    c.backoff_base_ms = 5;
    c.backoff_max_ms = 10;
    obs_log o = {0};
    s3_client *cl = s3_client_new(&c, obs_fn, &o);
    s3_result r;
    s3_result_init(&r);
    assert_int_equal(s3_head_bucket(cl, &r), -1);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.attempts, 3);
    assert_non_null(strstr(r.error, "no answer from"));
    assert_int_equal(o.n, 3);
    assert_string_equal(o.ops[0], "head_bucket");
    assert_int_equal(o.st[0], 0);
    s3_client_free(cl);
    s3_result_free(&r);
}

/* Answers from a script: one entry per request, in order; past its end, 200. */
typedef struct script {
    const char *steps[16]; /* "500", "403", "close", "hang", "503ra" (503 + Retry-After: 1), "429", "408" */
    int n;
} script;

static const char *ERR_500 = "<Error><Code>InternalError</Code><Message>We encountered an internal error. Please "
                             "try again.</Message></Error>";

static void script_responder(tsrv *s, const creq *q, int idx, resp *out)
{
    (void)q;
    const script *sc = s->arg;
    const char *st = idx < sc->n ? sc->steps[idx] : "200";
    if (strcmp(st, "close") == 0)
        out->action = CLOSE;
    else if (strcmp(st, "hang") == 0)
        out->action = HANG;
    else if (strcmp(st, "503ra") == 0) {
        out->status = 503;
        snprintf(out->headers, sizeof out->headers, "Retry-After: 1\r\n");
        snprintf(out->body, sizeof out->body, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate."
                                              "</Message></Error>");
    } else if (strcmp(st, "403") == 0) {
        out->status = 403;
        snprintf(out->body, sizeof out->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied"
                                              "</Code><Message>Access Denied</Message></Error>");
    } else {
        out->status = atoi(st);
        if (out->status >= 500)
            snprintf(out->body, sizeof out->body, "%s", ERR_500);
    }
}

static int put_with_script(script *sc, s3_config *over, s3_result *r, obs_log *o, tsrv **sout)
{
    tsrv *s = srv_start(script_responder, sc);
    char ep[64];
    s3_config c = srv_cfg(s, ep, sizeof ep);
    if (over) {
        c.max_attempts = over->max_attempts ? over->max_attempts : c.max_attempts;
        c.timeout_ms = over->timeout_ms ? over->timeout_ms : c.timeout_ms;
        c.backoff_base_ms = over->backoff_base_ms ? over->backoff_base_ms : c.backoff_base_ms;
        c.backoff_max_ms = over->backoff_max_ms ? over->backoff_max_ms : c.backoff_max_ms;
        c.cancel = over->cancel;
    }
    s3_client *cl = s3_client_new(&c, obs_fn, o);
    int rc = s3_put(cl, "k", "payload", 7, NULL, r);
    s3_client_free(cl);
    *sout = s;
    return rc;
}

static void test_retry_500_500_200(void **state)
{
    (void)state;
    script sc = {{"500", "500"}, 2};
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    tsrv *s;
    /* the secret must not reach the log, even at trace level while retrying */
    char logpath[] = "/tmp/test_s3_log_XXXXXX";
    int lfd = mkstemp(logpath);
    int saved = dup(2);
    dup2(lfd, 2);
    log_setup(LOG_TRACE, LOG_FORMAT_TEXT);
    int rc = put_with_script(&sc, NULL, &r, &o, &s);
    log_setup(LOG_INFO, LOG_FORMAT_TEXT);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(rc, 0);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.status, 200);
    assert_int_equal(s->nreq, 3);
    for (int i = 0; i < 3; i++) {
        check_signed(&s->reqs[i], "eu-central-1");
        assert_int_equal(s->reqs[i].body_len, 7); /* the body sent whole each time */
        assert_memory_equal(s->reqs[i].body, "payload", 7);
    }
    assert_int_equal(o.n, 3);
    assert_int_equal(o.st[0], 500);
    assert_int_equal(o.st[1], 500);
    assert_int_equal(o.st[2], 200);
    char logbuf[65536];
    lseek(lfd, 0, SEEK_SET);
    ssize_t ln = read(lfd, logbuf, sizeof logbuf - 1);
    logbuf[ln > 0 ? ln : 0] = '\0';
    close(lfd);
    unlink(logpath);
    assert_non_null(strstr(logbuf, "InternalError")); /* the retries were logged... */
    assert_null(strstr(logbuf, SK));                  /* ...without the secret */
    s3_result_free(&r);
    srv_stop(s);
}

static void test_fail_at_once_403(void **state)
{
    (void)state;
    script sc = {{"403"}, 1};
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    tsrv *s;
    assert_int_equal(put_with_script(&sc, NULL, &r, &o, &s), -1);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.status, 403);
    assert_string_equal(r.error, "AccessDenied: Access Denied");
    assert_int_equal(s->nreq, 1);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.st[0], 403);
    s3_result_free(&r);
    srv_stop(s);
}

static void test_retry_network_and_throttle(void **state)
{
    (void)state;
    /* a closed connection, a hang past the timeout, 429 and 408: all retried */
    script sc = {{"close", "hang", "429", "408"}, 4};
    s3_config over = {0};
    over.timeout_ms = 300;
    over.max_attempts = 5;
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    tsrv *s;
    assert_int_equal(put_with_script(&sc, &over, &r, &o, &s), 0);
    assert_int_equal(r.attempts, 5);
    assert_int_equal(s->nreq, 5);
    assert_int_equal(o.n, 5);
    assert_int_equal(o.st[0], 0);
    assert_int_equal(o.st[1], 0);
    assert_int_equal(o.st[2], 429);
    assert_int_equal(o.st[3], 408);
    assert_int_equal(o.st[4], 200);
    /* the closed and the hung connections were not reused */
    assert_true(s->nconns >= 3);
    s3_result_free(&r);
    srv_stop(s);

    /* retries run out: the last answer is reported */
    script all = {{"500", "500", "500", "500"}, 4};
    over.max_attempts = 3;
    s3_result_init(&r);
    memset(&o, 0, sizeof o);
    assert_int_equal(put_with_script(&all, &over, &r, &o, &s), -1);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.status, 500);
    assert_string_equal(r.error, "InternalError: We encountered an internal error. Please try again.");
    s3_result_free(&r);
    srv_stop(s);
}

static void test_retry_after(void **state)
{
    (void)state;
    script sc = {{"503ra"}, 1};
    s3_config over = {0};
    over.backoff_base_ms = 1;
    over.backoff_max_ms = 5000;
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    tsrv *s;
    uint64_t t0 = mono_ms();
    assert_int_equal(put_with_script(&sc, &over, &r, &o, &s), 0);
    uint64_t gap = s->reqs[1].at_ms - s->reqs[0].at_ms;
    assert_true(gap >= 950); /* waited the server's second, not the 1 ms base */
    assert_true(mono_ms() - t0 < 4000);
    assert_int_equal(r.attempts, 2);
    s3_result_free(&r);
    srv_stop(s);
    /* Retry-After is still capped by backoff_max_ms */
    over.backoff_max_ms = 50;
    s3_result_init(&r);
    memset(&o, 0, sizeof o);
    assert_int_equal(put_with_script(&sc, &over, &r, &o, &s), 0);
    gap = s->reqs[1].at_ms - s->reqs[0].at_ms;
    assert_true(gap < 500);
    s3_result_free(&r);
    srv_stop(s);
}

typedef struct canceller {
    volatile int *flag;
    int after_ms;
} canceller;

static void *cancel_main(void *p)
{
    canceller *c = p;
    usleep((useconds_t)c->after_ms * 1000);
    *c->flag = 1;
    return NULL;
}

static void test_cancel(void **state)
{
    (void)state;
    /* set while the first attempt is answered: no second attempt */
    script sc = {{"500", "500", "500"}, 3};
    volatile int cancel = 0;
    s3_config over = {0};
    over.cancel = &cancel;
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    o.cancel_after_first = &cancel;
    tsrv *s;
    assert_int_equal(put_with_script(&sc, &over, &r, &o, &s), -1);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(s->nreq, 1);
    assert_non_null(strstr(r.error, "stopping"));
    s3_result_free(&r);
    srv_stop(s);
    /* set during a long backoff: the call returns soon after, not when the backoff ends */
    cancel = 0;
    over.backoff_base_ms = 3000;
    over.backoff_max_ms = 3000;
    memset(&o, 0, sizeof o);
    s3_result_init(&r);
    canceller cc = {&cancel, 200};
    pthread_t th;
    pthread_create(&th, NULL, cancel_main, &cc);
    uint64_t t0 = mono_ms();
    assert_int_equal(put_with_script(&sc, &over, &r, &o, &s), -1);
    uint64_t took = mono_ms() - t0;
    pthread_join(th, NULL);
    assert_true(took < 1000);
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "stopping"));
    s3_result_free(&r);
    srv_stop(s);
    /* a first attempt is sent even when already stopping (a drain finishes its window) */
    cancel = 1;
    script fine = {{"200"}, 1};
    memset(&o, 0, sizeof o);
    s3_result_init(&r);
    assert_int_equal(put_with_script(&fine, &over, &r, &o, &s), 0);
    s3_result_free(&r);
    srv_stop(s);
}

/* ---- multipart ---- */

#define UPLOAD_ID "up/1+x~.Z"
#define UPLOAD_ID_ENC "up%2F1%2Bx~.Z"

typedef struct mp_script {
    int fail_part;       /* this part answers fail_status... */
    int fail_status;
    int fail_times;      /* ...this many times (0: always) */
    int complete_mode;   /* 0 ok; 1 first 200+InternalError then ok; 2 200+InvalidPart always */
    int delay_ms;        /* per part answer */
    int fail_count;      /* state */
    int complete_count;
    pthread_mutex_t mu;
} mp_script;

static void mp_responder(tsrv *s, const creq *q, int idx, resp *out)
{
    (void)idx;
    mp_script *m = s->arg;
    char v[256];
    if (strcmp(q->method, "POST") == 0 && qparam(q, "uploads", v, sizeof v)) {
        snprintf(out->body, sizeof out->body,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult xmlns=\"http://s3."
                 "amazonaws.com/doc/2006-03-01/\"><Bucket>lake</Bucket><Key>big</Key><UploadId>%s</UploadId>"
                 "</InitiateMultipartUploadResult>",
                 "up/1+x~.Z");
        return;
    }
    if (strcmp(q->method, "PUT") == 0 && qparam(q, "partNumber", v, sizeof v)) {
        int pn = atoi(v);
        out->delay_ms = m->delay_ms;
        pthread_mutex_lock(&m->mu);
        int fail = pn == m->fail_part && (m->fail_times == 0 || m->fail_count < m->fail_times);
        if (fail)
            m->fail_count++;
        pthread_mutex_unlock(&m->mu);
        if (fail) {
            out->status = m->fail_status;
            snprintf(out->body, sizeof out->body, "%s",
                     m->fail_status == 403 ? "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
                                           : ERR_500);
            return;
        }
        snprintf(out->headers, sizeof out->headers, "ETag: \"etag-%d\"\r\n", pn);
        return;
    }
    if (strcmp(q->method, "POST") == 0 && qparam(q, "uploadId", v, sizeof v)) {
        pthread_mutex_lock(&m->mu);
        int n = m->complete_count++;
        pthread_mutex_unlock(&m->mu);
        if ((m->complete_mode == 1 && n == 0)) {
            snprintf(out->body, sizeof out->body, "\n   \n<Error><Code>InternalError</Code><Message>We encountered "
                                                  "an internal error. Please try again.</Message></Error>");
            return;
        }
        if (m->complete_mode == 2) {
            snprintf(out->body, sizeof out->body, "<?xml version=\"1.0\"?><Error><Code>InvalidPart</Code><Message>"
                                                  "One or more of the specified parts could not be found.</Message>"
                                                  "</Error>");
            return;
        }
        snprintf(out->body, sizeof out->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                              "<CompleteMultipartUploadResult><Location>x</Location><Bucket>lake"
                                              "</Bucket><Key>big</Key><ETag>\"e-5\"</ETag>"
                                              "</CompleteMultipartUploadResult>");
        return;
    }
    if (strcmp(q->method, "DELETE") == 0 && qparam(q, "uploadId", v, sizeof v)) {
        out->status = 204;
        return;
    }
    out->status = 400;
}

typedef struct hook_log {
    int parts[64];
    int n;
} hook_log;

static void on_part(void *arg, int pn)
{
    hook_log *h = arg;
    if (h->n < 64)
        h->parts[h->n++] = pn;
}

#define MP_LEN 300
#define MP_PART 64 /* 5 parts: 64 64 64 64 44 */

static void run_mp(mp_script *m, int *rc, s3_result *r, obs_log *o, hook_log *h, tsrv **sout, char *body)
{
    pthread_mutex_init(&m->mu, NULL);
    tsrv *s = srv_start(mp_responder, m);
    char ep[64];
    s3_config c = srv_cfg(s, ep, sizeof ep);
    c.multipart_threshold = 100;
    c.part_size = MP_PART;
    c.sse = "aws:kms:key-1";
    c.max_attempts = 3;
    c.on_part_uploaded = on_part;
    c.hook_arg = h;
    s3_client *cl = s3_client_new(&c, obs_fn, o);
    for (int i = 0; i < MP_LEN; i++)
        body[i] = (char)('a' + i % 26);
    *rc = s3_put(cl, "big obj", body, MP_LEN, "application/x-ndjson", r);
    s3_client_free(cl);
    *sout = s;
}

static int count_reqs(tsrv *s, const char *method, const char *param)
{
    int n = 0;
    char v[256];
    for (int i = 0; i < s->nreq; i++)
        if (strcmp(s->reqs[i].method, method) == 0 && qparam(&s->reqs[i], param, v, sizeof v))
            n++;
    return n;
}

static void test_multipart_ok(void **state)
{
    (void)state;
    mp_script m = {0};
    m.delay_ms = 80; /* long enough for parts to overlap */
    m.fail_part = 2;
    m.fail_status = 500;
    m.fail_times = 1; /* part 2 fails once, then succeeds */
    m.complete_mode = 1;
    int rc;
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    hook_log h = {0};
    tsrv *s;
    char body[MP_LEN];
    run_mp(&m, &rc, &r, &o, &h, &s, body);
    if (rc != 0)
        fail_msg("multipart failed: %s", r.error);
    /* create, 5 parts + 1 retried, 2 completes */
    assert_int_equal(r.attempts, 1 + 6 + 2);
    assert_int_equal(s->nreq, 9);
    assert_int_equal(count_reqs(s, "POST", "uploads"), 1);
    assert_int_equal(count_reqs(s, "PUT", "partNumber"), 6);
    assert_int_equal(count_reqs(s, "DELETE", "uploadId"), 0);
    const creq *create = &s->reqs[0];
    assert_string_equal(create->method, "POST");
    assert_string_equal(create->path, "/lake/big%20obj");
    assert_string_equal(create->query, "uploads=");
    assert_string_equal(hget(create, "content-type"), "application/x-ndjson");
    assert_string_equal(hget(create, "x-amz-server-side-encryption"), "aws:kms");
    assert_string_equal(hget(create, "x-amz-server-side-encryption-aws-kms-key-id"), "key-1");
    assert_int_equal(create->body_len, 0);
    check_signed(create, "eu-central-1");
    int seen[6] = {0};
    const creq *complete = NULL;
    for (int i = 1; i < s->nreq; i++) {
        const creq *q = &s->reqs[i];
        check_signed(q, "eu-central-1");
        char v[256];
        if (strcmp(q->method, "PUT") == 0) {
            assert_true(qparam(q, "partNumber", v, sizeof v));
            int pn = atoi(v);
            assert_true(pn >= 1 && pn <= 5);
            seen[pn]++;
            char want[128];
            snprintf(want, sizeof want, "partNumber=%d&uploadId=%s", pn, UPLOAD_ID_ENC);
            assert_string_equal(q->query, want); /* sorted, encoded */
            assert_string_equal(q->path, "/lake/big%20obj");
            size_t off = (size_t)(pn - 1) * MP_PART, n = pn == 5 ? MP_LEN - 4 * MP_PART : MP_PART;
            assert_int_equal(q->body_len, n);
            assert_memory_equal(q->body, body + off, n);
            /* SSE belongs to the create, not to the parts (S3 refuses it there) */
            assert_null(hget(q, "x-amz-server-side-encryption"));
        } else if (strcmp(q->method, "POST") == 0) {
            assert_string_equal(q->query, "uploadId=" UPLOAD_ID_ENC);
            assert_string_equal(hget(q, "content-type"), "application/xml");
            complete = q;
            /* every part was answered before the complete was sent */
            for (int p = 1; p <= 5; p++)
                assert_true(seen[p] >= 1);
        }
    }
    assert_int_equal(seen[2], 2);
    assert_non_null(complete);
    const char *want_xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                           "<Part><PartNumber>1</PartNumber><ETag>&quot;etag-1&quot;</ETag></Part>"
                           "<Part><PartNumber>2</PartNumber><ETag>&quot;etag-2&quot;</ETag></Part>"
                           "<Part><PartNumber>3</PartNumber><ETag>&quot;etag-3&quot;</ETag></Part>"
                           "<Part><PartNumber>4</PartNumber><ETag>&quot;etag-4&quot;</ETag></Part>"
                           "<Part><PartNumber>5</PartNumber><ETag>&quot;etag-5&quot;</ETag></Part>"
                           "</CompleteMultipartUpload>";
    assert_int_equal(complete->body_len, strlen(want_xml));
    assert_memory_equal(complete->body, want_xml, strlen(want_xml));
    assert_int_equal(m.complete_count, 2); /* the 200 with an InternalError body was retried */
    /* parts ran in parallel, never more than 4 at once */
    assert_true(s->max_active >= 2);
    assert_true(s->max_active <= 4);
    /* the hook saw each part once */
    assert_int_equal(h.n, 5);
    int hs[6] = {0};
    for (int i = 0; i < h.n; i++)
        hs[h.parts[i]]++;
    for (int p = 1; p <= 5; p++)
        assert_int_equal(hs[p], 1);
    /* observer names */
    assert_string_equal(o.ops[0], "create_multipart");
    assert_string_equal(o.ops[o.n - 1], "complete_multipart");
    int up = 0;
    for (int i = 0; i < o.n; i++)
        up += strcmp(o.ops[i], "upload_part") == 0;
    assert_int_equal(up, 6);
    s3_result_free(&r);
    srv_stop(s);
    pthread_mutex_destroy(&m.mu);
}

static void test_multipart_abort(void **state)
{
    (void)state;
    /* part 3 refused for good: no complete, an abort */
    mp_script m = {0};
    m.fail_part = 3;
    m.fail_status = 403;
    int rc;
    s3_result r;
    s3_result_init(&r);
    obs_log o = {0};
    hook_log h = {0};
    tsrv *s;
    char body[MP_LEN];
    run_mp(&m, &rc, &r, &o, &h, &s, body);
    assert_int_equal(rc, -1);
    assert_int_equal(r.status, 403);
    assert_string_equal(r.error, "upload_part 3: AccessDenied: Access Denied");
    assert_int_equal(count_reqs(s, "POST", "uploadId"), 0);
    assert_int_equal(count_reqs(s, "DELETE", "uploadId"), 1);
    const creq *last = &s->reqs[s->nreq - 1];
    assert_string_equal(last->method, "DELETE");
    assert_string_equal(last->path, "/lake/big%20obj");
    assert_string_equal(last->query, "uploadId=" UPLOAD_ID_ENC);
    check_signed(last, "eu-central-1");
    assert_string_equal(o.ops[o.n - 1], "abort_multipart");
    assert_int_equal(o.st[o.n - 1], 204);
    s3_result_free(&r);
    srv_stop(s);
    pthread_mutex_destroy(&m.mu);

    /* a part that keeps failing with 500 runs out of attempts: abort too */
    memset(&m, 0, sizeof m);
    m.fail_part = 1;
    m.fail_status = 500;
    s3_result_init(&r);
    memset(&o, 0, sizeof o);
    memset(&h, 0, sizeof h);
    run_mp(&m, &rc, &r, &o, &h, &s, body);
    assert_int_equal(rc, -1);
    assert_int_equal(m.fail_count, 3);
    assert_non_null(strstr(r.error, "upload_part 1: InternalError"));
    assert_int_equal(count_reqs(s, "DELETE", "uploadId"), 1);
    s3_result_free(&r);
    srv_stop(s);
    pthread_mutex_destroy(&m.mu);

    /* the complete answers 200 with a permanent <Error>: failed, aborted */
    memset(&m, 0, sizeof m);
    m.complete_mode = 2;
    s3_result_init(&r);
    memset(&o, 0, sizeof o);
    memset(&h, 0, sizeof h);
    run_mp(&m, &rc, &r, &o, &h, &s, body);
    assert_int_equal(rc, -1);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.error, "complete_multipart: InvalidPart: One or more of the specified parts could not be "
                                 "found.");
    assert_int_equal(m.complete_count, 1);
    assert_int_equal(count_reqs(s, "DELETE", "uploadId"), 1);
    assert_int_equal(h.n, 5);
    s3_result_free(&r);
    srv_stop(s);
    pthread_mutex_destroy(&m.mu);
}

static void test_multipart_threshold(void **state)
{
    (void)state;
    /* exactly at the threshold: one PUT; a byte more: multipart */
    mp_script m = {0};
    pthread_mutex_init(&m.mu, NULL);
    tsrv *s = srv_start(mp_responder, &m);
    char ep[64];
    s3_config c = srv_cfg(s, ep, sizeof ep);
    c.multipart_threshold = 100;
    c.part_size = 60;
    s3_client *cl = s3_client_new(&c, NULL, NULL);
    char body[101];
    memset(body, 'x', sizeof body);
    s3_result r;
    s3_result_init(&r);
    /* the responder answers a plain PUT (no partNumber) with 400, so count requests instead */
    s3_put(cl, "a", body, 100, NULL, &r);
    assert_int_equal(s->nreq, 1);
    assert_string_equal(s->reqs[0].query, "");
    assert_int_equal(s3_put(cl, "b", body, 101, NULL, &r), 0);
    assert_int_equal(count_reqs(s, "PUT", "partNumber"), 2);
    s3_client_free(cl);
    s3_result_free(&r);
    srv_stop(s);
    pthread_mutex_destroy(&m.mu);
}

int main(void)
{
    log_setup(LOG_INFO, LOG_FORMAT_TEXT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_path),
        cmocka_unit_test(test_object_url),
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_hashes_and_complete_xml),
        cmocka_unit_test(test_xml),
        cmocka_unit_test(test_verifier_aws_vector),
        cmocka_unit_test(test_wire_put_path_style),
        cmocka_unit_test(test_wire_put_self_signed),
        cmocka_unit_test(test_wire_vhost_kms),
        cmocka_unit_test(test_wire_get_head),
        cmocka_unit_test(test_retry_500_500_200),
        cmocka_unit_test(test_fail_at_once_403),
        cmocka_unit_test(test_retry_network_and_throttle),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_multipart_ok),
        cmocka_unit_test(test_multipart_abort),
        cmocka_unit_test(test_multipart_threshold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
