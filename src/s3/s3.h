/* s3.h — a small S3 client for the sink: PUT (multipart above a threshold, aborted on failure),
 * GET, and the bucket probe, on libcurl with its built-in AWS SigV4 (see ../shared/TESTING.md
 * for curl's signing pitfalls). Path-style and virtual-host-style addressing, a region, and
 * server-side encryption (QUEEN_S3_SSE) as a request header.
 *
 * Blocking calls: the sink runs on threads of its own (queen-s3), and each thread owns its
 * s3_client (one CURL easy handle reused for keep-alive; a multipart upload may send its parts
 * over a CURLM of its own). Retries with exponential backoff and jitter on 5xx, 429, and
 * network errors, up to max_attempts; 4xx other than 429 fails at once. *cancel (when set)
 * is read between attempts and during backoff, so a stopping sink is not held by retries.
 *
 * The pure helpers at the end (key encoding, URL building, payload hash) are unit-tested. */
#ifndef QUEEN_S3_S3_H
#define QUEEN_S3_S3_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

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
} s3_config;

/* What a call ended with. status is the last HTTP status (0: no answer — network error, or
 * cancelled); error holds S3's <Code>: <Message> or curl's error text; body the GET body. */
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

s3_client *s3_client_new(const s3_config *cfg, s3_observer_fn obs, void *obs_arg);
void s3_client_free(s3_client *c);

void s3_result_init(s3_result *r);
void s3_result_free(s3_result *r);

/* 0 when stored (200), -1 when it failed after its retries (r says why). */
int s3_put(s3_client *c, const char *key, const void *data, size_t len, const char *content_type, s3_result *r);
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

#endif
