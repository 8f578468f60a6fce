/* answers_traces.c — the trace routes' SQL and the JSON of their answers (see answers_traces.h). */
#include "answers_traces.h"

#include <string.h>

#include "admin/admin.h"
#include "core/util.h"
#include "db/res.h"

/* The partitions' key shares (what the foreign key takes anyway) are taken in partition-id
 * order, as every deletion takes them. */
const char TRACE_INSERT_SQL[] =
    "WITH i AS MATERIALIZED ("
    " SELECT i.id, p.id AS pid, p.uuid AS puuid, p.next_offset AS log_end, i.txn, i.grp, i.ev, i.names, i.data,"
    "  CASE WHEN x.off >= p.start_offset AND x.off < p.next_offset THEN x.off END AS off"
    " FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],"
    "             $10::int8[]) AS i(id, tenant, part, txn, grp, ev, names, data, voff)"
    " JOIN queen.partitions p ON p.uuid = queen.partition_uuid_v1(i.part)"
    " JOIN queen.queues q ON q.id = p.queue_id AND q.tenant_id = i.tenant"
    " CROSS JOIN LATERAL (SELECT coalesce(i.voff,"
    "   (SELECT d.off FROM queen.dedup d WHERE d.partition_id = p.id AND d.txn_id = i.txn),"
    "   (SELECT c.lease_start + array_position(c.lease_txns, i.txn) - 1 FROM queen.cursors c"
    "     WHERE c.partition_id = p.id AND array_position(c.lease_txns, i.txn) IS NOT NULL LIMIT 1)) AS off) x"
    " ORDER BY p.id FOR KEY SHARE OF p), "
    "ins AS (INSERT INTO queen.message_traces (id, partition_id, transaction_id, consumer_group, event_type, trace_names,"
    " data, worker_id, log_end, off)"
    " SELECT i.id, i.pid, i.txn, i.grp, i.ev, ARRAY(SELECT json_array_elements_text(i.names::json)), i.data, $9::text,"
    " i.log_end, i.off FROM i WHERE i.off IS NOT NULL RETURNING 1) "
    "SELECT i.id, i.off IS NOT NULL AS inserted, i.puuid FROM i";

const char TRACE_BY_RECORD_SQL[] =
    "SELECT t.id, t.event_type, t.data, t.consumer_group, t.worker_id, "
    "(extract(epoch FROM t.created_at) * 1000000)::int8 AS created_us, array_to_json(t.trace_names)::text AS trace_names "
    "FROM queen.message_traces t JOIN queen.partitions p ON p.id = t.partition_id "
    "JOIN queen.queues q ON q.id = p.queue_id "
    "WHERE p.uuid = queen.partition_uuid_v1($2::uuid) AND q.tenant_id = $1::uuid AND t.transaction_id = $3::text ORDER BY t.seq LIMIT $4::int8";

const char TRACE_BY_NAME_SQL[] =
    "SELECT t.id, t.transaction_id, p.uuid AS puuid, t.event_type, t.data, t.consumer_group, t.worker_id, "
    "(extract(epoch FROM t.created_at) * 1000000)::int8 AS created_us, q.name AS qname, p.name AS pname, "
    "array_to_json(t.trace_names)::text AS trace_names, t.off, "
    "CASE WHEN t.off >= p.start_offset THEN (SELECT r.rec FROM queen.record_at_v1(p.id, t.off) r) END AS rec "
    "FROM queen.message_traces t JOIN queen.partitions p ON p.id = t.partition_id "
    "JOIN queen.queues q ON q.id = p.queue_id "
    "WHERE q.tenant_id = $1::uuid AND t.trace_names @> ARRAY[$2::text] ORDER BY t.seq DESC LIMIT $3::int8 OFFSET $4::int8";

