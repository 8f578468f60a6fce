/* cyclereq.c — one cycle object of POST /streams/v1/cycle (cyclereq.h). */
#include "cyclereq.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "consume/ackreq.h"
#include "core/buf.h"
#include "storage/pushreq.h"

/* the queue-mode consumer group (consume/consume.h, QUEUE_MODE_GROUP) */
#define CYCLE_QUEUE_MODE_GROUP "__QUEUE_MODE__"

static const char KV_REASON[] =
    "a stream cycle carries no %s array: a cycle is the one actor that blocks on an advisory lock, and the lock "
    "order puts queen.kv and queen.log_timers outside it, so a cycle that touched them would hold the two outermost "
    "spaces while blocking on an advisory lock. Use state_ops for state atomic with the cycle; emit onto a queue and "
    "schedule the timer (or the KV write) in that queue's consumer";

__attribute__((format(printf, 5, 6))) static cycle_rc fail(cycle_err *err, cycle_rc rc, const char *code,
                                                           const char *reason, const char *fmt, ...)
{
    err->code = code;
    err->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return rc;
}

/* CYCLE_BAD unknown_field naming the key, or CYCLE_OK */
static cycle_rc refuse_unknown(const json_doc *d, int obj, const char *const *known, const char *where,
                               cycle_err *err)
{
    int k = json_unknown_key(d, obj, known);
    if (k < 0)
        return CYCLE_OK;
    buf t;
    buf_init(&t, 0);
    json_str_decode(d, k, &t);
    fail(err, CYCLE_BAD, "unknown_field", NULL, "Unknown field%s%s: %s", where ? " in " : "", where ? where : "",
         buf_cstr(&t));
    buf_free(&t);
    return CYCLE_BAD;
}

static cycle_rc read_ack(arena *ar, const json_doc *d, int ak, const char *pfx, cycle_req *c, cycle_err *err)
{
    static const char *const ack_known[] = {"transactionId", "leaseId", "status", "count", "error",
                                            "partitionId", "consumerGroup", NULL};
    if (refuse_unknown(d, ak, ack_known, "ack", err) != CYCLE_OK)
        return CYCLE_BAD;
    c->has_ack = 1;
    size_t len;
    int rc = json_str_field(ar, d, ak, "transactionId", &c->ack_txn, &len);
    if (rc != 1 || len == 0)
        return fail(err, CYCLE_FAILED, NULL, NULL, "ack.transactionId is required");
    const char *s;
    rc = json_str_field(ar, d, ak, "leaseId", &s, &len);
    if (rc < 0 || (rc == 1 && len > 0 && uuid_parse(s, len, &c->lease) < 0))
        return fail(err, CYCLE_BAD, "invalid_uuid", NULL, "%sack.leaseId must be a UUID", pfx);
    c->has_lease = rc == 1 && len > 0;
    rc = json_str_field(ar, d, ak, "status", &c->ack_status, &len);
    if (rc < 0)
        return fail(err, CYCLE_BAD, NULL, NULL, "%sack.status must be a string", pfx);
    if (rc == 0 || len == 0)
        c->ack_status = "completed";
    if (strcmp(c->ack_status, "completed") && strcmp(c->ack_status, "success") && strcmp(c->ack_status, "failed") &&
        strcmp(c->ack_status, "dlq"))
        return fail(err, CYCLE_FAILED, NULL, NULL, "Unknown ack.status: %s", c->ack_status);
    rc = json_int_field(d, ak, "count", 0, 1000000000, &c->count);
    if (rc < 0)
        return fail(err, CYCLE_BAD, NULL, NULL, "%sack.count must be a non-negative integer (source records)", pfx);
    c->has_count = rc == 1;
    rc = json_str_field(ar, d, ak, "error", &c->ack_error, &len);
    if (rc < 0)
        return fail(err, CYCLE_BAD, NULL, NULL, "%sack.error must be a string", pfx);
    if (rc == 0)
        c->ack_error = NULL;
    return CYCLE_OK;
}

