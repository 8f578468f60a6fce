/* logread.c — fetch, partitions changed, safeTime: SQL and decoding (see logread.h). */
#include "logread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "db/pg.h"
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
    for (int k = 0; k < SQL_MAX_ARRAYS; k++)
        pgarray_free(&p->arr[k]);
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

/* One row per (entry, segment), in entry then offset order. The segments of an entry start at
 * the one holding its offset, at most $7 of them; a window function marks those whose
 * predecessors already spend the entry's budget ($5) or the call's ($6), and those come back
 * without their data, so the detoasting stops there. Every entry has at least one row: an
 * unknown queue or partition has a NULL partition, an offset outside [start, next) or an
 * entry with nothing to read a NULL segment. */
const char FETCH_SQL[] =
    "SELECT y.ord, y.pid, y.puuid, y.start_offset, y.next_offset, y.base_offset, y.ts, y.record_count, "
    "CASE WHEN y.within THEN y.data END AS data "
    "FROM (SELECT x.*, row_number() OVER (PARTITION BY x.ord ORDER BY x.last_offset) AS rn, "
    "   coalesce(sum(x.payload_bytes) OVER (PARTITION BY x.ord ORDER BY x.last_offset) - x.payload_bytes < x.maxb "
    "        AND sum(x.payload_bytes) OVER (ORDER BY x.ord, x.last_offset) - x.payload_bytes < $6::int8, false) "
    "     AS within "
    " FROM (SELECT e.ord, e.maxb, p.id AS pid, p.uuid AS puuid, p.start_offset, p.next_offset, "
    "   s.base_offset, s.last_offset, s.ts, s.record_count, s.payload_bytes, s.data "
    "  FROM unnest($2::text[], $3::text[], $4::int8[], $5::int8[]) WITH ORDINALITY AS e(queue, part, off, maxb, ord) "
    "  LEFT JOIN queen.queues q ON q.tenant_id = $1::uuid AND q.name = e.queue "
    "  LEFT JOIN queen.partitions p ON p.queue_id = q.id AND p.name = e.part "
    "  LEFT JOIN LATERAL (SELECT s.base_offset, s.last_offset, s.ts, s.record_count, s.payload_bytes, s.data "
    "    FROM queen.segments s WHERE s.partition_id = p.id AND s.last_offset >= e.off "
    "      AND e.off >= p.start_offset AND e.off < p.next_offset "
    "    ORDER BY s.last_offset LIMIT $7::int8) s ON true) x) y "
    "WHERE y.rn = 1 OR y.within "
    "ORDER BY y.ord, y.last_offset";

void fetch_params(const fetch_args *a, sql_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, a->tenant);
    pgarray_begin(&p->arr[0], OID_TEXT);
    pgarray_begin(&p->arr[1], OID_TEXT);
    pgarray_begin(&p->arr[2], OID_INT8);
    pgarray_begin(&p->arr[3], OID_INT8);
    for (uint32_t i = 0; i < a->n; i++) {
        const fetch_entry *e = &a->entries[i];
        pgarray_add(&p->arr[0], e->queue, strlen(e->queue));
        pgarray_add(&p->arr[1], e->partition, strlen(e->partition));
        pgarray_add_i64(&p->arr[2], e->offset);
        pgarray_add_i64(&p->arr[3], e->max_bytes);
    }
    for (int k = 0; k < 4; k++)
        p_array(p, &p->arr[k]);
    p_i64(p, a->max_bytes);
    int64_t per = a->n ? FETCH_CALL_SEGMENTS / (int64_t)a->n : FETCH_CALL_SEGMENTS;
    p_i64(p, per < FETCH_MIN_SEGMENTS_PER_ENTRY ? FETCH_MIN_SEGMENTS_PER_ENTRY : per);
}

