/* pushenc.h — the records of a write and their encoder.
 *
 * The encoder behind every write of records (group commit, transactions, streams): groups the
 * pending items of a list of requests by (tenant, queue, partition), answers repeats of a
 * producer transactionId inside the list as duplicates of the first, seals the payloads of the
 * queues that need it, encodes one segment per group and fills the parameters of
 * queen.push_v1 (push.h has the statement and reads the result back).
 * Ownership: the encoder owns its arrays; items and requests stay the caller's. Pure. */
#ifndef QUEEN_STORAGE_PUSHENC_H
#define QUEEN_STORAGE_PUSHENC_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "db/pgarray.h"
#include "sealq.h"

enum push_status { PUSH_PENDING = 0, PUSH_QUEUED, PUSH_DUPLICATE, PUSH_FULL };

/* A producer's zstd frame of pre-framed records (QPB1 flag 8), kept as the stored bytes when
 * its items reach the encoder whole: first .. first+n-1, consecutive, none a duplicate, for a
 * queue that is not sealed (docs/storage.md, "Codec 1"). */
typedef struct push_zframe {
    const uint8_t *z;
    size_t zlen;
    struct push_item *first;
    uint32_t n;
    int anon; /* some frames carry no transactionId */
} push_zframe;

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
    const push_zframe *zf; /* the producer frame the item came in, or NULL */
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

#define PUSH_ARRAYS 9
#define PUSH_PARAMS 10
/* the arrays of queen.push_v1, in parameter order (the 10th parameter is the dedup window) */
enum { A_TENANT, A_QUEUE, A_PART, A_COUNT, A_BYTES, A_DATA, A_DDG, A_DDPOS, A_DDTXN };

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

#endif
