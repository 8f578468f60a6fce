/* streams_results.h — the results of the streams functions, by name (db/results.h):
 * src/db/functions/streams_*.sql. Checked against the database by tests/unit/test_db_results.c. */
#ifndef QUEEN_STREAMS_RESULTS_H
#define QUEEN_STREAMS_RESULTS_H

#include "db/results.h"
#include "storage/storage_results.h"

/* queen.streams_register_v1: one row; outcome fresh | resumed | reset | conflict */
#define STREAMS_REGISTER_V1_COLUMNS(X)                                                                         \
    X(SREG_QUERY_ID, query_id, uuid)                                                                           \
    X(SREG_OUTCOME, outcome, text)                                                                             \
    X(SREG_CONFIG_HASH, config_hash, text)                                                                     \
    X(SREG_STATE_ROWS, state_rows, int8)
enum sreg_col { STREAMS_REGISTER_V1_COLUMNS(DB_COL_ENUM) SREG_NCOLS };

/* queen.streams_drop_v1: one row, or none when there is no such query */
#define STREAMS_DROP_V1_COLUMNS(X)                                                                             \
    X(SDROP_QUERY_ID, query_id, uuid)                                                                          \
    X(SDROP_STATE_ROWS, state_rows, int8)
enum sdrop_col { STREAMS_DROP_V1_COLUMNS(DB_COL_ENUM) SDROP_NCOLS };

/* queen.streams_queries_v1: one row per query (µs stamps; last_cycle_at NULL before any) */
#define STREAMS_QUERIES_V1_COLUMNS(X)                                                                          \
    X(SQ_QUERY_ID, query_id, uuid)                                                                             \
    X(SQ_NAME, name, text)                                                                                     \
    X(SQ_SOURCE, source_queue, text)                                                                           \
    X(SQ_SINK, sink_queue, text)                                                                               \
    X(SQ_HASH, config_hash, text)                                                                              \
    X(SQ_CREATED, created_at, int8)                                                                            \
    X(SQ_UPDATED, updated_at, int8)                                                                            \
    X(SQ_STATE_ROWS, state_rows, int8)                                                                         \
    X(SQ_PARTITIONS, partitions, int8)                                                                         \
    X(SQ_LAST_CYCLE, last_cycle_at, int8)
enum sq_col { STREAMS_QUERIES_V1_COLUMNS(DB_COL_ENUM) SQ_NCOLS };

/* queen.streams_partitions_v1: one row per source partition of a query */
#define STREAMS_PARTITIONS_V1_COLUMNS(X)                                                                       \
    X(SP_PARTITION_UUID, partition_uuid, uuid)                                                                 \
    X(SP_PARTITION_NAME, partition_name, text)                                                                 \
    X(SP_STATE_ROWS, state_rows, int8)                                                                         \
    X(SP_LAST_CYCLE, last_cycle_at, int8)
enum sp_col { STREAMS_PARTITIONS_V1_COLUMNS(DB_COL_ENUM) SP_NCOLS };

/* queen.streams_state_get_v1: one row per state row, in key order (value: jsonb as text) */
#define STREAMS_STATE_GET_V1_COLUMNS(X)                                                                        \
    X(SSG_KEY, key, text)                                                                                      \
    X(SSG_VALUE, value, text)                                                                                  \
    X(SSG_UPDATED, updated_at, int8)
enum ssg_col { STREAMS_STATE_GET_V1_COLUMNS(DB_COL_ENUM) SSG_NCOLS };

/* queen.streams_state_rows_v1: one row per query (read as text by /status and Prometheus) */
#define STREAMS_STATE_ROWS_V1_COLUMNS(X)                                                                       \
    X(SSR_QUERY_ID, query_id, uuid)                                                                            \
    X(SSR_TENANT, tenant_id, uuid)                                                                             \
    X(SSR_NAME, name, text)                                                                                    \
    X(SSR_STATE_ROWS, state_rows, int8)
