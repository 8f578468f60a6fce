/* admin.c — SQL of the admin routes, record status, one-record decoding. */
#include "admin.h"

#include <string.h>

#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "storage/payload.h"

/* ---- consumer groups --------------------------------------------------------------------- */

/* The statements' parameters and result columns: admin_statements.h. */

const char ADMIN_GROUPS_SQL[] =
    "SELECT g.queue_name, g.consumer_group, count(*) FILTER (WHERE g.has_cursor) AS members, "
    "count(g.partition_id) AS partitions, count(*) FILTER (WHERE g.offset_lag > 0) AS partitions_with_lag, "
    "coalesce(sum(g.offset_lag), 0)::int8 AS total_lag, coalesce(max(g.time_lag_us), 0)::int8 AS max_time_lag_us, "
    "coalesce(bool_or(g.total_consumed > 0), false) AS ever_consumed, "
    "count(*) FILTER (WHERE g.lease_expires_at >= g.now_us) AS active_leases, max(g.sub_mode) AS sub_mode, "
    "max(g.sub_ts) AS sub_ts, max(g.sub_created_us) AS sub_created_us, max(g.last_consumed_us) AS last_consumed_us "
    "FROM queen.group_lag_v1($1::uuid, NULL, NULL, $2::int4) g "
    "GROUP BY g.queue_name, g.consumer_group ORDER BY g.queue_name, g.consumer_group";

const char ADMIN_LAGGING_SQL[] =
    "SELECT g.consumer_group, g.queue_name, g.partition_name, g.partition_uuid, "
    "CASE WHEN g.lease_expires_at >= g.now_us THEN g.lease_id END AS live_lease_id, g.offset_lag, g.time_lag_us, g.lag_ts, "
    "g.last_consumed_us, g.next_offset, g.end_offset "
    "FROM queen.group_lag_v1($1::uuid, NULL, NULL, $2::int4) g "
    "WHERE g.offset_lag > 0 AND g.time_lag_us >= $3::int8 "
    "ORDER BY g.time_lag_us DESC, g.queue_name, g.partition_name, g.consumer_group LIMIT $4::int8";

const char ADMIN_GROUP_DETAIL_SQL[] =
    "SELECT g.queue_name, g.partition_name, g.partition_uuid, g.has_cursor, g.next_offset, g.end_offset, "
    "g.offset_lag, g.time_lag_us, CASE WHEN g.lease_expires_at >= g.now_us THEN g.lease_id END AS live_lease_id, "
    "coalesce(g.lease_expires_at >= g.now_us, false) AS lease_active, g.total_consumed, g.last_consumed_us, "
    "CASE WHEN g.lease_expires_at >= g.now_us THEN g.lease_expires_at END AS live_lease_expires_at, g.start_offset "
    "FROM queen.group_lag_v1($1::uuid, NULL, $2::text, $3::int4) g "
    "ORDER BY g.queue_name, g.partition_name";

/* $1 tenant, $2 group, $3 queue (NULL = every queue), $4 delete subscriptions. */
const char ADMIN_DELETE_GROUP_SQL[] =
    "SELECT * FROM queen.delete_group_v1($1::uuid, $2::text, $3::text, $4::bool)";

/* $1 tenant, $2 group, $3 start (µs). */
const char ADMIN_SUBSCRIPTION_SQL[] = "SELECT queen.set_subscription_v1($1::uuid, $2::text, $3::int8)";

/* $1 tenant, $2 group, $3 queue, $4 partition (NULL = all), $5 mode, $6 ts, $7 offset. */
const char ADMIN_SEEK_SQL[] =
    "SELECT * FROM queen.seek_v1($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::int8, $7::int8)";

/* ---- dead letters ------------------------------------------------------------------------ */

/* $1 tenant, $2 queue, $3 group, $4 partition, $5 from µs, $6 to µs (failed_at, inclusive),
 * $7 limit, $8 offset, $9 requeued filter. One statement, so the total and the page come from
 * one snapshot; with an empty page there is still one row (the total) with NULL columns. */
