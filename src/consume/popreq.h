/* popreq.h — reading a pop's query string (GET /api/v1/pop/...: consumerGroup, batch,
 * partitions, timeout, wait, autoAck, subscriptionMode, subscriptionFrom and the 2.x knobs
 * autopilot, conflation, frames) into pop_args. Pure: no libuv, no libpq. */
#ifndef QUEEN_CONSUME_POPREQ_H
#define QUEEN_CONSUME_POPREQ_H

#include <stdint.h>

#include "autopilot.h"
#include "consume.h"
#include "core/qerr.h"
#include "http/url.h"

typedef struct pop_defaults {
    int64_t batch;          /* QUEEN_DEFAULT_BATCH_SIZE */
    int64_t timeout_ms;     /* the long poll's default timeout */
    int subscription_mode;  /* 1 or 2: a pop without subscriptionMode starts at "new" */
} pop_defaults;

typedef struct pop_request {
    pop_args args;          /* in: tenant, queue, partition, ns, task; out: the rest */
    pop_sizing sizing;      /* batch and width; with sizing.autopilot, echoed in every answer */
    int has_group;          /* consumerGroup was given (else queue mode) */
    int wait;
    int64_t timeout_ms;
    int conflation;         /* conflation=true (also in args): the caller checks group and autoAck */
    int frames;             /* frames=true: the caller answers QPF1 (consume/qpf.h) when it can */
} pop_request;

/* Reads q into r (args.tenant/queue/partition/ns/task set by the caller first). QERR_OK, or
 * QERR_BAD_INPUT with the sentence (and code invalid_request for the 2.x knobs). Values
 * borrow from q. */
qerr pop_request_read(const url_query *q, const pop_defaults *def, pop_request *r, qerr_detail *err);

#endif
