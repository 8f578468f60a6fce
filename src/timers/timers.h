/* timers.h — pushes scheduled for a later time, keyed by (queue, timerKey), fired exactly once
 * across all nodes.
 *
 * A timer is a pending push under a name: schedule and reschedule are one upsert on (queue,
 * timerKey), cancel deletes by the name. Any node accepts the ops: it decodes each payload
 * (base64 of the JSON text, optionally one zstd frame), encodes the timer's record
 * (transactionId, producer, payload) with record_encode, and hands the ops to
 * queen.timer_ops_v1, which applies them in one transaction — the route's, or the caller's
 * when the ops ride along in POST /api/v1/transaction. Every node runs a timer_job: a libuv
 * timer that, while timers are due, calls queen.timers_fire_v2 — one transaction that locks
 * due rows with SKIP LOCKED, pushes their records through queen.push_v1 (the push path of
 * POST /api/v1/push, with its transactionId deduplication) and deletes the rows. A node that
 * dies mid-round rolls the whole round back, and the rows become due again for the others.
 * The design is in docs/timers.md.
 *
 * The parsing, the encoding and the SQL texts include neither libpq nor libuv (forward
 * declarations below), so they are unit-tested and fuzzed offline. */
#ifndef QUEEN_TIMERS_TIMERS_H
#define QUEEN_TIMERS_TIMERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/qerr.h"
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
/* A timerKey is a name the application builds ("order:9f1:expire"): as long as a KV key. */
#define TIMER_KEY_MAX_BYTES 1024
/* Ops per request (and per transaction rider): one database transaction locks each key. */
#define TIMER_BATCH_MAX_OPS 1000
/* A firing round holds its records in memory on the database side; a payload this large is
 * already unusual for a message, and bounds what one timer adds to a round. It bounds the
 * payload as stored: after base64 and after zstd. */
#define TIMER_PAYLOAD_MAX_BYTES (4u << 20)
/* A round takes at most this many bytes of records (but always at least one timer). */
#define TIMER_ROUND_MAX_BYTES (16 << 20)
/* delayMs within ten years either way; a delay in the past fires on the next round. */
#define TIMER_DELAY_MAX_MS 315360000000LL
#define TIMER_LIST_LIMIT_MAX 1000
#define TIMER_LIST_LIMIT_DEFAULT 100
/* A listing carries at most this many bytes of records (and says truncated); in the SQL. */
#define TIMER_ANSWER_MAX_BYTES (16u << 20)

enum timer_op_kind { TIMER_OP_SCHEDULE = 0, TIMER_OP_RESCHEDULE = 1, TIMER_OP_CANCEL = 2 };

/* What queen.timer_ops_v1 answered for one op (o_status). */
enum timer_status {
    TIMER_SCHEDULED = 0,   /* the key was not pending: created */
    TIMER_RESCHEDULED = 1, /* the pending timer was replaced (it will not fire) */
    TIMER_CANCELLED = 2,
    TIMER_ABSENT = 3,      /* a cancel of a key not pending (it may have fired) */
    TIMER_TOO_LATE = 4,    /* a firing round held the timer and delivered it */
    TIMER_STATUS_COUNT
};
const char *timer_status_name(int status); /* "scheduled", ...; NULL out of range */

/* One op. Strings are borrowed from the request's arena (NUL-terminated), the payload from
 * the arena too (not NUL-terminated). */
typedef struct timer_op {
    int kind;                /* enum timer_op_kind */
    const char *queue;
    size_t queue_len;
    const char *key;         /* timerKey */
    size_t key_len;
    const char *partition;   /* schedule: "Default" when not given; cancel: NULL */
    size_t partition_len;
    const char *txn;         /* schedule: given, or a UUIDv7 made when parsed; cancel: given or NULL */
    size_t txn_len;
    int64_t delay_us;        /* schedule: >= 0, on the database's clock */
    const char *payload;     /* schedule: the JSON text as stored (decoded, decompressed) */
    size_t payload_len;
    uuid id;                 /* schedule: the row id if it creates */
    int seal;                /* set by the caller: seal the payload under the node's key */
} timer_op;

/* A refused op or body (docs/http-api.md, "Timers") is QERR_BAD_INPUT (core/qerr.h) with the
 * detail's code the stable code a client branches on (timer_invalid_payload, ...), its reason
 * the finer stable name (not_base64, ...), its index the op at fault (from 0; -1 for the body)
 * and the sentence; http_respond_qerr_refusal answers it. */

/* Parses an array of op objects (a request's operations, the transaction's timers rider)
 * into *ops (arena).
 * `what` names the array in refusals ("operations", "timers": "timers[2]: ..."). Returns
 * QERR_OK, or QERR_BAD_INPUT with *why filled. */
qerr timer_ops_parse(const json_doc *d, int arr, const char *what, arena *ar, timer_op **ops, int *n,
                     qerr_detail *why);
