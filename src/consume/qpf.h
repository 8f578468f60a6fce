/* qpf.h — the framed pop answer QPF1 (application/x-queen-pop), the answer to a pop with
 * frames=true as the 2.x client (queen-mq 2.6.0, Queen(framed_pop=True)) decodes it:
 *
 *   "QPF1" | u8 1 | u32 len + JSON object (the answer's own keys, e.g. autopilot)
 *   | u16 queue | u16 leaseId | u16 consumerGroup | u32 claims
 *   claim:  u64 partitionId | u16 partition | u64 start | u64 end (inclusive) | u32 deliveryAttempt
 *           | u32 records
 *   record: u64 base_offset | i64 created_at_us | u32 count | u8 codec (0 raw) | u32 len | frames
 *   frame:  u32 body_len | u8 flags | 16B message id | [16B trace id, flag 1] | u16 txn
 *           | [u16 producer, flag 2] | payload JSON
 *
 * All little-endian. The writer is fed the delivered messages of each claim in offset order and
 * groups them into records: a record is a run of consecutive offsets with the same created_at
 * (one stored segment, or the part of it the claim covers, split where a deleted record is
 * skipped). Frames always carry the plaintext: the caller opens sealed payloads first, and flag 4
 * (encrypted) is never set. docs/http-api.md (Pop, framed) and docs/storage.md have the choices.
 *
 * Pure (no libuv, no libpq): unit-tested and fuzzed (tests/unit/test_qpf.c, tests/fuzz/fuzz_qpf.c). */
#ifndef QUEEN_CONSUME_QPF_H
#define QUEEN_CONSUME_QPF_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define QPF_MAGIC "QPF1"
#define QPF_CONTENT_TYPE "application/x-queen-pop"
#define QPF_VERSION 1
#define QPF_FLAG_TRACE 1
#define QPF_FLAG_PRODUCER 2
#define QPF_FLAG_ENCRYPTED 4
#define QPF_CODEC_RAW 0
#define QPF_CODEC_ZSTD 1

typedef struct qpf_writer {
    buf body;            /* from the queue field on; the head is written by qpf_finish */
    uint32_t claims;
    size_t claim_records_at; /* offset of the open claim's u32 records (0: none open) */
    uint32_t claim_records;
    int in_claim;
    uint64_t claim_start, claim_end; /* inclusive */
    int in_record;
    size_t rec_count_at;  /* offset of the open record's u32 count; its u32 len follows the codec */
    uint32_t rec_count;
    int64_t rec_ts;
    uint64_t rec_next;    /* the offset that would continue the open record */
    uint64_t claim_next;  /* the lowest offset the open claim may take next */
    uint64_t messages;
} qpf_writer;

/* Starts an answer; queue, lease (the lease id text, "" for autoAck) and group are its head.
 * max bounds the answer's size (0: none). -1 when a name is longer than 65535 bytes. */
int qpf_begin(qpf_writer *w, size_t max, const char *queue, size_t ql, const char *lease, size_t ll,
              const char *group, size_t gl);

/* Opens a claim (closing the one before): first..last are the claimed offsets (inclusive). */
int qpf_claim(qpf_writer *w, uint64_t partition_id, const char *name, size_t nl, uint64_t first, uint64_t last,
              uint32_t delivery_attempt);

/* Adds a delivered message of the open claim (offsets ascending, within the claim). trace and
 * producer may be NULL; payload is the plaintext JSON (len 0: none, read back as null).
 * -1 when it does not fit the format (txn or producer longer than 65535 bytes, an offset outside
 * the claim or not ascending, no claim open) or the answer passed its max. */
int qpf_message(qpf_writer *w, uint64_t offset, int64_t created_at_us, const uint8_t id[16],
                const uint8_t *trace, const char *txn, size_t tl, const char *producer, size_t pl,
                const char *payload, size_t plen);

/* Adds count messages of the open claim, base_offset .. base_offset+count-1 (ascending, within the
 * claim), as one record of codec 1 whose bytes are z: a zstd frame of their frames exactly as
 * the producer sent them (a codec-1 segment's chunk, storage/record.h). -1 as qpf_message. */
int qpf_stored(qpf_writer *w, uint64_t base_offset, int64_t created_at_us, uint32_t count, const uint8_t *z,
               size_t zlen);

/* The whole answer into out (appended): magic, version 1, extra (a JSON object text, NULL or
 * empty: "{}"), then the body. Frees the writer. -1 when it overflowed its max. */
int qpf_finish(qpf_writer *w, const char *extra, size_t el, buf *out);

/* Drops an answer not finished. */
void qpf_free(qpf_writer *w);

#endif