const char *fetch_error_name(enum fetch_error e)
{
    switch (e) {
    case FETCH_UNKNOWN_TOPIC_OR_PARTITION:
        return "UNKNOWN_TOPIC_OR_PARTITION";
    case FETCH_OFFSET_OUT_OF_RANGE:
        return "OFFSET_OUT_OF_RANGE";
    default:
        return NULL;
    }
}

static int64_t text_i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : (int64_t)be_get64((const uint8_t *)PQgetvalue(r, row, col));
}

/* Starts entry `index` from its first row. */
static void entry_begin(fetch_result *e, uint32_t index, const fetch_entry *fe, const PGresult *res, int row)
{
    memset(e, 0, sizeof *e);
    e->index = index;
    e->next_offset = fe->offset;
    if (PQgetisnull(res, row, FETCH_PID)) {
        e->error = FETCH_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    e->id = (uint64_t)text_i64(res, row, FETCH_PID);
    e->uuid = (const uint8_t *)PQgetvalue(res, row, FETCH_PUUID);
    e->log_start = text_i64(res, row, FETCH_START);
    e->high_watermark = text_i64(res, row, FETCH_NEXT);
    if (fe->offset < e->log_start || fe->offset > e->high_watermark)
        e->error = FETCH_OFFSET_OUT_OF_RANGE;
}

int fetch_decode(PGresult *res, const fetch_args *a, const fetch_callbacks *cb, void *arg, fetch_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    int rows = PQntuples(res);
    int row = 0, stopped = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const fetch_entry *fe = &a->entries[i];
        fetch_result e;
        /* the rows of entry i (ord is 1-based); a missing entry reads as an unknown partition */
        int first = row < rows && db_get_i64(res, row, FETCH_ORD) == (int64_t)i + 1 ? row : -1;
        if (first < 0) {
            memset(&e, 0, sizeof e);
            e.index = i;
            e.next_offset = fe->offset;
            e.error = FETCH_UNKNOWN_TOPIC_OR_PARTITION;
        } else {
            entry_begin(&e, i, fe, res, first);
        }
        if (cb->begin)
            cb->begin(arg, &e);
        int entry_done = stopped || e.error != FETCH_ENTRY_OK;
        for (; row < rows && db_get_i64(res, row, FETCH_ORD) == (int64_t)i + 1; row++) {
            if (entry_done || PQgetisnull(res, row, FETCH_BASE))
                continue;
            if (PQgetisnull(res, row, FETCH_DATA)) {
                /* past a budget (the statement's view of it): nothing more for this entry */
                entry_done = 1;
                continue;
            }
            int64_t base = text_i64(res, row, FETCH_BASE);
            int64_t ts = text_i64(res, row, FETCH_TS);
            uint32_t count =
                PQgetisnull(res, row, FETCH_COUNT) ? 0 : be_get32((const uint8_t *)PQgetvalue(res, row, FETCH_COUNT));
            seg_reader sr;
            if (seg_reader_init(&sr, (const uint8_t *)PQgetvalue(res, row, FETCH_DATA),
                                (size_t)PQgetlength(res, row, FETCH_DATA),
                                (uint64_t)base, count) < 0)
                return -1;
            seg_reader_skip_below(&sr, (uint64_t)fe->offset);
            record_view v;
            int rc;
            while ((rc = seg_reader_next(&sr, &v)) == 1) {
                if ((int64_t)v.offset < fe->offset)
                    continue;
                if ((int64_t)v.offset >= e.high_watermark)
                    break;
                if (v.flags & REC_DELETED)
                    continue;
                /* the first record of the call always goes: a reader must make progress */
                if (sum->records > 0 &&
                    (sum->records >= (uint64_t)a->max_records || sum->bytes + v.payload_len > (uint64_t)a->max_bytes ||
                     e.bytes + v.payload_len > (uint64_t)fe->max_bytes)) {
                    entry_done = 1;
                    /* a record that does not fit the call stops every later entry too */
                    if (sum->records >= (uint64_t)a->max_records || sum->bytes + v.payload_len > (uint64_t)a->max_bytes)
                        stopped = 1;
                    break;
                }
                sum->records++;
                sum->bytes += v.payload_len;
                e.delivered++;
                e.bytes += v.payload_len;
                e.next_offset = (int64_t)v.offset + 1;
                if (cb->record && cb->record(arg, &e, &v, ts)) {
                    entry_done = stopped = 1;
                    break;
                }
            }
            seg_reader_done(&sr);
            if (rc < 0)
                return -1;
        }
        if (cb->end)
            cb->end(arg, &e);
    }
    return 0;
}

