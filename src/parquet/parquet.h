/* parquet.h — a Parquet file writer for flat schemas of strings and 64-bit integers, written
 * from the Apache Parquet format specification (no Parquet library exists in Debian).
 *
 * What it writes: format version 1 files, one row group per `row_group_rows` rows, PLAIN
 * encoded values in v1 data pages of about PQ_PAGE_BYTES, definition levels (optional
 * columns) in the RLE/bit-packed hybrid encoding, pages compressed with zstd, snappy or not at
 * all, column statistics (null counts; min/max of every column: byte arrays in unsigned
 * byte order, bounded to PQ_STAT_MAX_BYTES, integers signed) and a footer with the
 * schema (STRING and TIMESTAMP(MICROS, UTC) logical types plus their converted types), the
 * key/value metadata given, created_by and the column orders. The whole file is built in
 * memory, in `out`. The same rows give the same bytes: nothing in a file depends on time or
 * on the machine, which is what lets the S3 sink rebuild a window byte for byte.
 *
 * Usage: pq_writer_new, then pq_write_row per row, then pq_writer_finish (the file is complete
 * in `out`), then pq_writer_free. */
#ifndef QUEEN_PARQUET_PARQUET_H
#define QUEEN_PARQUET_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Codec numbers are Parquet's CompressionCodec values. */
enum pq_codec { PQ_CODEC_NONE = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_ZSTD = 6 };

enum pq_kind {
    PQ_STRING,       /* BYTE_ARRAY, STRING (UTF8) */
    PQ_INT64,        /* INT64 */
    PQ_TIMESTAMP_US, /* INT64, TIMESTAMP(isAdjustedToUTC = true, unit = MICROS) */
};

typedef struct pq_column {
    const char *name;
    enum pq_kind kind;
    int optional; /* 1: may be null (definition level 0) */
} pq_column;

/* One value of a row: strings by (s, n), integers in i; is_null only for optional columns. */
typedef struct pq_value {
    const char *s;
    size_t n;
    int64_t i;
    int is_null;
} pq_value;

#define PQ_MAX_COLUMNS 16
/* Byte-array statistics longer than this are written as compact bounds (a prefix for the
 * least value, a prefix incremented for the greatest), so a column of large payloads keeps a
 * small footer; partition names and transaction ids are exact below it. */
#define PQ_STAT_MAX_BYTES 64
#define PQ_PAGE_BYTES (1u << 20)
#define PQ_CREATED_BY "queen-s3 version 2.0.0"

typedef struct pq_writer pq_writer;

/* schema_name names the root (e.g. "queen_record"); columns are copied. Returns NULL when
 * the schema is invalid (no column, too many) or the codec unknown. */
pq_writer *pq_writer_new(const char *schema_name, const pq_column *cols, int ncols, enum pq_codec codec,
                         int zstd_level, uint32_t row_group_rows, buf *out);
/* Footer key/value metadata (copied), written in the order added. */
void pq_writer_kv(pq_writer *w, const char *key, const char *value);
/* 0, or -1: a null in a required column, a value too large for a page (2 GiB), a compressor
 * failure, or `out` past its ceiling. After -1 the writer is unusable. */
int pq_write_row(pq_writer *w, const pq_value *vals);
/* Writes the last row group and the footer. 0 or -1. */
int pq_writer_finish(pq_writer *w);
void pq_writer_free(pq_writer *w);
uint64_t pq_writer_rows(const pq_writer *w);

/* The S3 sink's schema (spec "The objects"):
 *   message queen_record {
 *     required binary partition (STRING);
 *     required int64 offset;
 *     required binary transaction_id (STRING);
 *     required int64 ts (TIMESTAMP(MICROS,true));
 *     optional binary payload (STRING);
 *   } */
extern const pq_column PQ_QUEEN_RECORD[5];
#define PQ_QUEEN_RECORD_NAME "queen_record"
#define PQ_QUEEN_ROW_GROUP_ROWS 100000u

#endif