static cycle_rc read_ops(arena *ar, const json_doc *d, int so, const char *pfx, cycle_req *c, buf *seed,
                         cycle_err *err)
{
    uint32_t n = d->toks[so].count;
    c->ops = arena_alloc(ar, (n + 1) * sizeof *c->ops);
    int e = json_first(d, so);
    for (uint32_t i = 0; i < n; i++, e = json_next(d, e)) {
        static const char *const op_known[] = {"type", "key", "value", "version", NULL};
        char where[64];
        snprintf(where, sizeof where, "%.32sstate_ops[%u]", pfx, i);
        if (json_type_of(d, e) != JSON_OBJECT)
            return fail(err, CYCLE_BAD, NULL, NULL, "%s must be an object", where);
        if (refuse_unknown(d, e, op_known, where, err) != CYCLE_OK)
            return CYCLE_BAD;
        int ty = json_get(d, e, "type");
        cycle_op *op = &c->ops[c->nops];
        memset(op, 0, sizeof *op);
        if (json_str_field(ar, d, e, "key", &op->key, &op->key_len) != 1)
            return fail(err, CYCLE_BAD, NULL, NULL, "%s.key is required (a string without NUL characters)", where);
        if (op->key_len > STATE_KEY_MAX_BYTES)
            return fail(err, CYCLE_BAD, NULL, NULL, "%s.key is %zu bytes, more than %d", where, op->key_len,
                        STATE_KEY_MAX_BYTES);
        int vr = json_int_field(d, e, "version", 0, INT64_MAX, &op->version);
        if (vr < 0)
            return fail(err, CYCLE_BAD, NULL, NULL,
                        "%s.version must be a non-negative integer (the row version state/get answered)", where);
        op->has_version = vr == 1;
        if (json_str_eq(d, ty, "upsert")) {
            int v = json_get(d, e, "value");
            op->value = v >= 0 && json_type_of(d, v) != JSON_NULL ? json_raw(d, v, &op->value_len) : NULL;
            /* state is jsonb, which cannot hold a NUL: refused here rather than by the database */
            if (op->value && json_raw_has_nul(op->value, op->value_len))
                return fail(err, CYCLE_BAD, NULL, NULL, "%s.value must not hold a NUL character (\\u0000)", where);
            if (!op->value) {
                op->value = "{}";
                op->value_len = 2;
            }
        } else if (json_str_eq(d, ty, "delete")) {
            op->del = 1;
            if (!c->has_ack) {
                buf_putc(seed, 0x1f);
                buf_append(seed, op->key, op->key_len);
            }
        } else {
            buf t;
            buf_init(&t, 0);
            if (json_type_of(d, ty) == JSON_STRING)
                json_str_decode(d, ty, &t);
            else
                buf_puts(&t, "null");
            fail(err, CYCLE_FAILED, NULL, NULL, "Unknown state_op type: %s", buf_cstr(&t));
            buf_free(&t);
            return CYCLE_FAILED;
        }
        c->nops++;
    }
    return CYCLE_OK;
}

static cycle_rc read_items(arena *ar, const json_doc *d, int pi, const char *pfx, cycle_req *c, cycle_err *err)
{
    uint32_t n = pi >= 0 && json_type_of(d, pi) == JSON_ARRAY ? d->toks[pi].count : 0;
    if (pi >= 0 && json_type_of(d, pi) != JSON_ARRAY && json_type_of(d, pi) != JSON_NULL)
        return fail(err, CYCLE_BAD, NULL, NULL, "%spush_items must be an array", pfx);
    c->items = arena_alloc(ar, (n + 1) * sizeof *c->items);
    memset(c->items, 0, (n + 1) * sizeof *c->items);
    c->derived = arena_alloc(ar, n + 1);
    memset(c->derived, 0, n + 1);
    int it = n ? json_first(d, pi) : -1;
    for (uint32_t k = 0; k < n; k++, it = json_next(d, it)) {
        push_item *x = &c->items[c->nitems];
        qerr_detail qd;
        memset(&qd, 0, sizeof qd);
        if (push_item_read(ar, d, it, k, x, &qd) != QERR_OK)
            return fail(err, CYCLE_BAD, qd.code, NULL, "%s", qd.text[0] ? qd.text : "invalid push item");
        if (!x->payload_len) {
            x->payload = "{}";
            x->payload_len = 2;
        }
        if (!x->txn_producer) {
            char *t = arena_alloc(ar, CYCLE_TXN_LEN + 1);
            cycle_derive_txn(c, NULL, 0, k, x, t);
            x->txn = t;
            x->txn_len = CYCLE_TXN_LEN;
            x->txn_producer = 1;
            c->derived[k] = 1;
        }
        c->nitems++;
    }
    return CYCLE_OK;
}

