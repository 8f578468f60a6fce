/* timers.h — pushes scheduled for a later time, fired exactly once across all nodes.
 *
 * A timer is accepted by any node: its record (transactionId, optional traceId, producer, the
 * payload text byte for byte) is encoded there with record_encode and stored in
 * queen.log_timers with its fire time on the database's clock. Every node runs a timer_job:
 * a libuv timer that, while timers are due, calls queen.timers_fire_v2 — one transaction that
 * locks due rows with SKIP LOCKED, pushes their records through queen.push_v1 (the push path
 * of POST /api/v1/push, with its transactionId deduplication) and deletes the rows. A node
 * that dies mid-round rolls the whole round back, and the rows become due again for the
 * others; a timer due while no node ran fires at the first round of the first node that
 * starts. The design is in docs/timers.md.
 *
 * The request parsing and the SQL texts include neither libpq nor libuv (forward
 * declarations below), so the parsing is unit-tested offline. */
#ifndef QUEEN_TIMERS_TIMERS_H
#define QUEEN_TIMERS_TIMERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/uuid.h"
#include "db/pgarray.h"
#include "json/json.h"
#include "metrics/metrics.h"
#include "timer_results.h"

struct pg_result;   /* PGresult */
struct uv_loop_s;   /* uv_loop_t */
typedef struct db_pool db_pool;

/* The same bounds as a pushed item: names and transactionIds are PostgreSQL text. */
#define TIMER_NAME_MAX_BYTES 255
#define TIMER_TXN_MAX_BYTES 255
/* Timers are accepted in requests of at most this many (one INSERT statement). */
#define TIMER_BATCH_MAX_ITEMS 10000
/* A firing round holds its records in memory on the database side; a payload this large is
 * already unusual for a message, and bounds what one timer adds to a round. */
#define TIMER_PAYLOAD_MAX_BYTES (4u << 20)
/* A round takes at most this many bytes of records (but always at least one timer). */
#define TIMER_ROUND_MAX_BYTES (16 << 20)
/* delayMs up to ten years; fireAt between 2001-09-09 (10^15 µs: smaller numbers are seconds
 * or milliseconds sent by mistake, which would fire at once) and the end of year 9999. */
#define TIMER_DELAY_MAX_MS 315360000000LL
#define TIMER_FIRE_AT_MIN_US 1000000000000000LL
#define TIMER_FIRE_AT_MAX_US 253402300799999999LL
#define TIMER_LIST_LIMIT_MAX 1000
/* A listing carries at most this many bytes of records (and says "more"); enforced in the SQL. */
#define TIMER_ANSWER_MAX_BYTES (16u << 20)

/* One timer to create. Strings are borrowed (arena of the request). */
typedef struct timer_spec {
    uuid id;                 /* UUIDv7, made when parsed */
    const char *queue;
    size_t queue_len;
    const char *partition;   /* "Default" when not given */
    size_t partition_len;
    const char *payload;     /* raw JSON span; NULL/0 = empty (read back as null) */
    size_t payload_len;
    const char *txn;         /* the producer's transactionId, or a UUIDv7 made when parsed */
    size_t txn_len;
    int txn_producer;
    int has_trace;
    uint8_t trace[16];
    int64_t fire_at_us;      /* absolute (fireAt), when delay_us < 0 */
    int64_t delay_us;        /* relative (delayMs) on the database's clock, or -1 */
    int seal;                /* seal the payload under the node's key (its queue is encrypted) */
} timer_spec;

/* Parses one timer object: queue, partition?, payload?, fireAt (ISO-8601 string or µs) or
 * delayMs, transactionId?, traceId?. Returns 0, or -1 with a client-facing message. */
int timer_parse(const json_doc *d, int obj, arena *ar, timer_spec *out, char *err, size_t errlen);
/* The body of POST /api/v1/timers: one timer object, or {"items": [timer, ...]}. */
int timer_parse_request(const json_doc *d, arena *ar, timer_spec **specs, int *n, int *is_batch, char *err,
                        size_t errlen);
/* Appends the timer's encoded record (src/storage/record.h, no segment version byte), its
 * payload sealed under the node's key when s->seal. -1 when sealing fails (no key). */
int timer_encode_record(const timer_spec *s, const char *producer, size_t producer_len, buf *out);
/* The same record with its payload sealed: rec is a stored timer record (no version byte);
 * appends the sealed copy to out. 0; 1 when it is sealed already (nothing appended); -1 when
 * it cannot be decoded or there is no key. */
