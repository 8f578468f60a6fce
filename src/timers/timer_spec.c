/* timer_spec.c — timers without I/O: parsing POST /api/v1/timers, encoding a timer's record,
 * the SQL texts and their parameters. */
#include <stdio.h>
#include <string.h>

#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "storage/record.h"
#include "timers.h"

static const char *const TIMER_FIELDS[] = {"queue", "partition", "payload", "fireAt", "delayMs", "transactionId",
                                           "traceId"};

/* A string member decoded into the arena: 1 present, 0 absent or null, -1 not a string. */
static int str_member(const json_doc *d, int obj, const char *name, arena *ar, const char **out, size_t *len)
{
    int t = json_get(d, obj, name);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    const char *p;
    size_t n;
    if (json_str_span(d, t, &p, &n) == 0) {
        *out = arena_strndup(ar, p, n);
        *len = n;
        return 1;
    }
    buf b;
    buf_init(&b, 0);
    json_str_decode(d, t, &b);
    *out = arena_strndup(ar, b.data ? b.data : "", b.len);
    *len = b.len;
    buf_free(&b);
    return 1;
}

static int name_ok(const char *s, size_t n)
{
    return n > 0 && n <= TIMER_NAME_MAX_BYTES && !memchr(s, '\0', n);
}

int timer_parse(const json_doc *d, int obj, arena *ar, timer_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->delay_us = -1;
    if (json_type_of(d, obj) != JSON_OBJECT) {
        snprintf(err, errlen, "a timer must be a JSON object");
        return -1;
    }
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        int known = 0;
        for (size_t f = 0; f < ARRAY_LEN(TIMER_FIELDS) && !known; f++)
            known = json_str_eq(d, k, TIMER_FIELDS[f]);
        if (!known) {
            buf nb;
            buf_init(&nb, 256);
            json_str_decode(d, k, &nb);
            snprintf(err, errlen,
                     "unknown field \"%.*s\" (fields: queue, partition, payload, fireAt, delayMs, transactionId, "
                     "traceId)",
                     (int)utf8_cut(nb.data ? nb.data : "", nb.len, 64), nb.data ? nb.data : "");
            buf_free(&nb);
            return -1;
        }
    }
    int rc = str_member(d, obj, "queue", ar, &out->queue, &out->queue_len);
    if (rc <= 0) {
        snprintf(err, errlen, "queue is required (a string)");
        return -1;
    }
    if (!name_ok(out->queue, out->queue_len)) {
        snprintf(err, errlen, "queue must be 1 to %d bytes without NUL characters", TIMER_NAME_MAX_BYTES);
        return -1;
    }
    rc = str_member(d, obj, "partition", ar, &out->partition, &out->partition_len);
    if (rc < 0) {
        snprintf(err, errlen, "partition must be a string");
        return -1;
    }
    if (rc == 0) {
        out->partition = "Default";
        out->partition_len = 7;
    }
    if (!name_ok(out->partition, out->partition_len)) {
        snprintf(err, errlen, "partition must be 1 to %d bytes without NUL characters", TIMER_NAME_MAX_BYTES);
        return -1;
    }
    int fa = json_get(d, obj, "fireAt");
    int dl = json_get(d, obj, "delayMs");
    if (fa >= 0 && json_type_of(d, fa) == JSON_NULL)
        fa = -1;
    if (dl >= 0 && json_type_of(d, dl) == JSON_NULL)
        dl = -1;
    if (fa >= 0 && dl >= 0) {
        snprintf(err, errlen, "give either fireAt or delayMs, not both");
        return -1;
    }
    if (fa < 0 && dl < 0) {
        snprintf(err, errlen, "fireAt (ISO-8601 or microseconds since the epoch) or delayMs is required");
        return -1;
    }
    if (fa >= 0) {
        int64_t us;
        if (json_type_of(d, fa) == JSON_STRING) {
            const char *s;
            size_t n;
            str_member(d, obj, "fireAt", ar, &s, &n);
            if (parse_iso_us(s, n, &us) < 0) {
                snprintf(err, errlen, "fireAt must be an ISO-8601 timestamp such as 2030-01-02T03:04:05.678Z");
                return -1;
            }
        } else if (json_int64(d, fa, &us) < 0) {
            snprintf(err, errlen, "fireAt must be an ISO-8601 string or an integer of microseconds since the epoch");
            return -1;
        }
        if (us < TIMER_FIRE_AT_MIN_US || us > TIMER_FIRE_AT_MAX_US) {
            snprintf(err, errlen,
                     "fireAt must be between 2001-09-09 and 9999-12-31 (as an integer: microseconds since the "
                     "epoch, %lld..%lld)",
                     (long long)TIMER_FIRE_AT_MIN_US, (long long)TIMER_FIRE_AT_MAX_US);
            return -1;
        }
        out->fire_at_us = us;
    } else {
        int64_t ms;
        if (json_int64(d, dl, &ms) < 0 || ms < 0 || ms > TIMER_DELAY_MAX_MS) {
            snprintf(err, errlen, "delayMs must be an integer between 0 and %lld", (long long)TIMER_DELAY_MAX_MS);
            return -1;
        }
        out->delay_us = ms * 1000;
    }
    const char *s;
    size_t n;
    rc = str_member(d, obj, "transactionId", ar, &s, &n);
    if (rc < 0) {
        snprintf(err, errlen, "transactionId must be a string");
        return -1;
    }
    if (rc == 1 && n > 0) {
        if (n > TIMER_TXN_MAX_BYTES || memchr(s, '\0', n)) {
            snprintf(err, errlen, "transactionId must be at most %d bytes without NUL characters", TIMER_TXN_MAX_BYTES);
            return -1;
        }
        out->txn = s;
        out->txn_len = n;
        out->txn_producer = 1;
    } else {
        uuid u;
        uuid_v7(&u);
        char *t = arena_alloc(ar, UUID_STR_LEN + 1);
        uuid_format(&u, t);
        out->txn = t;
        out->txn_len = UUID_STR_LEN;
    }
    rc = str_member(d, obj, "traceId", ar, &s, &n);
    if (rc < 0) {
        snprintf(err, errlen, "traceId must be a string");
        return -1;
    }
    if (rc == 1 && n > 0) {
        uuid u;
        if (uuid_parse(s, n, &u) < 0) {
            snprintf(err, errlen, "traceId must be a UUID");
            return -1;
        }
        memcpy(out->trace, u.b, 16);
        out->has_trace = 1;
    }
    int pl = json_get(d, obj, "payload");
    if (pl >= 0) {
        out->payload = json_raw(d, pl, &out->payload_len);
        if (out->payload_len > TIMER_PAYLOAD_MAX_BYTES) {
            snprintf(err, errlen, "payload is %zu bytes; a timer's payload may have at most %u", out->payload_len,
                     TIMER_PAYLOAD_MAX_BYTES);
            return -1;
        }
    }
    uuid_v7(&out->id);
    return 0;
}