const char ADMIN_DLQ_LIST_SQL[] =
    "WITH f AS MATERIALIZED ("
    " SELECT d.id, d.queue_id, d.partition_id, d.consumer_group, d.off, d.txn_id, d.ts, d.error, d.retry_count, "
    "  d.record, d.failed_at, d.requeued_at "
    " FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id JOIN queen.partitions p ON p.id = d.partition_id "
    " WHERE q.tenant_id = $1::uuid AND ($2::text IS NULL OR q.name = $2::text) "
    "  AND ($3::text IS NULL OR d.consumer_group = $3::text) AND ($4::text IS NULL OR p.name = $4::text) "
    "  AND ($5::int8 IS NULL OR d.failed_at >= timestamptz 'epoch' + $5::int8 * interval '1 microsecond') "
    "  AND ($6::int8 IS NULL OR d.failed_at <= timestamptz 'epoch' + $6::int8 * interval '1 microsecond') "
    "  AND ($9::bool IS NULL OR (d.requeued_at IS NOT NULL) = $9::bool)) "
    "SELECT t.total, ($2::text IS NULL OR EXISTS (SELECT 1 FROM queen.queues q WHERE q.tenant_id = $1::uuid "
    "  AND q.name = $2::text)) AS queue_known, "
    " x.id, x.qname, x.pname, x.puuid, x.pid, x.consumer_group, x.off, x.txn_id, x.ts, x.error, x.retry_count, "
    " x.record, x.failed_us, x.requeued_us "
    "FROM (SELECT count(*) AS total FROM f) t "
    "LEFT JOIN LATERAL (SELECT f.id, q.name AS qname, p.name AS pname, p.uuid AS puuid, p.id AS pid, f.consumer_group, "
    "  f.off, f.txn_id, f.ts, f.error, f.retry_count, f.record, f.failed_at, "
    "  (extract(epoch FROM f.failed_at) * 1000000)::int8 AS failed_us, "
    "  (extract(epoch FROM f.requeued_at) * 1000000)::int8 AS requeued_us "
    " FROM f JOIN queen.queues q ON q.id = f.queue_id JOIN queen.partitions p ON p.id = f.partition_id "
    " ORDER BY f.failed_at DESC, f.id DESC LIMIT $7::int8 OFFSET $8::int8) x ON true "
    "ORDER BY x.failed_at DESC, x.id DESC";

/* $1 tenant, $2 dead letter id. */
const char ADMIN_DLQ_CLAIM_SQL[] =
    "SELECT * FROM queen.dlq_claim_v1($1::uuid, $2::int8)";
const char ADMIN_DLQ_UNCLAIM_SQL[] = "UPDATE queen.dead_letters SET requeued_at = NULL WHERE id = $1::int8";
const char ADMIN_DLQ_DELETE_SQL[] =
    "DELETE FROM queen.dead_letters d USING queen.queues q "
    "WHERE d.id = $2::int8 AND q.id = d.queue_id AND q.tenant_id = $1::uuid RETURNING d.id";

/* POST /api/v1/messages/:p/:t/retry: $1 tenant, $2 partition uuid, $3 transactionId, $4 and $5
 * the offset and partition a message id names (or NULL). No row: an unknown partition; else
 * the newest dead letter of the record not requeued yet, or NULL. */
const char ADMIN_DLQ_RETRY_FIND_SQL[] =
    "SELECT p.id AS pid, (SELECT d.id FROM queen.dead_letters d WHERE d.partition_id = p.id AND d.requeued_at IS NULL "
    "  AND (d.txn_id = $3::text OR (d.off = $4::int8 AND p.id = $5::int8)) ORDER BY d.id DESC LIMIT 1) AS dlq_id "
    "FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.uuid = $2::uuid AND q.tenant_id = $1::uuid";

/* ---- resources --------------------------------------------------------------------------- */

/* Ingested = records stamped in the last 60 s (found through the partitions written in that
 * minute, then their segments by stamp). */
