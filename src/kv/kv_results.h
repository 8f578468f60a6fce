/* kv_results.h — the results of the KV functions this module calls, by name (db/results.h):
 * src/db/functions/kv_batch_v1.sql, kv_ops_v1.sql and kv_gc_v1.sql. Checked against the database by
 * tests/unit/test_db_results.c. */
#ifndef QUEEN_KV_KV_RESULTS_H
#define QUEEN_KV_KV_RESULTS_H

#include "db/results.h"

/* queen.kv_batch_v1: one row per op, or one row for the op that failed (o_status > 0) */
#define KV_BATCH_V1_COLUMNS(X)                                                                                 \
    X(KV_O_INDEX, o_index, int4) /* the op, from 0 */                                                          \
    X(KV_O_STATUS, o_status, int4) /* 0 ok, else enum kv_fail */                                              \
    X(KV_O_VERSION, o_version, int8)                                                                           \
    X(KV_O_VALUE, o_value, text)                                                                               \
    X(KV_O_EXPIRES_AT, o_expires_at, int8)                                                                     \
    X(KV_O_FLAG, o_flag, bool)
enum kv_batch_col { KV_BATCH_V1_COLUMNS(DB_COL_ENUM) KV_BATCH_NCOLS };

/* queen.kv_ops_v1: one row per op (o_index from 0), or one row for a lost required op
 * (o_index -(op from 1)); o_result is the op's result object as JSON text */
#define KV_OPS_V1_COLUMNS(X)                                                                                   \
    X(KV_OPS_INDEX, o_index, int4)                                                                             \
    X(KV_OPS_RESULT, o_result, text)
enum kv_ops_col { KV_OPS_V1_COLUMNS(DB_COL_ENUM) KV_OPS_NCOLS };
/* queen.kv_ops_apply_v1 (the body, called by the sink's blocking connection): the same rows */
#define KV_OPS_APPLY_V1_COLUMNS(X)                                                                             \
    X(KV_OPS_APPLY_INDEX, o_index, int4)                                                                       \
    X(KV_OPS_APPLY_RESULT, o_result, text)
enum kv_ops_apply_col { KV_OPS_APPLY_V1_COLUMNS(DB_COL_ENUM) KV_OPS_APPLY_NCOLS };
/* queen.lock_ops_v1: the same two columns, one row per op (read with enum kv_ops_col) */
#define LOCK_OPS_V1_COLUMNS(X)                                                                                 \
    X(LOCK_OPS_INDEX, o_index, int4)                                                                           \
    X(LOCK_OPS_RESULT, o_result, text)
enum lock_ops_col { LOCK_OPS_V1_COLUMNS(DB_COL_ENUM) LOCK_OPS_NCOLS };

/* queen.kv_gc_v1: keys reclaimed, -1 when another node holds the round */
#define KV_GC_V1_COLUMNS(X) X(KV_GC_N, kv_gc_v1, int4)
enum { KV_GC_V1_COLUMNS(DB_COL_ENUM) };

#endif