int timer_parse_request(const json_doc *d, arena *ar, timer_spec **specs, int *n, int *is_batch, char *err,
                        size_t errlen)
{
    int items = json_get(d, 0, "items");
    if (items < 0) {
        timer_spec *s = arena_alloc(ar, sizeof *s);
        if (timer_parse(d, 0, ar, s, err, errlen) < 0)
            return -1;
        *specs = s;
        *n = 1;
        *is_batch = 0;
        return 0;
    }
    if (json_type_of(d, items) != JSON_ARRAY || d->toks[0].count != 1) {
        snprintf(err, errlen, "a batch body is {\"items\": [timer, ...]} and nothing else");
        return -1;
    }
    uint32_t m = d->toks[items].count;
    if (m == 0) {
        snprintf(err, errlen, "items must hold at least one timer");
        return -1;
    }
    if (m > TIMER_BATCH_MAX_ITEMS) {
        snprintf(err, errlen, "items holds %u timers; at most %d are accepted per request", m, TIMER_BATCH_MAX_ITEMS);
        return -1;
    }
    timer_spec *out = arena_alloc(ar, m * sizeof *out);
    int t = json_first(d, items);
    for (uint32_t i = 0; i < m; i++, t = json_next(d, t)) {
        char e[400];
        if (timer_parse(d, t, ar, &out[i], e, sizeof e) < 0) {
            snprintf(err, errlen, "items[%u]: %s", i, e);
            return -1;
        }
    }
    *specs = out;
    *n = (int)m;
    *is_batch = 1;
    return 0;
}

int timer_encode_record(const timer_spec *s, const char *producer, size_t producer_len, buf *out)
{
    buf sealed;
    buf_init(&sealed, 0);
    record_in rec = {
        .txn = s->txn,
        .txn_len = s->txn_len,
        .txn_producer = s->txn_producer,
        .trace = s->has_trace ? s->trace : NULL,
        .producer = producer,
        .producer_len = producer_len,
        .payload = s->payload,
        .payload_len = s->payload_len,
    };
    int rc = 0;
    if (s->seal) {
        if (seal_seal(seal_node_key(), s->payload, s->payload_len, &sealed) < 0)
            rc = -1;
        rec.payload = sealed.data;
        rec.payload_len = sealed.len;
        rec.encrypted = 1;
    }
    if (rc == 0)
        rc = record_encode(out, &rec);
    buf_free(&sealed);
    return rc;
}