const char ADMIN_OVERVIEW_SQL[] =
    "SELECT (SELECT count(*) FROM queen.queues q WHERE q.tenant_id = $1::uuid) AS queues, "
    "count(v.partition_id) AS partitions, "
    "(SELECT count(DISTINCT q.namespace) FROM queen.queues q WHERE q.tenant_id = $1::uuid AND q.namespace <> '') "
    "  AS namespaces, "
    "(SELECT count(DISTINCT q.task) FROM queen.queues q WHERE q.tenant_id = $1::uuid AND q.task <> '') AS tasks, "
    "coalesce(sum(v.total), 0)::int8 AS total, coalesce(sum(v.pending), 0)::int8 AS pending, "
    "coalesce(sum(v.processing), 0)::int8 AS processing, coalesce(sum(v.completed), 0)::int8 AS completed, "
    "(SELECT count(*) FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id WHERE q.tenant_id = $1::uuid "
    "  AND d.requeued_at IS NULL AND d.consumer_group = '" ADMIN_QUEUE_MODE "') AS failed, "
    "(SELECT count(*) FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id WHERE q.tenant_id = $1::uuid "
    "  AND d.requeued_at IS NULL) AS dead_letters, "
    "(SELECT coalesce(sum(s.record_count), 0)::int8 FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id "
    "  JOIN queen.segments s ON s.partition_id = p.id AND s.ts > queen.now_us() - 60000000 "
    "  WHERE q.tenant_id = $1::uuid AND p.last_ts > queen.now_us() - 60000000) AS ingested_60s, "
    "queen.now_us() AS now_us "
    "FROM queen.queues q JOIN queen.partition_counts_v1 v ON v.queue_id = q.id WHERE q.tenant_id = $1::uuid";

const char ADMIN_OVERVIEW_LAG_SQL[] =
    "SELECT count(*) AS pairs, coalesce(avg(g.time_lag_us), 0)::float8 AS time_avg_us, "
    "coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY g.time_lag_us), 0)::float8 AS time_median_us, "
    "coalesce(min(g.time_lag_us), 0)::int8 AS time_min_us, coalesce(max(g.time_lag_us), 0)::int8 AS time_max_us, "
    "coalesce(avg(g.offset_lag), 0)::float8 AS offset_avg, "
    "coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY g.offset_lag), 0)::float8 AS offset_median, "
    "coalesce(min(g.offset_lag), 0)::int8 AS offset_min, coalesce(max(g.offset_lag), 0)::int8 AS offset_max "
    "FROM queen.group_lag_v1($1::uuid, NULL, NULL, $2::int4) g WHERE g.partition_id IS NOT NULL";

const char ADMIN_QUEUES_SQL[] =
    "SELECT q.uuid AS queue_uuid, q.name AS queue_name, q.namespace, q.task, "
    "(extract(epoch FROM q.created_at) * 1000000)::int8 AS created_us, count(v.partition_id) AS partitions, "
    "coalesce(sum(v.total), 0)::int8 AS total, coalesce(sum(v.pending), 0)::int8 AS pending, "
    "coalesce(sum(v.processing), 0)::int8 AS processing, coalesce(sum(v.completed), 0)::int8 AS completed, "
    "q.configured, "
    "(SELECT count(*) FROM queen.dead_letters d WHERE d.queue_id = q.id AND d.requeued_at IS NULL) AS dead_letters, "
    "count(*) OVER () AS total_rows, coalesce(max(v.last_ts), 0)::int8 AS last_ts "
    "FROM queen.queues q LEFT JOIN queen.partition_counts_v1 v ON v.queue_id = q.id "
    "WHERE q.tenant_id = $1::uuid AND ($2::text IS NULL OR q.namespace = $2::text) "
    "AND ($3::text IS NULL OR q.task = $3::text) "
    "GROUP BY q.id ORDER BY q.created_at DESC, q.id DESC LIMIT $4::int8 OFFSET $5::int8";

