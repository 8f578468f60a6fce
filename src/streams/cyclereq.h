/* cyclereq.h — reading one cycle object of POST /streams/v1/cycle (docs/streams.md) and deriving
 * the transactionIds of its sink items. Pure: no libuv, no libpq.
 *
 * The body is the earlier release's (its JS SDK and the 2.x Python runtime send it unchanged):
 * query_id, partition_id (a UUID or a framed pop's decimal id), consumer_group, state_ops,
 * push_items, ack, release_lease, and idx (an array element's own index, ignored); a state op
 * may carry `version` (our SDKs: the row version state/get answered with "versions": true, so
 * the op applies only to the row as it was read). `kv` and
 * `timers` are refused with the spec's reason, unknown fields are refused by name. */
#ifndef QUEEN_STREAMS_CYCLEREQ_H
#define QUEEN_STREAMS_CYCLEREQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/uuid.h"
#include "json/json.h"
#include "storage/pushenc.h"

/* the key is in the state table's primary key: a B-tree entry has room for ~2.7 kB */
#define STATE_KEY_MAX_BYTES 2048
#define CYCLE_TEXT_MAX 1024
/* a derived transactionId: "sq:" + 36 hex digits */
#define CYCLE_TXN_LEN 39

typedef enum cycle_rc {
    CYCLE_OK = 0,
    CYCLE_BAD,    /* 400: the request is refused whole (err: code, reason, text) */
    CYCLE_FAILED, /* the cycle fails as the earlier release fails it: 200, success false, error = text */
} cycle_rc;

typedef struct cycle_err {
    const char *code;   /* 400: the stable code ("invalid_uuid", "unknown_field", ...), NULL = bad_request */
    const char *reason; /* a refusal's finer name (cycle_kv_unsupported), NULL when not a refusal */
    char text[CYCLE_TEXT_MAX];
} cycle_err;

typedef struct cycle_op {
    int del; /* 0 upsert, 1 delete */
    const char *key;
    size_t key_len;
    const char *value; /* an upsert's raw JSON ("{}" when absent or null); NULL for a delete */
    size_t value_len;
    int has_version;   /* "version": the row's version as state/get gave it (0 = read as absent) */
    int64_t version;
} cycle_op;

typedef struct cycle_req {
    uuid query, part;
    const char *group; /* QUEUE_MODE_GROUP when absent or empty */
    int release;       /* release_lease, default true */
    int has_ack;
    const char *ack_txn, *ack_status, *ack_error; /* status "completed" when absent; error NULL */
    int has_lease;
    uuid lease;
    int has_count;
    int64_t count;
    cycle_op *ops;
    uint32_t nops;
    push_item *items; /* one spare slot past nitems */
    uint32_t nitems;
    uint8_t *derived; /* per item: 1 when its transactionId was derived (not the producer's) */
    /* the derivation seed: for a cycle with an ack its lease, acked transactionId and count;
     * for a flush the keys it deletes */
    char *seed;
    size_t seed_len;
} cycle_req;

/* Reads the cycle object at token o into c (strings copied into ar, payloads are spans of the
 * body). `at` prefixes the messages of an array element ("[3]"), NULL for an object body. Every
 * item without a transactionId gets one derived (cycle_derive_txn, no salt), marked
 * txn_producer so the push path deduplicates it. Returns CYCLE_OK, or CYCLE_BAD / CYCLE_FAILED
 * with err filled (then c is partly filled: query and part once they were read). */
cycle_rc cycle_read(arena *ar, const json_doc *d, int o, const char *at, cycle_req *c, cycle_err *err);

/* The transactionId of sink item `index` without one of its own, into out (CYCLE_TXN_LEN + 1):
 * "sq:" + 36 hex digits of SHA-256 over the query, the partition, the seed, the index, `salt`
 * (when salt_len > 0) and, for a flush, the item's queue, partition and payload. */
void cycle_derive_txn(const cycle_req *c, const char *salt, size_t salt_len, uint32_t index, const push_item *it,
                      char out[CYCLE_TXN_LEN + 1]);

/* Derives again, with `salt`, the transactionId of every item whose id was derived (into ar),
 * and sets every item pending. The salt of a flush that closes a later incarnation of its
 * windows is their rows' created_us (docs/streams.md, "A seek back"). */
void cycle_rederive(arena *ar, cycle_req *c, const char *salt, size_t salt_len);

#endif
