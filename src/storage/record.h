/* record.h — the encoding of records inside a segment (pure: no I/O).
 *
 * A segment's data starts with its codec byte. Codec 0 (byte SEGMENT_VERSION = 1) is a run of
 * our records, in offset order:
 *   record  := flags:u8 [txn] [trace:16] [producer] payload
 *   txn     := 16 raw bytes            when flags & REC_TXN_UUID (a lowercase canonical UUID)
 *            | varint len, bytes       otherwise
 *   producer:= varint len, bytes       when flags & REC_PRODUCER
 *   payload := varint len, bytes       (len 0 = the payload was empty: read back as null)
 * Codec 1 (byte SEGMENT_CHUNKED = 2) keeps producer frame groups as they were sent (QPB1 flag 8):
 *   segment := 0x02 chunk*
 *   chunk   := 0x00 count:varint len:varint records      count records as in codec 0
 *            | 0x01 count:varint plen:varint producer zlen:varint z
 *            | 0x02 ... as 0x01, some frames without a transactionId
 *   z       := one zstd frame (content size in its header) of count frames, each
 *              u32le body_len | u8 0 | 16-byte message id | u16le len + transactionId | payload
 * A frame with an empty transactionId reads back with its message id as the transactionId
 * (what the broker answered at push time); a zstd chunk's producer (plen 0 = none) is every
 * frame's. Offsets are implicit (the segment's base offset + position) and every record carries
 * the segment's stamp, so neither is stored per record. Every reader decodes both codecs through
 * seg_reader (and frees what it inflated with seg_reader_done). */
#ifndef QUEEN_STORAGE_RECORD_H
#define QUEEN_STORAGE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define SEGMENT_VERSION 1 /* codec 0: our records */
#define SEGMENT_CHUNKED 2 /* codec 1: chunks of records and of producer zstd frames */
#define CHUNK_RECORDS 0
#define CHUNK_ZFRAMES 1
#define CHUNK_ZFRAMES_ANON 2 /* the same, with frames without a transactionId (not handed out as stored) */
/* the most a zstd chunk may inflate to (a push body is at most QUEEN_MAX_BODY_BYTES) */
#define CHUNK_MAX_RAW (256u << 20)
/* the smallest producer frame: u32 + u8 + 16 + u16 + a 1-byte payload */
#define ZFRAME_MIN 24u

#define REC_TXN_UUID 0x01u
#define REC_TRACE 0x02u
#define REC_PRODUCER 0x04u
#define REC_ENCRYPTED 0x08u    /* payload bytes are sealed (AES-256-GCM envelope) */
#define REC_TXN_PRODUCER 0x10u /* the transactionId came from the producer (not generated) */
#define REC_DELETED 0x20u      /* deleted (DELETE /api/v1/messages): txn kept, no trace, producer or payload */
#define REC_KNOWN_FLAGS 0x3fu
/* Never inside a segment: the first byte of a dead letter's record that points into a producer's
 * zstd frame (queen.record_at_v1 on a codec-1 segment; admin_record_decode reads it). */
#define REC_ZREF 0x40u

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
    /* inside a codec-1 zstd chunk: the chunk as stored, and this record's index in it */
    const uint8_t *zchunk;
    size_t zchunk_len;
    uint32_t zcount, zindex;
} record_view;

typedef struct seg_mem seg_mem;

typedef struct seg_reader {
    const uint8_t *p, *end; /* codec 0: the records; codec 1: the current chunk's records or frames */
    uint64_t next_offset;
    uint32_t remaining;     /* records left in the segment */
    /* codec 1 */
    uint8_t codec;          /* 0 or 1 */
    uint8_t kind;           /* the current chunk's kind */
    uint32_t chunk_left;    /* records left in the current chunk */
    const uint8_t *cp, *cend; /* the chunks after the current one */
    const char *producer;   /* the current zstd chunk's producer, or NULL */
    size_t producer_len;
    uint64_t skip_below;    /* whole zstd chunks below this offset are passed without inflating */
    seg_mem *mem;           /* inflated chunks, freed by seg_reader_done */
    const uint8_t *zsrc;    /* the current zstd chunk's frame as stored */
    size_t zsrc_len;
    uint32_t zcount;
} seg_reader;

/* A zstd chunk as stored (codec 1): what the framed pop can hand out unchanged. */
typedef struct seg_zchunk {
    uint64_t base_offset;
    uint32_t count;
    const char *producer; /* NULL: none */
    size_t producer_len;
    const uint8_t *z;
    size_t zlen;
} seg_zchunk;

void segment_begin(buf *out);
int record_encode(buf *out, const record_in *r);
size_t record_encoded_size(const record_in *r);

/* The one entry point of every reader of segment bytes, for both codecs. Returns 0, or -1 when
 * the header is not a segment this build understands. Views stay valid until seg_reader_done. */
int seg_reader_init(seg_reader *s, const uint8_t *data, size_t len, uint64_t base_offset, uint32_t count);
/* 1 = a record, 0 = end (all `count` records read and no bytes left), -1 = corrupt. */
int seg_reader_next(seg_reader *s, record_view *out);
/* Frees what the reader inflated (a no-op for codec 0); the views it gave die with it. */
void seg_reader_done(seg_reader *s);
/* The caller skips records below off: whole zstd chunks below it are passed uninflated (records
 * below off may still be returned; the caller skips them as before). */
void seg_reader_skip_below(seg_reader *s, uint64_t off);
/* 1 when the next record starts a zstd chunk (filled into *z), 0 when it does not, -1 corrupt.
 * Then seg_reader_pass(s, z) moves past the whole chunk without inflating it. */
int seg_reader_zchunk(seg_reader *s, seg_zchunk *z);
void seg_reader_pass(seg_reader *s, const seg_zchunk *z);
/* 1 when data is a codec-1 segment */
int segment_is_chunked(const uint8_t *data, size_t len);

/* Codec 1 writing: segment_begin_chunked, then chunks in offset order. */
void segment_begin_chunked(buf *out);
/* count records already encoded by record_encode (without a codec byte) */
int segment_chunk_records(buf *out, uint32_t count, const void *records, size_t len);
/* a producer's zstd frame of count frames, as sent (validated by the caller); anon: some frames
 * carry no transactionId (read back with their message id's text as one) */
int segment_chunk_zframes(buf *out, uint32_t count, const char *producer, size_t producer_len, const void *z,
                          size_t zlen, int anon);
/* Re-encodes a segment of either codec as codec 0 (out is reset first). 0, or -1 corrupt. */
int segment_to_records(const uint8_t *data, size_t len, uint32_t count, buf *out);

/* Writes the transactionId text of a record (UUIDs formatted back) to out; returns length. */
size_t record_txn_text(const record_view *v, char *out, size_t cap);
/* Whether text is a lowercase canonical UUID (stored as 16 bytes). */
int txn_is_lower_uuid(const char *s, size_t n);

#endif
