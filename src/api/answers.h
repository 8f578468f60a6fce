/* answers.h — the JSON of the push and pop answers (docs/http-api.md), written from plain
 * values. Pure: no libuv, no libpq, no http_req; the handlers (api_push.c, api_pop.c) send
 * what these write, and tests/unit/test_answers.c reads it back. */
#ifndef QUEEN_API_ANSWERS_H
#define QUEEN_API_ANSWERS_H

#include <stddef.h>
#include <stdint.h>

#include "consume/popdec.h"
#include "core/buf.h"
#include "core/uuid.h"
#include "storage/pushenc.h"
#include "storage/record.h"

/* POST /api/v1/push, 201: one object per item, in request order (index, transaction_id,
 * status queued|duplicate, message_id; partition_id and trace_id when queued; queueName). */
void answer_push(buf *b, const push_req *pr);

/* One message of a pop answer: id, transactionId, traceId, data (or null and payloadError),
 * producerSub, createdAt, partitionId, partition, leaseId ("" with autoAck), consumerGroup, and
 * queue for a namespace pop (p->queue set). Appends to b (the caller writes the commas). */
void answer_pop_message(buf *b, const popped_partition *p, const record_view *v, int64_t ts, const char *txn,
                        size_t txn_len, const uuid *lease, const char *group);

/* The autopilot echo of a 2.x pop (consume/autopilot.h): appended when `on`. */
void answer_pop_autopilot(buf *b, int on, int64_t partitions, int64_t batch, int64_t wait_ms);

/* A pop answer with messages, 200: the envelope around msgs (answer_pop_message objects joined
 * by commas), without its closing brace, so the autopilot echo can follow. */
typedef struct pop_answer {
    const char *queue;
    const char *partition;    /* the first claimed partition's name */
    const char *partition_id; /* its UUID text */
    const uuid *lease;        /* NULL with autoAck: "" */
    const char *group;
    int claimed;
} pop_answer;
void answer_pop_open(buf *b, const pop_answer *a, const char *msgs, size_t msgs_len);

/* One row of queen.ack_v1 (ACK_V1_COLUMNS, consume/consume_results.h), as values: api_ack.c
 * reads them from the PGresult. The strings are NULL where the column is NULL. */
typedef struct ack_row {
    int index; /* the ack's place in the request, from 0 (the column's idx - 1) */
    int success;
    const char *error;
    const char *queue;
    const char *partition;
    int lease_released;
    int dlq;
} ack_row;

/* POST /api/v1/ack and /ack/batch, 200: one object per row (index, transactionId, success,
 * error, queueName, partitionName, leaseReleased, dlq). txn_of[k] is the transactionId the
 * request gave ack k (n_items of them); a row whose index is out of range answers "". */
void answer_ack(buf *b, const ack_row *rows, int nrows, const char *const *txn_of, uint32_t n_items);

/* POST /api/v1/lease/:leaseId/extend, 200: [{index 0, leaseId, success, error, expiresAt}].
 * error NULL: extended, expiresAt is expires_us (µs since the epoch) as ISO-8601 with ms;
 * else refused with that sentence and expiresAt null. */
void answer_lease_extend(buf *b, const char *lease, const char *error, int64_t expires_us);

#endif
