/* uuid.h — 16-byte identifiers: UUIDv7 for server-made transaction ids and lease ids, and the
 * message id, a UUIDv8 that packs (partition id, offset) so it needs no storage and can be
 * turned back into a position in the log. */
#ifndef QUEEN_CORE_UUID_H
#define QUEEN_CORE_UUID_H

#include <stddef.h>
#include <stdint.h>

typedef struct uuid {
    uint8_t b[16];
} uuid;

#define UUID_STR_LEN 36

void uuid_v7(uuid *out);                  /* time-ordered, strictly increasing per thread */
void uuid_format(const uuid *u, char out[UUID_STR_LEN + 1]);
int uuid_parse(const char *s, size_t n, uuid *out); /* 0 ok, -1 not a canonical 8-4-4-4-12 hex UUID */

/* Message id layout: partition id (48 bits) | version 8 | offset bits 73..62 (12 bits) |
 * variant 10 | offset bits 61..0. */
void uuid_message_id(uint64_t partition_id, uint64_t offset, uuid *out);
int uuid_message_id_decode(const uuid *u, uint64_t *partition_id, uint64_t *offset);

/* Fast non-cryptographic random (per thread, seeded from getrandom). */
uint64_t rand_u64(void);

#endif
