/* record.h — the encoding of records inside a segment (pure: no I/O).
 *
 * A segment's data is a version byte followed by its records, in offset order:
 *   record  := flags:u8 [txn] [trace:16] [producer] payload
 *   txn     := 16 raw bytes            when flags & REC_TXN_UUID (a lowercase canonical UUID)
 *            | varint len, bytes       otherwise
 *   producer:= varint len, bytes       when flags & REC_PRODUCER
 *   payload := varint len, bytes       (len 0 = the payload was empty: read back as null)
 * Offsets are implicit (the segment's base offset + position) and every record carries the
 * segment's stamp, so neither is stored per record. */
#ifndef QUEEN_STORAGE_RECORD_H
#define QUEEN_STORAGE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define SEGMENT_VERSION 1

#define REC_TXN_UUID 0x01u
#define REC_TRACE 0x02u
#define REC_PRODUCER 0x04u
#define REC_ENCRYPTED 0x08u    /* payload bytes are sealed (AES-256-GCM envelope) */
#define REC_TXN_PRODUCER 0x10u /* the transactionId came from the producer (not generated) */
#define REC_DELETED 0x20u      /* deleted (DELETE /api/v1/messages): txn kept, no trace, producer or payload */
#define REC_KNOWN_FLAGS 0x3fu

typedef struct record_in {
    const char *txn;       /* transactionId text */
    size_t txn_len;
    int txn_producer;      /* came from the producer */
    const uint8_t *trace;  /* 16 bytes or NULL */
    const char *producer;  /* producer identity (JWT sub) or NULL */
    size_t producer_len;
    const char *payload;   /* raw JSON text, or NULL/0 for empty */
    size_t payload_len;
    int encrypted;
} record_in;

typedef struct record_view {
    uint64_t offset;
    uint8_t flags;
    const uint8_t *txn; /* 16 raw bytes when flags & REC_TXN_UUID */
    size_t txn_len;
    const uint8_t *trace;
    const char *producer;
    size_t producer_len;
    const char *payload;
    size_t payload_len;
} record_view;

typedef struct seg_reader {
    const uint8_t *p, *end;
    uint64_t next_offset;
    uint32_t remaining;
} seg_reader;

void segment_begin(buf *out);
int record_encode(buf *out, const record_in *r);
size_t record_encoded_size(const record_in *r);

/* Returns 0, or -1 when the header is not a segment this build understands. */
int seg_reader_init(seg_reader *s, const uint8_t *data, size_t len, uint64_t base_offset, uint32_t count);
/* 1 = a record, 0 = end (all `count` records read and no bytes left), -1 = corrupt. */
int seg_reader_next(seg_reader *s, record_view *out);

/* Writes the transactionId text of a record (UUIDs formatted back) to out; returns length. */
size_t record_txn_text(const record_view *v, char *out, size_t cap);
/* Whether text is a lowercase canonical UUID (stored as 16 bytes). */
int txn_is_lower_uuid(const char *s, size_t n);

#endif