const char ADMIN_QUEUE_SQL[] =
    "SELECT q.uuid AS queue_uuid, q.name AS queue_name, q.namespace, q.task, "
    "(extract(epoch FROM q.created_at) * 1000000)::int8 AS created_us, "
    "queen.queue_options_v1(q.options)::text AS options, q.configured, v.uuid AS partition_uuid, "
    "v.name AS partition_name, v.created_us AS partition_created_us, v.total, v.completed, v.processing, v.pending, "
    "v.start_offset, v.next_offset, v.last_ts, "
    "(SELECT s.ts FROM queen.segments s WHERE s.partition_id = v.partition_id AND s.last_offset >= v.start_offset "
    "  ORDER BY s.last_offset LIMIT 1) AS oldest_ts, "
    "(SELECT count(*) FROM queen.dead_letters d WHERE d.partition_id = v.partition_id AND d.requeued_at IS NULL) "
    "  AS dead_letters, "
    "(SELECT count(*) FROM queen.dead_letters d WHERE d.partition_id = v.partition_id AND d.requeued_at IS NULL "
    "  AND d.consumer_group = '" ADMIN_QUEUE_MODE "') AS failed, "
    "v.queue_consumed, v.lease_expires_at, v.partition_id, v.has_queue_cursor "
    "FROM queen.queues q LEFT JOIN LATERAL (SELECT * FROM queen.partition_counts_v1 x WHERE x.queue_id = q.id "
    "  ORDER BY x.name LIMIT $3::int8) v ON true "
    "WHERE q.tenant_id = $1::uuid AND q.name = $2::text ORDER BY v.name";

const char ADMIN_QUEUE_GROUPS_SQL[] =
    "SELECT g.partition_id, g.consumer_group, g.has_cursor, g.next_offset, g.offset_lag, g.time_lag_us, "
    "coalesce(g.lease_expires_at >= g.now_us, false) AS lease_active "
    "FROM queen.group_lag_v1($1::uuid, $2::text, NULL, $3::int4) g WHERE g.partition_id IS NOT NULL "
    "ORDER BY g.partition_id, g.consumer_group";

const char ADMIN_QUEUE_GROUP_TOTALS_SQL[] =
    "SELECT g.consumer_group, count(*) FILTER (WHERE g.has_cursor) AS members, "
    "count(*) FILTER (WHERE g.offset_lag > 0) AS partitions_with_lag, coalesce(sum(g.offset_lag), 0)::int8 AS total_lag, "
    "coalesce(max(g.time_lag_us), 0)::int8 AS max_time_lag_us, "
    "coalesce(bool_or(g.total_consumed > 0), false) AS ever_consumed, max(g.sub_mode) AS sub_mode, "
    "max(g.sub_ts) AS sub_ts "
    "FROM queen.group_lag_v1($1::uuid, $2::text, NULL, $3::int4) g GROUP BY g.consumer_group ORDER BY 1";

#define ADMIN_GROUPED_BY(col)                                                                                       \
    "SELECT q." col " AS name, count(DISTINCT q.id) AS queues, count(v.partition_id) AS partitions, "              \
    "coalesce(sum(v.total), 0)::int8 AS total, coalesce(sum(v.pending), 0)::int8 AS pending, "                     \
    "coalesce(sum(v.processing), 0)::int8 AS processing, coalesce(sum(v.completed), 0)::int8 AS completed "        \
    "FROM queen.queues q LEFT JOIN queen.partition_counts_v1 v ON v.queue_id = q.id "                               \
    "WHERE q.tenant_id = $1::uuid AND q." col " <> '' GROUP BY q." col " ORDER BY q." col " LIMIT 10000"

const char ADMIN_NAMESPACES_SQL[] = ADMIN_GROUPED_BY("namespace");
const char ADMIN_TASKS_SQL[] = ADMIN_GROUPED_BY("task");

/* $1 tenant, $2 queue (, $3 partition) */
const char ADMIN_DELETE_QUEUE_SQL[] = "SELECT * FROM queen.delete_queue_v1($1::uuid, $2::text)";
const char ADMIN_DELETE_PARTITION_SQL[] = "SELECT * FROM queen.delete_partition_v1($1::uuid, $2::text, $3::text)";
const char ADMIN_QUEUE_EXISTS_SQL[] =
    "SELECT EXISTS (SELECT 1 FROM queen.queues q WHERE q.tenant_id = $1::uuid AND q.name = $2::text) AS queue_exists";

/* ---- dashboard (api_dashboard.c) --------------------------------------------------------- */

const char ADMIN_QUEUE_ID_SQL[] = "SELECT q.id FROM queen.queues q WHERE q.tenant_id = $1::uuid AND q.name = $2::text";