/* The body of POST /api/v1/timers: {"operations": [op, ...]} and nothing else. */
qerr timer_ops_parse_body(const json_doc *d, arena *ar, timer_op **ops, int *n, qerr_detail *why);
/* A cancel op from the path route's parts (decoded by the router: UTF-8 without NUL);
 * txn may be NULL. QERR_BAD_INPUT with *why when a part is out of bounds. */
qerr timer_cancel_op(const char *queue, size_t queue_len, const char *key, size_t key_len, const char *txn,
                     size_t txn_len, timer_op *op, qerr_detail *why);

/* Appends the op's encoded record (src/storage/record.h, no segment version byte), its
 * payload sealed under the node's key when op->seal. -1 when sealing fails (no key). */
int timer_encode_record(const timer_op *op, const char *producer, size_t producer_len, buf *out);
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

/* The ops of one request: SELECT * FROM queen.timer_ops_v1($1 tenant, $2..$10 arrays), rows
 * enum timer_ops_col (timer_results.h), binary results. timer_ops_params fills all ten; a
 * caller that passes the tenant itself (the transaction) takes values[1..9], the arrays in
 * timer_ops_v1's order. A QE002 refusal names the op whose queue wants sealed payloads:
 * timer_ops_refused_op gives its index (from 1), or 0 for another error. */
extern const char TIMER_OPS_SQL[];
#define TIMER_OPS_SQLSTATE_SEAL "QE002"
void timer_ops_params(const uint8_t tenant[16], const timer_op *ops, int n, const char *producer, size_t producer_len,
                      timer_params *p);
int timer_ops_refused_op(const char *sqlstate, const char *errmsg);
/* One result object of the 2.x wire: {ok, status, queue, timerKey, txn, messageId, deliverAt}
 * for row `row` of a TIMER_OPS_SQL result, which answered op `op`. */
void timer_result_json(buf *b, const timer_op *op, const struct pg_result *res, int row);

/* Peek and list: one timer of a queue, and a page of a queue's timers in timerKey byte
 * order after `after` ("" = from the first), at most `limit`, stopping after about
 * TIMER_ANSWER_MAX_BYTES of records (at least one row); the list adds `total`, how many rows
 * its limit + 1 took, so more follow when total exceeds the rows shown. Binary results. */
extern const char TIMER_PEEK_SQL[];
extern const char TIMER_LIST_SQL[];
enum timer_row_col {
    TIMER_ROW_QUEUE, TIMER_ROW_KEY, TIMER_ROW_PARTITION, TIMER_ROW_DELIVER_AT, TIMER_ROW_TXN, TIMER_ROW_ATTEMPTS,
    TIMER_ROW_CREATED, TIMER_ROW_SEGMENT, TIMER_ROW_TOTAL /* the list only */
};
void timer_peek_params(const uint8_t tenant[16], const char *queue, size_t queue_len, const char *key,
                       size_t key_len, timer_params *p);
void timer_list_params(const uint8_t tenant[16], const char *queue, size_t queue_len, const char *after,
                       size_t after_len, int64_t limit, timer_params *p);
/* Writes the members of one row of TIMER_PEEK_SQL / TIMER_LIST_SQL (no braces): queue,
 * timerKey, partition, txn, deliverAt, attempts, createdAt, payload (base64 of the stored
 * bytes), encrypted. -1 when the stored record cannot be decoded. */
int timer_row_members(buf *b, const struct pg_result *res, int row);

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
    mcounter created;        /* schedules that created a timer */
    mcounter rescheduled;    /* schedules that replaced a pending timer */
    mcounter cancelled;
    mcounter too_late;       /* ops that met their timer being fired */
    mcounter fired;          /* records pushed by this node's rounds */
    mcounter duplicates;     /* timers whose producer transactionId was already pushed */
    mcounter rounds;         /* rounds that fired at least one timer */
    mcounter round_failures;
    mcounter sealed;         /* plaintext timers this node sealed in place before they fired */
    mhist lag_seconds;       /* per round that fired: the largest delay past fireAt */
} timer_metrics;
/* Counts the statuses of a TIMER_OPS_SQL result; returns the smallest o_in_us (INT64_MAX
 * when nothing was scheduled), for timer_job_kick. */
int64_t timer_ops_account(timer_metrics *m, const struct pg_result *res);

typedef struct timer_job timer_job;
timer_job *timer_job_new(struct uv_loop_s *loop, db_pool *db, int64_t dedup_window_s, int64_t fire_batch);
/* A timer due in delay_us (on the database's clock) was just scheduled: make sure the next
 * round is not later than that. */
void timer_job_kick(timer_job *j, int64_t delay_us);
/* Stops scheduling rounds; a round in flight finishes (or fails when the pool closes). */
void timer_job_stop(timer_job *j);
int timer_job_busy(const timer_job *j);
void timer_job_free(timer_job *j); /* after the loop has stopped */
timer_metrics *timer_job_metrics(timer_job *j);

#endif
