/* admin_results.h — the results of the admin functions the admin routes call, by name
 * (db/results.h): src/db/functions/seek_v1.sql, delete_group_v1.sql, set_subscription_v1.sql,
 * delete_queue_v1.sql, delete_partition_v1.sql, list_messages_v1.sql, message_find_v1.sql,
 * dlq_claim_v1.sql, metrics_lag_v1.sql, message_delete_v1.sql. Checked against the database by
 * tests/unit/test_db_results.c. (group_lag_v1 is only read through the statements of admin.c,
 * which aggregate it; the counts view partition_counts_v1 likewise.) */
#ifndef QUEEN_ADMIN_ADMIN_RESULTS_H
#define QUEEN_ADMIN_ADMIN_RESULTS_H

#include "db/results.h"

/* queen.seek_v1: one row per partition moved (status "ok"), or one "queue_not_found" /
 * "partition_not_found" row */
#define SEEK_V1_COLUMNS(X)                                                                                     \
    X(SEEK_STATUS, status, text)                                                                               \
    X(SEEK_PARTITION_ID, partition_id, int8)                                                                   \
    X(SEEK_PARTITION_UUID, partition_uuid, uuid)                                                               \
    X(SEEK_PARTITION_NAME, partition_name, text)                                                               \
    X(SEEK_NEXT_OFFSET, next_offset, int8)                                                                     \
    X(SEEK_PREVIOUS_OFFSET, previous_offset, int8)
enum seek_col { SEEK_V1_COLUMNS(DB_COL_ENUM) SEEK_NCOLS };

/* queen.delete_group_v1: one row */
#define DELETE_GROUP_V1_COLUMNS(X)                                                                             \
    X(DELETE_GROUP_STATUS, status, text)                                                                       \
    X(DELETE_GROUP_CURSORS, n_cursors, int8)                                                                   \
    X(DELETE_GROUP_SUBSCRIPTIONS, n_subscriptions, int8)
enum delete_group_col { DELETE_GROUP_V1_COLUMNS(DB_COL_ENUM) DELETE_GROUP_NCOLS };

/* queen.set_subscription_v1: subscription rows written */
#define SET_SUBSCRIPTION_V1_COLUMNS(X) X(SET_SUBSCRIPTION_N, set_subscription_v1, int8)
enum { SET_SUBSCRIPTION_V1_COLUMNS(DB_COL_ENUM) };

/* queen.delete_queue_v1: one row */
#define DELETE_QUEUE_V1_COLUMNS(X)                                                                             \
    X(DELETE_QUEUE_EXISTED, existed, bool)                                                                     \
    X(DELETE_QUEUE_PARTITIONS, n_partitions, int8)                                                             \
    X(DELETE_QUEUE_RECORDS, n_records, int8)
enum delete_queue_col { DELETE_QUEUE_V1_COLUMNS(DB_COL_ENUM) DELETE_QUEUE_NCOLS };

/* queen.delete_partition_v1: one row */
#define DELETE_PARTITION_V1_COLUMNS(X)                                                                         \
    X(DELETE_PARTITION_STATUS, status, text)                                                                   \
    X(DELETE_PARTITION_UUID, partition_uuid, uuid)                                                             \
    X(DELETE_PARTITION_RECORDS, n_records, int8)
enum delete_partition_col { DELETE_PARTITION_V1_COLUMNS(DB_COL_ENUM) DELETE_PARTITION_NCOLS };

/* queen.list_messages_v1: rows of several kinds (list_messages_kind); i1..i5 by kind below */
#define LIST_MESSAGES_V1_COLUMNS(X)                                                                            \
    X(LM_KIND, kind, int4)                                                                                     \
    X(LM_ORD, ord, int8)                                                                                       \
    X(LM_PID, pid, int8)                                                                                       \
    X(LM_PUUID, puuid, uuid)                                                                                   \
    X(LM_PNAME, pname, text)                                                                                   \
    X(LM_QNAME, qname, text)                                                                                   \
    X(LM_NS, ns, text)                                                                                         \
    X(LM_TASK, task, text)                                                                                     \
    X(LM_PRIO, prio, int8)                                                                                     \
    X(LM_I1, i1, int8)                                                                                         \
    X(LM_I2, i2, int8)                                                                                         \
    X(LM_I3, i3, int8)                                                                                         \
    X(LM_I4, i4, int8)                                                                                         \
    X(LM_I5, i5, int8)                                                                                         \
    X(LM_SEG_DATA, seg_data, bytea)