/* Queue level, worst cursor first: what the least advanced reader of the partition (queue
 * mode or any group with a cursor there) has not retired; nothing read yet = the whole stored
 * range. */
const char ADMIN_DEPTH_QUEUE_SQL[] =
    "SELECT p.name AS partition_name, p.next_offset - least(greatest(coalesce("
    "  (SELECT min(c.next_offset) FROM queen.cursors c WHERE c.partition_id = p.id), p.start_offset),"
    "  p.start_offset), p.next_offset) AS pending "
    "FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id "
    "WHERE q.tenant_id = $1::uuid AND q.name = $2::text ORDER BY p.name LIMIT $3::int8";

/* One group: where it stands on each partition (queen.group_lag_v1: its cursor, else where its
 * subscription starts it); a group the queue has never seen starts at the stored start. */
const char ADMIN_DEPTH_GROUP_SQL[] =
    "SELECT p.name AS partition_name, coalesce(g.offset_lag, p.next_offset - p.start_offset) AS pending "
    "FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id "
    "LEFT JOIN queen.group_lag_v1($1::uuid, $2::text, $3::text, 1) g ON g.partition_id = p.id "
    "WHERE q.tenant_id = $1::uuid AND q.name = $2::text ORDER BY p.name LIMIT $4::int8";

/* The group's delivery policy on the queue (queen.group_policies). */
const char ADMIN_DEPTH_POLICY_SQL[] =
    "SELECT 1 AS conflates FROM queen.group_policies gp JOIN queen.queues q ON q.id = gp.queue_id "
    "WHERE q.tenant_id = $1::uuid AND q.name = $2::text AND gp.consumer_group = $3::text AND gp.conflation";

const char ADMIN_PARTITIONS_SQL[] =
    "SELECT v.uuid AS partition_uuid, v.name AS partition_name, q.name AS queue_name, q.namespace, q.task, "
    "v.created_us, v.total, v.pending, v.processing, v.completed, "
    "(SELECT count(*) FROM queen.dead_letters d WHERE d.partition_id = v.partition_id AND d.requeued_at IS NULL)::int8 "
    "  AS dead_letters, "
    "v.start_offset, v.next_offset, v.last_ts, v.queue_consumed, v.lease_expires_at, count(*) OVER ()::int8 AS total_rows "
    "FROM queen.queues q JOIN queen.partition_counts_v1 v ON v.queue_id = q.id "
    "WHERE q.tenant_id = $1::uuid AND ($2::text IS NULL OR q.name = $2::text) "
    "AND ($3::text IS NULL OR q.namespace = $3::text) AND ($4::text IS NULL OR q.task = $4::text) "
    "ORDER BY q.name, v.name LIMIT $5::int8 OFFSET $6::int8";

/* By the stamps of the segments (the log's own clock). Only partitions written since the range
 * began are read (a segment's stamp is at most its partition's last_ts), their segments
 * through segments_ts (partition_id, ts). */
const char ADMIN_SERIES_SQL[] =
    "WITH s AS (SELECT s.ts - s.ts % $4::int8 AS t0, sum(s.record_count)::int8 AS n "
    "  FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id JOIN queen.segments s ON s.partition_id = p.id "
    "  WHERE q.tenant_id = $1::uuid AND p.last_ts >= $2::int8 - $2::int8 % $4::int8 "
    "  AND s.ts >= $2::int8 - $2::int8 % $4::int8 AND s.ts <= $3::int8 "
    "  AND ($5::text IS NULL OR q.name = $5::text) AND ($6::text IS NULL OR q.namespace = $6::text) "
    "  AND ($7::text IS NULL OR q.task = $7::text) GROUP BY 1) "
    "SELECT g AS bucket_us, coalesce(s.n, 0)::int8 AS records "
    "FROM generate_series($2::int8 - $2::int8 % $4::int8, $3::int8, $4::int8) g "
    "LEFT JOIN s ON s.t0 = g ORDER BY g";

#define DASH_FILTER                                                                                                  \
    " q.tenant_id = $1::uuid AND ($2::text IS NULL OR q.name = $2::text) AND ($3::text IS NULL OR q.namespace = $3::text) " \
    "AND ($4::text IS NULL OR q.task = $4::text) "

