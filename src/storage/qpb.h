/* qpb.h — the 2.x binary push body (QPB1), decoded into the items of an ordinary push.
 *
 *   "QPB1" | u8 flags | [u32 raw_len, flag 1] | body                      (little-endian)
 *   body (flags 0/1/2/4): u32 groups | per group: u16 len+queue | u16 len+partition | u32 n
 *                         | n × ([u16 len+transactionId, flag 4] | u32 len+payload JSON)
 *   body (flag 8):        u32 groups | per group: u16 len+queue | u16 len+partition | u32 n
 *                         | u32 z_len | z, one zstd frame of n frames:
 *                           u32 body_len | u8 0 | 16-byte message id | u16 len+txn | payload JSON
 *
 * Flags: 1 the body is one zstd frame of raw_len bytes, 2 answer with counts only, 4 every item
 * carries a transactionId ("" = the broker mints one), 8 the groups are pre-framed and
 * compressed by the producer. Everything is checked before anything is stored: names (1..255
 * bytes of UTF-8 without NUL), transaction ids (at most 255 bytes of UTF-8 without NUL), every
 * payload one JSON text, every frame's lengths, flag byte and version-7 id, every zstd frame
 * exactly one frame that declares its content size, and the decompressed total bounded by the
 * caller's limit. A refusal names the group and the item (or frame) at fault.
 *
 * Pure: no I/O. Every output points into the input or into the arena. */
#ifndef QUEEN_STORAGE_QPB_H
#define QUEEN_STORAGE_QPB_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

#define QPB_FLAG_ZSTD 1u
#define QPB_FLAG_COUNTS 2u
#define QPB_FLAG_TXN 4u
#define QPB_FLAG_FRAMES 8u
#define QPB_NAME_MAX 255u
#define QPB_TXN_MAX 255u

#define QPB_CONTENT_TYPE "application/x-queen-push"

typedef struct qpb_item {
    const char *queue;
    uint32_t queue_len;
    const char *partition;
    uint32_t partition_len;
    const char *txn; /* NULL/0: the broker mints one */
    uint32_t txn_len;
    const char *payload; /* one JSON text, validated */
    uint32_t payload_len;
    uint8_t has_id;      /* flag 8: the producer's message id */
    uint8_t id[16];
    uint32_t group;      /* 0-based group, and index inside it */
    uint32_t pos;
} qpb_item;

/* flag 8: a group's zstd frame as sent, and its items (items[first .. first+n)) */
typedef struct qpb_zgroup {
    const uint8_t *z;
    size_t zlen;
    uint32_t first, n;
} qpb_zgroup;

typedef struct qpb_body {
    uint8_t flags;
    uint32_t groups;
    uint32_t n;
    qpb_item *items; /* in wire order */
    qpb_zgroup *zgroups; /* flag 8: one per group; else NULL */
    size_t raw_bytes; /* decompressed bytes this body expanded to */
} qpb_body;

/* Where a refusal points: reason is a stable id (bad_magic, bad_flags, truncated, zstd_invalid,
 * too_large, bad_queue, bad_partition, bad_transaction_id, bad_payload, bad_frame, bad_message_id,
 * trailing_bytes); group and item are 0-based, -1 when the fault is not inside one. */
typedef struct qpb_error {
    const char *reason;
    int64_t group;
    int64_t item;
    char detail[256];
} qpb_error;

/* 1 when the body starts with the QPB1 magic. */
int qpb_is(const void *body, size_t len);

/* Decodes body into out. max_raw bounds what the body may expand to (the decompressed bytes of
 * flag 1 and of every flag-8 group together); a plain body is bounded by its own length.
 * 0 on success, -1 with *e filled. */
int qpb_decode(const void *body, size_t len, size_t max_raw, arena *ar, qpb_body *out, qpb_error *e);

/* The binary transaction body: "QTB1" | u8 flags | u32 len + head JSON | u32 groups | the
 * groups as QPB1 flag 8. head is the JSON transaction body without its pushes (its span in the
 * input, not checked here); the only known flag is 2 (counts). 0, or -1 with *e filled. */
int qtb_is(const void *body, size_t len);
int qtb_decode(const void *body, size_t len, size_t max_raw, arena *ar, const char **head, size_t *head_len,
               uint8_t *flags, qpb_body *out, qpb_error *e);

#endif
