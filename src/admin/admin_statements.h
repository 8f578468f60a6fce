/* admin_statements.h — the admin routes' own statements (admin.c) and their result columns, by
 * name (db/statements.h): consumer groups (api_groups.c), resources (api_resources.c), the
 * dashboard reads (api_dashboard.c) and configure (api_configure.c). Parameters are in text
 * format; results are binary unless a statement says otherwise. Checked against the database
 * by tests/unit/test_db_statements.c (ADMIN_STATEMENTS below). */
#ifndef QUEEN_ADMIN_ADMIN_STATEMENTS_H
#define QUEEN_ADMIN_ADMIN_STATEMENTS_H

#include "db/statements.h"

/* ---- consumer groups --------------------------------------------------------------------- */

/* $1 tenant, $2 max pairs. One row per (queue, group). */
extern const char ADMIN_GROUPS_SQL[];
#define ADMIN_GROUPS_COLUMNS(X)                                                                                \
    X(GROUPS_QUEUE, queue_name, text)                                                                          \
    X(GROUPS_GROUP, consumer_group, text)                                                                      \
    X(GROUPS_MEMBERS, members, int8)                                                                           \
    X(GROUPS_PARTITIONS, partitions, int8)                                                                     \
    X(GROUPS_PARTITIONS_WITH_LAG, partitions_with_lag, int8)                                                   \
    X(GROUPS_TOTAL_LAG, total_lag, int8)                                                                       \
    X(GROUPS_MAX_TIME_LAG_US, max_time_lag_us, int8)                                                           \
    X(GROUPS_EVER_CONSUMED, ever_consumed, bool)                                                               \
    X(GROUPS_ACTIVE_LEASES, active_leases, int8)                                                               \
    X(GROUPS_SUB_MODE, sub_mode, text)                                                                         \
    X(GROUPS_SUB_TS, sub_ts, int8)                                                                             \
    X(GROUPS_SUB_CREATED_US, sub_created_us, int8)                                                             \
    X(GROUPS_LAST_CONSUMED_US, last_consumed_us, int8)
enum admin_groups_col { ADMIN_GROUPS_COLUMNS(DB_COL_ENUM) GROUPS_NCOLS };

/* $1 tenant, $2 max pairs, $3 min time lag (µs), $4 max rows. One row per lagging
 * (group, partition), most lagging first. */
extern const char ADMIN_LAGGING_SQL[];
#define ADMIN_LAGGING_COLUMNS(X)                                                                               \
    X(LAGGING_GROUP, consumer_group, text)                                                                     \
    X(LAGGING_QUEUE, queue_name, text)                                                                         \
    X(LAGGING_PARTITION, partition_name, text)                                                                 \
    X(LAGGING_PARTITION_UUID, partition_uuid, uuid)                                                            \
    X(LAGGING_LIVE_LEASE, live_lease_id, uuid) /* NULL unless a lease is live */                               \
    X(LAGGING_OFFSET_LAG, offset_lag, int8)                                                                    \
    X(LAGGING_TIME_LAG_US, time_lag_us, int8)                                                                  \
    X(LAGGING_LAG_TS, lag_ts, int8)                                                                            \
    X(LAGGING_LAST_CONSUMED_US, last_consumed_us, int8)                                                        \
    X(LAGGING_NEXT_OFFSET, next_offset, int8)                                                                  \
    X(LAGGING_END_OFFSET, end_offset, int8)
enum admin_lagging_col { ADMIN_LAGGING_COLUMNS(DB_COL_ENUM) LAGGING_NCOLS };

/* $1 tenant, $2 group, $3 max pairs. One row per (queue, partition), by queue then partition;
 * a queue without partitions has one row with NULL partition columns. */