const char TRACE_BY_NAME_COUNT_SQL[] =
    "SELECT count(*)::int8 AS total FROM queen.message_traces t JOIN queen.partitions p ON p.id = t.partition_id "
    "JOIN queen.queues q ON q.id = p.queue_id WHERE q.tenant_id = $1::uuid AND t.trace_names @> ARRAY[$2::text]";

const char TRACE_NAMES_SQL[] =
    "SELECT n.name, count(*)::int8 AS trace_count, count(DISTINCT (t.partition_id, t.transaction_id))::int8 AS message_count, "
    "(extract(epoch FROM max(t.created_at)) * 1000000)::int8 AS last_seen_us "
    "FROM queen.message_traces t JOIN queen.partitions p ON p.id = t.partition_id "
    "JOIN queen.queues q ON q.id = p.queue_id CROSS JOIN LATERAL unnest(t.trace_names) AS n(name) "
    "WHERE q.tenant_id = $1::uuid GROUP BY n.name ORDER BY max(t.created_at) DESC, n.name LIMIT $2::int8 OFFSET $3::int8";

const char TRACE_NAMES_COUNT_SQL[] =
    "SELECT count(DISTINCT n.name)::int8 AS total FROM queen.message_traces t JOIN queen.partitions p ON p.id = t.partition_id "
    "JOIN queen.queues q ON q.id = p.queue_id CROSS JOIN LATERAL unnest(t.trace_names) AS n(name) "
    "WHERE q.tenant_id = $1::uuid";

int trace_insert_row(const PGresult *res, const uuid *id, int *inserted, uint8_t puuid[16])
{
    int row = -1;
    for (int i = 0; i < PQntuples(res) && row < 0; i++)
        if (PQgetlength(res, i, TRACE_INS_ID) == 16 && memcmp(PQgetvalue(res, i, TRACE_INS_ID), id->b, 16) == 0)
            row = i;
    memset(puuid, 0, 16);
    *inserted = 0;
    if (row < 0)
        return -1;
    if (PQgetlength(res, row, TRACE_INS_PUUID) == 16)
        memcpy(puuid, PQgetvalue(res, row, TRACE_INS_PUUID), 16);
    *inserted = res_bool(res, row, TRACE_INS_INSERTED);
    return row;
}

void answer_trace_added(buf *b, const uuid *id)
{
    char s[37];
    uuid_format(id, s);
    buf_printf(b, "{\"success\":true,\"traceId\":\"%s\"}", s);
}

/* A text column as it is (raw JSON text), or null. */
static void raw_or_null(buf *b, const PGresult *x, int row, int col)
{
    if (res_null(x, row, col)) {
        buf_puts(b, "null");
        return;
    }
    size_t n;
    const char *s = res_text(x, row, col, &n);
    buf_append(b, s, n);
}

void answer_traces_of_record(buf *b, const PGresult *x)
{
    buf_puts(b, "{\"traces\":[");
    for (int i = 0; i < PQntuples(x); i++) {
        char id[37];
        res_uuid(x, i, TRACE_REC_ID, id);
        if (i)
            buf_putc(b, ',');
        buf_printf(b, "{\"id\":\"%s\",\"event_type\":", id);
        res_json_str(b, x, i, TRACE_REC_EVENT);
        buf_puts(b, ",\"data\":");
        raw_or_null(b, x, i, TRACE_REC_DATA);
        buf_puts(b, ",\"consumer_group\":");
        res_json_str(b, x, i, TRACE_REC_GROUP);
        buf_puts(b, ",\"worker_id\":");
        res_json_str(b, x, i, TRACE_REC_WORKER);
        buf_puts(b, ",\"created_at\":");
        admin_iso_ms_or_null(b, res_i64(x, i, TRACE_REC_CREATED_US));
        buf_puts(b, ",\"trace_names\":");
        raw_or_null(b, x, i, TRACE_REC_NAMES);
        buf_putc(b, '}');
    }
    buf_puts(b, "]}");
}

/* message_payload: the record's payload as GET /api/v1/messages/:p/:t answers it (opened when
 * sealed; null and payloadError when this node cannot open it), null when the record is gone
 * from the log or the trace predates 106_trace_offsets. */