void fetch_record_json(buf *b, const record_view *v, int64_t ts)
{
    buf_puts(b, "{\"offset\":");
    buf_put_u64(b, v->offset);
    buf_puts(b, ",\"transactionId\":");
    char txn[512];
    size_t tl = record_txn_text(v, txn, sizeof txn);
    jw_string(b, txn, tl);
    buf_puts(b, ",\"payload\":");
    record_payload_json(b, v); /* the plaintext, or null and payloadError */
    char iso[32];
    format_iso_us(ts, iso);
    buf_printf(b, ",\"ts\":\"%s\",\"traceId\":", iso);
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

const char TICK_QUEUES_SQL[] =
    "SELECT queen.tick_v1(ARRAY(SELECT id FROM queen.queues WHERE tenant_id = $1::uuid AND name = ANY($2::text[])), "
    "200000)";

/* The clocks and the partitions of every entry are read by one statement, so from one
 * snapshot: every record that commits after it is stamped above each safeTime returned, and a
 * partition it changes will have last_ts above that safeTime. Pages follow creation order (the
 * cursor is the last partition id of a page), so partitions created while a reader pages come
 * on a later page of the same pass. */
const char CHANGED_SQL[] =
    "SELECT e.ord, q.id AS queue_id, c.last_ts AS safe_time, p.id AS pid, p.name AS pname, p.uuid AS puuid, "
    "p.start_offset, p.next_offset, p.last_ts "
    "FROM unnest($2::text[], $3::int8[], $4::int8[], $5::int8[]) WITH ORDINALITY AS e(queue, since, after, lim, ord) "
    "LEFT JOIN queen.queues q ON q.tenant_id = $1::uuid AND q.name = e.queue "
    "LEFT JOIN queen.queue_clocks c ON c.queue_id = q.id "
    "LEFT JOIN LATERAL (SELECT x.id, x.name, x.uuid, x.start_offset, x.next_offset, x.last_ts FROM queen.partitions x "
    "  WHERE x.queue_id = q.id AND x.id > e.after AND (e.since IS NULL OR x.last_ts >= e.since) "
    "  ORDER BY x.id LIMIT e.lim + 1) p ON true "
    "ORDER BY e.ord, p.id";

void changed_params(const changed_args *a, sql_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, a->tenant);
    pgarray_begin(&p->arr[0], OID_TEXT);
    pgarray_begin(&p->arr[1], OID_INT8);
    pgarray_begin(&p->arr[2], OID_INT8);
    pgarray_begin(&p->arr[3], OID_INT8);
    for (uint32_t i = 0; i < a->n; i++) {
        const changed_entry *e = &a->entries[i];
        pgarray_add(&p->arr[0], e->queue, strlen(e->queue));
        if (e->has_since)
            pgarray_add_i64(&p->arr[1], e->since);
        else
            pgarray_add_null(&p->arr[1]);
        pgarray_add_i64(&p->arr[2], e->after);
        pgarray_add_i64(&p->arr[3], e->limit);
    }
    for (int k = 0; k < 4; k++)
        p_array(p, &p->arr[k]);
}