extern const char ADMIN_GROUP_DETAIL_SQL[];
#define ADMIN_GROUP_DETAIL_COLUMNS(X)                                                                          \
    X(GD_QUEUE, queue_name, text)                                                                              \
    X(GD_PARTITION, partition_name, text)                                                                      \
    X(GD_PARTITION_UUID, partition_uuid, uuid)                                                                 \
    X(GD_HAS_CURSOR, has_cursor, bool)                                                                         \
    X(GD_NEXT_OFFSET, next_offset, int8)                                                                       \
    X(GD_END_OFFSET, end_offset, int8)                                                                         \
    X(GD_OFFSET_LAG, offset_lag, int8)                                                                         \
    X(GD_TIME_LAG_US, time_lag_us, int8)                                                                       \
    X(GD_LIVE_LEASE, live_lease_id, uuid)                                                                      \
    X(GD_LEASE_ACTIVE, lease_active, bool)                                                                     \
    X(GD_TOTAL_CONSUMED, total_consumed, int8)                                                                 \
    X(GD_LAST_CONSUMED_US, last_consumed_us, int8)                                                             \
    X(GD_LIVE_LEASE_EXPIRES, live_lease_expires_at, int8)                                                      \
    X(GD_START_OFFSET, start_offset, int8)
enum admin_group_detail_col { ADMIN_GROUP_DETAIL_COLUMNS(DB_COL_ENUM) GD_NCOLS };

/* ---- resources --------------------------------------------------------------------------- */

/* $1 tenant. One row: counts of the tenant's log; ingested = records stamped in the last
 * 60 s. failed = dead letters of queue mode not requeued; dead_letters = all not requeued. */
extern const char ADMIN_OVERVIEW_SQL[];
#define ADMIN_OVERVIEW_COLUMNS(X)                                                                              \
    X(OV_QUEUES, queues, int8)                                                                                 \
    X(OV_PARTITIONS, partitions, int8)                                                                         \
    X(OV_NAMESPACES, namespaces, int8)                                                                         \
    X(OV_TASKS, tasks, int8)                                                                                   \
    X(OV_TOTAL, total, int8)                                                                                   \
    X(OV_PENDING, pending, int8)                                                                               \
    X(OV_PROCESSING, processing, int8)                                                                         \
    X(OV_COMPLETED, completed, int8)                                                                           \
    X(OV_FAILED, failed, int8)                                                                                 \
    X(OV_DEAD_LETTERS, dead_letters, int8)                                                                     \
    X(OV_INGESTED_60S, ingested_60s, int8)                                                                     \
    X(OV_NOW_US, now_us, int8)
enum admin_overview_col { ADMIN_OVERVIEW_COLUMNS(DB_COL_ENUM) OV_NCOLS };

/* $1 tenant, $2 max pairs. One row: lag over every (group, partition) of the first pairs. */
extern const char ADMIN_OVERVIEW_LAG_SQL[];
#define ADMIN_OVERVIEW_LAG_COLUMNS(X)                                                                          \
    X(OL_PAIRS, pairs, int8)                                                                                   \
    X(OL_TIME_AVG_US, time_avg_us, float8)                                                                     \
    X(OL_TIME_MEDIAN_US, time_median_us, float8)                                                               \
    X(OL_TIME_MIN_US, time_min_us, int8)                                                                       \
    X(OL_TIME_MAX_US, time_max_us, int8)                                                                       \
    X(OL_OFFSET_AVG, offset_avg, float8)                                                                       \
    X(OL_OFFSET_MEDIAN, offset_median, float8)                                                                 \
    X(OL_OFFSET_MIN, offset_min, int8)                                                                         \
    X(OL_OFFSET_MAX, offset_max, int8)
enum admin_overview_lag_col { ADMIN_OVERVIEW_LAG_COLUMNS(DB_COL_ENUM) OL_NCOLS };

/* $1 tenant, $2 namespace, $3 task, $4 limit, $5 offset. Newest first; total_rows is the
 * count of every match (the same on each row). */
