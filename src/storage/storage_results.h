/* storage_results.h — the results of the log's functions this module calls, by name
 * (db/results.h): src/db/functions/push_v1.sql, retention_v1.sql, partition_cleanup_v1.sql,
 * dedup_gc_v1.sql, tick_v1.sql. Checked against the database by tests/unit/test_db_results.c. */
#ifndef QUEEN_STORAGE_STORAGE_RESULTS_H
#define QUEEN_STORAGE_STORAGE_RESULTS_H

#include "db/results.h"

/* queen.push_v1: one row per group (kind push_kind) */
#define PUSH_V1_COLUMNS(X)                                                                                     \
    X(PUSH_KIND, kind, int4)                                                                                   \
    X(PUSH_IDX, idx, int4) /* from 1: the group (written, full) or the duplicate transactionId */             \
    X(PUSH_PARTITION_ID, partition_id, int8)                                                                   \
    X(PUSH_PARTITION_UUID, partition_uuid, uuid)                                                               \
    X(PUSH_QUEUE_ID, queue_id, int8)                                                                           \
    X(PUSH_OFF, off, int8) /* written: base offset; duplicate: its offset; full: the queue's maxSize */       \
    X(PUSH_TS, ts, int8)
enum push_col { PUSH_V1_COLUMNS(DB_COL_ENUM) PUSH_NCOLS };

enum push_kind {
    PUSH_ROW_WRITTEN = 0,   /* a group committed */
    PUSH_ROW_DUPLICATE = 1, /* a transactionId already seen: nothing written */
    PUSH_ROW_FULL = 2,      /* a group of a queue past its maxSize: nothing written */
};

/* queen.retention_v1: one row per (queue, rule) that deleted something, or a queue whose
 * partitions were busy (kind "busy", segments = partitions skipped) */
#define RETENTION_V1_COLUMNS(X)                                                                                \
    X(RETENTION_QUEUE_ID, queue_id, int8)                                                                      \
    X(RETENTION_TENANT, tenant_id, uuid)                                                                       \
    X(RETENTION_QUEUE, queue_name, text)                                                                       \
    X(RETENTION_KIND, kind, text) /* "eviction", "retention", "completed", "busy" */                         \
    X(RETENTION_SEGMENTS, segments, int4)                                                                      \
    X(RETENTION_RECORDS, records, int8)
enum retention_col { RETENTION_V1_COLUMNS(DB_COL_ENUM) RETENTION_NCOLS };

/* queen.partition_cleanup_v1: partitions deleted */
#define PARTITION_CLEANUP_V1_COLUMNS(X) X(PARTITION_CLEANUP_N, partition_cleanup_v1, int4)
/* queen.dedup_gc_v1: transactionIds forgotten, -1 when another node holds the round */
#define DEDUP_GC_V1_COLUMNS(X) X(DEDUP_GC_N, dedup_gc_v1, int4)
/* queen.trace_gc_v1: traces deleted, -1 when another node holds the round */
#define TRACE_GC_V1_COLUMNS(X) X(TRACE_GC_N, trace_gc_v1, int4)
enum { TRACE_GC_V1_COLUMNS(DB_COL_ENUM) };
/* queen.tick_v1: clocks moved */
#define TICK_V1_COLUMNS(X) X(TICK_N, tick_v1, int4)
enum { PARTITION_CLEANUP_V1_COLUMNS(DB_COL_ENUM) };
enum { DEDUP_GC_V1_COLUMNS(DB_COL_ENUM) };
enum { TICK_V1_COLUMNS(DB_COL_ENUM) };

#endif