cycle_rc cycle_read(arena *ar, const json_doc *d, int o, const char *at, cycle_req *c, cycle_err *err)
{
    memset(c, 0, sizeof *c);
    memset(err, 0, sizeof *err);
    char pfx[32] = "";
    if (at)
        snprintf(pfx, sizeof pfx, "%s: ", at);
    if (json_type_of(d, o) != JSON_OBJECT)
        return fail(err, CYCLE_BAD, NULL, NULL, "%sa cycle must be a JSON object", pfx);
    int kvt = json_get(d, o, "kv");
    int tmt = json_get(d, o, "timers");
    if (kvt >= 0 || tmt >= 0)
        return fail(err, CYCLE_BAD, "bad_request", kvt >= 0 ? "cycle_kv_unsupported" : "cycle_timers_unsupported",
                    KV_REASON, kvt >= 0 ? "kv" : "timers");
    static const char *const known[] = {"query_id", "partition_id", "consumer_group", "state_ops", "push_items",
                                        "ack", "release_lease", "idx", NULL};
    if (refuse_unknown(d, o, known, at, err) != CYCLE_OK)
        return CYCLE_BAD;
    static const char *const idk[] = {"query_id", "partition_id"};
    uuid *ids[] = {&c->query, &c->part};
    for (int k = 0; k < 2; k++) {
        const char *s;
        size_t len;
        int rc = json_str_field(ar, d, o, idk[k], &s, &len);
        if (rc != 1 || len == 0)
            return fail(err, CYCLE_BAD, NULL, NULL, "%s%s is required", pfx, idk[k]);
        /* partition_id: also a framed pop's u64 id (ack_partition_ref), resolved by the SQL */
        if ((k == 1 ? ack_partition_ref(s, len, ids[k]) : uuid_parse(s, len, ids[k])) < 0)
            return fail(err, CYCLE_BAD, "invalid_uuid", NULL, "%s%s must be a UUID", pfx, idk[k]);
    }
    size_t len;
    int rc = json_str_field(ar, d, o, "consumer_group", &c->group, &len);
    if (rc < 0)
        return fail(err, CYCLE_BAD, NULL, NULL, "%sconsumer_group must be a string without NUL characters", pfx);
    if (rc == 0 || len == 0)
        c->group = CYCLE_QUEUE_MODE_GROUP;
    c->release = 1;
    int rl = json_get(d, o, "release_lease");
    if (rl >= 0 && json_type_of(d, rl) == JSON_FALSE)
        c->release = 0;
    else if (rl >= 0 && json_type_of(d, rl) != JSON_TRUE && json_type_of(d, rl) != JSON_NULL)
        return fail(err, CYCLE_BAD, NULL, NULL, "%srelease_lease must be a boolean", pfx);

    int ak = json_get(d, o, "ack");
    if (ak >= 0 && json_type_of(d, ak) == JSON_OBJECT) {
        cycle_rc r = read_ack(ar, d, ak, pfx, c, err);
        if (r != CYCLE_OK)
            return r;
    } else if (ak >= 0 && json_type_of(d, ak) != JSON_NULL) {
        return fail(err, CYCLE_BAD, NULL, NULL, "%sack must be an object or null", pfx);
    }

    /* the seed: a cycle with an ack, its lease (a retry within it derives the same ids; records
     * delivered again under another lease — a seek back, a deliberate replay — are new
     * results); a flush, the keys it deletes */
    buf seed;
    buf_init(&seed, 0);
    if (c->has_ack) {
        buf_puts(&seed, "a\x1f");
        if (c->has_lease)
            buf_append(&seed, c->lease.b, 16);
        buf_putc(&seed, 0x1f);
        buf_puts(&seed, c->ack_txn);
        buf_printf(&seed, "\x1f%lld", c->has_count ? (long long)c->count : -1LL);
    } else {
        buf_puts(&seed, "f");
    }
    cycle_rc r = CYCLE_OK;
    int so = json_get(d, o, "state_ops");
    if (so >= 0 && json_type_of(d, so) == JSON_ARRAY)
        r = read_ops(ar, d, so, pfx, c, &seed, err);
    else if (so >= 0 && json_type_of(d, so) != JSON_NULL)
        r = fail(err, CYCLE_BAD, NULL, NULL, "%sstate_ops must be an array", pfx);
    if (r == CYCLE_OK) {
        c->seed = arena_alloc(ar, seed.len + 1);
        if (seed.len)
            memcpy(c->seed, seed.data, seed.len);
        c->seed[seed.len] = 0;
        c->seed_len = seed.len;
        r = read_items(ar, d, json_get(d, o, "push_items"), pfx, c, err);
    }
    buf_free(&seed);
    return r;
}

