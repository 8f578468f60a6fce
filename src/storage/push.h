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
#include "pushenc.h"

void push_enc_stmt(push_enc *e, db_stmt *st);
/* Applies a push_v1 result. dups/full > 0 means nothing was written: items found duplicate
 * or in a full queue are marked, the rest are pending again. */
int push_enc_apply(push_enc *e, PGresult *res, int *dups, int *full);
/* The same for the rows whose int4 column `col` holds `val` only (a caller that wraps several
 * push_v1 calls in one result, each with an encoder of its own: streams_cycles_v1). */
int push_enc_apply_where(push_enc *e, PGresult *res, int col, int32_t val, int *dups, int *full);

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