static void put_message_payload(buf *b, const PGresult *x, int row, buf *scratch)
{
    buf_puts(b, ",\"message_payload\":");
    record_view v;
    if (res_null(x, row, TRACE_NAME_OFF) || res_null(x, row, TRACE_NAME_RECORD) ||
        admin_record_decode((const uint8_t *)PQgetvalue(x, row, TRACE_NAME_RECORD),
                            (size_t)PQgetlength(x, row, TRACE_NAME_RECORD), (uint64_t)res_i64(x, row, TRACE_NAME_OFF),
                            scratch, &v) < 0) {
        buf_puts(b, "null");
        return;
    }
    admin_payload_json(b, &v);
}

void answer_traces_by_name(buf *b, const PGresult *x, const PGresult *count, int64_t limit, int64_t offset)
{
    buf scratch;
    buf_init(&scratch, 0);
    buf_puts(b, "{\"traces\":[");
    for (int i = 0; i < PQntuples(x); i++) {
        char id[37], pu[37];
        res_uuid(x, i, TRACE_NAME_ID, id);
        res_uuid(x, i, TRACE_NAME_PUUID, pu);
        if (i)
            buf_putc(b, ',');
        buf_printf(b, "{\"id\":\"%s\",\"transaction_id\":", id);
        res_json_str(b, x, i, TRACE_NAME_TXN);
        buf_printf(b, ",\"partition_id\":\"%s\",\"event_type\":", pu);
        res_json_str(b, x, i, TRACE_NAME_EVENT);
        buf_puts(b, ",\"data\":");
        raw_or_null(b, x, i, TRACE_NAME_DATA);
        buf_puts(b, ",\"consumer_group\":");
        res_json_str(b, x, i, TRACE_NAME_GROUP);
        buf_puts(b, ",\"worker_id\":");
        res_json_str(b, x, i, TRACE_NAME_WORKER);
        buf_puts(b, ",\"created_at\":");
        admin_iso_ms_or_null(b, res_i64(x, i, TRACE_NAME_CREATED_US));
        buf_puts(b, ",\"queue_name\":");
        res_json_str(b, x, i, TRACE_NAME_QUEUE);
        buf_puts(b, ",\"partition_name\":");
        res_json_str(b, x, i, TRACE_NAME_PARTITION);
        put_message_payload(b, x, i, &scratch);
        buf_puts(b, ",\"trace_names\":");
        raw_or_null(b, x, i, TRACE_NAME_NAMES);
        buf_putc(b, '}');
    }
    buf_printf(b, "],\"total\":%lld,\"pagination\":{\"limit\":%lld,\"offset\":%lld}}",
               (long long)res_i64(count, 0, TRACE_NAME_TOTAL), (long long)limit, (long long)offset);
    buf_free(&scratch);
}

void answer_trace_names(buf *b, const PGresult *x, const PGresult *count, int64_t limit, int64_t offset)
{
    buf_puts(b, "{\"trace_names\":[");
    for (int i = 0; i < PQntuples(x); i++) {
        if (i)
            buf_putc(b, ',');
        buf_puts(b, "{\"trace_name\":");
        res_json_str(b, x, i, TRACE_NAMES_NAME);
        buf_printf(b, ",\"trace_count\":%lld,\"message_count\":%lld,\"last_seen\":",
                   (long long)res_i64(x, i, TRACE_NAMES_TRACES), (long long)res_i64(x, i, TRACE_NAMES_MESSAGES));
        admin_iso_ms_or_null(b, res_i64(x, i, TRACE_NAMES_LAST_US));
        buf_putc(b, '}');
    }
    buf_printf(b, "],\"total\":%lld,\"pagination\":{\"limit\":%lld,\"offset\":%lld}}",
               (long long)res_i64(count, 0, TRACE_NAMES_TOTAL), (long long)limit, (long long)offset);
}
