/* maint.h — background upkeep of the log that any node may do: forgetting producer
 * transactionIds older than the dedup window, and deleting the traces of records retention
 * removed. Each round is one short transaction guarded by
 * a try-lock, so with several nodes one does the work and the others skip. */
#ifndef QUEEN_STORAGE_MAINT_H
#define QUEEN_STORAGE_MAINT_H

#include <stdint.h>
#include <uv.h>

#include "db/pg.h"
#include "metrics/metrics.h"

typedef struct maint maint;

maint *maint_new(uv_loop_t *loop, db_pool *db, int64_t dedup_window_s);
void maint_stop(maint *m); /* stops the timer; frees itself once idle */
uint64_t maint_dedup_forgotten(const maint *m);
uint64_t maint_traces_deleted(const maint *m); /* by this node's rounds */

#endif
