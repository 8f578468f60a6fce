/* logread.h — lease-free reads of the log: fetch, partitions changed since a stamp, safeTime.
 *
 * Each read is a fixed SQL text plus parameters (built here) and a decoder for its result
 * (also here), so the HTTP handlers on the loop and any in-process caller on its own thread
 * and connection run exactly the same query and decoding. Both take many entries (the 2.x
 * wire: one per partition to read, one per queue to discover). Nothing here takes a lease or
 * moves a cursor. */
#ifndef QUEEN_STORAGE_LOGREAD_H
#define QUEEN_STORAGE_LOGREAD_H

#include <libpq-fe.h>
#include <stdint.h>

#include "core/buf.h"
#include "db/pgarray.h"
#include "db/statements.h"
#include "readreq.h"
#include "record.h"

/* Parameter storage for one query (values point into it). */
#define SQL_MAX_PARAMS 16
#define SQL_MAX_ARRAYS 4
typedef struct sql_params {
    const char *values[SQL_MAX_PARAMS];
    int lengths[SQL_MAX_PARAMS];
    int formats[SQL_MAX_PARAMS];
    int n;
    char text[SQL_MAX_PARAMS][48];
    pgarray arr[SQL_MAX_ARRAYS];
} sql_params;

void sql_params_free(sql_params *p);

/* ---- fetch: records of partitions by offset ------------------------------------------------ */

extern const char FETCH_SQL[];
/* Its result, by name (db/statements.h): a row per (entry, segment) */
#define FETCH_COLUMNS(X)                                                                                       \
    X(FETCH_ORD, ord, int8) /* the entry, from 1 */                                                            \
    X(FETCH_PID, pid, int8) /* NULL: no such queue or partition */                                             \
    X(FETCH_PUUID, puuid, uuid)                                                                                \
    X(FETCH_START, start_offset, int8)                                                                         \
    X(FETCH_NEXT, next_offset, int8)                                                                           \
    X(FETCH_BASE, base_offset, int8) /* NULL: no segment to read */                                            \
    X(FETCH_TS, ts, int8)                                                                                      \
    X(FETCH_COUNT, record_count, int4)                                                                         \
    X(FETCH_DATA, data, bytea) /* NULL: past a budget */
enum fetch_col { FETCH_COLUMNS(DB_COL_ENUM) FETCH_NCOLS };
/* p->arr[0..3] hold the entry arrays: free with sql_params_free. */
void fetch_params(const fetch_args *a, sql_params *p);

enum fetch_error {
    FETCH_ENTRY_OK = 0,
    FETCH_UNKNOWN_TOPIC_OR_PARTITION, /* no such queue, or no such partition in it */
    FETCH_OFFSET_OUT_OF_RANGE,        /* offset below the log start or past the high watermark */
};
/* The wire spelling of an entry error (NULL for FETCH_ENTRY_OK). */
const char *fetch_error_name(enum fetch_error e);

/* What one entry read. Valid during the callbacks only (points into the result). */
typedef struct fetch_result {
    uint32_t index;          /* entry number, from 0 */
    enum fetch_error error;
    uint64_t id;             /* the partition (0 when unknown) */
    const uint8_t *uuid;     /* 16 bytes, NULL when unknown */
    int64_t log_start;       /* first offset still stored */
    int64_t high_watermark;  /* the offset the next record will get */
    int64_t next_offset;     /* last delivered + 1, or the entry's offset */
    uint32_t delivered;
    uint64_t bytes;          /* payload bytes delivered */
} fetch_result;

/* Called for every entry in order: begin, its records in offset order, end. A record callback
 * returning non-zero stops the whole decode (as when the call's budget ran out). */
typedef struct fetch_callbacks {
    void (*begin)(void *arg, const fetch_result *e);
    int (*record)(void *arg, const fetch_result *e, const record_view *v, int64_t ts);
    void (*end)(void *arg, const fetch_result *e);
} fetch_callbacks;

typedef struct fetch_summary {
    uint64_t records;
    uint64_t bytes;
} fetch_summary;

/* Decodes FETCH_SQL's result: the entries' records within their budgets and the call's. The
 * first record of the first entry that has one is always delivered, whatever the budgets, so a
 * reader always makes progress. Records deleted by DELETE /api/v1/messages are skipped (their
 * offsets are gaps). Returns 0, or -1 when a stored segment cannot be decoded. */
int fetch_decode(PGresult *res, const fetch_args *a, const fetch_callbacks *cb, void *arg, fetch_summary *sum);