const char ADMIN_DASH_QUEUES_SQL[] =
    "SELECT q.uuid AS queue_uuid, q.name AS queue_name, q.namespace, q.task, count(v.partition_id)::int8 AS partitions, "
    "coalesce(sum(v.queue_consumed), 0)::int8 AS total_consumed "
    "FROM queen.queues q LEFT JOIN queen.partition_counts_v1 v ON v.queue_id = q.id WHERE" DASH_FILTER
    "GROUP BY q.id ORDER BY q.name LIMIT 1000";

const char ADMIN_DASH_COUNTS_SQL[] =
    "SELECT m.*, l.* FROM "
    "(SELECT coalesce(sum(v.total), 0)::int8 AS total, coalesce(sum(v.pending), 0)::int8 AS pending, "
    "  coalesce(sum(v.processing), 0)::int8 AS processing, coalesce(sum(v.completed), 0)::int8 AS completed "
    "  FROM queen.queues q JOIN queen.partition_counts_v1 v ON v.queue_id = q.id WHERE" DASH_FILTER ") m, "
    "(SELECT count(DISTINCT c.lease_id)::int8 AS leases, count(*)::int8 AS leased_partitions, "
    "  coalesce(sum(c.lease_end - c.lease_start), 0)::int8 AS leased_records, "
    "  coalesce(sum(greatest(c.next_offset - c.lease_start, 0)), 0)::int8 AS acked_records "
    "  FROM queen.queues q JOIN queen.cursors c ON c.queue_id = q.id "
    "  WHERE c.lease_expires_at >= queen.now_us() AND" DASH_FILTER ") l";

const char ADMIN_DASH_DLQ_SQL[] =
    "SELECT count(*)::int8 AS dead_letters, count(DISTINCT d.partition_id)::int8 AS partitions, "
    "(SELECT coalesce(json_agg(json_build_object('error', e.error, 'count', e.n) ORDER BY e.n DESC, e.error), '[]')::text "
    "  FROM (SELECT coalesce(d2.error, '') AS error, count(*) AS n FROM queen.dead_letters d2 "
    "        JOIN queen.queues q ON q.id = d2.queue_id WHERE d2.requeued_at IS NULL AND" DASH_FILTER
    "        GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5) e) AS top_errors "
    "FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id WHERE d.requeued_at IS NULL AND" DASH_FILTER;

/* ---- configure (api_configure.c) --------------------------------------------------------- */

/* The statement takes the queue's clock lock after writing its options (lock order: queue
 * row, then clock; docs/lock-order.md); see api_configure.c. */
const char ADMIN_CONFIGURE_SQL[] =
    "WITH q AS (INSERT INTO queen.queues (tenant_id, name, namespace, task, options, configured) "
    "  VALUES ($1::uuid, $2::text, $3::text, $4::text, $5::jsonb, true) "
    "  ON CONFLICT (tenant_id, name) DO UPDATE SET namespace = excluded.namespace, task = excluded.task, "
    "  options = excluded.options, configured = true, updated_at = now() RETURNING id, uuid), "
    "c AS (INSERT INTO queen.queue_clocks (queue_id) SELECT id FROM q ON CONFLICT DO NOTHING), "
    "lk AS (SELECT x.queue_id FROM queen.queue_clocks x WHERE x.queue_id = (SELECT id FROM q) FOR UPDATE), "
    "p AS (INSERT INTO queen.partitions (queue_id, name) SELECT id, 'Default' FROM q "
    "  ON CONFLICT (queue_id, name) DO NOTHING RETURNING uuid) "
    "SELECT q.uuid AS queue_uuid, coalesce((SELECT uuid FROM p), "
    "  (SELECT x.uuid FROM queen.partitions x WHERE x.queue_id = q.id AND x.name = 'Default')) AS partition_uuid, "
    "  (SELECT count(*) FROM lk) AS locked FROM q";

/* ---- messages ---------------------------------------------------------------------------- */

/* $1 tenant, $2 queue, $3 partition, $4 namespace, $5 task, $6 status, $7 from µs, $8 to µs,
 * $9 skip, $10 take. See list_messages_v1 for the rows. */