enum list_messages_col {
    LIST_MESSAGES_V1_COLUMNS(DB_COL_ENUM) LIST_MESSAGES_NCOLS,
    /* a partition of the page */
    LM_PART_START = LM_I1,     /* its start offset */
    LM_PART_DONE = LM_I2,      /* records below are completed */
    LM_PART_LIVE_END = LM_I3,  /* end of a live queue-mode lease: [done, live_end) processing */
    LM_PART_LEASE_EXP = LM_I4, /* that lease's expiry (µs) */
    LM_PART_HAS_QM = LM_I5,    /* 1: the partition has a queue-mode cursor */
    /* a dead-lettered offset; a consumer group's cursor */
    LM_DEAD_OFFSET = LM_I1,
    LM_CURSOR_NEXT = LM_I1,
    /* a segment of the page */
    LM_SEG_BASE = LM_I1,
    LM_SEG_LAST = LM_I2,
    LM_SEG_TS = LM_I3,
    LM_SEG_BEFORE = LM_I4, /* matching records in newer segments */
    LM_SEG_COUNT = LM_I5,
};

enum list_messages_kind {
    LM_ROW_PARTITION = 0,
    LM_ROW_SEGMENT = 1,
    LM_ROW_DEAD = 2,
    LM_ROW_CURSOR = 3,
};

/* queen.message_find_v1: the segments that may hold the record; target NULL = unknown offset */
#define MESSAGE_FIND_V1_COLUMNS(X)                                                                             \
    X(FIND_TARGET, target, int8)                                                                               \
    X(FIND_BASE, base_offset, int8)                                                                            \
    X(FIND_LAST, last_offset, int8)                                                                            \
    X(FIND_TS, ts, int8)                                                                                       \
    X(FIND_COUNT, record_count, int4)                                                                          \
    X(FIND_DATA, data, bytea)
enum message_find_col { MESSAGE_FIND_V1_COLUMNS(DB_COL_ENUM) MESSAGE_FIND_NCOLS };

/* queen.record_at_v1: one encoded record at an offset (admin_record_decode), with its stamp;
 * the trace reads take `rec` (api/api_traces.c) */
#define RECORD_AT_V1_COLUMNS(X)                                                                                \
    X(RECORD_AT_TS, ts, int8)                                                                                  \
    X(RECORD_AT_REC, rec, bytea)
enum record_at_col { RECORD_AT_V1_COLUMNS(DB_COL_ENUM) RECORD_AT_NCOLS };

/* queen.dlq_claim_v1: one row */
#define DLQ_CLAIM_V1_COLUMNS(X)                                                                                \
    X(DLQ_CLAIM_STATUS, status, text) /* ok, not_found, already_requeued, no_record */                        \
    X(DLQ_CLAIM_QUEUE, queue_name, text)                                                                       \
    X(DLQ_CLAIM_PARTITION, partition_name, text)                                                               \
    X(DLQ_CLAIM_TXN, txn_id, text)                                                                             \
    X(DLQ_CLAIM_RECORD, rec, bytea)                                                                            \
    X(DLQ_CLAIM_REQUEUED_US, requeued_us, int8)
enum dlq_claim_col { DLQ_CLAIM_V1_COLUMNS(DB_COL_ENUM) DLQ_CLAIM_NCOLS };

/* queen.metrics_lag_v1: per (queue, group) lag (METRICS_LAG_ROW_GROUP: val = records,
 * lag_us = seconds' worth), per queue the dead letters (METRICS_LAG_ROW_DEAD: val) */
#define METRICS_LAG_V1_COLUMNS(X)                                                                              \
    X(METRICS_LAG_KIND, kind, int4)                                                                            \
    X(METRICS_LAG_TENANT, tenant_id, uuid)                                                                     \
    X(METRICS_LAG_QUEUE, queue_name, text)                                                                     \
    X(METRICS_LAG_GROUP, consumer_group, text)                                                                 \
    X(METRICS_LAG_VAL, val, int8)                                                                              \
    X(METRICS_LAG_US, lag_us, int8)
enum metrics_lag_col { METRICS_LAG_V1_COLUMNS(DB_COL_ENUM) METRICS_LAG_NCOLS };
enum metrics_lag_kind { METRICS_LAG_ROW_GROUP = 0, METRICS_LAG_ROW_DEAD = 1 };

/* queen.message_delete_v1: whether anything was deleted */
#define MESSAGE_DELETE_V1_COLUMNS(X) X(MESSAGE_DELETE_DONE, message_delete_v1, bool)
enum { MESSAGE_DELETE_V1_COLUMNS(DB_COL_ENUM) };

#endif