int timer_reseal_record(const uint8_t *rec, size_t len, buf *out);

/* Parameters of one statement (values point into it). */
typedef struct timer_params {
    const char *values[12];
    int lengths[12];
    int formats[12];
    int n;
    char text[12][48];
    pgarray arr[10];
    buf records;
} timer_params;
void timer_params_free(timer_params *p);

/* Creates timers; answers id, fire_at, fire_at minus the database's now (µs), in id order,
 * which is the order of the specs (UUIDv7 ids made in order). When a plaintext record is
 * headed for a queue with encryptionEnabled it creates none and answers, instead, one row per
 * such timer with only the fourth column set: its 1-based index among the specs (the caller
 * seals those and sends again; docs/encryption.md). */
extern const char TIMER_CREATE_SQL[];
void timer_create_params(const uint8_t tenant[16], const timer_spec *specs, int n, const char *producer,
                         size_t producer_len, timer_params *p);

/* One timer / a page of a tenant's timers (optionally of one queue) in id order: id, queue,
 * partition, fire_at, txn_id, trace_id, created_at, segment (the record behind a version
 * byte); the list adds `total`, how many rows its limit + 1 took, and stops after about
 * TIMER_ANSWER_MAX_BYTES of records (at least one row): more follow when total exceeds the
 * rows shown. Binary results. */
extern const char TIMER_GET_SQL[];
extern const char TIMER_LIST_SQL[];
enum timer_row_col {
    TIMER_ROW_ID, TIMER_ROW_QUEUE, TIMER_ROW_PARTITION, TIMER_ROW_FIRE_AT, TIMER_ROW_TXN, TIMER_ROW_TRACE,
    TIMER_ROW_CREATED, TIMER_ROW_SEGMENT, TIMER_ROW_TOTAL /* the list only */
};
void timer_get_params(const uint8_t tenant[16], const uuid *id, timer_params *p);
void timer_list_params(const uint8_t tenant[16], const char *queue, size_t queue_len, const uuid *after,
                       int64_t limit, timer_params *p);
/* Writes one row of TIMER_GET_SQL / TIMER_LIST_SQL as the timer's JSON. -1 when the stored
 * record cannot be decoded. */
int timer_row_json(buf *b, const struct pg_result *res, int row);

/* Cancels: deletes the row, waiting for a firing round that holds it; no row = it fired, was
 * cancelled before, or never existed. */
extern const char TIMER_CANCEL_SQL[];

/* One firing round: SELECT * FROM queen.timers_fire_v2(...), one row (enum timers_fire_col). */
extern const char TIMER_FIRE_SQL[];
/* Sealing in place the plaintext timers of encrypted queues a round left: the select (id,
 * record; due within two seconds; binary results; $1 = how many) and the update ($1 ids,
 * $2 the records as read, $3 the sealed records: a row changed meanwhile is left alone;
 * rows locked by a round are skipped). */
#define TIMER_SEAL_BATCH 500
extern const char TIMER_UNSEALED_SQL[];
enum timer_unsealed_col { TIMER_UNSEALED_ID, TIMER_UNSEALED_RECORD };
extern const char TIMER_RESEAL_SQL[];

/* ---- the firing job ---- */
typedef struct timer_metrics {
    mcounter created;
    mcounter cancelled;
    mcounter fired;          /* records pushed by this node's rounds */
    mcounter duplicates;     /* timers whose producer transactionId was already pushed */
    mcounter rounds;         /* rounds that fired at least one timer */
    mcounter round_failures;
    mcounter sealed;         /* plaintext timers this node sealed in place before they fired */
    mhist lag_seconds;       /* per round that fired: the largest delay past fireAt */
} timer_metrics;

typedef struct timer_job timer_job;
timer_job *timer_job_new(struct uv_loop_s *loop, db_pool *db, int64_t dedup_window_s, int64_t fire_batch);
/* A timer due in delay_us (on the database's clock) was just created: make sure the next round
 * is not later than that. */
void timer_job_kick(timer_job *j, int64_t delay_us);
/* Stops scheduling rounds; a round in flight finishes (or fails when the pool closes). */
void timer_job_stop(timer_job *j);
int timer_job_busy(const timer_job *j);
void timer_job_free(timer_job *j); /* after the loop has stopped */
timer_metrics *timer_job_metrics(timer_job *j);

#endif
