/* logread.c — fetch, partitions changed, safeTime: SQL and decoding. */
#include "logread.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "core/uuid.h"
#include "json/json.h"
#include "payload.h"

void format_uuid_text(const uint8_t b[16], char out[37])
{
    uuid u;
    memcpy(u.b, b, 16);
    uuid_format(&u, out);
}

void sql_params_free(sql_params *p)
{
    pgarray_free(&p->arr[0]);
    pgarray_free(&p->arr[1]);
}

static void p_text(sql_params *p, const char *s)
{
    int i = p->n++;
    p->values[i] = s;
    p->lengths[i] = 0;
    p->formats[i] = 0;
}

static void p_i64(sql_params *p, int64_t v)
{
    int i = p->n++;
    snprintf(p->text[i], sizeof p->text[i], "%lld", (long long)v);
    p->values[i] = p->text[i];
    p->lengths[i] = 0;
    p->formats[i] = 0;
}

static void p_uuid(sql_params *p, const uint8_t b[16])
{
    int i = p->n++;
    format_uuid_text(b, p->text[i]);
    p->values[i] = p->text[i];
    p->lengths[i] = 0;
    p->formats[i] = 0;
}

static void p_array(sql_params *p, pgarray *a)
{
    int i = p->n++;
    pgarray_finish(a);
    p->values[i] = a->b.data;
    p->lengths[i] = (int)a->b.len;
    p->formats[i] = 1;
}

/* One row per (partition, segment) in partition-name then offset order. Segments whose
 * predecessors already fill the record or byte budget are cut; the first one cut comes back
 * without its data (within = false), which is how the reader knows the answer was limited.
 * A partition with nothing to read still has one row (NULL segment); a queue without the
 * named partition has one all-NULL row; an unknown queue has none. */
/* the columns, in order */
enum fetch_col { F_NAME, F_PID, F_PUUID, F_START, F_NEXT, F_BASE, F_TS, F_COUNT, F_DATA, F_FROM, F_WITHIN };
const char FETCH_SQL[] =
    "SELECT y.name, y.pid, y.puuid, y.start_offset, y.next_offset, y.base_offset, y.ts, y.record_count, "
    "CASE WHEN y.within THEN y.data END, y.from_off, y.within "
    "FROM (SELECT x.*, lag(x.within) OVER (ORDER BY x.name, x.last_offset) AS prev_within "
    " FROM (SELECT p.name, p.id AS pid, p.uuid AS puuid, p.start_offset, p.next_offset, o.from_off, "
    "   s.base_offset, s.ts, s.record_count, s.data, s.last_offset, "
    "   coalesce(sum(s.payload_bytes) OVER w - s.payload_bytes < $7::int8 "
    "        AND sum(s.record_count) OVER w - s.record_count < $8::int8, true) AS within "
    "  FROM queen.queues q "
    "  LEFT JOIN queen.partitions p ON p.queue_id = q.id AND ($3::text IS NULL OR p.name = $3) "
    "  LEFT JOIN LATERAL (SELECT coalesce((SELECT o.off FROM unnest($9::text[], $10::int8[]) AS o(n, off) "
    "    WHERE o.n = p.name LIMIT 1), $4::int8) AS from_off) o ON true "
    "  LEFT JOIN LATERAL (SELECT s.* FROM queen.segments s WHERE s.partition_id = p.id "
    "    AND s.last_offset >= o.from_off AND ($6::int8 IS NULL OR s.ts < $6::int8) "
    "    ORDER BY s.last_offset LIMIT $5::int8) s ON true "
    "  WHERE q.tenant_id = $1::uuid AND q.name = $2::text "
    "  WINDOW w AS (ORDER BY p.name, s.last_offset)) x) y "
    "WHERE y.base_offset IS NULL OR y.within OR y.prev_within "
    "ORDER BY y.name, y.last_offset";

