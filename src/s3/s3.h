/* s3.h — a small S3 client for the sink: PUT (multipart above a threshold, aborted on failure),
 * GET, and the bucket probe, on libcurl with its built-in AWS SigV4 (see ../shared/TESTING.md
 * for curl's signing pitfalls). Path-style and virtual-host-style addressing, a region, and
 * server-side encryption (QUEEN_S3_SSE) as a request header.
 *
 * Blocking calls: the sink runs on threads of its own (queen-s3), and each thread owns its
 * s3_client. A client drives one CURLM (libcurl's multi interface) from the calling thread:
 * a single request is one transfer on it, a multipart upload runs up to max_inflight_parts
 * UploadPart transfers at once on it, and its connection cache keeps connections alive from
 * one call to the next. Retries with exponential backoff and jitter on 5xx, 429, 408 and
 * network errors, up to max_attempts (Retry-After honoured, capped at backoff_max_ms); other
 * 4xx fail at once. *cancel (when set) is read between attempts and during backoff, so a
 * stopping sink is not held by retries; a first attempt is always sent, so a draining sink
 * can still finish the window it is committing. Design notes: docs/s3-client.md.
 *
 * The pure helpers at the end (key encoding, URL building, payload hash) are unit-tested. */
#ifndef QUEEN_S3_S3_H
#define QUEEN_S3_S3_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/qerr.h"

typedef struct s3_config {
    const char *endpoint;   /* http://host:port or https://host — no trailing slash required */
    const char *region;     /* signed into every request */
    const char *bucket;
    const char *access_key;
    const char *secret_key; /* never logged */
    int path_style;         /* 1: endpoint/bucket/key; 0: bucket.host/key */
    const char *sse;        /* NULL/"" none; "AES256"; "aws:kms" or "aws:kms:<key id>" */
    size_t multipart_threshold; /* bodies larger than this go multipart (0 = 64 MiB) */
    size_t part_size;           /* 0 = 16 MiB; at least 5 MiB on real S3 */
    int max_attempts;           /* per request, 0 = 5 */
    int64_t backoff_base_ms;    /* 0 = 200 */
    int64_t backoff_max_ms;     /* 0 = 10000 */
    int64_t timeout_ms;         /* per HTTP request, 0 = 60000 */
    volatile int *cancel;       /* optional: nonzero stops retrying */
    int content_md5;            /* 1: send Content-MD5 on single PUTs and parts */
    int max_inflight_parts;     /* multipart parts in flight at once, 0 = 4 (at most 16) */
    size_t max_get_bytes;       /* a GET body larger than this fails, 0 = 256 MiB */
    /* optional, called on the calling thread after each part is stored (the sink's
     * test-only crash point "mid_upload" kills the process there) */
    void (*on_part_uploaded)(void *arg, int part_number);
    void *hook_arg;
    /* 1: sign every request in s3.c instead of with curl's CURLOPT_AWS_SIGV4 (the tests use it
     * to cover that path; it is chosen by itself for requests curl < 8.10 signs wrongly) */
    int sigv4_self;
} s3_config;

/* Defaults the zero values stand for. */
#define S3_DEFAULT_MULTIPART_THRESHOLD ((size_t)64 << 20)
#define S3_DEFAULT_PART_SIZE ((size_t)16 << 20)
#define S3_DEFAULT_MAX_ATTEMPTS 5
#define S3_DEFAULT_BACKOFF_BASE_MS 200
#define S3_DEFAULT_BACKOFF_MAX_MS 10000
#define S3_DEFAULT_TIMEOUT_MS 60000
#define S3_DEFAULT_INFLIGHT_PARTS 4
#define S3_MAX_INFLIGHT_PARTS 16
#define S3_DEFAULT_MAX_GET_BYTES ((size_t)256 << 20)
/* S3 numbers parts 1..10000: a body that would need more gets larger parts. */
#define S3_MAX_PARTS 10000

/* What a call ended with. status is the last HTTP status (0: no answer — network error, or
 * cancelled); attempts counts every HTTP request the call sent (a multipart upload's create,
 * parts, complete and abort included); error holds S3's "<Code>: <Message>", "HTTP <status>"
 * or curl's error text (a multipart step's error is prefixed with the step, e.g.
 * "upload_part 3: "); body the GET body. */
typedef struct s3_result {
    long status;
    int attempts;
    char error[512];
    buf body;
} s3_result;

/* Every HTTP request the client sends is reported here (op: "put", "get", "head_bucket",
 * "create_multipart", "upload_part", "complete_multipart", "abort_multipart"; status 0 for a
 * network error), from the calling thread. The sink counts queen_s3_s3_requests_total with it. */
typedef void (*s3_observer_fn)(void *arg, const char *op, long status);

typedef struct s3_client s3_client;

/* Checks what s3_client_new needs: an http(s) endpoint with a host, a bucket (DNS-safe for
 * virtual-host style), a region, credentials, a known SSE value. QERR_OK, or QERR_BAD_INPUT
 * with the sentence. */
qerr s3_config_check(const s3_config *cfg, qerr_detail *err);
/* Copies cfg's strings (the caller's may go away); NULL when s3_config_check refuses it. */
s3_client *s3_client_new(const s3_config *cfg, s3_observer_fn obs, void *obs_arg);
void s3_client_free(s3_client *c);

void s3_result_init(s3_result *r);
void s3_result_free(s3_result *r);

/* 0 when stored (200), -1 when it failed after its retries (r says why). A body larger than
 * multipart_threshold goes up as a multipart upload (create, parts, complete); one that fails
 * is aborted (best effort) before -1. content_type may be NULL. */
int s3_put(s3_client *c, const char *key, const void *data, size_t len, const char *content_type, s3_result *r);
/* As s3_put, but the single PUT carries If-None-Match: * (S3 refuses to replace an object):
 * 0 stored, 1 an object is already under key (412; it may be this call's own earlier attempt
 * whose answer was lost, so the caller compares), -1 failed. A server that ignores the header
 * (s3rver, older S3-compatible stores) stores and answers 0. A body above multipart_threshold
 * goes up unconditionally. */
int s3_put_new(s3_client *c, const char *key, const void *data, size_t len, const char *content_type, s3_result *r);
/* 0 found (body in r->body), 1 not found (404 NoSuchKey), -1 failed. */
int s3_get(s3_client *c, const char *key, s3_result *r);
/* The probe before any queue starts (HEAD on the bucket): 0 reachable, -1 not (r says why:
 * 403 wrong credentials, 404 no such bucket, 0 no answer). */
int s3_head_bucket(s3_client *c, s3_result *r);

/* ---- pure helpers ---- */
/* Appends key percent-encoded for the request path: every byte outside A-Za-z0-9-._~/ as
 * %XX with uppercase hex (curl signs the path as written). */
void s3_encode_path(buf *out, const char *key, size_t len);
/* The request URL for key (NULL: the bucket itself), path-style or virtual-host style. */
int s3_object_url(const s3_config *cfg, const char *key, buf *out);
/* Hex SHA-256 of a body (x-amz-content-sha256); out has 65 bytes. */
void s3_sha256_hex(const void *data, size_t len, char out[65]);
/* Base64 MD5 of a body (Content-MD5); out has 25 bytes. */
void s3_md5_base64(const void *data, size_t len, char out[25]);
/* The query value encoding (as s3_encode_path, and '/' too). */
void s3_encode_query(buf *out, const char *s, size_t len);
/* The body of CompleteMultipartUpload for parts 1..n with their ETags (as S3 sent them). */
void s3_complete_xml(buf *out, char *const *etags, int n);

#endif