/* Writes one record as JSON: offset, transactionId, payload, ts (ISO-8601, µs, Z), traceId,
 * producerSub. */
void fetch_record_json(buf *b, const record_view *v, int64_t ts);

/* ---- partitions changed since a stamp, with safeTime ---------------------------------------- */

/* Ticks the clocks of every queue the entries name (a statement of its own, committed before
 * the read): safeTime keeps moving on an idle queue. Parameters: tenant, text[] of queues. */
extern const char TICK_QUEUES_SQL[];
/* Reads the clocks and the partitions of every entry in one statement, so from one snapshot. */
extern const char CHANGED_SQL[];
/* Its result, by name: a row per (entry, partition), one with NULL partition columns for an
 * entry without any */
#define CHANGED_COLUMNS(X)                                                                                     \
    X(CHANGED_ORD, ord, int8)                                                                                  \
    X(CHANGED_QUEUE_ID, queue_id, int8) /* NULL: no such queue */                                              \
    X(CHANGED_SAFE_TIME, safe_time, int8) /* the queue clock */                                                \
    X(CHANGED_PID, pid, int8)                                                                                  \
    X(CHANGED_PNAME, pname, text)                                                                              \
    X(CHANGED_PUUID, puuid, uuid)                                                                              \
    X(CHANGED_START, start_offset, int8)                                                                       \
    X(CHANGED_NEXT, next_offset, int8)                                                                         \
    X(CHANGED_LAST_TS, last_ts, int8)
enum changed_col { CHANGED_COLUMNS(DB_COL_ENUM) CHANGED_NCOLS };
/* Parameters of CHANGED_SQL; the first two are TICK_QUEUES_SQL's. Free with sql_params_free. */
void changed_params(const changed_args *a, sql_params *p);

typedef struct changed_row {
    const char *name;
    size_t name_len;
    uint64_t id;
    const uint8_t *uuid;
    int64_t start_offset, end_offset, last_ts;
} changed_row;

typedef struct changed_result {
    uint32_t index;
    int known;         /* the queue exists */
    int64_t safe_time; /* the queue's, when known */
    uint32_t rows;
    int has_next;      /* the page was full: more partitions after next_after */
    int64_t next_after;
} changed_result;

typedef struct changed_callbacks {
    void (*begin)(void *arg, const changed_result *e);
    void (*row)(void *arg, const changed_result *e, const changed_row *row);
    void (*end)(void *arg, const changed_result *e);
} changed_callbacks;

/* Decodes CHANGED_SQL's result, entry by entry in order. Returns 0, or -1 when the result does
 * not have a row for every entry. */
int changed_decode(PGresult *res, const changed_args *a, const changed_callbacks *cb, void *arg);

/* Per-queue summaries for /status: the queues of one tenant ($1), their clocks ticked first. */
extern const char TICK_TENANT_SQL[];
/* Text results (api_ops.c reads them as text): a row per queue, by name */
extern const char STATUS_QUEUES_SQL[];
#define STATUS_QUEUES_COLUMNS(X)                                                                               \
    X(STATUS_Q_TENANT, tenant_id, uuid)                                                                        \
    X(STATUS_Q_NAME, name, text)                                                                               \
    X(STATUS_Q_SAFE_TIME, safe_time, int8) /* the queue clock */                                               \
    X(STATUS_Q_PARTITIONS, partitions, int8)                                                                   \
    X(STATUS_Q_RECORDS, records, int8)                                                                         \
    X(STATUS_Q_LAST_TS, last_ts, int8)                                                                         \
    X(STATUS_Q_NAMESPACE, namespace, text)                                                                     \
    X(STATUS_Q_TASK, task, text)                                                                               \
    X(STATUS_Q_CONFIGURED, configured, bool)
enum status_queues_col { STATUS_QUEUES_COLUMNS(DB_COL_ENUM) STATUS_Q_NCOLS };

/* The "queues" array of GET /status from STATUS_QUEUES_SQL's text rows; now (µs) for the
 * safe lag. Pure. */
void status_queues_json(buf *b, const PGresult *queues, int64_t now_us);

/* For tests/unit/test_db_statements.c */
#define LOGREAD_STATEMENTS(S)                                                                                  \
    S(FETCH_SQL, FETCH_COLUMNS)                                                                                \
    S(CHANGED_SQL, CHANGED_COLUMNS)                                                                            \
    S(STATUS_QUEUES_SQL, STATUS_QUEUES_COLUMNS)

void format_uuid_text(const uint8_t b[16], char out[37]);

#endif
