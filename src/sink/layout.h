/* layout.h — where the sink writes: object keys, sidecar keys and KV keys (pure).
 *
 * From spec/s3-sink.txt "The objects":
 *   <prefix>/tenant=<tenant>/queue=<queue>/dt=<YYYY-MM-DD>/hour=<HH>/w-<k>-<tStart>-<tEnd>.<ext>
 *   <prefix>/_queen/tenant=<tenant>/queue=<queue>/windows/<k>.json
 *   <prefix>/_queen/tenant=<tenant>/queue=<queue>/checkpoint/<k>.json.zst
 * Tenant, queue and partition names are percent-encoded outside A-Z a-z 0-9 . _ - (uppercase
 * hex, every other byte including '%' and '/', so no name can climb out of its prefix). dt=
 * and hour= come from the window's start (UTC); QUEEN_S3_ALIGN=day drops hour=; none keeps
 * both. k is zero-padded to ten digits; tStart and tEnd are microseconds since the epoch.
 * With QUEEN_S3_LAYOUT=per-partition the data key ends in
 *   ...-<tEnd>-p-<partition>-<first offset>-<last offset>.<ext>
 *
 * KV documents (namespace "queen-s3", the queue percent-encoded the same way):
 *   s3:<sink>:<queue>:lease      s3:<sink>:<queue>:intent      s3:<sink>:<queue>:committed
 * and one presence row per node and sink: s3:<sink>:node=<instance percent-encoded>. */
#ifndef QUEEN_SINK_LAYOUT_H
#define QUEEN_SINK_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

#define S3_KV_NAMESPACE "queen-s3"

/* Appends s percent-encoded (bytes outside A-Za-z0-9._- as %XX, uppercase hex). */
void s3_name_escape(buf *out, const char *s, size_t n);

/* "jsonl.zst", "jsonl.gz", "jsonl" or "parquet"; NULL for JSONL + snappy (no such object). */
const char *s3_object_ext(enum s3_format f, enum s3_compression c);

/* The Hive directory of a window: <prefix>/tenant=<t>/queue=<q>/dt=<d>[/hour=<h>] (no trailing
 * slash), from t_start. */
void s3_key_window_dir(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen,
                       int64_t t_start, enum s3_align align);
/* A merged window's data object key. */
void s3_key_data(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen, uint64_t k,
                 int64_t t_start, int64_t t_end, enum s3_align align, const char *ext);
/* A per-partition window's data object key for one partition. */
void s3_key_data_partition(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen,
                           uint64_t k, int64_t t_start, int64_t t_end, enum s3_align align, const char *partition,
                           size_t plen, int64_t first_offset, int64_t last_offset, const char *ext);
/* <prefix>/_queen/tenant=<t>/queue=<q>/windows/<k10>.json */
void s3_key_manifest(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen, uint64_t k);
/* <prefix>/_queen/tenant=<t>/queue=<q>/checkpoint/<k10>.json.zst */
void s3_key_checkpoint(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen,
                       uint64_t k);

/* s3:<sink>:<escaped queue>:<what> (what: "lease", "intent", "committed"). */
void s3_kv_key(buf *out, const char *sink, const char *queue, size_t qlen, const char *what);
/* s3:<sink>:node=<escaped instance> */
void s3_kv_presence_key(buf *out, const char *sink, const char *instance);
/* The prefix every presence row of a sink starts with: s3:<sink>:node= */
void s3_kv_presence_prefix(buf *out, const char *sink);

/* The checkpoint a restart reads for committed window k: the greatest multiple of every that
 * is <= k (0 = the one written when the queue was first claimed). */
uint64_t s3_checkpoint_k(uint64_t k, int64_t every);

#endif
