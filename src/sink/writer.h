/* writer.h — the bytes of a window's objects (pure, deterministic): JSONL lines, the
 * compression of a JSONL object, and the Parquet file of src/parquet/parquet.h with the
 * sink's schema and footer. The same records always give the same bytes: nothing depends on
 * time, the machine or a random seed (a gzip member has mtime 0 and OS 255; zstd and zlib
 * run at fixed levels, single-threaded), which is what makes a rebuilt window byte-identical.
 *
 * A JSONL line has five fields in this order (spec "The objects"):
 *   {"partition":"cust-1","offset":0,"transactionId":"...","ts":"2026-10-03T06:37:37.501942Z","payload":{...}}
 * ts is the broker's stamp rendered as ISO-8601 UTC with six fractional digits and 'Z'. The
 * payload is the stored JSON text byte for byte, except that a raw line break (\n or \r) is
 * written as a space so the record stays on one line; an empty payload is null; a payload the
 * node cannot decrypt is a JSON string holding the base64 of its stored bytes.
 *
 * A zstd object is one frame with the content size in its header and a content checksum. In
 * a Parquet file the payload column holds the stored text exactly (line breaks included: a
 * column has no line to keep), null when empty, and a sealed payload as the same JSON string
 * of base64. */
#ifndef QUEEN_SINK_WRITER_H
#define QUEEN_SINK_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

enum s3_payload_kind {
    S3_PAYLOAD_JSON = 0,   /* payload is JSON text (len 0 = empty: null) */
    S3_PAYLOAD_SEALED = 1, /* payload holds stored bytes the node could not open */
};

/* One record of a window, borrowed. */
typedef struct s3_record {
    const char *partition;
    size_t partition_len;
    int64_t offset;
    const char *txn;       /* transactionId text */
    size_t txn_len;
    int64_t ts;            /* µs since the epoch */
    const char *payload;
    size_t payload_len;
    enum s3_payload_kind payload_kind;
} s3_record;

/* Sorts by (partition bytewise, offset): the order of every object. */
void s3_records_sort(s3_record *recs, size_t n);

/* Appends one JSONL line, with its '\n'. -1 when out passed its ceiling. */
int s3_jsonl_line(buf *out, const s3_record *r);

/* The whole object for recs (already sorted): JSONL lines compressed with c (zstd, gzip or
 * none), or a Parquet file (format parquet; c is its page codec, zstd or snappy) whose footer
 * carries queen.queue and queen.tenant. 0, or -1 with err (a compressor failure, out past its
 * ceiling, a codec that does not fit the format). */
int s3_object_build(enum s3_format f, enum s3_compression c, const s3_record *recs, size_t n, const char *queue,
                    size_t qlen, const char *tenant, buf *out, char *err, size_t errlen);

/* Compression of any byte string with a JSONL codec (zstd level 3, gzip level 6 with a fixed
 * header, none = copy). Also used for checkpoints (zstd). 0 or -1. */
int s3_compress(enum s3_compression c, const void *in, size_t n, buf *out);
/* The inverse (tests, and reading a checkpoint back). 0 or -1 (corrupt, or past out's ceiling). */
int s3_decompress(enum s3_compression c, const void *in, size_t n, buf *out);

/* "queen-s3/2.0.0 jsonl+zstd", "queen-s3/2.0.0 parquet+snappy"... */
void s3_writer_name(enum s3_format f, enum s3_compression c, buf *out);

#endif