extern const char ADMIN_QUEUES_SQL[];
#define ADMIN_QUEUES_COLUMNS(X)                                                                                \
    X(QS_UUID, queue_uuid, uuid)                                                                               \
    X(QS_NAME, queue_name, text)                                                                               \
    X(QS_NAMESPACE, namespace, text)                                                                           \
    X(QS_TASK, task, text)                                                                                     \
    X(QS_CREATED_US, created_us, int8)                                                                         \
    X(QS_PARTITIONS, partitions, int8)                                                                         \
    X(QS_TOTAL, total, int8)                                                                                   \
    X(QS_PENDING, pending, int8)                                                                               \
    X(QS_PROCESSING, processing, int8)                                                                         \
    X(QS_COMPLETED, completed, int8)                                                                           \
    X(QS_CONFIGURED, configured, bool)                                                                         \
    X(QS_DEAD_LETTERS, dead_letters, int8)                                                                     \
    X(QS_TOTAL_ROWS, total_rows, int8)                                                                         \
    X(QS_LAST_TS, last_ts, int8)
enum admin_queues_col { ADMIN_QUEUES_COLUMNS(DB_COL_ENUM) QS_NCOLS };

/* $1 tenant, $2 queue, $3 max partitions. One row per partition by name (one row with NULL
 * partition columns when the queue has none; no row when the queue does not exist). The
 * queue's columns (QC_) repeat on every row. options is the effective options' JSON text. */
extern const char ADMIN_QUEUE_SQL[];
#define ADMIN_QUEUE_COLUMNS(X)                                                                                 \
    X(QC_UUID, queue_uuid, uuid)                                                                               \
    X(QC_NAME, queue_name, text)                                                                               \
    X(QC_NS, namespace, text)                                                                                  \
    X(QC_TASK, task, text)                                                                                     \
    X(QC_CREATED, created_us, int8)                                                                            \
    X(QC_OPTIONS, options, text)                                                                               \
    X(QC_CONFIGURED, configured, bool)                                                                         \
    X(PC_UUID, partition_uuid, uuid)                                                                           \
    X(PC_NAME, partition_name, text)                                                                           \
    X(PC_CREATED, partition_created_us, int8)                                                                  \
    X(PC_TOTAL, total, int8)                                                                                   \
    X(PC_COMPLETED, completed, int8)                                                                           \
    X(PC_PROCESSING, processing, int8)                                                                         \
    X(PC_PENDING, pending, int8)                                                                               \
    X(PC_START, start_offset, int8)                                                                            \
    X(PC_NEXT, next_offset, int8)                                                                              \
    X(PC_LAST_TS, last_ts, int8)                                                                               \
    X(PC_OLDEST, oldest_ts, int8)                                                                              \
    X(PC_DEAD, dead_letters, int8)                                                                             \
    X(PC_FAILED, failed, int8)                                                                                 \
    X(PC_CONSUMED, queue_consumed, int8)                                                                       \
    X(PC_LEASE_EXP, lease_expires_at, int8)                                                                    \
    X(PC_ID, partition_id, int8)                                                                               \
    X(PC_HAS_QM, has_queue_cursor, bool)
enum admin_queue_col { ADMIN_QUEUE_COLUMNS(DB_COL_ENUM) QC_NCOLS };

/* $1 tenant, $2 queue, $3 max pairs: every group's position on every partition, by partition
 * id then group. */
extern const char ADMIN_QUEUE_GROUPS_SQL[];
#define ADMIN_QUEUE_GROUPS_COLUMNS(X)                                                                          \
    X(QG_PARTITION_ID, partition_id, int8)                                                                     \
    X(QG_GROUP, consumer_group, text)                                                                          \
    X(QG_HAS_CURSOR, has_cursor, bool)                                                                         \
    X(QG_NEXT_OFFSET, next_offset, int8)                                                                       \
    X(QG_OFFSET_LAG, offset_lag, int8)                                                                         \
    X(QG_TIME_LAG_US, time_lag_us, int8)                                                                       \
    X(QG_LEASE_ACTIVE, lease_active, bool)
enum admin_queue_groups_col { ADMIN_QUEUE_GROUPS_COLUMNS(DB_COL_ENUM) QG_NCOLS };