void cycle_derive_txn(const cycle_req *c, const char *salt, size_t salt_len, uint32_t index, const push_item *it,
                      char out[CYCLE_TXN_LEN + 1])
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    unsigned char h[32];
    unsigned int hl = 0;
    char idx[16];
    int n = snprintf(idx, sizeof idx, "%u", index);
    EVP_DigestInit_ex(m, EVP_sha256(), NULL);
    EVP_DigestUpdate(m, "queen.streams\x1f", 14);
    EVP_DigestUpdate(m, c->query.b, 16);
    EVP_DigestUpdate(m, c->part.b, 16);
    if (c->seed_len)
        EVP_DigestUpdate(m, c->seed, c->seed_len);
    EVP_DigestUpdate(m, "\x1f", 1);
    EVP_DigestUpdate(m, idx, (size_t)n);
    if (salt_len) {
        /* after the index: an unsalted id is the same as before salts existed */
        EVP_DigestUpdate(m, "\x1fi", 2);
        EVP_DigestUpdate(m, salt, salt_len);
    }
    if (!c->has_ack) {
        EVP_DigestUpdate(m, "\x1f", 1);
        EVP_DigestUpdate(m, it->queue, it->queue_len);
        EVP_DigestUpdate(m, "\x1f", 1);
        EVP_DigestUpdate(m, it->partition, it->partition_len);
        EVP_DigestUpdate(m, "\x1f", 1);
        if (it->payload_len)
            EVP_DigestUpdate(m, it->payload, it->payload_len);
    }
    EVP_DigestFinal_ex(m, h, &hl);
    EVP_MD_CTX_free(m);
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "sq:", 3);
    for (int i = 0; i < 18; i++) {
        out[3 + 2 * i] = hex[h[i] >> 4];
        out[4 + 2 * i] = hex[h[i] & 15];
    }
    out[CYCLE_TXN_LEN] = 0;
}

void cycle_rederive(arena *ar, cycle_req *c, const char *salt, size_t salt_len)
{
    for (uint32_t k = 0; k < c->nitems; k++) {
        push_item *x = &c->items[k];
        if (c->derived[k]) {
            char *t = arena_alloc(ar, CYCLE_TXN_LEN + 1);
            cycle_derive_txn(c, salt, salt_len, k, x, t);
            x->txn = t;
            x->txn_len = CYCLE_TXN_LEN;
        }
        x->status = PUSH_PENDING;
    }
}
