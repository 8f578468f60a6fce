/* kv.h — the per-tenant KV store: namespace + key → a JSON value (the text as sent), a version
 * every write advances, an optional expiry. Operations: get, put, putIfAbsent, delete, incr
 * (with an optional max), each optionally requiring a version or absence, and atomic batches
 * of them. The table is in src/db/migrations/010_kv.sql, the batch in src/db/functions/kv_batch_v1.sql; the design
 * (versions from one sequence, the lock order, what a failed batch reports) in docs/kv.md.
 *
 * Three kinds of callers share what is here:
 *  - the HTTP handlers (src/api/api_kv.c) on the loop, through the async pool: they parse the
 *    request into kv_op values (kv_parse_*), send KV_BATCH_SQL with kv_batch_params and
 *    decode the answer with kv_batch_decode;
 *  - subsystems on threads of their own with a blocking libpq connection (the S3 sink keeps
 *    its leases and pointers here): kv_batch_sync runs the ops on that connection with the
 *    2.x semantics (queen.kv_ops_apply_v1, every fenced op required: kv_wire.h);
 *  - the reclaim job (kv_reaper), which deletes expired keys on one node at a time.
 *
 * The parsing, validation and parameter building include neither libpq nor libuv (the few
 * types named below are forward declarations), so they are unit-tested offline. */
#ifndef QUEEN_KV_KV_H
#define QUEEN_KV_KV_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/qerr.h"
#include "db/pgarray.h"
#include "json/json.h"
#include "kv_results.h"
#include "metrics/metrics.h"

struct pg_conn;     /* PGconn */
struct pg_result;   /* PGresult */
struct uv_loop_s;   /* uv_loop_t */
typedef struct db_pool db_pool;

/* Namespaces and keys are PostgreSQL text: bounded, valid UTF-8, no NUL. A key has room for
 * the S3 sink's s3:<sink>:<percent-encoded queue>:<document> (a 255-byte queue name can grow
 * threefold when encoded). */
#define KV_NAMESPACE_MAX_BYTES 255
#define KV_KEY_MAX_BYTES 1024
/* Values are small documents (leases, pointers, counters); a megabyte leaves room for a
 * checkpoint while keeping one row cheap to rewrite on every version. */
#define KV_VALUE_MAX_BYTES (1u << 20)
/* A batch locks every key it names before writing: bounded so one batch cannot hold a large
 * part of the table, or build a huge answer. */
#define KV_BATCH_MAX_OPS 1000
/* Ten years: anything longer means "forever" and should be sent without a TTL. */
#define KV_TTL_MAX_MS 315360000000LL
#define KV_LIST_LIMIT_MAX 1000
/* A listing or batch answer carries at most this many bytes of values, whatever the stored
 * values add up to: a listing stops and says "more"; a batch whose gets would pass it fails
 * (SQLSTATE 54000, answered 400). Enforced in the SQL, so the database never sends more. */
#define KV_ANSWER_MAX_BYTES (64u << 20)

enum kv_kind { KV_GET = 0, KV_PUT = 1, KV_DELETE = 2, KV_INCR = 3 };
enum kv_expect { KV_EXPECT_NONE = 0, KV_EXPECT_VERSION = 1, KV_EXPECT_ABSENT = 2 };

/* One operation. Strings are borrowed (counted, not NUL-terminated) and must stay valid until
 * the batch is answered. putIfAbsent is KV_PUT with KV_EXPECT_ABSENT. */
typedef struct kv_op {
    enum kv_kind kind;
    enum kv_expect expect;
    const char *ns;
    size_t ns_len;
    const char *key;
    size_t key_len;
    const char *value;  /* put: JSON text, stored and returned byte for byte */
    size_t value_len;
    int64_t version;    /* with KV_EXPECT_VERSION */
    int64_t ttl_ms;     /* put: > 0 expires the key that long after the write; 0 = never.
                         * incr: applies only when the incr creates the key */
    int64_t by;         /* incr step */
    int has_max;
    int64_t max;        /* incr: an increase that would end above max is refused */
} kv_op;