int timer_reseal_record(const uint8_t *rec, size_t len, buf *out)
{
    buf seg, sealed;
    buf_init(&seg, 0);
    buf_init(&sealed, 0);
    segment_begin(&seg);
    buf_append(&seg, rec, len);
    seg_reader sr;
    record_view v, extra;
    int rc = -1;
    if (seg_reader_init(&sr, (const uint8_t *)seg.data, seg.len, 0, 1) < 0 || seg_reader_next(&sr, &v) != 1 ||
        seg_reader_next(&sr, &extra) != 0)
        goto out;
    if (v.flags & REC_ENCRYPTED) {
        rc = 1;
        goto out;
    }
    if (seal_seal(seal_node_key(), v.payload, v.payload_len, &sealed) < 0)
        goto out;
    char txn[512];
    size_t tl = record_txn_text(&v, txn, sizeof txn);
    record_in in = {
        .txn = txn,
        .txn_len = tl,
        .txn_producer = (v.flags & REC_TXN_PRODUCER) != 0,
        .trace = v.trace,
        .producer = v.producer,
        .producer_len = v.producer_len,
        .payload = sealed.data,
        .payload_len = sealed.len,
        .encrypted = 1,
    };
    rc = record_encode(out, &in);
out:
    buf_free(&seg);
    buf_free(&sealed);
    return rc;
}

/* ---- SQL ---- */

void timer_params_free(timer_params *p)
{
    for (size_t i = 0; i < ARRAY_LEN(p->arr); i++)
        pgarray_free(&p->arr[i]);
    buf_free(&p->records);
}

static void p_bin(timer_params *p, const void *v, size_t n)
{
    int i = p->n++;
    p->values[i] = v;
    p->lengths[i] = (int)n;
    p->formats[i] = 1;
}

static void p_uuid(timer_params *p, const uint8_t b[16])
{
    memcpy(p->text[p->n], b, 16);
    p_bin(p, p->text[p->n], 16);
}

static void p_i64(timer_params *p, int64_t v)
{
    be_put64((uint8_t *)p->text[p->n], (uint64_t)v);
    p_bin(p, p->text[p->n], 8);
}

static void p_array(timer_params *p, pgarray *a)
{
    pgarray_finish(a);
    p_bin(p, a->b.data, a->b.len);
}

/* A record's first byte is its flags (8 = sealed): a plaintext record for a queue with
 * encryptionEnabled stops the whole insert (one statement, one snapshot: a configure that
 * commits meanwhile is caught by the firing round instead, timers_fire_v2). */
const char TIMER_CREATE_SQL[] =
    "WITH u AS (SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::text[],"
    "  $8::bool[], $9::uuid[], $10::int4[], $11::bytea[]) WITH ORDINALITY AS u(id, q, p, fa, dl, txn, prod, tr, b, rec, i)),"
    " bad AS (SELECT u.i FROM u JOIN queen.queues x ON x.tenant_id = $1::uuid AND x.name = u.q"
    "  WHERE (queen.queue_options_v1(x.options)->>'encryptionEnabled')::boolean AND get_byte(u.rec, 0) & 8 = 0),"
    " ins AS ("
    " INSERT INTO queen.log_timers (id, tenant_id, queue, partition, fire_at, txn_id, txn_producer, trace_id,"
    "  payload_bytes, record, created_at)"
    " SELECT u.id, $1::uuid, u.q, u.p, coalesce(u.fa, queen.now_us() + u.dl), u.txn, u.prod, u.tr, u.b, u.rec,"
    "  queen.now_us()"
    " FROM u WHERE NOT EXISTS (SELECT 1 FROM bad)"
    " RETURNING id, fire_at) "
    "SELECT id, fire_at, fire_at - queen.now_us(), NULL::int8 FROM ins "
    "UNION ALL SELECT NULL::uuid, NULL::int8, NULL::int8, i FROM bad ORDER BY 1, 4";

