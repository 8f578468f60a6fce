/* messages_statements.h — the statements of the message and dead-letter routes (api_messages.c,
 * api_dlq.c; texts in admin.c) and their result columns, by name (db/statements.h). Parameters
 * are in text format, results binary. The stored functions these routes call (list_messages_v1,
 * message_find_v1, dlq_claim_v1, message_delete_v1) are named in admin_results.h. Checked
 * against the database by tests/unit/test_db_statements.c (MESSAGES_STATEMENTS below). */
#ifndef QUEEN_ADMIN_MESSAGES_STATEMENTS_H
#define QUEEN_ADMIN_MESSAGES_STATEMENTS_H

#include "db/statements.h"

/* GET /api/v1/messages?queue=: $1 tenant, $2 queue; one row */
extern const char ADMIN_QUEUE_EXISTS_SQL[];
#define ADMIN_QUEUE_EXISTS_COLUMNS(X) X(QUEUE_EXISTS, queue_exists, bool)
enum { ADMIN_QUEUE_EXISTS_COLUMNS(DB_COL_ENUM) };

/* GET/DELETE /api/v1/messages/:p/:t: $1 tenant, $2 partition uuid; the partition with its
 * queue (no row: not the tenant's) */
extern const char ADMIN_MESSAGE_PARTITION_SQL[];
#define ADMIN_MESSAGE_PARTITION_COLUMNS(X)                                                                     \
    X(MSG_PART_ID, pid, int8)                                                                                  \
    X(MSG_PART_UUID, puuid, uuid)                                                                              \
    X(MSG_PART_NAME, pname, text)                                                                              \
    X(MSG_PART_START, start_offset, int8)                                                                      \
    X(MSG_PART_NEXT, next_offset, int8)                                                                        \
    X(MSG_PART_QUEUE, qname, text)                                                                             \
    X(MSG_PART_NS, namespace, text)                                                                            \
    X(MSG_PART_TASK, task, text)                                                                               \
    X(MSG_PART_OPTIONS, options, text) /* the effective options (queen.queue_options_v1) */
enum message_partition_col { ADMIN_MESSAGE_PARTITION_COLUMNS(DB_COL_ENUM) MSG_PART_NCOLS };

/* GET /api/v1/messages/:p/:t: $1 tenant, $2 partition uuid; the partition's cursors, by group */
extern const char ADMIN_MESSAGE_CURSORS_SQL[];
#define ADMIN_MESSAGE_CURSORS_COLUMNS(X)                                                                       \
    X(MSG_CUR_GROUP, consumer_group, text)                                                                     \
    X(MSG_CUR_NEXT, next_offset, int8)                                                                         \
    X(MSG_CUR_LEASE_START, lease_start, int8)                                                                  \
    X(MSG_CUR_LEASE_END, lease_end, int8)                                                                      \
    X(MSG_CUR_LEASE_EXP, lease_expires_at, int8)                                                               \
    X(MSG_CUR_RETRY, retry_count, int4)                                                                        \
    X(MSG_CUR_LEASED, lease_live, bool) /* a lease that has not expired */
enum message_cursors_col { ADMIN_MESSAGE_CURSORS_COLUMNS(DB_COL_ENUM) MSG_CUR_NCOLS };

/* $1 tenant, $2 partition uuid, $3 transactionId, $4 offset: the record's dead letters (by
 * transactionId or offset), newest first */
extern const char ADMIN_MESSAGE_DEAD_SQL[];
#define ADMIN_MESSAGE_DEAD_COLUMNS(X)                                                                          \
    X(MSG_DEAD_ID, id, int8)                                                                                   \
    X(MSG_DEAD_GROUP, consumer_group, text)                                                                    \
    X(MSG_DEAD_OFF, off, int8)                                                                                 \
    X(MSG_DEAD_ERROR, error, text)                                                                             \
    X(MSG_DEAD_RETRY, retry_count, int4)                                                                       \
    X(MSG_DEAD_FAILED_US, failed_us, int8)                                                                     \
    X(MSG_DEAD_RECORD, record, bytea)                                                                          \
    X(MSG_DEAD_TXN, txn_id, text)                                                                              \
    X(MSG_DEAD_TS, ts, int8)
