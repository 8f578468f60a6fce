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

#endif
