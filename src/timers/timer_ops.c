/* timer_ops.c — timers without I/O: parsing the 2.x timer ops (POST /api/v1/timers, the
 * cancel route, the transaction's timers rider), decoding their payloads (base64, zstd, JSON),
 * encoding a timer's record, the SQL texts and their parameters. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <zstd.h>

#include "core/base64.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "storage/record.h"
#include "timers.h"

static const char *const STATUS_NAMES[TIMER_STATUS_COUNT] = {"scheduled", "rescheduled", "cancelled", "absent",
                                                             "too_late"};

const char *timer_status_name(int status)
{
    return status >= 0 && status < TIMER_STATUS_COUNT ? STATUS_NAMES[status] : NULL;
}

/* The fields an op may carry. A schedule takes them all; a cancel the first four. */
static const char *const OP_FIELDS[] = {"op", "queue", "timerKey", "txn", "payload", "delayMs", "partition",
                                        "payloadZstd"};
#define CANCEL_FIELDS 4

/* Fields the server owns, in both spellings a caller might reach for (and any name starting
 * with '_'): the producer is the authenticated subject, the tenant the token's, the message id
 * and deliverAt the broker's. Sent, they are refused by name, never dropped: a forged producer
 * would be attested by the broker on the delivered message. */
static const char *const SERVER_OWNED[] = {
    "producerSub", "producer_sub", "messageId",  "message_id",  "tenant",   "tenantId",
    "tenant_id",   "deliverAt",    "deliver_at", "delaySeconds", "delay_seconds", "attempts",
    "claimToken",  "claim_token",  "claimedUntil", "claimed_until",
};

static qerr refuse(qerr_detail *why, const char *code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static qerr refuse(qerr_detail *why, const char *code, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qerr e = qerr_setv(why, QERR_BAD_INPUT, code, reason, fmt, ap);
    va_end(ap);
    return e;
}

/* A string member: 1 present (into *out), 0 absent or null, -1 not a string or holding a NUL. */
static int str_member(const json_doc *d, int obj, const char *name, arena *ar, const char **out, size_t *len)
{
    int t = json_get(d, obj, name);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    return json_text_dup(ar, d, t, out, len) < 0 ? -1 : 1;
}

/* A field name, printable in a sentence (cut at 64 bytes). */
static void field_name(const json_doc *d, int k, char *out, size_t n)
{
    buf nb;
    buf_init(&nb, 256);
    json_str_decode(d, k, &nb);
    snprintf(out, n, "%.*s", (int)utf8_cut(nb.data ? nb.data : "", nb.len, 64), nb.data ? nb.data : "");
    buf_free(&nb);
}

/* A name starting with '_' (the client's convention for private fields): server-owned too. */
static int underscored(const json_doc *d, int k)
{
    const json_tok *t = &d->toks[k];
    if (!(t->flags & JSON_TOK_ESCAPED))
        return t->end - t->start > 2 && d->src[t->start + 1] == '_';
    buf nb;
    buf_init(&nb, 0);
    json_str_decode(d, k, &nb);
    int r = nb.len > 0 && nb.data[0] == '_';
    buf_free(&nb);
    return r;
}

static qerr check_fields(const json_doc *d, int obj, int kind, const char *at, qerr_detail *why)
{
    size_t allowed = kind == TIMER_OP_CANCEL ? CANCEL_FIELDS : ARRAY_LEN(OP_FIELDS);
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        char name[80];
        int owned = underscored(d, k);
        for (size_t f = 0; f < ARRAY_LEN(SERVER_OWNED) && !owned; f++)
            owned = json_str_eq(d, k, SERVER_OWNED[f]);
        if (owned) {
            field_name(d, k, name, sizeof name);
            return refuse(why, "timer_server_owned_field", "server_owned",
                          "%s: \"%s\" is owned by the server and cannot be sent (the producer is the authenticated "
                          "subject, the tenant is the token's, the message id and deliverAt are the broker's; the "
                          "wire carries only the relative delayMs)",
                          at, name);
        }
        int known = 0;
        for (size_t f = 0; f < ARRAY_LEN(OP_FIELDS) && !known; f++)
            known = json_str_eq(d, k, OP_FIELDS[f]);
        if (!known) {
            field_name(d, k, name, sizeof name);
            return refuse(why, "timer_unknown_field", "unknown",
                          "%s: unknown field \"%s\" (a timer op has op, queue, timerKey, txn, payload, delayMs, "
                          "partition, payloadZstd)",
                          at, name);
        }
        int ok = 0;
        for (size_t f = 0; f < allowed && !ok; f++)
            ok = json_str_eq(d, k, OP_FIELDS[f]);
        if (!ok) {
            field_name(d, k, name, sizeof name);
            return refuse(why, "timer_unknown_field", "not_for_cancel", "%s: a cancel takes op, queue, timerKey and txn, not \"%s\"",
                          at, name);
        }
    }
    return QERR_OK;
}