void fetch_params(const fetch_args *a, sql_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, a->tenant);
    p_text(p, a->queue);
    p_text(p, a->partition);
    p_i64(p, a->from_offset);
    p_i64(p, a->max_records + 1); /* one more segment than records: enough to see a cut */
    if (a->max_ts > 0)
        p_i64(p, a->max_ts);
    else
        p_text(p, NULL);
    p_i64(p, a->max_bytes);
    p_i64(p, a->max_records);
    pgarray_begin(&p->arr[0], OID_TEXT);
    pgarray_begin(&p->arr[1], OID_INT8);
    for (uint32_t i = 0; i < a->noffsets; i++) {
        pgarray_add(&p->arr[0], a->names[i], strlen(a->names[i]));
        pgarray_add_i64(&p->arr[1], a->offsets[i]);
    }
    p_array(p, &p->arr[0]);
    p_array(p, &p->arr[1]);
}

static int64_t text_i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : (int64_t)be_get64((const uint8_t *)PQgetvalue(r, row, col));
}

enum fetch_result fetch_decode(PGresult *res, const fetch_args *a, fetch_record_fn on_record,
                               fetch_partition_fn on_partition, void *arg, fetch_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    int rows = PQntuples(res);
    if (rows == 0)
        return FETCH_NO_QUEUE;
    if (PQgetisnull(res, 0, F_NAME)) {
        /* the queue exists, the partition does not (or the queue has none) */
        return a->partition ? FETCH_NO_PARTITION : FETCH_OK;
    }
    fetch_partition cur;
    int have = 0, stopped = 0;
    for (int i = 0; i < rows; i++) {
        const char *name = PQgetvalue(res, i, F_NAME);
        size_t nlen = (size_t)PQgetlength(res, i, F_NAME);
        if (!have || cur.name_len != nlen || memcmp(cur.name, name, nlen) != 0) {
            if (have && on_partition)
                on_partition(arg, &cur);
            memset(&cur, 0, sizeof cur);
            cur.name = name;
            cur.name_len = nlen;
            cur.id = (uint64_t)text_i64(res, i, F_PID);
            cur.uuid = (const uint8_t *)PQgetvalue(res, i, F_PUUID);
            cur.start_offset = text_i64(res, i, F_START);
            cur.end_offset = text_i64(res, i, F_NEXT);
            cur.from = text_i64(res, i, F_FROM);
            cur.next_offset = cur.from;
            have = 1;
        }
        if (PQgetisnull(res, i, F_BASE) || stopped)
            continue;
        if (PQgetisnull(res, i, F_DATA)) {
            /* the first segment past the budget: the answer was cut here */
            sum->more = 1;
            stopped = 1;
            continue;
        }
        int64_t base = text_i64(res, i, F_BASE);
        int64_t ts = text_i64(res, i, F_TS);
        uint32_t count = PQgetisnull(res, i, F_COUNT) ? 0 : be_get32((const uint8_t *)PQgetvalue(res, i, F_COUNT));
        seg_reader sr;
        if (seg_reader_init(&sr, (const uint8_t *)PQgetvalue(res, i, F_DATA), (size_t)PQgetlength(res, i, F_DATA),
                            (uint64_t)base, count) < 0)
            return FETCH_CORRUPT;
        record_view v;
        int rc;
        while ((rc = seg_reader_next(&sr, &v)) == 1) {
            if ((int64_t)v.offset < cur.from)
                continue;
            if (v.flags & REC_DELETED) {
                cur.next_offset = (int64_t)v.offset + 1;
                continue;
            }
            if (sum->records >= (uint64_t)a->max_records ||
                (sum->records > 0 && sum->bytes + v.payload_len > (uint64_t)a->max_bytes)) {
                stopped = 1;
                sum->more = 1;
                break;
            }
            sum->records++;
            sum->bytes += v.payload_len;
            cur.delivered++;
            cur.next_offset = (int64_t)v.offset + 1;
            if (on_record && on_record(arg, &cur, &v, ts)) {
                stopped = 1;
                break;
            }
        }
        if (rc < 0)
            return FETCH_CORRUPT;
    }
    if (have && on_partition)
        on_partition(arg, &cur);
    return FETCH_OK;
}

