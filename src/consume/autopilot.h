/* autopilot.h — pop sizing for the 2.x knobs (`autopilot=true`, `partitions`, `batch`).
 *
 * A 2.x client that leaves batch and/or partitions unset sends autopilot=true and lets the
 * broker size them; whatever the client set is kept as it is (its values are "sacred"). The
 * broker fills the unset ones and echoes what it used as `autopilot: {partitions, batch,
 * waitMs}`. A pop without autopilot=true keeps the 0.15 defaults (the node's default batch,
 * one partition) and carries no echo.
 *
 * The sizing needs no state: the budget of a multi-partition sweep is shared (pop_v1 stops
 * claiming once `batch` records are claimed), so a wide sweep over one busy partition claims
 * that partition alone, and over many sparse ones claims up to `partitions` of them. The
 * width only caps how many leases one consumer may take at once.
 *
 * Pure: no libuv, no libpq. docs/http-api.md (pop) has the wire. */
#ifndef QUEEN_CONSUME_AUTOPILOT_H
#define QUEEN_CONSUME_AUTOPILOT_H

#include <stdint.h>

/* The message budget of an autopilot pop whose client left batch unset. The 2.x client's
 * notes name 200 as the broker's own default. */
#define AUTOPILOT_BATCH 200
/* The sweep width of an autopilot pop whose client left partitions unset (never wider than
 * its batch: a sweep claims at least one record per partition). Wide enough to drain sparse
 * partitions in one round trip, narrow enough that one consumer does not lease a group's
 * whole queue. */
#define AUTOPILOT_MAX_PARTITIONS 8
/* waitMs of an empty answer when nothing is known to become ready (the client's own pacing
 * between non-waiting empty polls), and the bounds of the advice when something is. */
#define AUTOPILOT_IDLE_WAIT_MS 100
#define AUTOPILOT_MIN_WAIT_MS 10
#define AUTOPILOT_MAX_WAIT_MS 1000

typedef struct pop_sizing {
    int autopilot;          /* the request asked for it */
    int batch_set;          /* the client sent batch */
    int partitions_set;     /* the client sent partitions */
    int64_t batch;          /* in: the client's (when set); out: the budget to use */
    int64_t partitions;     /* in: the client's (when set); out: the width to use */
} pop_sizing;

/* Fills the knobs the request left unset: with autopilot, AUTOPILOT_BATCH and a width of
 * min(AUTOPILOT_MAX_PARTITIONS, batch); without, default_batch and one partition. The result
 * stays within [1, max_batch] and [1, max_partitions]. */
void pop_size(pop_sizing *s, int64_t default_batch, int64_t max_batch, int64_t max_partitions);

/* The pacing advice of an answer: 0 (none) when it delivered records; for an empty one, the
 * time until records are known to become ready (retry_at_us, µs since the epoch, 0 = unknown)
 * within [AUTOPILOT_MIN_WAIT_MS, AUTOPILOT_MAX_WAIT_MS], else AUTOPILOT_IDLE_WAIT_MS. */
int64_t pop_wait_advice_ms(int delivered, int64_t retry_at_us, int64_t now_us);

#endif