static int name_ok(const char *s, size_t n, size_t max)
{
    return n > 0 && n <= max && !memchr(s, '\0', n);
}

static qerr check_names(timer_op *op, const char *at, qerr_detail *why)
{
    if (!name_ok(op->queue, op->queue_len, TIMER_NAME_MAX_BYTES))
        return refuse(why, "timer_invalid_name", "queue_invalid", "%s: queue must be 1 to %d bytes without NUL characters", at,
                      TIMER_NAME_MAX_BYTES);
    if (!name_ok(op->key, op->key_len, TIMER_KEY_MAX_BYTES))
        return refuse(why, "timer_invalid_name", "key_invalid", "%s: timerKey must be 1 to %d bytes without NUL characters", at,
                      TIMER_KEY_MAX_BYTES);
    if (op->txn && !name_ok(op->txn, op->txn_len, TIMER_TXN_MAX_BYTES))
        return refuse(why, "timer_invalid_name", "txn_invalid", "%s: txn must be 1 to %d bytes without NUL characters", at,
                      TIMER_TXN_MAX_BYTES);
    return QERR_OK;
}

/* The payload as stored: base64 decoded, a zstd frame decompressed when zstd, and checked
 * to be one JSON text. */
static qerr decode_payload(const json_doc *d, int t, int zstd, arena *ar, timer_op *op, const char *at,
                           qerr_detail *why)
{
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return refuse(why, "timer_invalid_payload", "missing", "%s: payload is required (base64 of the message's JSON text)", at);
    if (json_type_of(d, t) != JSON_STRING)
        return refuse(why, "timer_invalid_payload", "not_base64",
                      "%s: payload must be a string: the base64 of the message's JSON text", at);
    const char *text;
    size_t tlen;
    /* without escapes the source bytes themselves (no copy of a large payload), else decoded */
    if (json_str_span(d, t, &text, &tlen) != 0 && json_text_dup(ar, d, t, &text, &tlen) < 0)
        return refuse(why, "timer_invalid_payload", "not_base64", "%s: payload is not base64 (it holds a NUL character)", at);
    /* a frame of a payload that fits decompressed is at most ZSTD_compressBound of it */
    size_t cap = zstd ? ZSTD_compressBound(TIMER_PAYLOAD_MAX_BYTES) : TIMER_PAYLOAD_MAX_BYTES;
    if (tlen / 4 * 3 > cap + 2)
        return refuse(why, "timer_limit_exceeded", "payload_too_large", "%s: payload is %zu bytes of base64; a timer's payload may have at most %u bytes%s",
                      at, tlen, TIMER_PAYLOAD_MAX_BYTES, zstd ? " (decompressed)" : "");
    uint8_t *raw = arena_alloc(ar, tlen / 4 * 3 + 3);
    long got = b64_decode(text, tlen, raw, tlen / 4 * 3 + 3, 0);
    if (got < 0)
        return refuse(why, "timer_invalid_payload", "not_base64",
                      "%s: payload is not base64 (RFC 4648, the standard alphabet, padding optional)", at);
    if ((size_t)got > cap)
        return refuse(why, "timer_limit_exceeded", "payload_too_large", "%s: payload is %ld bytes; a timer's payload may have at most %u%s",
                      at, got, TIMER_PAYLOAD_MAX_BYTES, zstd ? " (decompressed)" : "");
    const char *json = (const char *)raw;
    size_t jlen = (size_t)got;
    if (zstd) {
        unsigned long long size = ZSTD_getFrameContentSize(raw, (size_t)got);
        if (size == ZSTD_CONTENTSIZE_ERROR)
            return refuse(why, "timer_invalid_payload", "zstd_invalid", "%s: payloadZstd is set and payload is not a zstd frame", at);
        if (size == ZSTD_CONTENTSIZE_UNKNOWN)
            return refuse(why, "timer_invalid_payload", "zstd_invalid",
                          "%s: the payload's zstd frame must carry its content size in its header", at);
        if (size > TIMER_PAYLOAD_MAX_BYTES)
            return refuse(why, "timer_limit_exceeded", "payload_too_large",
                          "%s: payload decompresses to %llu bytes; a timer's payload may have at most %u", at, size,
                          TIMER_PAYLOAD_MAX_BYTES);
        size_t frame = ZSTD_findFrameCompressedSize(raw, (size_t)got);
        if (ZSTD_isError(frame) || frame != (size_t)got)
            return refuse(why, "timer_invalid_payload", "zstd_invalid", "%s: payload must be exactly one zstd frame", at);
        char *out = arena_alloc(ar, size ? (size_t)size : 1);
        size_t n = ZSTD_decompress(out, (size_t)size, raw, (size_t)got);
        if (ZSTD_isError(n) || n != size)
            return refuse(why, "timer_invalid_payload", "zstd_invalid", "%s: payload's zstd frame does not decompress: %s", at,
                          ZSTD_isError(n) ? ZSTD_getErrorName(n) : "shorter than its header says");
        json = out;
        jlen = (size_t)size;
    }
    json_doc jd;
    memset(&jd, 0, sizeof jd);
    json_opts jo = {.token_depth = 1};
    if (jlen == 0 || json_parse(&jd, json, jlen, &jo) < 0) {
        refuse(why, "timer_invalid_payload", "not_json", "%s: payload must be one JSON text (the message delivered): %s", at,
               jlen == 0 ? "it is empty" : jd.err);
        json_doc_free(&jd);
        return QERR_BAD_INPUT;
    }
    json_doc_free(&jd);
    op->payload = json;
    op->payload_len = jlen;
    return QERR_OK;
}

