/* docs.h — the sink's small documents: the three KV documents of a queue (lease, intent,
 * commit pointer), the window manifest and the checkpoint in the bucket. JSON in and out,
 * pure. Writers produce compact JSON in a fixed field order (the manifest pretty-printed with
 * two-space indent, as spec/s3-sink.txt shows it); parsers accept any field order, ignore
 * unknown fields (a later writer may add some), and refuse a document missing a field they
 * need, naming it in err.
 *
 *   lease      {"instance":"node-1","incarnation":"<uuid>","sinceMs":1791009457000}
 *   intent     {"k":1,"tStart":1791007200000000,"tEnd":1791009458377855,"format":"jsonl",
 *               "compression":"zstd","layout":"merged","writer":"queen-s3/2.0.0 jsonl+zstd"}
 *   committed  {"k":1,"tEnd":"2026-10-03T06:37:38.377855Z","tEndUs":1791009458377855,
 *               "manifest":"<manifest key>","records":3,"bytes":207,"committedAtMs":...}
 *              (tEnd as ISO text is what the retention hold reads; tEndUs is exact; a
 *               pointer with k 0 is the queue's starting point, written at its first claim)
 *   manifest   every field of the spec's example, in its order: sink, tenant, queue, k,
 *              tStart, tEnd, format, compression, layout, objects [{key, bytes, records,
 *              sha256[, partition, firstOffset, lastOffset]}], records, bytes, partitions,
 *              minTs, maxTs (null when the window has no record), lost [{partition, from,
 *              to}], writer, committedAt (ISO, the one wall-clock time)
 *   checkpoint {"k":20,"tEnd":...,"positions":[["cust-1",2,"<partition uuid>"],...]}
 *              the next offset of every partition after window k, sorted by name (complete:
 *              a partition it does not list was created later and starts at 0). The writer
 *              sorts whatever order it is given; the parser sorts and refuses a name twice.
 * Refusals read "<document>: <field> <problem>", e.g. "intent: tEnd is not above tStart". */
#ifndef QUEEN_SINK_DOCS_H
#define QUEEN_SINK_DOCS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

#define S3_DOC_STR_MAX 1024

typedef struct s3_lease_doc {
    char instance[256];
    char incarnation[40];
    int64_t since_ms;
} s3_lease_doc;

typedef struct s3_intent {
    uint64_t k;
    int64_t t_start, t_end;
    enum s3_format format;
    enum s3_compression compression;
    enum s3_layout layout;
    char writer[64];
} s3_intent;

typedef struct s3_committed {
    uint64_t k;
    int64_t t_end;                 /* µs */
    char manifest[S3_DOC_STR_MAX]; /* "" for k 0 */
    uint64_t records, bytes;
    int64_t committed_at_ms;
    /* "kBase" (written when not 0): the highest window number an earlier lake already held
     * in the bucket when this pointer was created (a fresh start over an old lake); windows
     * and checkpoints up to it are not this pointer's */
    uint64_t k_base;
} s3_committed;

typedef struct s3_manifest_object {
    char *key;           /* owned */
    uint64_t bytes, records;
    char sha256[65];
    char *partition;     /* per-partition layout only (owned), else NULL */
    size_t partition_len;
    int64_t first_offset, last_offset;
} s3_manifest_object;

typedef struct s3_lost_range {
    char *partition;     /* owned */
    size_t partition_len;
    int64_t from, to;    /* inclusive */
} s3_lost_range;

typedef struct s3_manifest {
    const char *sink, *tenant, *queue; /* borrowed when writing; owned copies when parsed */
    size_t queue_len;
    uint64_t k;
    int64_t t_start, t_end;
    enum s3_format format;
    enum s3_compression compression;
    enum s3_layout layout;
    s3_manifest_object *objects;
    int nobjects;
    uint64_t records, bytes, partitions;
    int64_t min_ts, max_ts;            /* 0 = none */
    s3_lost_range *lost;
    int nlost;
    char writer[64];
    int64_t committed_at_us;           /* wall clock */
    int owned;                         /* set by the parser: _free releases strings */
} s3_manifest;

typedef struct s3_position {
    char *partition;     /* owned */
    size_t partition_len;
    int64_t offset;
    uint8_t uuid[16];
    int has_uuid;
} s3_position;

typedef struct s3_checkpoint {
    uint64_t k;
    int64_t t_end;
    s3_position *positions; /* sorted by partition name (bytewise) */
    int npositions;
} s3_checkpoint;

void s3_lease_doc_json(buf *out, const s3_lease_doc *d);
int s3_lease_doc_parse(const char *json, size_t n, s3_lease_doc *out, char *err, size_t errlen);

void s3_intent_json(buf *out, const s3_intent *d);
int s3_intent_parse(const char *json, size_t n, s3_intent *out, char *err, size_t errlen);

void s3_committed_json(buf *out, const s3_committed *d);
/* Reads tEndUs when present, else the ISO tEnd (or an integer tEnd, as 1.5.0 wrote). */
int s3_committed_parse(const char *json, size_t n, s3_committed *out, char *err, size_t errlen);

void s3_manifest_json(buf *out, const s3_manifest *m);
int s3_manifest_parse(const char *json, size_t n, s3_manifest *out, char *err, size_t errlen);
void s3_manifest_free(s3_manifest *m); /* only what the parser allocated */

/* Uncompressed JSON; the caller zstd-compresses it (writer.h) for the bucket. */
void s3_checkpoint_json(buf *out, const s3_checkpoint *c);
int s3_checkpoint_parse(const char *json, size_t n, s3_checkpoint *out, char *err, size_t errlen);
void s3_checkpoint_free(s3_checkpoint *c);

#endif
