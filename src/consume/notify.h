/* notify.h — wake-ups across nodes. A node tells the others which queues changed (a push
 * committed, an ack gave records back) with NOTIFY on the channel queen_wake, and listens on
 * its own dedicated connection; local waiters are woken directly.
 *
 * NOTIFY is never sent inside a push transaction: PostgreSQL serialises the commits of all
 * notifying transactions of a database, which would serialise every queue's group commit.
 * Instead each node sends one small NOTIFY at most every NOTIFY_COALESCE_MS, naming every queue
 * that changed since the last one. When the listening connection is lost and comes back, every
 * parked waiter is woken once, since notifications may have been missed meanwhile. */
#ifndef QUEEN_CONSUME_NOTIFY_H
#define QUEEN_CONSUME_NOTIFY_H

#include <stdint.h>
#include <uv.h>

#include "consume.h"
#include "db/pg.h"

typedef struct notifier notifier;

notifier *notifier_new(uv_loop_t *loop, db_pool *db, const char *conninfo, const char *node_id, waitq *wq,
                       int64_t statement_timeout_ms, int64_t connect_timeout_ms);
/* A queue changed on this node: wake local waiters now, tell the other nodes soon. */
void notifier_changed(notifier *n, const uint8_t tenant[16], const char *queue, size_t qlen);
void notifier_stop(notifier *n);
uint64_t notifier_sent(const notifier *n);
uint64_t notifier_received(const notifier *n);
int notifier_listening(const notifier *n);

#endif