const char ADMIN_LIST_MESSAGES_SQL[] =
    "SELECT * FROM queen.list_messages_v1($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::text, $7::int8, $8::int8, "
    "$9::int8, $10::int8)";

/* $1 tenant, $2 partition uuid */
const char ADMIN_MESSAGE_PARTITION_SQL[] =
    "SELECT p.id AS pid, p.uuid AS puuid, p.name AS pname, p.start_offset, p.next_offset, q.name AS qname, q.namespace, "
    "q.task, queen.queue_options_v1(q.options)::text AS options "
    "FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.uuid = $2::uuid AND q.tenant_id = $1::uuid";

/* $1 tenant, $2 partition uuid, $3 txn, $4 message id's partition, $5 its offset, $6 scan
 * from (µs), $7 max segments, $8 max bytes */
const char ADMIN_MESSAGE_FIND_SQL[] =
    "SELECT * FROM queen.message_find_v1($1::uuid, $2::uuid, "
    "$3::text, $4::int8, $5::int8, $6::int8, $7::int4, $8::int8)";

/* $1 tenant, $2 partition uuid */
const char ADMIN_MESSAGE_CURSORS_SQL[] =
    "SELECT c.consumer_group, c.next_offset, c.lease_start, c.lease_end, c.lease_expires_at, c.retry_count, "
    "coalesce(c.lease_expires_at >= queen.now_us(), false) AS lease_live "
    "FROM queen.cursors c JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id "
    "WHERE p.uuid = $2::uuid AND q.tenant_id = $1::uuid ORDER BY c.consumer_group LIMIT 10000";

/* $1 tenant, $2 partition uuid, $3 txn, $4 offset */
const char ADMIN_MESSAGE_DEAD_SQL[] =
    "SELECT d.id, d.consumer_group, d.off, d.error, d.retry_count, (extract(epoch FROM d.failed_at) * 1000000)::int8 AS failed_us, "
    "d.record, d.txn_id, d.ts "
    "FROM queen.dead_letters d JOIN queen.partitions p ON p.id = d.partition_id JOIN queen.queues q ON q.id = p.queue_id "
    "WHERE p.uuid = $2::uuid AND q.tenant_id = $1::uuid AND (d.txn_id = $3::text OR d.off = $4::int8) "
    "ORDER BY d.id DESC LIMIT 100";

/* DELETE /api/v1/messages/:p/:t: $1 tenant, $2 partition uuid, $3 offset, $4 transactionId
 * (MESSAGE_DELETE_V1_COLUMNS). */
const char ADMIN_MESSAGE_DELETE_SQL[] = "SELECT queen.message_delete_v1($1::uuid, $2::uuid, $3::int8, $4::text)";
/* A codec-1 segment replaced by its codec-0 re-encoding before a delete: $1 partition id, $2
 * the segment's last offset, $3 the re-encoded bytes (binary). No result. */
const char ADMIN_SEGMENT_FLATTEN_SQL[] =
    "UPDATE queen.segments SET data = $3 WHERE partition_id = $1 AND last_offset = $2 AND get_byte(data, 0) = 2";

/* ---- metrics ----------------------------------------------------------------------------- */

/* $1 limit */
const char ADMIN_METRICS_LAG_SQL[] =
    "SELECT * FROM queen.metrics_lag_v1($1::int4)";

/* ---- pure helpers ------------------------------------------------------------------------ */

enum rec_status admin_record_status(int64_t off, int64_t done, int64_t live_end, int dead)
{
    if (dead)
        return REC_DEAD_LETTER;
    if (off < done)
        return REC_COMPLETED;
    if (off < live_end)
        return REC_PROCESSING;
    return REC_PENDING;
}

static const char *const status_names[] = {"pending", "processing", "completed", "dead_letter"};

const char *admin_status_name(enum rec_status s)
{
    return (unsigned)s < ARRAY_LEN(status_names) ? status_names[s] : "unknown";
}

