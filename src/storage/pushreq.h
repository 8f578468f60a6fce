/* pushreq.h — reading one item of a push body (POST /api/v1/push, and the pushes of
 * transactions and streams) into a push_item. Pure: no libuv, no libpq. */
#ifndef QUEEN_STORAGE_PUSHREQ_H
#define QUEEN_STORAGE_PUSHREQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/qerr.h"
#include "json/json.h"
#include "pushenc.h"

/* names are stored as PostgreSQL text: bounded, and no NUL byte */
#define PUSH_NAME_MAX_BYTES 255
#define PUSH_TXN_MAX_BYTES 255

/* Reads and validates the item at token `it` (index i of its array) into pi: queue (required),
 * partition ("Default" when absent), transactionId (a UUIDv7 is generated when absent or
 * empty; a given one is the producer's and deduplicated), traceId (a UUID), payload (a span of
 * the body, any JSON). Strings are copied into ar. Returns QERR_OK, or QERR_BAD_INPUT with the
 * sentence in err (core/qerr.h). */
qerr push_item_read(arena *ar, const json_doc *d, int it, uint32_t i, push_item *pi, qerr_detail *err);

#endif
