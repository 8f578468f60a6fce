/* admin.h — what the admin routes share: the SQL over the admin functions (consumer-group lag, seeks,
 * deletions, counts, browsing, dead letters, lag metrics: src/db/functions/), the rule that gives a record its
 * status, and decoding a record kept outside a segment (a dead letter's own copy).
 *
 * Every count the admin surface reports comes from dense offsets, so it is exact: a partition
 * holds [start_offset, next_offset) and a consumer group has done everything below its cursor.
 * SQL cannot decode records; statements hand back segments (or a dead letter's record bytes)
 * and the C decoder (storage/record.h) reads them.
 *
 * Pure: no libuv, no libpq (the SQL texts are plain strings), so it is unit-tested offline. */
#ifndef QUEEN_ADMIN_ADMIN_H
#define QUEEN_ADMIN_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "admin_results.h"
#include "admin_statements.h"
#include "messages_statements.h"
#include "core/buf.h"
#include "storage/record.h"

/* (queue, consumer group) pairs one lag query looks at: the listing, the metrics scrape and
 * the overview stay bounded however many groups a deployment has. */
#define ADMIN_MAX_PAIRS 1000
/* Partitions listed in one queue's detail. */
#define ADMIN_MAX_PARTITIONS 10000
/* Rows of the lagging-partitions listing. */
#define ADMIN_MAX_LAGGING 10000
/* Message browsing: a page holds at most this many records, and paging reaches this deep;
 * deeper pages would make every partition's scan that long. */
#define ADMIN_MESSAGES_MAX_LIMIT 1000
#define ADMIN_MESSAGES_MAX_OFFSET 100000
#define ADMIN_DLQ_MAX_LIMIT 1000
#define ADMIN_DLQ_MAX_OFFSET 10000000
/* Finding a record by a transactionId that no index knows: the scan of a partition's segments
 * stops after this many segments or this many payload bytes (about 32 MiB on the wire). */
#define ADMIN_FIND_MAX_SEGMENTS 2000
#define ADMIN_FIND_MAX_BYTES (32 << 20)
/* A server transactionId (UUIDv7) is made by the node just before its push commits; the
 * segment's stamp comes from the database clock. The scan starts this far before the id's
 * time so nodes whose clocks run ahead of the database's are still found. */
#define ADMIN_FIND_V7_SLACK_US (300LL * 1000000)
/* Consumer groups whose oldest record not done is older than this are "Lagging" (as 0.15). */
#define ADMIN_LAGGING_AFTER_US (300LL * 1000000)

#define ADMIN_QUEUE_MODE "__QUEUE_MODE__"

/* SQL (binary results; parameters in text format). The statements of the groups, resources,
 * dashboard and configure routes, with their result columns: admin_statements.h; of the message
 * and dead-letter routes: messages_statements.h. */
extern const char ADMIN_DELETE_GROUP_SQL[];
extern const char ADMIN_SUBSCRIPTION_SQL[];
extern const char ADMIN_SEEK_SQL[];
extern const char ADMIN_DLQ_CLAIM_SQL[];
extern const char ADMIN_DLQ_UNCLAIM_SQL[];
extern const char ADMIN_DELETE_QUEUE_SQL[];
extern const char ADMIN_DELETE_PARTITION_SQL[];
extern const char ADMIN_LIST_MESSAGES_SQL[];
extern const char ADMIN_MESSAGE_FIND_SQL[];
extern const char ADMIN_MESSAGE_DELETE_SQL[];
extern const char ADMIN_SEGMENT_FLATTEN_SQL[];
extern const char ADMIN_METRICS_LAG_SQL[];

/* The status of a record (GET /api/v1/messages). One rule, used by the decoder and mirrored
 * by list_messages_v1's counts, so pages line up:
 *   dead_letter  a dead letter holds it (any group)
 *   completed    offset < done (done = the queue-mode cursor, or on a partition that only
 *                consumer groups read, the least of their cursors)
 *   processing   offset < live_end (the end of a live queue-mode lease)
 *   pending      otherwise */
enum rec_status { REC_PENDING = 0, REC_PROCESSING, REC_COMPLETED, REC_DEAD_LETTER, REC_STATUS_ANY };

enum rec_status admin_record_status(int64_t off, int64_t done, int64_t live_end, int dead);
const char *admin_status_name(enum rec_status s);
/* "pending" | "processing" | "completed" | "dead_letter" → the status; else -1. */
int admin_status_parse(const char *s, enum rec_status *out);

/* Decodes one encoded record (a dead letter's copy: record bytes without the segment's
 * version byte). The view points into `scratch`, which must outlive it. 0, or -1 if corrupt. */
int admin_record_decode(const uint8_t *rec, size_t len, uint64_t offset, buf *scratch, record_view *out);

/* Writes the payload of a record as JSON: the plaintext (opened with the node's key when
 * sealed), null when empty, or null and a "payloadError" field when this node cannot open it
 * (storage/payload.h). */
void admin_payload_json(buf *b, const record_view *v);

/* If txn is a UUIDv7 (a server-made transactionId), the µs time it carries; else 0. */
int64_t admin_uuid_v7_time_us(const char *txn, size_t len);

/* "Lagging" / "Stable" / "Dead" for a consumer group (0.15's rule). */
const char *admin_group_state(int64_t max_time_lag_us, int ever_consumed);

/* Writes "…Z" (ms) for a µs stamp, or null when us <= 0. */
void admin_iso_ms_or_null(buf *b, int64_t us);
void admin_iso_us_or_null(buf *b, int64_t us);

#endif
