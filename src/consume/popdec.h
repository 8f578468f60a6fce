/* popdec.h — decoding the rows of queen.pop_v2 / pop_ns_v2 (consume_results.h): claims, the
 * segments of each claim cut to its offsets, hints and the empty outcome. Pure: the rows come
 * as plain values (consume/pop.c reads them from the PGresult), so the decoder is unit-tested
 * and fuzzed offline. */
#ifndef QUEEN_CONSUME_POPDEC_H
#define QUEEN_CONSUME_POPDEC_H

#include <stddef.h>
#include <stdint.h>

#include "consume_results.h"
#include "storage/record.h"

typedef struct popped_partition {
    int index;               /* claim number, from 0: claim k holds lease leases[k] */
    uint64_t id;
    const uint8_t *uuid;
    const char *name;
    size_t name_len;
    int64_t start, end;      /* claimed offsets [start, end) */
    int64_t lease_expires;   /* µs */
    const char *queue;       /* namespace pops: the queue of this claim (else NULL) */
    size_t queue_len;
    int more;                /* the partition holds records past `end` */
    uint32_t attempt;        /* the delivery attempt: the cursor's retry count + 1 (failed acks) */
} popped_partition;

typedef void (*pop_record_fn)(void *arg, const popped_partition *p, const record_view *v, int64_t ts);
/* Called for each claimed partition (after its records), and for each scanned candidate the
 * call did not claim (p->index = -1, only p->id set). */
typedef void (*pop_partition_fn)(void *arg, const popped_partition *p);

typedef struct pop_outcome {
    int claimed;          /* partitions claimed */
    uint64_t records;
    char why[32];         /* when nothing was claimed: queue_not_found, partition_not_found, lease_held,
                           * window_buffer, empty */
    int64_t retry_at;     /* µs: when records may become available without a push (0 = unknown) */
    int policy;           /* the call said the group's delivery policy (a named group's pop) */
    int conflation;       /* with policy: the group conflates (last-value delivery) */
    int conflict;         /* with policy: the pop declared the other policy (the stored one applied) */
    uint64_t conflated;   /* records conflating claims retired without delivering them */
} pop_outcome;

/* One row of the result, as values (integers already decoded from their binary form). */
typedef struct pop_row {
    int32_t kind;             /* enum pop_row_kind */
    uint64_t pid;
    const uint8_t *puuid;     /* 16 bytes */
    const char *pname;
    size_t pname_len;
    int64_t a, b, c, seg_ts;  /* NULL reads as 0; a claim's seg_ts is its delivery attempt */
    int seg_ts_null;
    int seg_count_null;
    int32_t seg_count;
    const uint8_t *seg_data;
    size_t seg_len;
    const char *qname;        /* pop_ns_v1: the claim's queue; NULL otherwise */
    size_t qname_len;
} pop_row;

typedef struct pop_decoder {
    pop_record_fn on_record;
    pop_partition_fn on_partition; /* may be NULL */
    void *arg;
    pop_outcome *out;
    popped_partition cur;
    int claims, have;
} pop_decoder;

void pop_decoder_init(pop_decoder *d, pop_record_fn on_record, pop_partition_fn on_partition, void *arg,
                      pop_outcome *out);
/* Feeds one row; 0, or -1 when a segment is corrupt (decoding stops). The row's bytes must
 * live until pop_decoder_end (the current claim points into them). */
int pop_decoder_row(pop_decoder *d, const pop_row *r);
/* After the last row: reports the last claim to on_partition. */
void pop_decoder_end(pop_decoder *d);

#endif
