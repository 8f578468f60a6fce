/* sinkcfg.h — the S3 sink's configuration: the node-wide knobs (environment only) and the
 * per-sink settings (the QUEEN_S3_* environment for the default tenant; later a control-plane
 * document for other tenants, with the same rules and ranges). Pure: no I/O.
 *
 * Names, defaults and ranges follow spec/s3-sink.txt ("Reference"). Every refusal is one line
 * in the spec's boot form, with the context "QUEEN_S3_EMBEDDED=true":
 *   ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_MAX_WINDOW_MS=50 is outside
 *   100..=86400000. It is how long a window may stay open; the lag SLO is about this plus the
 *   safe lag
 * (config/config.h's cfg_parse produces exactly that form; use it for the numeric rows).
 *
 * Per sink (env name / document field, default, range):
 *   QUEEN_S3_QUEUES / queues          required; "a,b,c" or "*" (document: also ["a","b"])
 *   QUEEN_S3_ENDPOINT / endpoint      required; http:// or https://, host[:port], no path
 *   QUEEN_S3_REGION / region          required
 *   QUEEN_S3_BUCKET / bucket          required; 1..=255 of [A-Za-z0-9._-] (so no '/', no space)
 *   QUEEN_S3_ACCESS_KEY / accessKey   required
 *   QUEEN_S3_SECRET_KEY               required (env only; a document never holds it)
 *   QUEEN_S3_PATH_STYLE / pathStyle   false
 *   QUEEN_S3_PREFIX / prefix          "queen"; slashes trimmed, no empty/./.. segment
 *   QUEEN_S3_SSE / sse                unset (no header; also off, none); AES256 | aws:kms
 *                                     (+ QUEEN_S3_SSE_KMS_KEY_ID, refused without aws:kms)
 *   QUEEN_S3_FORMAT / format          jsonl | parquet (json, ndjson = jsonl)
 *   QUEEN_S3_COMPRESSION / compression  zstd | gzip | none (zst, gz, off)
 *   QUEEN_S3_PARQUET_CODEC / parquetCodec  zstd | snappy
 *   QUEEN_S3_LAYOUT / layout          merged | per-partition
 *   QUEEN_S3_ALIGN / align            hour | day | none
 *   QUEEN_S3_START / start            latest | earliest
 *   QUEEN_S3_TARGET_MB / targetMb     128, 1..=5120
 *   QUEEN_S3_MAX_WINDOW_MS / maxWindowMs  300000, 100..=86400000
 *   QUEEN_S3_SINK / sink              "default"; 1..=64 of [A-Za-z0-9._-]
 * Node-wide (environment only; a document naming one is refused):
 *   QUEEN_S3_MEMORY_MB 512 (1..=1048576), QUEEN_S3_FETCH_CONCURRENCY 4 (1..=256),
 *   QUEEN_S3_DISCOVERY_INTERVAL_MS 2000 (10..=3600000), QUEEN_S3_SAFE_GUARD_MS 5000
 *   (0..=3600000), QUEEN_S3_LEASE_TTL_MS 30000 (1000..=3600000),
 *   QUEEN_S3_MULTIPART_THRESHOLD_MB 64 (5..=5120), QUEEN_S3_CHECKPOINT_EVERY 20 (1..=100000),
 *   QUEEN_S3_SHUTDOWN_GRACE_MS 30000 (0..=3600000), QUEEN_S3_INSTANCE (default: the node id),
 *   QUEEN_S3_CRASH_AT (tests only: after_intent, mid_upload, after_upload, before_commit,
 *   after_commit; never/off/none = unset).
 * Refused at boot: QUEEN_S3_PARTITIONS (a window can only close against what discovery
 * reports), by both loaders. Warned about once and ignored: QUEEN_S3_LISTEN,
 * QUEEN_S3_LOG_FORMAT. String values are trimmed of surrounding whitespace; the endpoint,
 * region, access key, prefix and names are checked as docs/s3-sink-objects.md lists. The
 * secret key never appears in any line: its refusals name the variable without the value, and
 * an endpoint with user information (user:password@) is refused without echoing it. */
#ifndef QUEEN_SINK_SINKCFG_H
#define QUEEN_SINK_SINKCFG_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/buf.h"

#define S3_SINK_CONTEXT "QUEEN_S3_EMBEDDED=true"
#define S3_SINK_NAME_MAX 64
#define S3_DEFAULT_SINK "default"
#define S3_DEFAULT_PREFIX "queen"
/* The sink's own version, in the manifest's "writer" and the Parquet created_by. */
#define S3_WRITER_VERSION "2.0.0"

enum s3_format { S3_FORMAT_JSONL = 0, S3_FORMAT_PARQUET = 1 };
/* What an object's bytes are compressed with, as intents and manifests name it: a JSONL
 * object is zstd, gzip or none; a Parquet object's pages are zstd or snappy. */
enum s3_compression { S3_COMP_ZSTD = 0, S3_COMP_GZIP = 1, S3_COMP_NONE = 2, S3_COMP_SNAPPY = 3 };
enum s3_layout { S3_LAYOUT_MERGED = 0, S3_LAYOUT_PER_PARTITION = 1 };
enum s3_align { S3_ALIGN_HOUR = 0, S3_ALIGN_DAY = 1, S3_ALIGN_NONE = 2 };
enum s3_start { S3_START_LATEST = 0, S3_START_EARLIEST = 1 };
enum s3_sse { S3_SSE_OFF = 0, S3_SSE_AES256 = 1, S3_SSE_KMS = 2 };
enum s3_crash_at {
    S3_CRASH_NEVER = 0,
    S3_CRASH_AFTER_INTENT,  /* the intent is in KV, no object exists */
    S3_CRASH_MID_UPLOAD,    /* between two parts, or after the first data object, before the manifest */
    S3_CRASH_AFTER_UPLOAD,  /* objects and manifest are up, the commit step has not started */
    S3_CRASH_BEFORE_COMMIT, /* in the commit step, before the commit pointer's KV write */
    S3_CRASH_AFTER_COMMIT,  /* the pointer moved, before the checkpoint */
};