static qerr parse_op(const json_doc *d, int obj, arena *ar, timer_op *op, const char *at, qerr_detail *why)
{
    memset(op, 0, sizeof *op);
    if (json_type_of(d, obj) != JSON_OBJECT)
        return refuse(why, "timer_invalid_op", "not_object", "%s: an op must be a JSON object", at);
    const char *s;
    size_t n;
    int rc = str_member(d, obj, "op", ar, &s, &n);
    if (rc == 1 && n == 8 && memcmp(s, "schedule", 8) == 0)
        op->kind = TIMER_OP_SCHEDULE;
    else if (rc == 1 && n == 10 && memcmp(s, "reschedule", 10) == 0)
        op->kind = TIMER_OP_RESCHEDULE;
    else if (rc == 1 && n == 6 && memcmp(s, "cancel", 6) == 0)
        op->kind = TIMER_OP_CANCEL;
    else
        return refuse(why, "timer_invalid_op", "op_unknown", "%s: op must be \"schedule\", \"reschedule\" or \"cancel\"", at);
    if (check_fields(d, obj, op->kind, at, why) != QERR_OK)
        return QERR_BAD_INPUT;
    if (str_member(d, obj, "queue", ar, &op->queue, &op->queue_len) != 1)
        return refuse(why, "timer_invalid_name", "queue_missing", "%s: queue is required (a string)", at);
    if (str_member(d, obj, "timerKey", ar, &op->key, &op->key_len) != 1)
        return refuse(why, "timer_invalid_name", "key_missing", "%s: timerKey is required (a string)", at);
    rc = str_member(d, obj, "txn", ar, &op->txn, &op->txn_len);
    if (rc < 0)
        return refuse(why, "timer_invalid_name", "txn_invalid", "%s: txn must be a string", at);
    if (rc == 0 || op->txn_len == 0)
        op->txn = NULL; /* "" as absent: the broker makes one (as push does) */
    if (check_names(op, at, why) != QERR_OK)
        return QERR_BAD_INPUT;
    if (op->kind == TIMER_OP_CANCEL)
        return QERR_OK;

    rc = str_member(d, obj, "partition", ar, &op->partition, &op->partition_len);
    if (rc < 0)
        return refuse(why, "timer_invalid_name", "partition_invalid", "%s: partition must be a string", at);
    if (rc == 0) {
        op->partition = "Default";
        op->partition_len = 7;
    }
    if (!name_ok(op->partition, op->partition_len, TIMER_NAME_MAX_BYTES))
        return refuse(why, "timer_invalid_name", "partition_invalid", "%s: partition must be 1 to %d bytes without NUL characters", at,
                      TIMER_NAME_MAX_BYTES);
    int dl = json_get(d, obj, "delayMs");
    int64_t ms;
    if (dl < 0 || json_type_of(d, dl) == JSON_NULL)
        return refuse(why, "timer_invalid_delay", "missing",
                      "%s: delayMs is required (an integer of milliseconds from now; the broker's clock decides)", at);
    int whole = json_type_of(d, dl) == JSON_NUMBER && json_int64(d, dl, &ms) == 0;
    if (!whole || ms < -TIMER_DELAY_MAX_MS || ms > TIMER_DELAY_MAX_MS)
        return refuse(why, "timer_invalid_delay", whole ? "out_of_range" : "not_integer",
                      "%s: delayMs must be an integer between %lld and %lld", at, -TIMER_DELAY_MAX_MS,
                      TIMER_DELAY_MAX_MS);
    op->delay_us = ms > 0 ? ms * 1000 : 0; /* a delay in the past fires on the next round */
    int zt = json_get(d, obj, "payloadZstd");
    int zstd = 0;
    if (zt >= 0 && json_type_of(d, zt) != JSON_NULL) {
        if (json_type_of(d, zt) != JSON_TRUE && json_type_of(d, zt) != JSON_FALSE)
            return refuse(why, "timer_invalid_payload", "zstd_invalid", "%s: payloadZstd must be true or false", at);
        zstd = json_type_of(d, zt) == JSON_TRUE;
    }
    if (decode_payload(d, json_get(d, obj, "payload"), zstd, ar, op, at, why) != QERR_OK)
        return QERR_BAD_INPUT;
    if (!op->txn) {
        uuid u;
        uuid_v7(&u);
        char *t = arena_alloc(ar, UUID_STR_LEN + 1);
        uuid_format(&u, t);
        op->txn = t;
        op->txn_len = UUID_STR_LEN;
    }
    uuid_v7(&op->id);
    return QERR_OK;
}

