/* consume.h — reading as a consumer group: pop (claim partitions under a lease), the lease's
 * transactionIds, ack, lease extension; and the wait queue that parks long-polls until a push,
 * an ack or a lease expiry may have made records available.
 *
 * Like storage/logread.h, each operation is SQL text + parameter builder + result decoder, so
 * HTTP handlers and in-process callers (streams) share them. */
#ifndef QUEEN_CONSUME_CONSUME_H
#define QUEEN_CONSUME_CONSUME_H

#include <libpq-fe.h>
#include <stdint.h>
#include <uv.h>

#include "consume_results.h"
#include "popdec.h"
#include "core/buf.h"
#include "core/uuid.h"
#include "storage/logread.h"
#include "storage/record.h"

#define QUEUE_MODE_GROUP "__QUEUE_MODE__"
/* A pop never leases more than this many records: a lease's transactionIds are one row's array. */
#define POP_MAX_BATCH 10000
#define POP_MAX_PARTITIONS 100

typedef struct pop_args {
    uint8_t tenant[16];
    const char *queue;
    const char *partition;   /* NULL: any partition of the queue */
    const char *group;       /* QUEUE_MODE_GROUP for queue mode */
    int64_t batch;
    int auto_ack;
    const char *sub_mode;    /* "new" or NULL */
    int64_t sub_from;        /* µs, 0 = none */
    int64_t max_partitions;
    int64_t lease_seconds;   /* 0 = the queue's leaseTime */
    int split;               /* batch is per claim (merged pops), not for the whole call */
    const uuid *leases;      /* lease id of claim k; nleases >= 1 */
    uint32_t nleases;
    const uint64_t *hints;   /* partitions to try first (NULL: scan first) */
    uint32_t nhints;
    const char *ns;          /* non-NULL: pop over the queues of this namespace (queue unused) */
    const char *task;        /* with ns: only queues of this task (NULL = any) */
    int conflation;          /* the pop declares conflation=true (the group's stored policy wins) */
} pop_args;

/* The wait-queue name under which namespace pops park: woken by any change in the tenant. */
#define WAITQ_ANY_QUEUE "\x01*"

extern const char POP_SQL[];
extern const char POP_NS_SQL[];
/* p->arr[0] holds the lease array: free with sql_params_free. */
void pop_params(const pop_args *a, sql_params *p);

/* Decodes a pop result: calls on_record for each record in the claimed ranges, in partition
 * then offset order. Returns 0, or -1 when a segment is corrupt. */
int pop_decode(PGresult *res, pop_record_fn on_record, pop_partition_fn on_partition, void *arg,
               pop_outcome *out);

/* lease_store: the transactionIds each lease delivered, per claimed partition */
extern const char LEASE_STORE_SQL[];
typedef struct lease_store {
    sql_params sp;
    pgarray leases, pids, counts, txns;
} lease_store;
void lease_store_init(lease_store *ls);
void lease_store_add_partition(lease_store *ls, const uuid *lease, uint64_t pid, uint32_t count);
void lease_store_add_txn(lease_store *ls, const char *txn, size_t len);
void lease_store_add_deleted(lease_store *ls); /* a deleted record: a NULL transactionId, done at once */
void lease_store_finish(lease_store *ls, const char *group);
void lease_store_free(lease_store *ls);

/* ack: rows as enum ack_col; lease extension: enum lease_extend_col (consume_results.h) */
extern const char ACK_SQL[];
extern const char LEASE_EXTEND_SQL[];

/* Wait queue: parked long-polls, keyed by (tenant, queue). Loop-thread only. */
typedef struct waiter waiter;
typedef void (*waiter_fn)(waiter *w, int timed_out);
struct waiter {
    /* public: set before waitq_park */
    waiter_fn wake;
    void *arg;
    uint64_t deadline_ms;  /* monotonic ms: wake with timed_out = 1 */
    uint64_t recheck_ms;   /* monotonic ms: wake with timed_out = 0 (0 = none) */
    /* private */
    waiter *prev, *next;
    uint32_t slot;
    int parked;
};

typedef struct waitq waitq;
waitq *waitq_new(uv_loop_t *loop);
void waitq_park(waitq *q, waiter *w, const uint8_t tenant[16], const char *queue, size_t qlen);
void waitq_unpark(waitq *q, waiter *w);
/* Wakes every waiter of (tenant, queue). */
void waitq_wake(waitq *q, const uint8_t tenant[16], const char *queue, size_t qlen);
void waitq_wake_all(waitq *q);
int waitq_count(const waitq *q);
/* Times every waiter out now (shutdown). */
void waitq_close(waitq *q);

#endif