/* Why a batch failed (the o_status of kv_batch_v1). */
enum kv_fail {
    KV_FAIL_NONE = 0,
    KV_FAIL_VERSION = 1,     /* the key's version is not the one required */
    KV_FAIL_EXISTS = 2,      /* absence was required (putIfAbsent) and the key is live */
    KV_FAIL_ABSENT = 3,      /* a version was required and the key is absent or expired */
    KV_FAIL_MAX = 4,         /* incr: the new value would pass max (the admission was refused) */
    KV_FAIL_NOT_INTEGER = 5, /* incr on a value that is not a JSON integer */
    KV_FAIL_OVERFLOW = 6,    /* incr past the 64-bit range */
};
#define KV_FAIL_COUNT 7

/* One op's result. value points into the PGresult held by the outcome. */
typedef struct kv_result {
    int64_t version;       /* new version (put, incr), current (get); 0 = the key is absent */
    const char *value;     /* get, incr: the stored text; NULL when absent */
    size_t value_len;
    int64_t expires_at_us; /* 0 = never (or absent) */
    int flag;              /* get: found; put, incr: created; delete: deleted */
} kv_result;

/* The answer to a batch. On failure only failed_op and current describe anything: nothing was
 * written. Owns its results and the PGresult; kv_outcome_clear releases them. */
typedef struct kv_outcome {
    enum kv_fail fail;
    int failed_op;          /* index of the failing op, -1 when none */
    kv_result current;      /* on failure: the failing op's key as that op saw it (version 0 = absent) */
    kv_result *results;     /* n, on success */
    int n;
    struct pg_result *res;
} kv_outcome;

void kv_outcome_clear(kv_outcome *o);

/* ---- constructors for in-process callers (C strings) ---- */
kv_op kv_op_get(const char *ns, const char *key);
kv_op kv_op_put(const char *ns, const char *key, const char *json, int64_t ttl_ms);
kv_op kv_op_put_if_absent(const char *ns, const char *key, const char *json, int64_t ttl_ms);
/* A put that must find `version` (the fence: rewrite the row this node last wrote). */
kv_op kv_op_put_if_version(const char *ns, const char *key, const char *json, int64_t ttl_ms, int64_t version);
kv_op kv_op_delete(const char *ns, const char *key);
kv_op kv_op_delete_if_version(const char *ns, const char *key, int64_t version);
kv_op kv_op_incr(const char *ns, const char *key, int64_t by);

/* ---- validation and parsing (pure) ---- */

/* Checks a namespace or key: QERR_OK, else QERR_BAD_INPUT with a sentence naming `what`. */
qerr kv_check_name(const char *what, const char *s, size_t n, size_t max, qerr_detail *err);
/* Checks a whole op (names, lengths, TTL range, that a put has a value, that the expectation
 * fits the kind). The value must already be valid JSON; the parser guarantees that for HTTP,
 * in-process callers are trusted to pass JSON. */
qerr kv_check_op(const kv_op *op, qerr_detail *err);

const char *kv_kind_name(const kv_op *op); /* get, put, putIfAbsent, delete, incr */
const char *kv_fail_reason(enum kv_fail f); /* version_mismatch, exists, absent, max_exceeded, ... */

/* Reads the fields of one op object of a request body (the single-op routes take namespace and
 * key from the path instead). `kind` is fixed by the route (with if_absent for putIfAbsent), or
 * -1 to read it from "op". Strings land in the arena; value is a raw span of the document.
 * Unknown fields are refused. Returns QERR_OK, or QERR_BAD_INPUT with the client's sentence. */
qerr kv_parse_op_fields(const json_doc *d, int obj, int kind, int if_absent, arena *ar, kv_op *out,
                        qerr_detail *err);
/* Parses a batch body {"namespace"?: default, "ops": [...]}; *ops is in the arena. */
qerr kv_parse_batch(const json_doc *d, arena *ar, kv_op **ops, int *n, qerr_detail *err);

/* The client-facing sentence for a failed batch, e.g.
 * op 1 (put queen-s3/lease): version mismatch: required version 41, found 57 */
void kv_fail_message(const kv_op *ops, const kv_outcome *o, buf *out);

/* JSON of one op's result / of the failure (the 409 body). */
void kv_result_json(buf *b, const kv_op *op, const kv_result *r);
void kv_fail_json(buf *b, const kv_op *ops, const kv_outcome *o);

/* Escapes a prefix for `key LIKE $x` (backslash, %, _) and appends the '%'. */
void kv_like_prefix(const char *prefix, size_t n, buf *out);