/* $1 tenant, $2 queue, $3 max pairs: per group totals, by group. */
extern const char ADMIN_QUEUE_GROUP_TOTALS_SQL[];
#define ADMIN_QUEUE_GROUP_TOTALS_COLUMNS(X)                                                                    \
    X(QGT_GROUP, consumer_group, text)                                                                         \
    X(QGT_MEMBERS, members, int8)                                                                              \
    X(QGT_PARTITIONS_WITH_LAG, partitions_with_lag, int8)                                                      \
    X(QGT_TOTAL_LAG, total_lag, int8)                                                                          \
    X(QGT_MAX_TIME_LAG_US, max_time_lag_us, int8)                                                              \
    X(QGT_EVER_CONSUMED, ever_consumed, bool)                                                                  \
    X(QGT_SUB_MODE, sub_mode, text)                                                                            \
    X(QGT_SUB_TS, sub_ts, int8)
enum admin_queue_group_totals_col { ADMIN_QUEUE_GROUP_TOTALS_COLUMNS(DB_COL_ENUM) QGT_NCOLS };

/* $1 tenant. One row per namespace (task) in use, by name; both statements have this shape. */
extern const char ADMIN_NAMESPACES_SQL[];
extern const char ADMIN_TASKS_SQL[];
#define ADMIN_GROUPED_COLUMNS(X)                                                                               \
    X(GRP_NAME, name, text)                                                                                    \
    X(GRP_QUEUES, queues, int8)                                                                                \
    X(GRP_PARTITIONS, partitions, int8)                                                                        \
    X(GRP_TOTAL, total, int8)                                                                                  \
    X(GRP_PENDING, pending, int8)                                                                              \
    X(GRP_PROCESSING, processing, int8)                                                                        \
    X(GRP_COMPLETED, completed, int8)
enum admin_grouped_col { ADMIN_GROUPED_COLUMNS(DB_COL_ENUM) GRP_NCOLS };

/* ---- dashboard (api_dashboard.c) --------------------------------------------------------- */

/* $1 tenant, $2 queue: one row, or none when there is no such queue */
extern const char ADMIN_QUEUE_ID_SQL[];
#define ADMIN_QUEUE_ID_COLUMNS(X) X(QID_ID, id, int8)
enum admin_queue_id_col { ADMIN_QUEUE_ID_COLUMNS(DB_COL_ENUM) QID_NCOLS };

/* A queue's depth per partition, by partition name. Queue level ($1 tenant, $2 queue,
 * $3 limit): what the least advanced reader has not retired. One group ($1 tenant, $2 queue,
 * $3 group, $4 limit): that group's lag. Both have this shape; pending may be negative. */
extern const char ADMIN_DEPTH_QUEUE_SQL[];
extern const char ADMIN_DEPTH_GROUP_SQL[];
#define ADMIN_DEPTH_COLUMNS(X)                                                                                 \
    X(DEPTH_PARTITION, partition_name, text)                                                                   \
    X(DEPTH_PENDING, pending, int8)
enum admin_depth_col { ADMIN_DEPTH_COLUMNS(DB_COL_ENUM) DEPTH_NCOLS };

/* $1 tenant, $2 queue, $3 group: one row when the group's policy on the queue conflates */
extern const char ADMIN_DEPTH_POLICY_SQL[];
#define ADMIN_DEPTH_POLICY_COLUMNS(X) X(POLICY_CONFLATES, conflates, int4)
enum admin_depth_policy_col { ADMIN_DEPTH_POLICY_COLUMNS(DB_COL_ENUM) POLICY_NCOLS };

/* $1 tenant, $2 queue, $3 namespace, $4 task, $5 limit, $6 offset. By queue then partition
 * name; total_rows is the count of every match. */
