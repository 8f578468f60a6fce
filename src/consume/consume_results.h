/* consume_results.h — the results of the consumer functions this module calls, by name
 * (db/results.h): src/db/functions/pop_v2.sql, pop_ns_v2.sql (pop_v1 and pop_ns_v1 wrap them),
 * lease_store_v1.sql, ack_v1.sql, lease_extend_v2.sql. Checked against the database by tests/unit/test_db_results.c. */
#ifndef QUEEN_CONSUME_CONSUME_RESULTS_H
#define QUEEN_CONSUME_CONSUME_RESULTS_H

#include "db/results.h"

/* queen.pop_v1 / pop_v2: rows of several kinds (pop_kind); a, b, c depend on the kind */
#define POP_V1_COLUMNS(X)                                                                                      \
    X(POP_KIND, kind, int4)                                                                                    \
    X(POP_PID, pid, int8)                                                                                      \
    X(POP_PUUID, puuid, uuid)                                                                                  \
    X(POP_PNAME, pname, text)   /* claim: the partition's name; empty: why (pop_outcome.why) */               \
    X(POP_A, a, int8)           /* claim: first offset; segment: base offset */                                \
    X(POP_B, b, int8)           /* claim: end offset (exclusive); segment: last offset */                      \
    X(POP_C, c, int8)           /* claim: lease expiry (µs); empty: when records may be available */           \
    X(POP_SEG_TS, seg_ts, int8) /* segment: its stamp; claim: the delivery attempt (retry count + 1) */      \
    X(POP_SEG_COUNT, seg_count, int4) /* claim: 1 when the partition holds records past b */                   \
    X(POP_SEG_DATA, seg_data, bytea)
#define POP_V2_COLUMNS(X) POP_V1_COLUMNS(X)
/* queen.pop_ns_v1 / pop_ns_v2: pop_v1's rows plus the queue of each */
#define POP_NS_V1_COLUMNS(X) POP_V1_COLUMNS(X) X(POP_QNAME, qname, text)
#define POP_NS_V2_COLUMNS(X) POP_NS_V1_COLUMNS(X)
enum pop_col { POP_NS_V2_COLUMNS(DB_COL_ENUM) POP_NS_NCOLS };

enum pop_kind {
    POP_ROW_CLAIM = 0,   /* a claimed partition */
    POP_ROW_SEGMENT = 1, /* a segment of the claim before it */
    POP_ROW_EMPTY = 2,   /* nothing claimed: why, and when to look again */
    POP_ROW_POLICY = 3,  /* pop_v2 / pop_ns_v2, named groups: a = conflates, b = the pop's declaration differs */
    POP_ROW_HINT = 4,    /* a scanned candidate not claimed (pid only) */
    POP_ROW_CONFLATED = 5, /* pop_v2, after the claims: a = records conflating claims retired */
};

/* queen.lease_store_v1: how many leases were stored */
#define LEASE_STORE_V1_COLUMNS(X) X(LEASE_STORE_N, lease_store_v1, int4)
enum { LEASE_STORE_V1_COLUMNS(DB_COL_ENUM) };

/* queen.ack_v1: one row per ack (idx from 1, request order) */
#define ACK_V1_COLUMNS(X)                                                                                      \
    X(ACK_IDX, idx, int4)                                                                                      \
    X(ACK_SUCCESS, success, bool)                                                                              \
    X(ACK_ERROR, error, text)                                                                                  \
    X(ACK_QUEUE, queue_name, text)                                                                             \
    X(ACK_PARTITION, partition_name, text)                                                                     \
    X(ACK_LEASE_RELEASED, lease_released, bool)                                                                \
    X(ACK_DLQ, dlq, bool)
enum ack_col { ACK_V1_COLUMNS(DB_COL_ENUM) ACK_NCOLS };

/* queen.lease_extend_v2: the earliest new expiry (µs), or why not */
#define LEASE_EXTEND_V2_COLUMNS(X)                                                                             \
    X(LEASE_EXTEND_EXPIRES_AT, expires_at, int8)                                                               \
    X(LEASE_EXTEND_ERROR, error, text)
enum lease_extend_col { LEASE_EXTEND_V2_COLUMNS(DB_COL_ENUM) LEASE_EXTEND_NCOLS };

#endif