int changed_decode(PGresult *res, const changed_args *a, const changed_callbacks *cb, void *arg)
{
    int rows = PQntuples(res);
    int row = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        if (row >= rows || db_get_i64(res, row, CHANGED_ORD) != (int64_t)i + 1)
            return -1;
        changed_result e;
        memset(&e, 0, sizeof e);
        e.index = i;
        e.known = !PQgetisnull(res, row, CHANGED_QUEUE_ID);
        e.safe_time = text_i64(res, row, CHANGED_SAFE_TIME);
        if (cb->begin)
            cb->begin(arg, &e);
        for (; row < rows && db_get_i64(res, row, CHANGED_ORD) == (int64_t)i + 1; row++) {
            if (PQgetisnull(res, row, CHANGED_PID))
                continue;
            if (e.rows >= (uint32_t)a->entries[i].limit) {
                /* the one row past the limit: the page is full and more follow */
                e.has_next = 1;
                continue;
            }
            changed_row r;
            r.id = (uint64_t)text_i64(res, row, CHANGED_PID);
            r.name = PQgetvalue(res, row, CHANGED_PNAME);
            r.name_len = (size_t)PQgetlength(res, row, CHANGED_PNAME);
            r.uuid = (const uint8_t *)PQgetvalue(res, row, CHANGED_PUUID);
            r.start_offset = text_i64(res, row, CHANGED_START);
            r.end_offset = text_i64(res, row, CHANGED_NEXT);
            r.last_ts = text_i64(res, row, CHANGED_LAST_TS);
            e.rows++;
            e.next_after = (int64_t)r.id;
            if (cb->row)
                cb->row(arg, &e, &r);
        }
        if (cb->end)
            cb->end(arg, &e);
    }
    return 0;
}

const char TICK_TENANT_SQL[] =
    "SELECT queen.tick_v1(ARRAY(SELECT id FROM queen.queues WHERE tenant_id = $1::uuid), 1000000)";

const char STATUS_QUEUES_SQL[] =
    "SELECT q.tenant_id, q.name, c.last_ts AS safe_time, count(p.id) AS partitions, "
    "coalesce(sum(p.next_offset - p.start_offset), 0)::int8 AS records, coalesce(max(p.last_ts), 0)::int8 AS last_ts, "
    "q.namespace, q.task, q.configured "
    "FROM queen.queues q JOIN queen.queue_clocks c ON c.queue_id = q.id "
    "LEFT JOIN queen.partitions p ON p.queue_id = q.id WHERE q.tenant_id = $1::uuid "
    "GROUP BY q.id, c.last_ts ORDER BY q.name LIMIT 10000";

void status_queues_json(buf *b, const PGresult *queues, int64_t now)
{
    buf_putc(b, '[');
    int n = PQntuples(queues);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(b, ',');
        int64_t safe = atoll(PQgetvalue(queues, i, STATUS_Q_SAFE_TIME));
        buf_puts(b, "{\"tenant\":");
        jw_cstr(b, PQgetvalue(queues, i, STATUS_Q_TENANT));
        buf_puts(b, ",\"queue\":");
        jw_cstr(b, PQgetvalue(queues, i, STATUS_Q_NAME));
        buf_puts(b, ",\"namespace\":");
        jw_cstr(b, PQgetvalue(queues, i, STATUS_Q_NAMESPACE));
        buf_puts(b, ",\"task\":");
        jw_cstr(b, PQgetvalue(queues, i, STATUS_Q_TASK));
        buf_printf(b, ",\"configured\":%s,\"partitions\":%s,\"records\":%s,\"lastTs\":%s,\"safeTime\":%lld,"
                      "\"safeLagSeconds\":%.6f}",
                   PQgetvalue(queues, i, STATUS_Q_CONFIGURED)[0] == 't' ? "true" : "false",
                   PQgetvalue(queues, i, STATUS_Q_PARTITIONS), PQgetvalue(queues, i, STATUS_Q_RECORDS),
                   PQgetvalue(queues, i, STATUS_Q_LAST_TS), (long long)safe,
                   safe > 0 ? (double)(now - safe) / 1e6 : 0.0);
    }
    buf_putc(b, ']');
}