int admin_status_parse(const char *s, enum rec_status *out)
{
    for (unsigned i = 0; i < ARRAY_LEN(status_names); i++) {
        if (strcmp(s, status_names[i]) == 0) {
            *out = (enum rec_status)i;
            return 0;
        }
    }
    return -1;
}

/* A dead letter of a record inside a producer's zstd frame (codec 1): REC_ZREF, the record's index
 * in the chunk, then the chunk as stored (queen.record_at_v1). Its record is re-encoded as ours. */
static int zref_to_record(const uint8_t *rec, size_t len, buf *scratch)
{
    const uint8_t *p = rec + 1, *end = rec + len;
    uint64_t index, count;
    if (varint_get(&p, end, &index) < 0 || p >= end || (*p != CHUNK_ZFRAMES && *p != CHUNK_ZFRAMES_ANON))
        return -1;
    const uint8_t *q = p + 1;
    if (varint_get(&q, end, &count) < 0 || index >= count || count > UINT32_MAX)
        return -1;
    buf seg;
    buf_init(&seg, 0);
    segment_begin_chunked(&seg);
    buf_append(&seg, p, (size_t)(end - p));
    buf whole;
    buf_init(&whole, 0);
    int rc = segment_to_records((const uint8_t *)seg.data, seg.len, (uint32_t)count, &whole);
    buf_free(&seg);
    if (rc == 0) {
        /* the index-th record of the re-encoded segment, as one record */
        seg_reader sr;
        record_view v;
        const uint8_t *at = NULL;
        seg_reader_init(&sr, (const uint8_t *)whole.data, whole.len, 0, (uint32_t)count);
        for (uint64_t i = 0; i <= index && rc == 0; i++) {
            at = sr.p;
            rc = seg_reader_next(&sr, &v) == 1 ? 0 : -1;
        }
        if (rc == 0) {
            buf_reset(scratch);
            segment_begin(scratch);
            buf_append(scratch, at, (size_t)(sr.p - at));
        }
        seg_reader_done(&sr);
    }
    buf_free(&whole);
    return rc;
}

int admin_record_decode(const uint8_t *rec, size_t len, uint64_t offset, buf *scratch, record_view *out)
{
    if (len >= 1 && rec[0] == REC_ZREF) {
        if (zref_to_record(rec, len, scratch) < 0)
            return -1;
    } else {
        /* a one-record segment: the version byte, then the record as stored */
        buf_reset(scratch);
        segment_begin(scratch);
        if (buf_append(scratch, rec, len) < 0)
            return -1;
    }
    seg_reader sr;
    if (seg_reader_init(&sr, (const uint8_t *)scratch->data, scratch->len, offset, 1) < 0)
        return -1;
    if (seg_reader_next(&sr, out) != 1)
        return -1;
    record_view extra;
    /* exactly one record and nothing after it */
    return seg_reader_next(&sr, &extra) == 0 ? 0 : -1;
}

void admin_payload_json(buf *b, const record_view *v)
{
    record_payload_json(b, v);
}

int64_t admin_uuid_v7_time_us(const char *txn, size_t len)
{
    uuid u;
    if (uuid_parse(txn, len, &u) < 0 || (u.b[6] >> 4) != 7 || (u.b[8] & 0xc0) != 0x80)
        return 0;
    uint64_t ms = 0;
    for (int i = 0; i < 6; i++)
        ms = ms << 8 | u.b[i];
    return (int64_t)ms * 1000;
}

const char *admin_group_state(int64_t max_time_lag_us, int ever_consumed)
{
    if (max_time_lag_us > ADMIN_LAGGING_AFTER_US)
        return "Lagging";
    return ever_consumed ? "Stable" : "Dead";
}

void admin_iso_ms_or_null(buf *b, int64_t us)
{
    if (us <= 0) {
        buf_puts(b, "null");
        return;
    }
    char t[32];
    format_iso_ms(us, t);
    buf_putc(b, '"');
    buf_puts(b, t);
    buf_putc(b, '"');
}

void admin_iso_us_or_null(buf *b, int64_t us)
{
    if (us <= 0) {
        buf_puts(b, "null");
        return;
    }
    char t[32];
    format_iso_us(us, t);
    buf_putc(b, '"');
    buf_puts(b, t);
    buf_putc(b, '"');
}
