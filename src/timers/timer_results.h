/* timer_results.h — the results of the timer functions, by name (db/results.h):
 * src/db/functions/timers_fire_v2.sql and timer_ops_v1.sql. Checked against the database by
 * tests/unit/test_db_results.c. */
#ifndef QUEEN_TIMERS_TIMER_RESULTS_H
#define QUEEN_TIMERS_TIMER_RESULTS_H

#include "db/results.h"

/* queen.timers_fire_v2: one row */
#define TIMERS_FIRE_V2_COLUMNS(X)                                                                              \
    X(FIRE_FIRED, o_fired, int4)                                                                               \
    X(FIRE_DUPLICATES, o_duplicates, int4)                                                                     \
    X(FIRE_MORE, o_more, bool)             /* more were due than the round took */                            \
    X(FIRE_MAX_LAG_US, o_max_lag_us, int8) /* the largest delay past fire_at */                               \
    X(FIRE_NEXT_IN_US, o_next_in_us, int8) /* NULL: no timer; <= 0: due, held by another round */             \
    X(FIRE_UNSEALED, o_unsealed, int4)     /* plaintext timers of encrypted queues left for sealing */
enum timers_fire_col { TIMERS_FIRE_V2_COLUMNS(DB_COL_ENUM) TIMERS_FIRE_NCOLS };

/* queen.timer_ops_v1: one row per op, in key order (o_index, from 1, is the op's place) */
#define TIMER_OPS_V1_COLUMNS(X)                                                                                \
    X(TIMER_OPS_INDEX, o_index, int4)                                                                          \
    X(TIMER_OPS_STATUS, o_status, int4)         /* enum timer_status (timers.h) */                            \
    X(TIMER_OPS_TXN, o_txn, text)               /* NULL: an absent cancel that named none */                  \
    X(TIMER_OPS_DELIVER_AT, o_deliver_at, int8) /* µs on the database's clock; NULL when absent */            \
    X(TIMER_OPS_IN_US, o_in_us, int8)           /* scheduled: due in this many µs; else NULL */
enum timer_ops_col { TIMER_OPS_V1_COLUMNS(DB_COL_ENUM) TIMER_OPS_NCOLS };

#endif
