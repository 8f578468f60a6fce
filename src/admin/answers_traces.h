/* answers_traces.h — the statements of the trace routes (api/api_traces.c) and their result
 * columns, by name (db/statements.h), and the answers' JSON written from their rows.
 *
 * The texts are in answers_traces.c. Parameters are in text format unless a statement says
 * otherwise; results are binary. Checked against the database by
 * tests/unit/test_db_statements.c (TRACES_STATEMENTS below). The writers are pure (rows in,
 * JSON out); tests/unit/test_answers_log.c checks them against the exact answers
 * (docs/http-api.md, "Traces"). */
#ifndef QUEEN_ADMIN_ANSWERS_TRACES_H
#define QUEEN_ADMIN_ANSWERS_TRACES_H

#include <libpq-fe.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/uuid.h"
#include "db/statements.h"

/* ---- statements -------------------------------------------------------------------------- */

/* A batch of traces in one statement (api_traces.c's group commit), parameters binary arrays
 * but $9: $1 ids, $2 tenants, $3 partitions (uuid, or a framed pop's u64 as a uuid), $4
 * transactionIds, $5 groups, $6 event types, $7 names (JSON arrays), $8 data (JSON), $9 the
 * node id, $10 the offsets found (NULL = not looked up). The ids are minted by the node, so the
 * rows answered name the requests: one row per request whose partition is the tenant's (none:
 * 404), with whether it was inserted and the partition's UUID. Inserted = the record's offset
 * is known: given ($10, found by api_message_locate), or the dedup window or a cursor's lease
 * names the transactionId — and the record is still in the log (not below its start). */
extern const char TRACE_INSERT_SQL[];
#define TRACE_INSERT_COLUMNS(X)                                                                                \
    X(TRACE_INS_ID, id, uuid)                                                                                  \
    X(TRACE_INS_INSERTED, inserted, bool)                                                                      \
    X(TRACE_INS_PUUID, puuid, uuid)
enum trace_insert_col { TRACE_INSERT_COLUMNS(DB_COL_ENUM) TRACE_INS_NCOLS };

/* $1 tenant, $2 partition uuid, $3 transactionId, $4 limit: the record's traces, oldest first */
extern const char TRACE_BY_RECORD_SQL[];
#define TRACE_BY_RECORD_COLUMNS(X)                                                                             \
    X(TRACE_REC_ID, id, uuid)                                                                                  \
    X(TRACE_REC_EVENT, event_type, text)                                                                       \
    X(TRACE_REC_DATA, data, text) /* the JSON text the client sent */                                          \
    X(TRACE_REC_GROUP, consumer_group, text)                                                                   \
    X(TRACE_REC_WORKER, worker_id, text)                                                                       \
    X(TRACE_REC_CREATED_US, created_us, int8)                                                                  \
    X(TRACE_REC_NAMES, trace_names, text) /* a JSON array */
enum trace_by_record_col { TRACE_BY_RECORD_COLUMNS(DB_COL_ENUM) TRACE_REC_NCOLS };

/* $1 tenant, $2 name, $3 limit, $4 offset: the traces carrying the name, newest first, with the
 * record (one encoded record, queen.record_at_v1) while it is in the log */
extern const char TRACE_BY_NAME_SQL[];
#define TRACE_BY_NAME_COLUMNS(X)                                                                               \
    X(TRACE_NAME_ID, id, uuid)                                                                                 \
    X(TRACE_NAME_TXN, transaction_id, text)                                                                    \
    X(TRACE_NAME_PUUID, puuid, uuid)                                                                           \
    X(TRACE_NAME_EVENT, event_type, text)                                                                      \
    X(TRACE_NAME_DATA, data, text)                                                                             \
    X(TRACE_NAME_GROUP, consumer_group, text)                                                                  \
    X(TRACE_NAME_WORKER, worker_id, text)                                                                      \
    X(TRACE_NAME_CREATED_US, created_us, int8)                                                                 \
    X(TRACE_NAME_QUEUE, qname, text)                                                                           \
    X(TRACE_NAME_PARTITION, pname, text)                                                                       \
    X(TRACE_NAME_NAMES, trace_names, text)                                                                     \
    X(TRACE_NAME_OFF, off, int8) /* NULL: a trace older than 106_trace_offsets */                              \
    X(TRACE_NAME_RECORD, rec, bytea) /* NULL: gone from the log */
enum trace_by_name_col { TRACE_BY_NAME_COLUMNS(DB_COL_ENUM) TRACE_NAME_NCOLS };

/* $1 tenant, $2 name: how many traces carry it */
extern const char TRACE_BY_NAME_COUNT_SQL[];
#define TRACE_BY_NAME_COUNT_COLUMNS(X) X(TRACE_NAME_TOTAL, total, int8)
enum { TRACE_BY_NAME_COUNT_COLUMNS(DB_COL_ENUM) };

/* $1 tenant, $2 limit, $3 offset: the names, most recently seen first */
extern const char TRACE_NAMES_SQL[];
#define TRACE_NAMES_COLUMNS(X)                                                                                 \
    X(TRACE_NAMES_NAME, name, text)                                                                            \
    X(TRACE_NAMES_TRACES, trace_count, int8)                                                                   \
    X(TRACE_NAMES_MESSAGES, message_count, int8)                                                               \
    X(TRACE_NAMES_LAST_US, last_seen_us, int8)
enum trace_names_col { TRACE_NAMES_COLUMNS(DB_COL_ENUM) TRACE_NAMES_NCOLS };

/* $1 tenant: how many names */
extern const char TRACE_NAMES_COUNT_SQL[];
#define TRACE_NAMES_COUNT_COLUMNS(X) X(TRACE_NAMES_TOTAL, total, int8)
enum { TRACE_NAMES_COUNT_COLUMNS(DB_COL_ENUM) };

#define TRACES_STATEMENTS(S)                                                                                   \
    S(TRACE_INSERT_SQL, TRACE_INSERT_COLUMNS)                                                                  \
    S(TRACE_BY_RECORD_SQL, TRACE_BY_RECORD_COLUMNS)                                                            \
    S(TRACE_BY_NAME_SQL, TRACE_BY_NAME_COLUMNS)                                                                \
    S(TRACE_BY_NAME_COUNT_SQL, TRACE_BY_NAME_COUNT_COLUMNS)                                                    \
    S(TRACE_NAMES_SQL, TRACE_NAMES_COLUMNS)                                                                    \
    S(TRACE_NAMES_COUNT_SQL, TRACE_NAMES_COUNT_COLUMNS)

/* ---- answers ----------------------------------------------------------------------------- */

/* The row of TRACE_INSERT_SQL's result that answers trace `id`: -1 when there is none (the
 * partition is not the tenant's); else *inserted and puuid (zeros when NULL) are set. */
int trace_insert_row(const PGresult *res, const uuid *id, int *inserted, uint8_t puuid[16]);

/* POST /api/v1/traces, 201 */
void answer_trace_added(buf *b, const uuid *id);

/* GET /api/v1/traces/:partitionId/:transactionId from TRACE_BY_RECORD_SQL's rows */
void answer_traces_of_record(buf *b, const PGresult *traces);

/* GET /api/v1/traces/by-name/:name from TRACE_BY_NAME_SQL's rows and its count */
void answer_traces_by_name(buf *b, const PGresult *traces, const PGresult *count, int64_t limit, int64_t offset);

/* GET /api/v1/traces/names from TRACE_NAMES_SQL's rows and its count */
void answer_trace_names(buf *b, const PGresult *names, const PGresult *count, int64_t limit, int64_t offset);

#endif