extern const char ADMIN_PARTITIONS_SQL[];
#define ADMIN_PARTITIONS_COLUMNS(X)                                                                            \
    X(PS_UUID, partition_uuid, uuid)                                                                           \
    X(PS_NAME, partition_name, text)                                                                           \
    X(PS_QUEUE, queue_name, text)                                                                              \
    X(PS_NAMESPACE, namespace, text)                                                                           \
    X(PS_TASK, task, text)                                                                                     \
    X(PS_CREATED_US, created_us, int8)                                                                         \
    X(PS_TOTAL, total, int8)                                                                                   \
    X(PS_PENDING, pending, int8)                                                                               \
    X(PS_PROCESSING, processing, int8)                                                                         \
    X(PS_COMPLETED, completed, int8)                                                                           \
    X(PS_DEAD_LETTERS, dead_letters, int8)                                                                     \
    X(PS_START_OFFSET, start_offset, int8)                                                                     \
    X(PS_NEXT_OFFSET, next_offset, int8)                                                                       \
    X(PS_LAST_TS, last_ts, int8)                                                                               \
    X(PS_CONSUMED, queue_consumed, int8)                                                                       \
    X(PS_LEASE_EXP, lease_expires_at, int8)                                                                    \
    X(PS_TOTAL_ROWS, total_rows, int8)
enum admin_partitions_col { ADMIN_PARTITIONS_COLUMNS(DB_COL_ENUM) PS_NCOLS };

/* Records stored per bucket of a range, every bucket listed. $1 tenant, $2 from, $3 to,
 * $4 bucket µs, $5 queue, $6 namespace, $7 task */
extern const char ADMIN_SERIES_SQL[];
#define ADMIN_SERIES_COLUMNS(X)                                                                                \
    X(SERIES_BUCKET_US, bucket_us, int8)                                                                       \
    X(SERIES_RECORDS, records, int8)
enum admin_series_col { ADMIN_SERIES_COLUMNS(DB_COL_ENUM) SERIES_NCOLS };

/* The status page. $1 tenant, $2 queue, $3 namespace, $4 task (NULL = any). */
/* the queues, by name */
extern const char ADMIN_DASH_QUEUES_SQL[];
#define ADMIN_DASH_QUEUES_COLUMNS(X)                                                                           \
    X(DQ_UUID, queue_uuid, uuid)                                                                               \
    X(DQ_NAME, queue_name, text)                                                                               \
    X(DQ_NAMESPACE, namespace, text)                                                                           \
    X(DQ_TASK, task, text)                                                                                     \
    X(DQ_PARTITIONS, partitions, int8)                                                                         \
    X(DQ_CONSUMED, total_consumed, int8)
enum admin_dash_queues_col { ADMIN_DASH_QUEUES_COLUMNS(DB_COL_ENUM) DQ_NCOLS };

/* one row: message counts, then live leases (distinct leases, partitions under one, records
 * leased, records of them acked) */
extern const char ADMIN_DASH_COUNTS_SQL[];
#define ADMIN_DASH_COUNTS_COLUMNS(X)                                                                           \
    X(DC_TOTAL, total, int8)                                                                                   \
    X(DC_PENDING, pending, int8)                                                                               \
    X(DC_PROCESSING, processing, int8)                                                                         \
    X(DC_COMPLETED, completed, int8)                                                                           \
    X(DC_LEASES, leases, int8)                                                                                 \
    X(DC_LEASED_PARTITIONS, leased_partitions, int8)                                                           \
    X(DC_LEASED_RECORDS, leased_records, int8)                                                                 \
    X(DC_ACKED_RECORDS, acked_records, int8)
enum admin_dash_counts_col { ADMIN_DASH_COUNTS_COLUMNS(DB_COL_ENUM) DC_NCOLS };

/* one row: dead letters not requeued, the partitions they are on, the top five errors (JSON
 * text: [{"error","count"}]) */
extern const char ADMIN_DASH_DLQ_SQL[];
#define ADMIN_DASH_DLQ_COLUMNS(X)                                                                              \
    X(DD_DEAD_LETTERS, dead_letters, int8)                                                                     \
    X(DD_PARTITIONS, partitions, int8)                                                                         \
    X(DD_TOP_ERRORS, top_errors, text)
