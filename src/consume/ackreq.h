/* ackreq.h — reading the acknowledgments of POST /api/v1/ack and /api/v1/ack/batch. Pure: no
 * libuv, no libpq. */
#ifndef QUEEN_CONSUME_ACKREQ_H
#define QUEEN_CONSUME_ACKREQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/qerr.h"
#include "core/uuid.h"
#include "json/json.h"

typedef struct ack_item {
    const char *txn;
    size_t txn_len;
    uuid part;
    const char *status; /* "completed" when absent; ack_v1 checks the value */
    int has_lease;
    uuid lease;
    const char *error;  /* NULL when absent */
} ack_item;

/* An ack's partitionId: a partition UUID (the JSON answers'), or the decimal u64 partition id a
 * framed pop (QPF1) gave, 1..2^63-1, passed on as the uuid 00000000-0000-0000-<id, 16 hex digits>
 * that queen.ack_v1 resolves by id. 0, or -1 when it is neither. */
int ack_partition_ref(const char *s, size_t n, uuid *out);

/* Reads the acknowledgment object at token t (index i of the batch's array; batch = 0 for a
 * single ack, whose messages differ as the earlier release's do): transactionId and
 * partitionId (ack_partition_ref) required, status, leaseId (a UUID), error optional. Strings are
 * copied into ar. Returns QERR_OK, or QERR_BAD_INPUT with the sentence in err (core/qerr.h). */
qerr ack_item_read(arena *ar, const json_doc *d, int t, int batch, uint32_t i, ack_item *it, qerr_detail *err);

#endif