void fetch_record_json(buf *b, const fetch_partition *p, const record_view *v, int64_t ts)
{
    buf_puts(b, "{\"partition\":");
    jw_string(b, p->name, p->name_len);
    buf_puts(b, ",\"offset\":");
    buf_put_u64(b, v->offset);
    buf_puts(b, ",\"transactionId\":");
    char txn[512];
    size_t tl = record_txn_text(v, txn, sizeof txn);
    jw_string(b, txn, tl);
    buf_puts(b, ",\"ts\":");
    buf_put_i64(b, ts);
    buf_puts(b, ",\"payload\":");
    record_payload_json(b, v); /* the plaintext, or null and payloadError */
    buf_puts(b, ",\"traceId\":");
    if (v->trace) {
        char t[37];
        format_uuid_text(v->trace, t);
        jw_cstr(b, t);
    } else {
        buf_puts(b, "null");
    }
    buf_puts(b, ",\"producerSub\":");
    if (v->producer)
        jw_string(b, v->producer, v->producer_len);
    else
        buf_puts(b, "null");
    buf_putc(b, '}');
}

const char TICK_QUEUE_SQL[] =
    "SELECT queen.tick_v1(ARRAY(SELECT id FROM queen.queues WHERE tenant_id = $1::uuid AND name = $2::text), "
    "200000)";

void tick_queue_params(const uint8_t tenant[16], const char *queue, sql_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, tenant);
    p_text(p, queue);
}

/* The clock and the partitions are read by one statement, so from one snapshot: every record
 * that commits after it is stamped above the safeTime returned, and a partition it changes
 * will have last_ts above that safeTime. */
enum changed_col { CH_QID, CH_SAFE_TIME, CH_NAME, CH_UUID, CH_START, CH_NEXT, CH_LAST_TS };
const char CHANGED_SQL[] =
    "SELECT q.id, c.last_ts, p.name, p.uuid, p.start_offset, p.next_offset, p.last_ts "
    "FROM queen.queues q JOIN queen.queue_clocks c ON c.queue_id = q.id "
    "LEFT JOIN LATERAL (SELECT x.name, x.uuid, x.start_offset, x.next_offset, x.last_ts FROM queen.partitions x "
    "  WHERE x.queue_id = q.id AND x.last_ts > $3::int8 AND x.name > $4::text ORDER BY x.name LIMIT $5::int8) p "
    "ON true WHERE q.tenant_id = $1::uuid AND q.name = $2::text ORDER BY p.name";

void changed_params(const changed_args *a, sql_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, a->tenant);
    p_text(p, a->queue);
    p_i64(p, a->since);
    p_text(p, a->after ? a->after : "");
    p_i64(p, a->limit + 1);
}

int changed_decode(PGresult *res, int64_t limit, int64_t *safe_time, void (*on_row)(void *, const changed_row *),
                   void *arg, int *more)
{
    int rows = PQntuples(res);
    *more = 0;
    if (rows == 0)
        return -1;
    *safe_time = text_i64(res, 0, CH_SAFE_TIME);
    for (int i = 0; i < rows; i++) {
        if (PQgetisnull(res, i, CH_NAME))
            continue;
        if (i >= limit) {
            *more = 1;
            break;
        }
        changed_row r;
        r.name = PQgetvalue(res, i, CH_NAME);
        r.name_len = (size_t)PQgetlength(res, i, CH_NAME);
        r.uuid = (const uint8_t *)PQgetvalue(res, i, CH_UUID);
        r.start_offset = text_i64(res, i, CH_START);
        r.end_offset = text_i64(res, i, CH_NEXT);
        r.last_ts = text_i64(res, i, CH_LAST_TS);
        on_row(arg, &r);
    }
    return 0;
}

const char TICK_TENANT_SQL[] =
    "SELECT queen.tick_v1(ARRAY(SELECT id FROM queen.queues WHERE tenant_id = $1::uuid), 1000000)";

const char STATUS_QUEUES_SQL[] =
    "SELECT q.tenant_id, q.name, c.last_ts, count(p.id), coalesce(sum(p.next_offset - p.start_offset), 0)::int8, "
    "coalesce(max(p.last_ts), 0)::int8, q.namespace, q.task, q.configured "
    "FROM queen.queues q JOIN queen.queue_clocks c ON c.queue_id = q.id "
    "LEFT JOIN queen.partitions p ON p.queue_id = q.id WHERE q.tenant_id = $1::uuid "
    "GROUP BY q.id, c.last_ts ORDER BY q.name LIMIT 10000";
