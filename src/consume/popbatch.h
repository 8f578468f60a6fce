/* popbatch.h — the group commit for pops: lanes, merging and partition hints.
 *
 * Pops of one queue that ask for the same thing (group, batch, autoAck, subscription, lease
 * time, width, declared conflation) share a lane; the first runs at once, and the pops that arrive while it is in
 * flight run together as one call of queen.pop_v2 that claims one partition per pop, so one
 * commit (durable for autoAck) serves them all. A pop of a named partition, of a namespace, or
 * of several partitions runs on its own. Unless autoAck, a second call (queen.lease_store_v1)
 * records the transactionIds each lease delivered, so acks by transactionId find their offsets.
 *
 * The caller (api/api_pop.c) owns a pop_job per request and shapes the answers through its
 * ops; this file owns the calls, the lanes and the lease store. Loop thread only. */
#ifndef QUEEN_CONSUME_POPBATCH_H
#define QUEEN_CONSUME_POPBATCH_H

#include <stdint.h>

#include "consume.h"
#include "db/pg.h"
#include "metrics/metrics.h"

/* Pops merged into one call at most: one partition each, so more than a queue's partitions
 * only adds empty answers; 32 keeps the lease array and the answer of one call small. */
#define POP_MERGE_MAX 32

typedef struct pop_job pop_job;
typedef struct pop_lane pop_lane;

typedef struct pop_job_ops {
    /* The job claimed its n-th partition (n from 1) under `lease`; before its records. */
    void (*claim)(pop_job *j, int n, const popped_partition *p, const uuid *lease);
    /* A record the job delivers (deleted records are not passed), with its transactionId. */
    void (*record)(pop_job *j, const popped_partition *p, const record_view *v, int64_t ts, const char *txn,
                   size_t txn_len, const uuid *lease);
    /* The job claimed nothing in this call: park it (then pop_job_submit again) or answer. */
    void (*nothing)(pop_job *j, const pop_outcome *out);
    /* Its claims are committed (and, unless autoAck, its transactionIds stored): answer. */
    void (*deliver)(pop_job *j);
    /* The call failed: d is the database's failure, or (d NULL) msg says what broke. */
    void (*fail)(pop_job *j, const db_req *d, const char *msg);
} pop_job_ops;

struct pop_job {
    /* set by the caller before pop_job_prepare */
    const pop_job_ops *ops;
    db_pool *db;
    mcounter *pops;      /* counts the pops that reached a decoded answer (NULL: none) */
    mcounter *conflated; /* counts the records conflating claims retired (NULL: none) */
    pop_args args;
    /* set by pop_job_prepare */
    pop_lane *lane;      /* NULL for a named partition or a namespace pop */
    int mergeable;
    /* read-only for the caller: partitions claimed in the current call, and the group's
     * delivery policy as that call reported it (pop_outcome: policy, conflation, conflict) */
    int claimed;
    int policy, conflation, conflict;
    /* private */
    int queued;          /* waiting in its lane for the next call */
    int in_db;           /* part of a call in flight */
    pop_job *next;
};

/* Finds (or makes) the job's lane from its args. */
void pop_job_prepare(pop_job *j);
/* Runs the job now, or queues it behind its lane's call in flight. */
void pop_job_submit(pop_job *j);
/* The client left: 0 when a call in flight holds the job (that call answers through its ops),
 * else 1 after taking it off its lane's queue (the caller answers and unparks it). */
int pop_job_abandon(pop_job *j);

/* Records were pushed to this partition: lanes popping its queue try it first. */
void pop_lanes_hint(const uint8_t tenant[16], const char *queue, size_t qlen, uint64_t partition_id);

#endif
