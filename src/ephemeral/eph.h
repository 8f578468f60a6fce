/* eph.h — ephemeral (RAM) queues: the 2.x client's `client.ephemeral` surface, per node.
 *
 * NOT DURABLE. Contents and configuration live in this process's memory only: a restart, a
 * crash or another node knows none of it, and a message id of an earlier incarnation answers
 * `stale`. Nothing here touches PostgreSQL.
 *
 * A queue (per tenant) holds partitions, each a FIFO ring of JSON payloads numbered by a
 * sequence; groups (a named group, or queue mode) each have a cursor per partition, the
 * messages they have in flight under a lease, and the ones waiting to be redelivered. Bounds:
 * per queue `maxLength` and `maxBytes` with `policy` reject (a push that does not fit is
 * refused whole) or drop_oldest (the oldest messages make room), `ttlSeconds` (older messages
 * are dropped), and one node-wide byte budget (a push over it is refused). A message leaves the
 * ring once every group that exists has acked it, or when a bound drops it.
 *
 * Loop-thread only; pure (no I/O): the caller passes the time in milliseconds. */
#ifndef QUEEN_EPHEMERAL_EPH_H
#define QUEEN_EPHEMERAL_EPH_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/qerr.h"

enum eph_policy { EPH_REJECT = 0, EPH_DROP_OLDEST = 1 };

typedef struct eph_opts {
    int64_t max_bytes;   /* 0 = the default */
    int64_t max_length;  /* 0 = the default */
    int policy;
    int64_t ttl_ms;      /* 0 = none */
    int64_t lease_ms;
    int64_t retry_limit; /* redeliveries after the first delivery, then dropped */
    int64_t window_ms;   /* windowBuffer: a waiting pop may wait this long for `window_count` */
    int64_t window_count;
} eph_opts;

#define EPH_DEFAULT_MAX_BYTES (64ll << 20)
#define EPH_DEFAULT_MAX_LENGTH 1000000ll
#define EPH_DEFAULT_LEASE_MS 30000ll
#define EPH_DEFAULT_RETRY_LIMIT 3ll
#define EPH_MSG_OVERHEAD 64 /* bytes counted per message beside its payload */

void eph_opts_default(eph_opts *o);

enum eph_outcome { EPH_ACKED = 0, EPH_REDELIVERED, EPH_STALE, EPH_UNKNOWN };
enum eph_status { EPH_COMPLETED = 0, EPH_FAILED, EPH_RETRY };

typedef struct eph eph;

/* incarnation: this process's random 64-bit id, written into every message id */
eph *eph_new(uint64_t incarnation, int64_t node_max_bytes);
void eph_free(eph *e);

/* Creates or reconfigures (contents kept; bounds apply from the next push). 1 created, 0 not. */
int eph_configure(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const eph_opts *o);
/* Drops every message, lease and cursor; keeps the configuration. Messages dropped. */
uint64_t eph_reset(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen);
/* 1 deleted, 0 there was none. */
int eph_delete(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen);

/* All or nothing: n payloads (JSON texts) into (queue, partition), creating either. QERR_OK;
 * QERR_LIMIT when the queue has no room (code ephemeral_queue_full, reason queue_full);
 * QERR_UNAVAILABLE when the node's bound is reached (ephemeral_node_full, node_full). Both
 * details are written for the client: the route answers them as they are. */
qerr eph_push(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *part, size_t plen,
              const char *const *payloads, const size_t *lens, uint32_t n, int64_t now_ms, qerr_detail *err);

/* One delivered message; id is the opaque text the ack names. partition and payload are copies
 * in the caller's arena. */
typedef struct eph_msg {
    char id[64];
    const char *partition;
    size_t partition_len;
    const char *payload;
    size_t payload_len;
    uint32_t attempts;
} eph_msg;

/* Up to `batch` messages for `group` (NULL/"" = queue mode) from `part` (NULL = any partition,
 * round robin). auto_ack commits at delivery (no lease). Returns the count written to out. */
uint32_t eph_pop(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *part, size_t plen,
                 const char *group, size_t glen, uint32_t batch, int auto_ack, int64_t now_ms, arena *ar,
                 eph_msg *out);

int eph_ack(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *group, size_t glen,
            const char *id, size_t idlen, int status, int64_t now_ms);

/* Messages a pop of this group could take now (0 when the queue does not exist). */
uint64_t eph_available(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, const char *part,
                       size_t plen, const char *group, size_t glen, int64_t now_ms);
/* The earliest lease expiry of the queue (0 = none): when a waiting pop should look again. */
int64_t eph_next_expiry(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen);
int eph_options(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, eph_opts *out);

/* JSON writers: the queue's depth object (-1 when the queue does not exist), and the tenant's
 * queues ({"queues":[...]}). */
int eph_depth_json(eph *e, const uint8_t tenant[16], const char *queue, size_t qlen, int64_t now_ms, buf *b);
void eph_list_json(eph *e, const uint8_t tenant[16], int64_t now_ms, buf *b);

/* Node-wide gauges for /metrics. */
typedef struct eph_stats {
    uint64_t queues, messages, bytes, pushed, delivered, acked, redelivered, dropped_ttl, dropped_policy,
        dropped_retries, refused_full;
} eph_stats;
void eph_get_stats(const eph *e, eph_stats *s);

#endif