void timer_create_params(const uint8_t tenant[16], const timer_spec *specs, int n, const char *producer,
                         size_t producer_len, timer_params *p)
{
    memset(p, 0, sizeof *p);
    enum { ID, Q, P, FA, DL, TXN, PROD, TR, B, REC };
    static const uint32_t oids[] = {OID_UUID, OID_TEXT, OID_TEXT, OID_INT8,  OID_INT8,
                                    OID_TEXT, OID_BOOL, OID_UUID, OID_INT4, OID_BYTEA};
    for (int a = 0; a < 10; a++)
        pgarray_begin(&p->arr[a], oids[a]);
    buf_init(&p->records, 0);
    for (int i = 0; i < n; i++) {
        const timer_spec *s = &specs[i];
        pgarray_add(&p->arr[ID], s->id.b, 16);
        pgarray_add(&p->arr[Q], s->queue, s->queue_len);
        pgarray_add(&p->arr[P], s->partition, s->partition_len);
        if (s->delay_us >= 0) {
            pgarray_add_null(&p->arr[FA]);
            pgarray_add_i64(&p->arr[DL], s->delay_us);
        } else {
            pgarray_add_i64(&p->arr[FA], s->fire_at_us);
            pgarray_add_null(&p->arr[DL]);
        }
        pgarray_add(&p->arr[TXN], s->txn, s->txn_len);
        uint8_t prod = s->txn_producer ? 1 : 0;
        pgarray_add(&p->arr[PROD], &prod, 1);
        if (s->has_trace)
            pgarray_add(&p->arr[TR], s->trace, 16);
        else
            pgarray_add_null(&p->arr[TR]);
        pgarray_add_i32(&p->arr[B], (int32_t)s->payload_len);
        buf_reset(&p->records);
        timer_encode_record(s, producer, producer_len, &p->records);
        pgarray_add(&p->arr[REC], p->records.data, p->records.len);
    }
    p_uuid(p, tenant);
    for (int a = 0; a < 10; a++)
        p_array(p, &p->arr[a]);
}

/* the columns of enum timer_row_col (timers.h) */
#define TIMER_COLS                                                                                                     \
    "x.id, x.queue, x.partition, x.fire_at, x.txn_id, x.trace_id, x.created_at, '\\x01'::bytea || x.record "

const char TIMER_GET_SQL[] = "SELECT " TIMER_COLS "FROM queen.log_timers x WHERE x.tenant_id = $1::uuid AND x.id = $2::uuid";

/* The innermost query takes limit + 1 rows; the outer ones drop the rows past $5 bytes of
 * records (always keeping the first) and report how many the limit took (`total`). */
const char TIMER_LIST_SQL[] =
    "SELECT y.id, y.queue, y.partition, y.fire_at, y.txn_id, y.trace_id, y.created_at, y.seg, y.total FROM ("
    " SELECT x.*, sum(octet_length(x.seg)) OVER (ORDER BY x.id) AS cum, count(*) OVER () AS total FROM ("
    "  SELECT " TIMER_COLS "AS seg FROM queen.log_timers x "
    "  WHERE x.tenant_id = $1::uuid AND ($2::text IS NULL OR x.queue = $2::text) "
    "  AND x.id > $3::uuid ORDER BY x.id LIMIT $4::int8) x) y "
    "WHERE y.cum - octet_length(y.seg) < $5::int8 ORDER BY y.id";

const char TIMER_CANCEL_SQL[] =
    "DELETE FROM queen.log_timers x WHERE x.tenant_id = $1::uuid AND x.id = $2::uuid RETURNING x.id";

const char TIMER_FIRE_SQL[] = "SELECT * FROM queen.timers_fire_v2($1::int4, $2::int8, $3::int8)";

const char TIMER_UNSEALED_SQL[] =
    "SELECT t.id, t.record FROM queen.log_timers t JOIN queen.queues q ON q.tenant_id = t.tenant_id AND q.name = t.queue "
    "WHERE t.fire_at <= queen.now_us() + 2000000 AND get_byte(t.record, 0) & 8 = 0 "
    "AND (queen.queue_options_v1(q.options)->>'encryptionEnabled')::boolean ORDER BY t.fire_at, t.id LIMIT $1::int8";

/* Rows are locked in id order, skipping those a firing round holds (lock space 1). */
const char TIMER_RESEAL_SQL[] =
    "WITH u AS (SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::bytea[]) AS u(id, old, rec)), "
    "l AS (SELECT x.id FROM queen.log_timers x WHERE x.id IN (SELECT id FROM u) ORDER BY x.id FOR UPDATE SKIP LOCKED) "
    "UPDATE queen.log_timers x SET record = u.rec FROM u "
    "WHERE x.id = u.id AND x.id IN (SELECT id FROM l) AND x.record = u.old";

void timer_get_params(const uint8_t tenant[16], const uuid *id, timer_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, tenant);
    p_uuid(p, id->b);
}

void timer_list_params(const uint8_t tenant[16], const char *queue, size_t queue_len, const uuid *after,
                       int64_t limit, timer_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, tenant);
    if (queue)
        p_bin(p, queue, queue_len);
    else
        p_bin(p, NULL, 0);
    p_uuid(p, after->b);
    p_i64(p, limit + 1);
    p_i64(p, TIMER_ANSWER_MAX_BYTES);
}