/* ---- SQL texts, parameters, decoding (shared by HTTP and in-process callers) ---- */

/* Parameter storage for one statement (values point into it). */
typedef struct kv_params {
    const char *values[10];
    int lengths[10];
    int formats[10];
    int n;
    char text[10][48];
    pgarray arr[9];
    buf like;
} kv_params;
void kv_params_free(kv_params *p);

/* SELECT * FROM queen.kv_batch_v1(...) with binary results: rows as enum kv_batch_col. */
extern const char KV_BATCH_SQL[];
void kv_batch_params(const uint8_t tenant[16], const kv_op *ops, int n, kv_params *p);
/* Takes ownership of res (also on failure). Returns QERR_OK, or QERR_INTERNAL when the result
 * is not the shape the function returns (the detail says how, for the log). */
qerr kv_batch_decode(struct pg_result *res, int n, kv_outcome *out, qerr_detail *err);

/* Reading one key without locking it (GET): value, version, expires_at; no row = absent. */
extern const char KV_GET_SQL[];
enum kv_get_col { KV_GET_VALUE, KV_GET_VERSION, KV_GET_EXPIRES_AT };
void kv_get_params(const uint8_t tenant[16], const char *ns, size_t ns_len, const char *key, size_t key_len,
                   kv_params *p);

/* Listing live keys of a namespace in key order: key, value, version, expires_at, total. At
 * most limit rows and about KV_ANSWER_MAX_BYTES of values come back (at least one row); `total`
 * (same in every row) is how many rows the limit + 1 took: more keys follow when total exceeds
 * the rows the caller shows. */
extern const char KV_LIST_SQL[];
enum kv_list_col { KV_LIST_KEY, KV_LIST_VALUE, KV_LIST_VERSION, KV_LIST_EXPIRES_AT, KV_LIST_TOTAL };
void kv_list_params(const uint8_t tenant[16], const char *ns, size_t ns_len, const char *prefix, size_t prefix_len,
                    const char *after, size_t after_len, int64_t limit, kv_params *p);

/* Runs a batch on a blocking connection (any thread that owns the connection) through
 * queen.kv_ops_apply_v1, every op with a precondition and every incr required. The ops run in
 * one statement: all or nothing. Deadlocks and serialization failures are retried.
 * Returns QERR_OK with *out filled (check out->fail); QERR_BAD_INPUT when an op is refused
 * (kv_check_op) or n is out of range; QERR_DATABASE when the database failed (the outcome is
 * unknown when the connection was lost); QERR_INTERNAL when the result has another shape.
 * The detail is for the caller's log: it may hold the server's message. */
qerr kv_batch_sync(struct pg_conn *c, const uint8_t tenant[16], const kv_op *ops, int n, kv_outcome *out,
                   qerr_detail *err);

/* ---- counters (/metrics/prometheus) ---- */
typedef struct kv_metrics {
    mcounter ops[8];                 /* by kind name: get, put, putIfAbsent, delete, incr, check,
                                      * getMany, getPrefix (the 2.x kinds, enum kvw_kind) */
    mcounter batches;                /* requests that ran (single-op routes included) */
    mcounter failed[KV_FAIL_COUNT];  /* batches refused, by reason */
    mcounter reclaimed;              /* expired keys deleted by this node's reaper */
    mcounter rolled_back;            /* 2.x batches rolled back by a lost required op */
} kv_metrics;
int kv_metric_slot(const kv_op *op); /* index into ops[] */
extern const char *const KV_METRIC_OP_NAMES[8];
#define kvw_metric_slot(kind) (kind) /* enum kvw_kind numbers the slots */

/* ---- the reclaim job ---- */
typedef struct kv_reaper kv_reaper;
/* Deletes expired keys every KV_REAP_INTERVAL_MS (sooner while it finds full batches), one
 * node at a time. Counts into m->reclaimed. */
kv_reaper *kv_reaper_new(struct uv_loop_s *loop, db_pool *db, kv_metrics *m);
/* Stops the timer; a round in flight finishes (or fails when the pool closes). */
void kv_reaper_stop(kv_reaper *k);
int kv_reaper_busy(const kv_reaper *k);  /* a round is in flight */
void kv_reaper_free(kv_reaper *k);       /* after the loop has stopped */

#endif