enum admin_dash_dlq_col { ADMIN_DASH_DLQ_COLUMNS(DB_COL_ENUM) DD_NCOLS };

/* ---- configure (api_configure.c) --------------------------------------------------------- */

/* $1 tenant, $2 queue, $3 namespace, $4 task, $5 options (JSON). Text results. One row: the
 * queue's uuid, its Default partition's uuid, and 1 (the clock lock taken). */
extern const char ADMIN_CONFIGURE_SQL[];
#define ADMIN_CONFIGURE_COLUMNS(X)                                                                             \
    X(CFG_QUEUE_UUID, queue_uuid, uuid)                                                                        \
    X(CFG_PARTITION_UUID, partition_uuid, uuid)                                                                \
    X(CFG_LOCKED, locked, int8)
enum admin_configure_col { ADMIN_CONFIGURE_COLUMNS(DB_COL_ENUM) CFG_NCOLS };

/* The message and dead-letter statements of admin.c (api_messages.c, api_dlq.c) are named in
 * messages_statements.h (MESSAGES_STATEMENTS). */

/* Every statement above with its list, for tests/unit/test_db_statements.c. */
#define ADMIN_STATEMENTS(S)                                                                                    \
    S(ADMIN_GROUPS_SQL, ADMIN_GROUPS_COLUMNS)                                                                  \
    S(ADMIN_LAGGING_SQL, ADMIN_LAGGING_COLUMNS)                                                                \
    S(ADMIN_GROUP_DETAIL_SQL, ADMIN_GROUP_DETAIL_COLUMNS)                                                      \
    S(ADMIN_OVERVIEW_SQL, ADMIN_OVERVIEW_COLUMNS)                                                              \
    S(ADMIN_OVERVIEW_LAG_SQL, ADMIN_OVERVIEW_LAG_COLUMNS)                                                      \
    S(ADMIN_QUEUES_SQL, ADMIN_QUEUES_COLUMNS)                                                                  \
    S(ADMIN_QUEUE_SQL, ADMIN_QUEUE_COLUMNS)                                                                    \
    S(ADMIN_QUEUE_GROUPS_SQL, ADMIN_QUEUE_GROUPS_COLUMNS)                                                      \
    S(ADMIN_QUEUE_GROUP_TOTALS_SQL, ADMIN_QUEUE_GROUP_TOTALS_COLUMNS)                                          \
    S(ADMIN_NAMESPACES_SQL, ADMIN_GROUPED_COLUMNS)                                                             \
    S(ADMIN_TASKS_SQL, ADMIN_GROUPED_COLUMNS)                                                                  \
    S(ADMIN_QUEUE_ID_SQL, ADMIN_QUEUE_ID_COLUMNS)                                                              \
    S(ADMIN_DEPTH_QUEUE_SQL, ADMIN_DEPTH_COLUMNS)                                                              \
    S(ADMIN_DEPTH_GROUP_SQL, ADMIN_DEPTH_COLUMNS)                                                              \
    S(ADMIN_DEPTH_POLICY_SQL, ADMIN_DEPTH_POLICY_COLUMNS)                                                      \
    S(ADMIN_PARTITIONS_SQL, ADMIN_PARTITIONS_COLUMNS)                                                          \
    S(ADMIN_SERIES_SQL, ADMIN_SERIES_COLUMNS)                                                                  \
    S(ADMIN_DASH_QUEUES_SQL, ADMIN_DASH_QUEUES_COLUMNS)                                                        \
    S(ADMIN_DASH_COUNTS_SQL, ADMIN_DASH_COUNTS_COLUMNS)                                                        \
    S(ADMIN_DASH_DLQ_SQL, ADMIN_DASH_DLQ_COLUMNS)                                                              \
    S(ADMIN_CONFIGURE_SQL, ADMIN_CONFIGURE_COLUMNS)

#endif