/* Wire spellings: "jsonl"/"parquet", "zstd"/"gzip"/"none"/"snappy", "merged"/"per-partition",
 * "hour"/"day"/"none", "latest"/"earliest", "after_intent"... */
const char *s3_format_name(enum s3_format f);
const char *s3_compression_name(enum s3_compression c);
const char *s3_layout_name(enum s3_layout l);
const char *s3_align_name(enum s3_align a);
const char *s3_start_name(enum s3_start s);
const char *s3_crash_name(enum s3_crash_at c);

/* One node's knobs, shared by every sink it runs. Strings owned (freed by _free). */
typedef struct s3_node_knobs {
    int64_t memory_mb;
    int64_t fetch_concurrency;
    int64_t discovery_interval_ms;
    int64_t safe_guard_ms;
    int64_t lease_ttl_ms;
    int64_t multipart_threshold_mb;
    int64_t checkpoint_every;
    int64_t shutdown_grace_ms;
    char *instance;         /* QUEEN_S3_INSTANCE, else the node id given */
    int instance_generated; /* no variable and no node id: a random s3-<16 hex> */
    enum s3_crash_at crash_at;
    const char *ignored[2]; /* QUEEN_S3_LISTEN / QUEEN_S3_LOG_FORMAT when set */
    int nignored;
} s3_node_knobs;

/* One sink: one tenant's queues into one bucket. Strings owned. */
typedef struct s3_sink_config {
    uint8_t tenant[16];
    char tenant_text[37];   /* lowercase canonical UUID */
    char *sink;
    int queues_all;         /* "*" */
    char **queues;          /* nqueues names, in the order given, duplicates removed */
    int nqueues;
    char *endpoint;         /* as given, without a trailing slash */
    char *region;
    char *bucket;
    char *prefix;           /* no leading or trailing slash */
    char *access_key;
    char *secret_key;       /* never logged, never in status */
    int path_style;
    enum s3_sse sse;
    char *sse_kms_key_id;   /* NULL unless sse == S3_SSE_KMS and one was given */
    enum s3_format format;
    enum s3_compression compression;   /* JSONL objects */
    enum s3_compression parquet_codec; /* S3_COMP_ZSTD or S3_COMP_SNAPPY */
    enum s3_layout layout;
    enum s3_align align;
    enum s3_start start;
    int64_t target_mb;
    int64_t max_window_ms;
} s3_sink_config;

/* Reads QUEEN_S3_EMBEDDED, the switch (a boolean; unset is false) into *on. QERR_OK, or
 * QERR_BAD_INPUT with the boot line as err's text (err may be NULL), in the broker's own
 * context since the sink is not on yet:
 *   ERROR boot: FATAL: queen: QUEEN_S3_EMBEDDED=maybe is not one of true, false. It makes
 *   this node run the S3 sink */
qerr s3_embedded_load(int *on, config_getenv_fn get, qerr_detail *err);

/* Reads the node-wide knobs. node_id is the broker's node identity (QUEEN_S3_INSTANCE's
 * default). QERR_OK, or QERR_BAD_INPUT with the boot line as err's text (err may be NULL). */
qerr s3_node_knobs_load(s3_node_knobs *k, config_getenv_fn get, const char *node_id, qerr_detail *err);
void s3_node_knobs_free(s3_node_knobs *k);

/* Reads the default tenant's sink from the environment. QERR_OK with *configured 1 when
 * configured, 0 when no per-sink variable is set (no environment sink); or QERR_BAD_INPUT
 * (*configured 0) with the boot line as err's text (err may be NULL): a bad value, a missing
 * required one, QUEEN_S3_QUEUES unset while another per-sink variable is set,
 * QUEEN_S3_PARTITIONS set. */
qerr s3_sink_config_from_env(s3_sink_config *c, const uint8_t tenant[16], config_getenv_fn get, int *configured,
                             qerr_detail *err);
void s3_sink_config_free(s3_sink_config *c);

/* The one start line of a sink: every setting it runs with, never the secret key (a KMS key
 * id shows only its last four characters, as sse_kms_key_id=...abcd after sse=aws:kms; queue
 * names are percent-encoded as in the keys), e.g.
 *   queen-s3 2.0.0 tenant=... sink=default instance=node-1 queues=orders s3=http://... bucket=lake
 *   prefix=queen region=us-east-1 addressing=path-style access_key=queen sse=off format=jsonl
 *   compression=zstd parquet_codec=zstd layout=merged align=hour target_mb=128
 *   max_window_ms=300000 start=latest checkpoint_every=20 memory_mb=512 fetch_concurrency=4
 *   discovery_interval_ms=2000 safe_guard_ms=5000 lease_ttl_ms=30000 multipart_threshold_mb=64
 *   shutdown_grace_ms=30000 crash_at=never
 * (addressing is path-style or virtual-host). */
void s3_sink_boot_line(const s3_sink_config *c, const s3_node_knobs *k, buf *out);

/* The effective codec of a sink's objects (compression for JSONL, parquet_codec for Parquet). */
enum s3_compression s3_sink_object_codec(const s3_sink_config *c);

#endif
