/* txn_results.h — the result of POST /api/v1/transaction's function, by name (db/results.h):
 * src/db/functions/transaction_v1.sql. Checked against the database by
 * tests/unit/test_db_results.c. */
#ifndef QUEEN_API_TXN_RESULTS_H
#define QUEEN_API_TXN_RESULTS_H

#include "db/results.h"
#include "storage/storage_results.h"

/* queen.transaction_v1: a push group (kind TXN_ROW_PUSH, the columns of push_v1's written rows)
 * or an ack (TXN_ROW_ACK: idx among the acks, from 1; dlq) */
#define TRANSACTION_V1_COLUMNS(X)                                                                              \
    X(TXN_KIND, kind, int4)                                                                                    \
    X(TXN_IDX, idx, int4)                                                                                      \
    X(TXN_PID, pid, int8)                                                                                      \
    X(TXN_PUUID, puuid, uuid)                                                                                  \
    X(TXN_QID, qid, int8)                                                                                      \
    X(TXN_OFF, off, int8)                                                                                      \
    X(TXN_TS, ts, int8)                                                                                        \
    X(TXN_DLQ, dlq, bool)
enum txn_col { TRANSACTION_V1_COLUMNS(DB_COL_ENUM) TXN_NCOLS };

enum txn_kind {
    TXN_ROW_PUSH = (int)PUSH_ROW_WRITTEN,
    TXN_ROW_ACK = 3, /* above push_v1's kinds: push_enc_apply skips these rows */
};

/* push_enc_apply reads the push rows with push_v1's column names */
_Static_assert((int)TXN_KIND == (int)PUSH_KIND && (int)TXN_IDX == (int)PUSH_IDX &&
                   (int)TXN_PID == (int)PUSH_PARTITION_ID && (int)TXN_PUUID == (int)PUSH_PARTITION_UUID &&
                   (int)TXN_QID == (int)PUSH_QUEUE_ID && (int)TXN_OFF == (int)PUSH_OFF && (int)TXN_TS == (int)PUSH_TS,
               "transaction_v1's push rows are laid out as push_v1's");
_Static_assert((int)TXN_ROW_ACK > (int)PUSH_ROW_FULL, "an ack row is no push_v1 kind");

#endif