enum ssr_col { STREAMS_STATE_ROWS_V1_COLUMNS(DB_COL_ENUM) SSR_NCOLS };

/* queen.streams_cycle_v2 (and v1, which has no kind 7): push_v1's rows (kinds 0..2, same columns) and one summary row */
#define STREAMS_CYCLE_V1_COLUMNS(X)                                                                            \
    X(SCY_KIND, kind, int4)                                                                                    \
    X(SCY_IDX, idx, int4)                                                                                      \
    X(SCY_PARTITION_ID, partition_id, int8)                                                                    \
    X(SCY_PARTITION_UUID, partition_uuid, uuid)                                                                \
    X(SCY_QUEUE_ID, queue_id, int8)                                                                            \
    X(SCY_OFF, off, int8)                                                                                      \
    X(SCY_TS, ts, int8)                                                                                        \
    X(SCY_QNAME, qname, text)
enum scy_col { STREAMS_CYCLE_V1_COLUMNS(DB_COL_ENUM) SCY_NCOLS };

/* the summary row: idx = state ops applied, off = source records acked, ts = flags,
 * partition_id = the client's count (NULL without), queue_id = the source partition's id,
 * qname = the source queue (NULL when the partition is unknown) */
#define SCY_ROW_SUMMARY 5
/* a flush replayed with its windows open again (step 0): per delete, idx = the op's index
 * (1-based), off = the row's created_us (-1 when absent); nothing was written */
#define SCY_ROW_INCARNATION 7
enum scy_flag { SCY_LEASE_RELEASED = 1, SCY_DLQ = 2, SCY_COUNT_DIFFERS = 4, SCY_REPLAY = 8 };

/* queen.streams_cycles_v2 (and v1): streams_cycle_v2's rows tagged with the element, and per failed
 * element one row of kind SCY_ROW_FAILED (qname = the message, errstate = the SQLSTATE) */
#define STREAMS_CYCLES_V1_COLUMNS(X)                                                                           \
    X(SCB_KIND, kind, int4)                                                                                    \
    X(SCB_IDX, idx, int4)                                                                                      \
    X(SCB_PARTITION_ID, partition_id, int8)                                                                    \
    X(SCB_PARTITION_UUID, partition_uuid, uuid)                                                                \
    X(SCB_QUEUE_ID, queue_id, int8)                                                                            \
    X(SCB_OFF, off, int8)                                                                                      \
    X(SCB_TS, ts, int8)                                                                                        \
    X(SCB_QNAME, qname, text)                                                                                  \
    X(SCB_ELEM, elem, int4)                                                                                    \
    X(SCB_ERRSTATE, errstate, text)
enum scb_col { STREAMS_CYCLES_V1_COLUMNS(DB_COL_ENUM) SCB_NCOLS };
#define SCY_ROW_FAILED 6

_Static_assert((int)SCB_KIND == (int)SCY_KIND && (int)SCB_IDX == (int)SCY_IDX && (int)SCB_OFF == (int)SCY_OFF &&
                   (int)SCB_TS == (int)SCY_TS && (int)SCB_QNAME == (int)SCY_QNAME &&
                   (int)SCB_PARTITION_UUID == (int)SCY_PARTITION_UUID,
               "streams_cycles_v1's rows are laid out as streams_cycle_v1's");

_Static_assert((int)SCY_KIND == (int)PUSH_KIND && (int)SCY_IDX == (int)PUSH_IDX &&
                   (int)SCY_PARTITION_ID == (int)PUSH_PARTITION_ID &&
                   (int)SCY_PARTITION_UUID == (int)PUSH_PARTITION_UUID && (int)SCY_QUEUE_ID == (int)PUSH_QUEUE_ID &&
                   (int)SCY_OFF == (int)PUSH_OFF && (int)SCY_TS == (int)PUSH_TS,
               "streams_cycle_v1's push rows are laid out as push_v1's");
_Static_assert(SCY_ROW_SUMMARY > (int)PUSH_ROW_FULL, "the summary row is no push_v1 kind");

#endif
