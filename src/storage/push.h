/* push.h — writing records: the group commit.
 *
 * Push requests queue here; whenever fewer than QUEEN_PUSH_MAX_INFLIGHT commits are in flight,
 * everything waiting (up to QUEEN_PUSH_MAX_BATCH records, whole requests only) becomes one
 * transaction: one call of queen.push_v1 with one new segment per partition. Under load the
 * queue fills while commits are in flight, so batch-1 traffic from many connections shares a
 * commit instead of paying one each.
 *
 * A request's items are all committed in one transaction or none is. Producer transactionIds
 * already seen within the dedup window (or earlier in the same commit) are answered duplicate
 * and store nothing.
 *
 * Ownership: the caller owns the push_req and every byte its items point to, until `done`. */
#ifndef QUEEN_STORAGE_PUSH_H
#define QUEEN_STORAGE_PUSH_H

#include <stdint.h>

#include "config/config.h"
#include "db/pg.h"
#include "metrics/metrics.h"

enum push_status { PUSH_PENDING = 0, PUSH_QUEUED, PUSH_DUPLICATE, PUSH_FULL };

typedef struct push_item {
    /* in */
    const char *queue;
    uint32_t queue_len;
    const char *partition;
    uint32_t partition_len;
    const char *payload; /* raw JSON text; NULL/0 = empty */
    uint32_t payload_len;
    const char *txn;     /* transactionId */
    uint32_t txn_len;
    uint8_t txn_producer; /* supplied by the producer: deduplicated */
    uint8_t has_trace;
    uint8_t trace[16];
    /* out (valid in done when the request succeeded) */
    uint8_t status;
    uint64_t offset;
    int64_t ts;
    uint64_t partition_id;
    uint8_t partition_uuid[16];
    /* private */
    uint32_t group;
    uint32_t pos;
    struct push_item *dup_of;
    struct push_req *req;
} push_item;

typedef struct push_req push_req;
struct push_req {
    uint8_t tenant[16];
    const char *producer; /* producer identity stamped on every record, or NULL */
    uint32_t producer_len;
    push_item *items;
    uint32_t n;
    void (*done)(push_req *r);
    void *arg;
    /* out */
    int err_status;  /* 0 ok; else an HTTP status (503 database unavailable, 500 ...) */
    int err_internal; /* err is for the log only: the database's text or an internal failure */
    char err_sqlstate[6]; /* with err_internal: the failed statement's SQLSTATE, or "" */
    char err[300];
    /* private */
    push_req *next;
};

/* The encoder behind every write of records (group commit, transactions): groups the pending
 * items of a list of requests by (tenant, queue, partition), answers repeats of a producer
 * transactionId inside the list as duplicates of the first, encodes one segment per group and
 * fills the parameters of queen.push_v1. push_enc_apply reads the result back into the items.
 * Ownership: the encoder owns its arrays; items and requests stay the caller's. */
#include "core/arena.h"
#include "db/pgarray.h"
#include "sealq.h"

#define PUSH_ARRAYS 9
#define PUSH_PARAMS 10

typedef struct push_group {
    const uint8_t *tenant;
    const char *queue;
    uint32_t queue_len;
    const char *partition;
    uint32_t partition_len;
    push_item **items;
    uint32_t n, cap;
    uint32_t sql_idx; /* 1-based index in the call's arrays; 0 when nothing to write */
    int sealed;       /* its payloads are sealed (the queue has encryptionEnabled, as far as known) */
} push_group;

typedef struct push_enc {
    sealq *sq;  /* which queues to seal for; NULL seals nothing. Set after push_enc_init. */
    arena ar;
    push_group *groups;
    uint32_t ngroups, gcap;
    push_item **dd_items; /* producer transactionIds sent for checking, by dedup index */
    uint32_t ndd, ddcap;
    pgarray arr[PUSH_ARRAYS];
    uint8_t window[8];
    const char *values[PUSH_PARAMS];
    int lengths[PUSH_PARAMS];
    int formats[PUSH_PARAMS];
} push_enc;

void push_enc_init(push_enc *e);
/* Returns the number of records to write (0: everything pending was a duplicate). */
uint64_t push_enc_build(push_enc *e, push_req *reqs, int64_t dedup_window_us);
void push_enc_stmt(push_enc *e, db_stmt *st);
/* Applies a push_v1 result. dups/full > 0 means nothing was written: items found duplicate
 * or in a full queue are marked, the rest are pending again. */
int push_enc_apply(push_enc *e, PGresult *res, int *dups, int *full);
/* The same for the rows whose int4 column `col` holds `val` only (a caller that wraps several
 * push_v1 calls in one result, each with an encoder of its own: streams_cycles_v1). */
int push_enc_apply_where(push_enc *e, PGresult *res, int col, int32_t val, int *dups, int *full);
/* Gives items that repeated an earlier item of the same write that item's outcome. */
void push_enc_settle(push_req *reqs);
/* After a failed push_v1 call: when it refused a group of plaintext records for a queue with
 * encryptionEnabled (SQLSTATE QE001), returns that group (and, when this node has a key, marks
 * the queue in e->sq, so the next push_enc_build seals it); otherwise NULL. */
const push_group *push_enc_refused(push_enc *e, const char *sqlstate, const char *errmsg);
/* The answer to a write refused for a queue with encryptionEnabled on a node without a key. */
#define PUSH_NO_KEY_STATUS 503
void push_enc_no_key_error(const push_group *g, char *out, size_t cap);
void push_enc_free(push_enc *e);

typedef struct pusher_metrics {
    mcounter records;
    mcounter bytes;
    mcounter duplicates;
    mcounter commits;
    mcounter commit_failures;
    mcounter sealed_records;   /* records whose payload this node sealed */
    mcounter seal_refusals;    /* commits push_v1 refused for plaintext in an encrypted queue */
    mhist batch_records;
    mhist batch_requests;
    mhist commit_seconds;
} pusher_metrics;

typedef struct pusher pusher;

pusher *pusher_new(db_pool *db, const queen_config *cfg);
/* The pusher's cache of queues to seal for (shared with every other writer of records). */
sealq *pusher_sealq(pusher *p);
/* Queues the request. `done` runs exactly once, on the loop thread; it may run before
 * pusher_submit returns (when the database refuses at once), so the caller must not touch
 * the request after this call except from `done`. */
void pusher_submit(pusher *p, push_req *r);
const pusher_metrics *pusher_get_metrics(const pusher *p);
/* Called after every successful commit, once per (tenant, queue, partition) group written. */
typedef void (*pusher_commit_fn)(void *arg, const uint8_t tenant[16], const char *queue, size_t qlen,
                                 uint64_t partition_id);
void pusher_on_commit(pusher *p, pusher_commit_fn fn, void *arg);
int pusher_inflight(const pusher *p);
int pusher_queued(const pusher *p);
int64_t pusher_dedup_window_us(const pusher *p);
void pusher_free(pusher *p);

#endif