qerr timer_ops_parse(const json_doc *d, int arr, const char *what, arena *ar, timer_op **ops, int *n,
                     qerr_detail *why)
{
    if (json_type_of(d, arr) != JSON_ARRAY)
        return refuse(why, "timer_invalid_body", "not_array", "%s must be an array of timer ops", what);
    uint32_t m = d->toks[arr].count;
    if (m > TIMER_BATCH_MAX_OPS)
        return refuse(why, "timer_limit_exceeded", "too_many_ops", "%s holds %u ops; at most %d are taken at once", what, m,
                      TIMER_BATCH_MAX_OPS);
    timer_op *out = arena_alloc(ar, (m ? m : 1) * sizeof *out);
    int t = json_first(d, arr);
    for (uint32_t i = 0; i < m; i++, t = json_next(d, t)) {
        char at[64];
        snprintf(at, sizeof at, "%s[%u]", what, i);
        if (parse_op(d, t, ar, &out[i], at, why) != QERR_OK)
            return qerr_at(why, QERR_BAD_INPUT, (int)i);
    }
    *ops = out;
    *n = (int)m;
    return QERR_OK;
}

qerr timer_ops_parse_body(const json_doc *d, arena *ar, timer_op **ops, int *n, qerr_detail *why)
{
    int arr = json_type_of(d, 0) == JSON_OBJECT ? json_get(d, 0, "operations") : -1;
    if (arr < 0 || d->toks[0].count != 1)
        return refuse(why, "timer_invalid_body", "shape",
                      "the body is {\"operations\": [op, ...]} and nothing else (the server-id timer body, "
                      "{queue, delayMs|fireAt, ...} or {items}, is retired: docs/http-api.md)");
    return timer_ops_parse(d, arr, "operations", ar, ops, n, why);
}

qerr timer_cancel_op(const char *queue, size_t queue_len, const char *key, size_t key_len, const char *txn,
                     size_t txn_len, timer_op *op, qerr_detail *why)
{
    memset(op, 0, sizeof *op);
    op->kind = TIMER_OP_CANCEL;
    op->queue = queue;
    op->queue_len = queue_len;
    op->key = key;
    op->key_len = key_len;
    if (txn && txn_len) {
        op->txn = txn;
        op->txn_len = txn_len;
    }
    return check_names(op, "the path", why);
}

