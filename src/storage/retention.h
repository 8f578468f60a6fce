/* retention.h — the background job that deletes old records (retentionSeconds,
 * completedRetentionSeconds, maxWaitTimeSeconds) by whole segments. Every node runs it; a
 * try-lock in queen.retention_v1 lets one node work at a time. A round deletes at most
 * RETENTION_BATCH_SIZE segments and commits; a full round is followed by another at once. A
 * round skips partitions a push holds instead of waiting; a round that skipped some is followed
 * by another at the next tick (up to BUSY_RETRIES in a row). */
#ifndef QUEEN_STORAGE_RETENTION_H
#define QUEEN_STORAGE_RETENTION_H

#include <stdint.h>
#include <uv.h>

#include "core/buf.h"
#include "db/pg.h"

typedef struct retention retention;

/* cleanup_days > 0: retention rounds also delete partitions empty and idle that long
 * (queen.partition_cleanup_v1). */
retention *retention_new(uv_loop_t *loop, db_pool *db, int64_t retention_ms, int64_t eviction_ms, int64_t batch,
                         int64_t cleanup_days);
void retention_stop(retention *r);
/* queen_retention_deleted_records_total{queue,kind} (and tenant for other tenants),
 * queen_partitions_cleaned_total */
void retention_render_metrics(const retention *r, buf *b);

#endif
