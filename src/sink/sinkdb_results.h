/* sinkdb_results.h — the results of the log functions the sink reads, by name (db/results.h):
 * src/db/functions/sink_clock_v1.sql, sink_slice_v1.sql, sink_positions_v1.sql,
 * sink_positions_at_v1.sql. Checked against the database by tests/unit/test_db_results.c. */
#ifndef QUEEN_SINK_SINKDB_RESULTS_H
#define QUEEN_SINK_SINKDB_RESULTS_H

#include "db/statements.h"

/* queen.sink_clock_v1: one row, none when the queue does not exist */
#define SINK_CLOCK_V1_COLUMNS(X)                                                                               \
    X(SINK_CLOCK_QUEUE_ID, queue_id, int8)                                                                     \
    X(SINK_CLOCK_SAFE_TIME, safe_time, int8)                                                                   \
    X(SINK_CLOCK_NOW, now_us, int8)
enum sink_clock_col { SINK_CLOCK_V1_COLUMNS(DB_COL_ENUM) SINK_CLOCK_NCOLS };

/* queen.sink_slice_v1: rows of several kinds (sink_slice_kind) */
#define SINK_SLICE_V1_COLUMNS(X)                                                                               \
    X(SINK_SLICE_KIND, kind, int4)                                                                             \
    X(SINK_SLICE_NAME, name, text)                                                                             \
    X(SINK_SLICE_PUUID, puuid, uuid)                                                                           \
    X(SINK_SLICE_START, start_offset, int8)                                                                    \
    X(SINK_SLICE_NEXT, next_offset, int8)                                                                      \
    X(SINK_SLICE_BASE, base_offset, int8)                                                                      \
    X(SINK_SLICE_TS, ts, int8) /* the end row: where the slice ends */                                         \
    X(SINK_SLICE_COUNT, record_count, int4)                                                                    \
    X(SINK_SLICE_DATA, data, bytea)
enum sink_slice_col { SINK_SLICE_V1_COLUMNS(DB_COL_ENUM) SINK_SLICE_NCOLS };

enum sink_slice_kind {
    SINK_SLICE_ROW_END = 0,       /* one row: ts = where the slice ends */
    SINK_SLICE_ROW_SEGMENT = 1,   /* a segment of the slice */
    SINK_SLICE_ROW_PARTITION = 2, /* a partition with records at or after the slice's start */
};

/* queen.sink_positions_v1 / sink_positions_at_v1: one row per partition; the last column is
 * the greatest offset stamped in the range (NULL: none) / the first stamped at or after t */
#define SINK_POSITIONS_V1_COLUMNS(X)                                                                           \
    X(SINK_POS_NAME, name, text)                                                                               \
    X(SINK_POS_PUUID, puuid, uuid)                                                                             \
    X(SINK_POS_START, start_offset, int8)                                                                      \
    X(SINK_POS_NEXT, next_offset, int8)                                                                        \
    X(SINK_POS_LAST, last_offset, int8)
#define SINK_POSITIONS_AT_V1_COLUMNS(X)                                                                        \
    X(SINK_POS_AT_NAME, name, text)                                                                            \
    X(SINK_POS_AT_PUUID, puuid, uuid)                                                                          \
    X(SINK_POS_AT_START, start_offset, int8)                                                                   \
    X(SINK_POS_AT_NEXT, next_offset, int8)                                                                     \
    X(SINK_POS_AT_FIRST, first_offset, int8)
enum sink_positions_col { SINK_POSITIONS_V1_COLUMNS(DB_COL_ENUM) SINK_POSITIONS_NCOLS };
enum sink_positions_at_col { SINK_POSITIONS_AT_V1_COLUMNS(DB_COL_ENUM) SINK_POSITIONS_AT_NCOLS };

/* queen.cp_s3_sinks_v1: every control-plane tenant sink (the keeper's five-second read) */
#define CP_S3_SINKS_V1_COLUMNS(X)                                                                              \
    X(CPK_CLUSTER, cluster, text)                                                                              \
    X(CPK_TENANT, tenant_id, uuid)                                                                             \
    X(CPK_ENABLED, enabled, bool)                                                                              \
    X(CPK_CONFIG, config, text)                                                                                \
    X(CPK_SEALED, sealed, text)                                                                                \
    X(CPK_EFFECTIVE, effective_status, text)                                                                   \
    X(CPK_UPDATED, updated_at_us, int8)
enum cp_s3_sinks_col { CP_S3_SINKS_V1_COLUMNS(DB_COL_ENUM) CPK_NCOLS };

/* The sink's own statements (db/statements.h), sinkdb.c */
/* $1 tenant: its queues by name */
extern const char SINKDB_QUEUES_SQL[];
#define SINKDB_QUEUES_COLUMNS(X) X(SINKDB_QUEUE_NAME, name, text)
enum { SINKDB_QUEUES_COLUMNS(DB_COL_ENUM) };
/* $1 tenant, $2 namespace, $3 LIKE pattern: the live keys that match */
extern const char SINKDB_KV_COUNT_SQL[];
#define SINKDB_KV_COUNT_COLUMNS(X) X(SINKDB_KV_COUNT, n, int8)
enum { SINKDB_KV_COUNT_COLUMNS(DB_COL_ENUM) };

/* For tests/unit/test_db_statements.c */
#define SINKDB_STATEMENTS(S)                                                                                   \
    S(SINKDB_QUEUES_SQL, SINKDB_QUEUES_COLUMNS)                                                                \
    S(SINKDB_KV_COUNT_SQL, SINKDB_KV_COUNT_COLUMNS)

#endif