enum message_dead_col { ADMIN_MESSAGE_DEAD_COLUMNS(DB_COL_ENUM) MSG_DEAD_NCOLS };

/* GET /api/v1/dlq: the total and whether the queue exists on every row; a dead letter per row
 * (an empty page: one row, id NULL) */
extern const char ADMIN_DLQ_LIST_SQL[];
#define ADMIN_DLQ_LIST_COLUMNS(X)                                                                              \
    X(DLQ_TOTAL, total, int8)                                                                                  \
    X(DLQ_QUEUE_KNOWN, queue_known, bool)                                                                      \
    X(DLQ_ID, id, int8)                                                                                        \
    X(DLQ_QUEUE, qname, text)                                                                                  \
    X(DLQ_PARTITION, pname, text)                                                                              \
    X(DLQ_PUUID, puuid, uuid)                                                                                  \
    X(DLQ_PID, pid, int8)                                                                                      \
    X(DLQ_GROUP, consumer_group, text)                                                                         \
    X(DLQ_OFF, off, int8)                                                                                      \
    X(DLQ_TXN, txn_id, text)                                                                                   \
    X(DLQ_TS, ts, int8)                                                                                        \
    X(DLQ_ERROR, error, text)                                                                                  \
    X(DLQ_RETRY, retry_count, int4)                                                                            \
    X(DLQ_RECORD, record, bytea)                                                                               \
    X(DLQ_FAILED_US, failed_us, int8)                                                                          \
    X(DLQ_REQUEUED_US, requeued_us, int8)
enum dlq_list_col { ADMIN_DLQ_LIST_COLUMNS(DB_COL_ENUM) DLQ_LIST_NCOLS };

/* DELETE /api/v1/dlq/:id: the id deleted (no row: not found) */
extern const char ADMIN_DLQ_DELETE_SQL[];
#define ADMIN_DLQ_DELETE_COLUMNS(X) X(DLQ_DELETED_ID, id, int8)
enum { ADMIN_DLQ_DELETE_COLUMNS(DB_COL_ENUM) };

/* POST /api/v1/messages/:p/:t/retry: the partition (no row: not the tenant's) and the newest
 * dead letter of the record not requeued yet (NULL: none) */
extern const char ADMIN_DLQ_RETRY_FIND_SQL[];
#define ADMIN_DLQ_RETRY_FIND_COLUMNS(X)                                                                        \
    X(DLQ_RETRY_PID, pid, int8)                                                                                \
    X(DLQ_RETRY_DLQ_ID, dlq_id, int8)
enum dlq_retry_find_col { ADMIN_DLQ_RETRY_FIND_COLUMNS(DB_COL_ENUM) DLQ_RETRY_FIND_NCOLS };

/* Every statement above with its list, for tests/unit/test_db_statements.c. */
#define MESSAGES_STATEMENTS(S)                                                                                 \
    S(ADMIN_QUEUE_EXISTS_SQL, ADMIN_QUEUE_EXISTS_COLUMNS)                                                      \
    S(ADMIN_MESSAGE_PARTITION_SQL, ADMIN_MESSAGE_PARTITION_COLUMNS)                                            \
    S(ADMIN_MESSAGE_CURSORS_SQL, ADMIN_MESSAGE_CURSORS_COLUMNS)                                                \
    S(ADMIN_MESSAGE_DEAD_SQL, ADMIN_MESSAGE_DEAD_COLUMNS)                                                      \
    S(ADMIN_DLQ_LIST_SQL, ADMIN_DLQ_LIST_COLUMNS)                                                              \
    S(ADMIN_DLQ_DELETE_SQL, ADMIN_DLQ_DELETE_COLUMNS)                                                          \
    S(ADMIN_DLQ_RETRY_FIND_SQL, ADMIN_DLQ_RETRY_FIND_COLUMNS)

#endif