int timer_encode_record(const timer_op *op, const char *producer, size_t producer_len, buf *out)
{
    buf sealed;
    buf_init(&sealed, 0);
    record_in rec = {
        .txn = op->txn,
        .txn_len = op->txn_len,
        .txn_producer = 1,
        .producer = producer,
        .producer_len = producer_len,
        .payload = op->payload,
        .payload_len = op->payload_len,
    };
    int rc = 0;
    if (op->seal) {
        if (seal_seal(seal_node_key(), op->payload, op->payload_len, &sealed) < 0)
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

const char TIMER_OPS_SQL[] = "SELECT * FROM queen.timer_ops_v1($1::uuid, $2::int4[], $3::text[], $4::text[], "
                             "$5::text[], $6::text[], $7::int8[], $8::uuid[], $9::int4[], $10::bytea[])";

void timer_ops_params(const uint8_t tenant[16], const timer_op *ops, int n, const char *producer, size_t producer_len,
                      timer_params *p)
{
    memset(p, 0, sizeof *p);
    enum { OP, Q, K, P, TXN, DL, ID, B, REC, NARR };
    static const uint32_t oids[NARR] = {OID_INT4, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT,
                                        OID_INT8, OID_UUID, OID_INT4, OID_BYTEA};
    for (int a = 0; a < NARR; a++)
        pgarray_begin(&p->arr[a], oids[a]);
    buf_init(&p->records, 0);
    for (int i = 0; i < n; i++) {
        const timer_op *o = &ops[i];
        pgarray_add_i32(&p->arr[OP], o->kind);
        pgarray_add(&p->arr[Q], o->queue, o->queue_len);
        pgarray_add(&p->arr[K], o->key, o->key_len);
        if (o->txn)
            pgarray_add(&p->arr[TXN], o->txn, o->txn_len);
        else
            pgarray_add_null(&p->arr[TXN]);
        if (o->kind == TIMER_OP_CANCEL) {
            pgarray_add_null(&p->arr[P]);
            pgarray_add_null(&p->arr[DL]);
            pgarray_add_null(&p->arr[ID]);
            pgarray_add_null(&p->arr[B]);
            pgarray_add_null(&p->arr[REC]);
            continue;
        }
        pgarray_add(&p->arr[P], o->partition, o->partition_len);
        pgarray_add_i64(&p->arr[DL], o->delay_us);
        pgarray_add(&p->arr[ID], o->id.b, 16);
        pgarray_add_i32(&p->arr[B], (int32_t)o->payload_len);
        buf_reset(&p->records);
        timer_encode_record(o, producer, producer_len, &p->records);
        pgarray_add(&p->arr[REC], p->records.data, p->records.len);
    }
    p_uuid(p, tenant);
    for (int a = 0; a < NARR; a++) {
        pgarray_finish(&p->arr[a]);
        p_bin(p, p->arr[a].b.data, p->arr[a].b.len);
    }
}

int timer_ops_refused_op(const char *sqlstate, const char *errmsg)
{
    int i = 0;
    const char *p = errmsg ? strstr(errmsg, "timer_ops_v1: op ") : NULL;
    if (!sqlstate || strcmp(sqlstate, TIMER_OPS_SQLSTATE_SEAL) != 0 || !p || sscanf(p, "timer_ops_v1: op %d", &i) != 1 ||
        i < 1)
        return 0;
    return i;
}

/* the columns of enum timer_row_col (timers.h) */
#define TIMER_COLS                                                                                                     \
    "x.queue, x.timer_key, x.partition, x.fire_at, x.txn_id, x.attempts, x.created_at, '\\x01'::bytea || x.record "

const char TIMER_PEEK_SQL[] = "SELECT " TIMER_COLS "FROM queen.log_timers x "
                              "WHERE x.tenant_id = $1::uuid AND x.queue = $2::text AND x.timer_key = $3::text";

/* The innermost query takes limit + 1 rows by the key index; the outer ones drop the rows
 * past $5 bytes of records (always keeping the first) and report how many the limit took. */
const char TIMER_LIST_SQL[] =
    "SELECT y.queue, y.timer_key, y.partition, y.fire_at, y.txn_id, y.attempts, y.created_at, y.seg, y.total FROM ("
    " SELECT x.*, sum(octet_length(x.seg)) OVER (ORDER BY x.timer_key) AS cum, count(*) OVER () AS total FROM ("
    "  SELECT " TIMER_COLS "AS seg FROM queen.log_timers x "
    "  WHERE x.tenant_id = $1::uuid AND x.queue = $2::text AND x.timer_key > $3::text "
    "  ORDER BY x.timer_key LIMIT $4::int8) x) y "
    "WHERE y.cum - octet_length(y.seg) < $5::int8 ORDER BY y.timer_key";

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


void timer_peek_params(const uint8_t tenant[16], const char *queue, size_t queue_len, const char *key,
                       size_t key_len, timer_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, tenant);
    p_bin(p, queue, queue_len);
    p_bin(p, key, key_len);
}

void timer_list_params(const uint8_t tenant[16], const char *queue, size_t queue_len, const char *after,
                       size_t after_len, int64_t limit, timer_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, tenant);
    p_bin(p, queue, queue_len);
    p_bin(p, after ? after : "", after ? after_len : 0);
    p_i64(p, limit + 1);
    p_i64(p, TIMER_ANSWER_MAX_BYTES);
}
