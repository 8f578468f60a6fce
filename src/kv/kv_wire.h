/* kv_wire.h — the KV store on the 2.x wire: POST /api/v1/kv {"operations": [op, ...]} and the
 * transaction's `kv` rider (docs/kv.md, "The 2.x batch"; docs/http-api.md, "KV store"). The
 * ops are get, getMany, getPrefix, put, putIfAbsent, delete, incr and check, with `ns`, a
 * mandatory expiry on every write (`ttlSeconds` xor `forever: true`), `expect` as the version
 * fence and `required` to roll the whole batch back on a lost precondition. They run in one
 * call of queen.kv_ops_v1 (src/db/functions/kv_ops_v1.sql), which answers every op's result
 * object as JSON text.
 *
 * Parsing and parameter building include neither libpq nor libuv, so they are unit-tested and
 * fuzzed offline (tests/unit/test_kv.c, tests/fuzz/fuzz_kv.c). */
#ifndef QUEEN_KV_KV_WIRE_H
#define QUEEN_KV_KV_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/qerr.h"
#include "db/pgarray.h"
#include "json/json.h"

/* The op kinds, as queen.kv_ops_v1's p_kind numbers them. */
enum kvw_kind {
    KVW_GET = 0,
    KVW_PUT = 1,
    KVW_PUT_IF_ABSENT = 2,
    KVW_DELETE = 3,
    KVW_INCR = 4,
    KVW_CHECK = 5,
    KVW_GET_MANY = 6,
    KVW_GET_PREFIX = 7,
    KVW_NKINDS
};

/* getMany's keys per op and getPrefix's page: bounded like a batch. A page asks for at most
 * this many keys (a larger `limit` is clamped, never refused). */
#define KVW_MANY_MAX_KEYS 1000
#define KVW_PREFIX_LIMIT_DEFAULT 100
#define KVW_PREFIX_LIMIT_MAX 1000
/* Ten years of seconds: anything longer is `forever`. */
#define KVW_TTL_MAX_S 315360000LL

typedef struct kvw_op {
    int kind;             /* enum kvw_kind */
    const char *ns;
    size_t ns_len;
    const char *key;      /* getPrefix: the prefix; getMany: NULL */
    size_t key_len;
    const char *value;    /* put, putIfAbsent: the JSON text, a span of the request */
    size_t value_len;
    int has_expect;
    int64_t expect;       /* 0: must not be live; N > 0: must be live at version N */
    int required;
    int forever;          /* writes: exactly one of forever and ttl_s > 0 */
    int64_t ttl_s;
    int64_t ttl_ms;       /* in-process callers (kv_batch_sync): the lifetime in ms instead */
    int64_t delta;        /* incr (default 1) */
    int has_min, has_max;
    int64_t min, max;
    const char *after;    /* getPrefix: keys after this one (NULL = from the start) */
    size_t after_len;
    int64_t limit;        /* getPrefix, clamped to 1..KVW_PREFIX_LIMIT_MAX */
    int keys_only;
    const char **keys;    /* getMany */
    size_t *key_lens;
    int nkeys;
} kvw_op;

/* A refused op or body is QERR_BAD_INPUT (core/qerr.h) with the detail's code the stable code
 * of the envelope (kv_invalid_op, ...; error and code), its reason the finer stable name
 * (op_unknown, ...), its index the op at fault (from 0; -1 for the body) and the sentence;
 * http_respond_qerr_refusal answers it. */

/* Parses an array of op objects into *ops (arena). `what` names the array in sentences
 * ("operations", "kv"). `in_txn` refuses getPrefix (unbounded inside a transaction).
 * QERR_OK, or QERR_BAD_INPUT with *why filled. */
qerr kvw_parse(const json_doc *d, int arr, const char *what, int in_txn, arena *ar, kvw_op **ops, int *n,
               qerr_detail *why);
/* The body of POST /api/v1/kv: {"operations": [op, ...]} and nothing else. */
qerr kvw_parse_body(const json_doc *d, arena *ar, kvw_op **ops, int *n, qerr_detail *why);

const char *kvw_kind_name(int kind); /* get, put, putIfAbsent, ... */

/* Parameters of one call (values point into it). */
typedef struct kvw_params {
    const char *values[18];
    int lengths[18];
    int formats[18];
    int n;
    uint8_t tenant[16];
    uint8_t raise;
    pgarray arr[15];
} kvw_params;
void kvw_params_free(kvw_params *p);

/* SELECT o_index, o_result FROM queen.kv_ops_v1($1 tenant, $2 raise, $3..$17 arrays): rows
 * enum kv_ops_col (kv_results.h). With raise, a lost required precondition raises
 * KVW_SQLSTATE_REQUIRED (the caller's transaction is lost); without, the call answers one row
 * whose o_index is -(op from 1) and whose o_result is that op's verdict. */
extern const char KV_OPS_SQL[];
#define KVW_SQLSTATE_REQUIRED "QK001"
void kvw_params_build(const uint8_t tenant[16], int raise, const kvw_op *ops, int n, kvw_params *p);
/* The body itself, queen.kv_ops_apply_v1, with lifetimes in ms (ttl_ms, else ttl_s * 1000):
 * for a blocking connection's single statement, where a lost required op fails the statement
 * (QK001, the verdict in PG_DIAG_MESSAGE_DETAIL) and so rolls it all back. */
extern const char KV_OPS_APPLY_SQL[];
void kvw_params_build_apply(const uint8_t tenant[16], const kvw_op *ops, int n, kvw_params *p);

/* The failed op (from 1) and its reason named by a KVW_SQLSTATE_REQUIRED error's message
 * ("kv_ops_v1: op 3: version"); 0 when the message is not one. reason gets at most rlen - 1
 * bytes. */
int kvw_required_failure(const char *sqlstate, const char *errmsg, char *reason, size_t rlen);

/* ---- locks and semaphores: POST /api/v1/locks (queen.lock_ops_v1) ---- */

enum lockw_kind { LOCKW_ACQUIRE = 0, LOCKW_RENEW = 1, LOCKW_RELEASE = 2, LOCKW_GET = 3, LOCKW_NKINDS };
#define LOCKW_NAME_MAX_BYTES 256
#define LOCKW_OWNER_MAX_BYTES 256
#define LOCKW_LIMIT_MAX 1024
/* an acquire may look at up to LOCKW_LIMIT_MAX slots: a call takes fewer ops than a KV batch */
#define LOCKW_MAX_OPS 100

typedef struct lockw_op {
    int kind;           /* enum lockw_kind */
    const char *name;   /* no '#', no control characters */
    size_t name_len;
    const char *owner;  /* NULL: minted by the broker (acquire) */
    size_t owner_len;
    int64_t ttl_s;      /* acquire, renew */
    int32_t limit;      /* acquire: 1 = a lock */
    int64_t token;      /* renew, release */
    int has_slot;
    int32_t slot;
} lockw_op;

/* The body {"operations": [op, ...]}: QERR_OK, or QERR_BAD_INPUT with *why (codes lock_*). */
qerr lockw_parse_body(const json_doc *d, arena *ar, lockw_op **ops, int *n, qerr_detail *why);
const char *lockw_kind_name(int kind);
/* SELECT o_index, o_result FROM queen.lock_ops_v1($1 tenant, $2..$8 arrays): kv_ops_col rows */
extern const char LOCK_OPS_SQL[];
void lockw_params_build(const uint8_t tenant[16], const lockw_op *ops, int n, kvw_params *p);

#endif
