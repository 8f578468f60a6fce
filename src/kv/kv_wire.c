/* kv_wire.c — parsing the 2.x KV ops and building queen.kv_ops_v1's parameters (kv_wire.h). */
#include "kv/kv_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kv/kv.h"

static const char *const KIND_NAMES[KVW_NKINDS] = {"get",   "put",   "putIfAbsent", "delete",
                                                   "incr",  "check", "getMany",     "getPrefix"};

/* The fields each kind takes ("op" always). */
static const char *const FIELDS[KVW_NKINDS][9] = {
    [KVW_GET] = {"ns", "key"},
    [KVW_PUT] = {"ns", "key", "value", "ttlSeconds", "forever", "expect", "required"},
    [KVW_PUT_IF_ABSENT] = {"ns", "key", "value", "ttlSeconds", "forever", "expect", "required"},
    [KVW_DELETE] = {"ns", "key", "expect", "required"},
    [KVW_INCR] = {"ns", "key", "delta", "min", "max", "ttlSeconds", "forever", "required"},
    [KVW_CHECK] = {"ns", "key", "expect", "required"},
    [KVW_GET_MANY] = {"ns", "keys"},
    [KVW_GET_PREFIX] = {"ns", "prefix", "after", "limit", "keysOnly"},
};

const char *kvw_kind_name(int kind)
{
    return kind >= 0 && kind < KVW_NKINDS ? KIND_NAMES[kind] : "unknown";
}

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

/* A field name, printable in a sentence (cut at 64 bytes). */
static void field_name(const json_doc *d, int k, char *out, size_t n)
{
    buf nb;
    buf_init(&nb, 256);
    json_str_decode(d, k, &nb);
    snprintf(out, n, "%.*s", (int)utf8_cut(nb.data ? nb.data : "", nb.len, 64), nb.data ? nb.data : "");
    buf_free(&nb);
}

static qerr check_fields(const json_doc *d, int obj, int kind, const char *at, qerr_detail *why)
{
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        int known = json_str_eq(d, k, "op");
        for (size_t f = 0; f < ARRAY_LEN(FIELDS[kind]) && FIELDS[kind][f] && !known; f++)
            known = json_str_eq(d, k, FIELDS[kind][f]);
        if (!known) {
            char name[80];
            field_name(d, k, name, sizeof name);
            return refuse(why, "kv_unknown_field", "unknown", "%s: a %s op takes no field \"%s\"", at, KIND_NAMES[kind],
                          name);
        }
    }
    return QERR_OK;
}

/* A name (ns, key, prefix, after, a getMany key): 1 to max bytes, a string without NUL. */
static int name_field(const json_doc *d, int t, arena *ar, size_t max, const char **out, size_t *len)
{
    if (json_type_of(d, t) != JSON_STRING || json_text_dup(ar, d, t, out, len) < 0)
        return -1;
    return *len >= 1 && *len <= max ? 0 : -1;
}

/* An integer member: 1 present, 0 absent, -1 not an integer (null, a bool, 1.5, out of range). */
static int int_member(const json_doc *d, int obj, const char *name, int64_t *out)
{
    int t = json_get(d, obj, name);
    if (t < 0)
        return 0;
    if (json_type_of(d, t) != JSON_NUMBER || json_int64(d, t, out) < 0)
        return -1;
    return 1;
}

/* A boolean member: 1 true, 0 false or absent, -1 not a boolean. */
static int bool_member(const json_doc *d, int obj, const char *name)
{
    int t = json_get(d, obj, name);
    if (t < 0)
        return 0;
    if (json_type_of(d, t) == JSON_TRUE)
        return 1;
    return json_type_of(d, t) == JSON_FALSE ? 0 : -1;
}

static qerr parse_expiry(const json_doc *d, int obj, kvw_op *op, const char *at, qerr_detail *why)
{
    int has_ttl = json_get(d, obj, "ttlSeconds") >= 0;
    int ft = json_get(d, obj, "forever");
    if (ft >= 0 && json_type_of(d, ft) != JSON_TRUE)
        return refuse(why, "kv_invalid_ttl", "forever_not_true", "%s: forever must be true when given; omit it otherwise",
                      at);
    if (has_ttl == (ft >= 0))
        return refuse(why, "kv_expiry_not_specified", "kv_expiry_not_specified",
                      "%s: a %s declares exactly one of ttlSeconds (a positive integer) and forever: true; %s", at,
                      KIND_NAMES[op->kind], has_ttl ? "both were given" : "neither was given (a write never inherits "
                                                                          "the previous expiry)");
    if (ft >= 0) {
        op->forever = 1;
        return QERR_OK;
    }
    int64_t s;
    if (int_member(d, obj, "ttlSeconds", &s) < 0 || s < 1 || s > KVW_TTL_MAX_S)
        return refuse(why, "kv_invalid_ttl", "out_of_range", "%s: ttlSeconds must be an integer from 1 to %lld (longer: forever)",
                      at, KVW_TTL_MAX_S);
    op->ttl_s = s;
    return QERR_OK;
}

static qerr parse_op(const json_doc *d, int obj, int in_txn, arena *ar, kvw_op *op, const char *at, qerr_detail *why)
{
    memset(op, 0, sizeof *op);
    if (json_type_of(d, obj) != JSON_OBJECT)
        return refuse(why, "kv_invalid_op", "not_object", "%s: an op must be a JSON object", at);
    int ot = json_get(d, obj, "op");
    op->kind = -1;
    for (int k = 0; k < KVW_NKINDS && ot >= 0 && json_type_of(d, ot) == JSON_STRING; k++)
        if (json_str_eq(d, ot, KIND_NAMES[k]))
            op->kind = k;
    if (op->kind < 0)
        return refuse(why, "kv_invalid_op", "op_unknown",
                      "%s: op must be one of get, getMany, getPrefix, put, putIfAbsent, delete, incr, check", at);
    if (in_txn && op->kind == KVW_GET_PREFIX)
        return refuse(why, "kv_invalid_op", "prefix_in_transaction",
                      "%s: getPrefix is not taken inside a transaction (its cost is unbounded); read it beside", at);
    if (check_fields(d, obj, op->kind, at, why) != QERR_OK)
        return QERR_BAD_INPUT;
    int t = json_get(d, obj, "ns");
    if (t < 0)
        return refuse(why, "kv_invalid_name", "ns_missing", "%s: ns is required (the namespace)", at);
    if (name_field(d, t, ar, KV_NAMESPACE_MAX_BYTES, &op->ns, &op->ns_len) < 0)
        return refuse(why, "kv_invalid_name", "ns_invalid", "%s: ns must be a string of 1 to %d bytes without NUL", at,
                      KV_NAMESPACE_MAX_BYTES);

    if (op->kind == KVW_GET_PREFIX) {
        t = json_get(d, obj, "prefix");
        if (t < 0 || (json_type_of(d, t) == JSON_STRING && json_str_decoded_len(d, t) == 0))
            return refuse(why, "kv_prefix_required", "kv_prefix_required",
                          "%s: getPrefix needs a non-empty prefix (a namespace is not a table to enumerate)", at);
        if (name_field(d, t, ar, KV_KEY_MAX_BYTES, &op->key, &op->key_len) < 0)
            return refuse(why, "kv_invalid_name", "prefix_invalid", "%s: prefix must be a string of 1 to %d bytes without NUL",
                          at, KV_KEY_MAX_BYTES);
        t = json_get(d, obj, "after");
        if (t >= 0 && json_type_of(d, t) != JSON_NULL &&
            name_field(d, t, ar, KV_KEY_MAX_BYTES, &op->after, &op->after_len) < 0)
            return refuse(why, "kv_invalid_name", "after_invalid", "%s: after must be a key (1 to %d bytes without NUL)", at,
                          KV_KEY_MAX_BYTES);
        op->limit = KVW_PREFIX_LIMIT_DEFAULT;
        t = json_get(d, obj, "limit");
        if (t >= 0 && json_type_of(d, t) != JSON_NULL) {
            double v;
            if (json_type_of(d, t) != JSON_NUMBER || json_double(d, t, &v) < 0 || v != v)
                return refuse(why, "kv_invalid_limit", "not_integer", "%s: limit must be an integer (it is clamped to 1..%d)",
                              at, KVW_PREFIX_LIMIT_MAX);
            /* clamped, never refused: the client cannot know the server's bound */
            op->limit = v < 1 ? 1 : v > KVW_PREFIX_LIMIT_MAX ? KVW_PREFIX_LIMIT_MAX : (int64_t)v;
        }
        int ko = bool_member(d, obj, "keysOnly");
        if (ko < 0)
            return refuse(why, "kv_invalid_op", "keys_only_invalid", "%s: keysOnly must be true or false", at);
        op->keys_only = ko;
        return QERR_OK;
    }
    if (op->kind == KVW_GET_MANY) {
        t = json_get(d, obj, "keys");
        if (t < 0 || json_type_of(d, t) != JSON_ARRAY || d->toks[t].count == 0)
            return refuse(why, "kv_invalid_name", "keys_missing", "%s: getMany needs keys, an array of at least one key", at);
        uint32_t m = d->toks[t].count;
        if (m > KVW_MANY_MAX_KEYS)
            return refuse(why, "kv_limit_exceeded", "too_many_keys", "%s: getMany names %u keys; at most %d are read at once",
                          at, m, KVW_MANY_MAX_KEYS);
        op->keys = arena_alloc(ar, m * sizeof *op->keys);
        op->key_lens = arena_alloc(ar, m * sizeof *op->key_lens);
        int e = json_first(d, t);
        for (uint32_t i = 0; i < m; i++, e = json_next(d, e))
            if (name_field(d, e, ar, KV_KEY_MAX_BYTES, &op->keys[i], &op->key_lens[i]) < 0)
                return refuse(why, "kv_invalid_name", "key_invalid", "%s: keys[%u] must be a string of 1 to %d bytes without NUL",
                              at, i, KV_KEY_MAX_BYTES);
        op->nkeys = (int)m;
        return QERR_OK;
    }
    t = json_get(d, obj, "key");
    if (t < 0)
        return refuse(why, "kv_invalid_name", "key_missing", "%s: key is required", at);
    if (name_field(d, t, ar, KV_KEY_MAX_BYTES, &op->key, &op->key_len) < 0)
        return refuse(why, "kv_invalid_name", "key_invalid", "%s: key must be a string of 1 to %d bytes without NUL", at,
                      KV_KEY_MAX_BYTES);
    if (op->kind == KVW_GET)
        return QERR_OK;

    int rq = bool_member(d, obj, "required");
    if (rq < 0)
        return refuse(why, "kv_invalid_op", "required_invalid", "%s: required must be true or false", at);
    op->required = rq;
    if (json_get(d, obj, "expect") >= 0) {
        int64_t e;
        if (int_member(d, obj, "expect", &e) < 0)
            return refuse(why, "kv_invalid_expect", "not_integer",
                          "%s: expect must be an integer version (0: the key must not exist); an absent expect is "
                          "omitted, never null",
                          at);
        if (e < 0)
            return refuse(why, "kv_invalid_expect", "negative", "%s: expect must be >= 0 (0: the key must not exist)", at);
        if (op->kind == KVW_PUT_IF_ABSENT && e != 0)
            return refuse(why, "kv_invalid_expect", "not_for_put_if_absent",
                          "%s: putIfAbsent is put with expect 0; it takes no other expect", at);
        if (op->kind == KVW_DELETE && e == 0)
            return refuse(why, "kv_invalid_expect", "zero_on_delete",
                          "%s: delete with expect 0 would delete a key that must not exist; give its version", at);
        op->has_expect = 1;
        op->expect = e;
    }
    if (op->kind == KVW_PUT_IF_ABSENT) {
        op->has_expect = 1;
        op->expect = 0;
    }
    if (op->kind == KVW_CHECK && !op->has_expect)
        return refuse(why, "kv_invalid_expect", "missing",
                      "%s: check needs expect: the version the key must be at, or 0 for a key that must not exist", at);
    if (op->kind == KVW_DELETE || op->kind == KVW_CHECK)
        return QERR_OK;

    if (parse_expiry(d, obj, op, at, why) != QERR_OK)
        return QERR_BAD_INPUT;
    if (op->kind == KVW_INCR) {
        op->delta = 1;
        if (int_member(d, obj, "delta", &op->delta) < 0)
            return refuse(why, "kv_invalid_delta", "not_integer", "%s: delta must be an integer (not a bool)", at);
        int r1 = int_member(d, obj, "min", &op->min), r2 = int_member(d, obj, "max", &op->max);
        if (r1 < 0 || r2 < 0)
            return refuse(why, "kv_invalid_bound", "not_integer", "%s: %s must be an integer", at, r1 < 0 ? "min" : "max");
        op->has_min = r1 == 1;
        op->has_max = r2 == 1;
        if (op->has_min && op->has_max && op->min > op->max)
            return refuse(why, "kv_invalid_bound", "min_above_max", "%s: min (%lld) is above max (%lld)", at,
                          (long long)op->min, (long long)op->max);
        return QERR_OK;
    }
    t = json_get(d, obj, "value");
    if (t < 0)
        return refuse(why, "kv_invalid_value", "missing", "%s: a %s needs a value (any JSON value)", at, KIND_NAMES[op->kind]);
    op->value = json_raw(d, t, &op->value_len);
    if (op->value_len > KV_VALUE_MAX_BYTES)
        return refuse(why, "kv_limit_exceeded", "value_too_large", "%s: the value is %zu bytes; at most %u are stored", at,
                      op->value_len, KV_VALUE_MAX_BYTES);
    return QERR_OK;
}

qerr kvw_parse(const json_doc *d, int arr, const char *what, int in_txn, arena *ar, kvw_op **ops, int *n,
               qerr_detail *why)
{
    if (json_type_of(d, arr) != JSON_ARRAY)
        return refuse(why, "kv_invalid_body", "not_array", "%s must be an array of KV ops", what);
    uint32_t m = d->toks[arr].count;
    if (m > KV_BATCH_MAX_OPS)
        return refuse(why, "kv_limit_exceeded", "too_many_ops", "%s holds %u ops; at most %d are taken at once", what, m,
                      KV_BATCH_MAX_OPS);
    kvw_op *out = arena_alloc(ar, (m ? m : 1) * sizeof *out);
    int t = json_first(d, arr);
    for (uint32_t i = 0; i < m; i++, t = json_next(d, t)) {
        char at[64];
        snprintf(at, sizeof at, "%s[%u]", what, i);
        if (parse_op(d, t, in_txn, ar, &out[i], at, why) != QERR_OK)
            return qerr_at(why, QERR_BAD_INPUT, (int)i);
    }
    *ops = out;
    *n = (int)m;
    return QERR_OK;
}

qerr kvw_parse_body(const json_doc *d, arena *ar, kvw_op **ops, int *n, qerr_detail *why)
{
    if (json_type_of(d, 0) != JSON_OBJECT)
        return refuse(why, "kv_invalid_body", "not_object", "the body must be {\"operations\": [op, ...]}");
    uint32_t cnt = d->toks[0].count;
    int k = json_first(d, 0);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        if (!json_str_eq(d, k, "operations")) {
            char name[80];
            field_name(d, k, name, sizeof name);
            return refuse(why, "kv_invalid_body", "unknown_field",
                          "unknown field \"%s\": the body is {\"operations\": [op, ...]} (each op names its ns)", name);
        }
    }
    int arr = json_get(d, 0, "operations");
    if (arr < 0)
        return refuse(why, "kv_invalid_body", "operations_missing", "the body must be {\"operations\": [op, ...]}");
    return kvw_parse(d, arr, "operations", 0, ar, ops, n, why);
}

/* ---- SQL ---- */

const char KV_OPS_SQL[] = "SELECT o_index, o_result FROM queen.kv_ops_v1($1::uuid, $2::bool, $3::int4[], $4::text[], "
                          "$5::text[], $6::text[], $7::int8[], $8::bool[], $9::int8[], $10::int8[], $11::int8[], "
                          "$12::int8[], $13::text[], $14::int4[], $15::bool[], $16::int4[], $17::text[])";

enum { A_KIND, A_NS, A_KEY, A_VALUE, A_EXPECT, A_REQUIRED, A_TTL, A_DELTA, A_MIN, A_MAX, A_AFTER, A_LIMIT,
       A_KEYS_ONLY, A_MANY_OP, A_MANY_KEY, NARR };

void kvw_params_free(kvw_params *p)
{
    for (size_t i = 0; i < ARRAY_LEN(p->arr); i++)
        pgarray_free(&p->arr[i]);
}

static void p_bin(kvw_params *p, const void *v, size_t n)
{
    int i = p->n++;
    p->values[i] = v;
    p->lengths[i] = (int)n;
    p->formats[i] = 1;
}

static void add_bool(pgarray *a, int v)
{
    uint8_t b = v ? 1 : 0;
    pgarray_add(a, &b, 1);
}

const char KV_OPS_APPLY_SQL[] =
    "SELECT o_index, o_result FROM queen.kv_ops_apply_v1($1::uuid, $2::bool, $3::int4[], $4::text[], $5::text[], "
    "$6::text[], $7::int8[], $8::bool[], $9::int8[], $10::int8[], $11::int8[], $12::int8[], $13::text[], $14::int4[], "
    "$15::bool[], $16::int4[], $17::text[])";

static void params_build(const uint8_t tenant[16], int raise, int ms, const kvw_op *ops, int n, kvw_params *p);

void kvw_params_build(const uint8_t tenant[16], int raise, const kvw_op *ops, int n, kvw_params *p)
{
    params_build(tenant, raise, 0, ops, n, p);
}

void kvw_params_build_apply(const uint8_t tenant[16], const kvw_op *ops, int n, kvw_params *p)
{
    params_build(tenant, 0, 1, ops, n, p);
}

static void params_build(const uint8_t tenant[16], int raise, int ms, const kvw_op *ops, int n, kvw_params *p)
{
    memset(p, 0, sizeof *p);
    static const uint32_t oids[NARR] = {OID_INT4, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_BOOL, OID_INT8, OID_INT8,
                                        OID_INT8, OID_INT8, OID_TEXT, OID_INT4, OID_BOOL, OID_INT4, OID_TEXT};
    for (int a = 0; a < NARR; a++)
        pgarray_begin(&p->arr[a], oids[a]);
    for (int i = 0; i < n; i++) {
        const kvw_op *o = &ops[i];
        pgarray_add_i32(&p->arr[A_KIND], o->kind);
        pgarray_add(&p->arr[A_NS], o->ns, o->ns_len);
        if (o->key)
            pgarray_add(&p->arr[A_KEY], o->key, o->key_len);
        else
            pgarray_add_null(&p->arr[A_KEY]);
        if (o->value)
            pgarray_add(&p->arr[A_VALUE], o->value, o->value_len);
        else
            pgarray_add_null(&p->arr[A_VALUE]);
        if (o->has_expect)
            pgarray_add_i64(&p->arr[A_EXPECT], o->expect);
        else
            pgarray_add_null(&p->arr[A_EXPECT]);
        add_bool(&p->arr[A_REQUIRED], o->required);
        if (ms && o->ttl_ms > 0)
            pgarray_add_i64(&p->arr[A_TTL], o->ttl_ms);
        else if (o->ttl_s > 0)
            pgarray_add_i64(&p->arr[A_TTL], ms ? o->ttl_s * 1000 : o->ttl_s);
        else
            pgarray_add_null(&p->arr[A_TTL]);
        pgarray_add_i64(&p->arr[A_DELTA], o->delta);
        if (o->has_min)
            pgarray_add_i64(&p->arr[A_MIN], o->min);
        else
            pgarray_add_null(&p->arr[A_MIN]);
        if (o->has_max)
            pgarray_add_i64(&p->arr[A_MAX], o->max);
        else
            pgarray_add_null(&p->arr[A_MAX]);
        if (o->after)
            pgarray_add(&p->arr[A_AFTER], o->after, o->after_len);
        else
            pgarray_add_null(&p->arr[A_AFTER]);
        pgarray_add_i32(&p->arr[A_LIMIT], (int32_t)o->limit);
        add_bool(&p->arr[A_KEYS_ONLY], o->keys_only);
        for (int k = 0; k < o->nkeys; k++) {
            pgarray_add_i32(&p->arr[A_MANY_OP], i + 1);
            pgarray_add(&p->arr[A_MANY_KEY], o->keys[k], o->key_lens[k]);
        }
    }
    memcpy(p->tenant, tenant, 16);
    p_bin(p, p->tenant, 16);
    p->raise = raise ? 1 : 0;
    p_bin(p, &p->raise, 1);
    for (int a = 0; a < NARR; a++) {
        pgarray_finish(&p->arr[a]);
        p_bin(p, p->arr[a].b.data, p->arr[a].b.len);
    }
}

int kvw_required_failure(const char *sqlstate, const char *errmsg, char *reason, size_t rlen)
{
    int i = 0;
    const char *p = errmsg ? strstr(errmsg, "kv_ops_v1: op ") : NULL;
    if (!sqlstate || strcmp(sqlstate, KVW_SQLSTATE_REQUIRED) != 0 || !p || sscanf(p, "kv_ops_v1: op %d", &i) != 1 ||
        i < 1)
        return 0;
    const char *c = strstr(p + 14, ": ");
    if (reason && rlen) {
        snprintf(reason, rlen, "%s", c ? c + 2 : "");
    }
    return i;
}

/* ---- locks ---- */

static const char *const LOCK_NAMES[LOCKW_NKINDS] = {"acquire", "renew", "release", "get"};
static const char *const LOCK_FIELDS[LOCKW_NKINDS][6] = {
    [LOCKW_ACQUIRE] = {"name", "ttlSeconds", "owner", "limit"},
    [LOCKW_RENEW] = {"name", "token", "ttlSeconds", "slot", "owner"},
    [LOCKW_RELEASE] = {"name", "token", "slot"},
    [LOCKW_GET] = {"name"},
};

const char *lockw_kind_name(int kind)
{
    return kind >= 0 && kind < LOCKW_NKINDS ? LOCK_NAMES[kind] : "unknown";
}

/* C0, DEL and C1 (U+0080..U+009F: C2 80..C2 9F in UTF-8) */
static int has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F || (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] <= 0x9F))
            return 1;
    }
    return 0;
}

static int lock_text(const json_doc *d, int t, arena *ar, size_t max, int no_hash, const char **out, size_t *len)
{
    if (json_type_of(d, t) != JSON_STRING || json_text_dup(ar, d, t, out, len) < 0)
        return -1;
    if (*len < 1 || *len > max || has_control(*out, *len) || (no_hash && memchr(*out, '#', *len)))
        return -1;
    return 0;
}

static qerr lock_op(const json_doc *d, int obj, arena *ar, lockw_op *op, const char *at, qerr_detail *why)
{
    memset(op, 0, sizeof *op);
    if (json_type_of(d, obj) != JSON_OBJECT)
        return refuse(why, "lock_invalid_op", "not_object", "%s: an op must be a JSON object", at);
    int ot = json_get(d, obj, "op");
    op->kind = -1;
    for (int k = 0; k < LOCKW_NKINDS && ot >= 0 && json_type_of(d, ot) == JSON_STRING; k++)
        if (json_str_eq(d, ot, LOCK_NAMES[k]))
            op->kind = k;
    if (op->kind < 0)
        return refuse(why, "lock_invalid_op", "op_unknown", "%s: op must be acquire, renew, release or get", at);
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        int known = json_str_eq(d, k, "op");
        for (size_t f = 0; f < ARRAY_LEN(LOCK_FIELDS[op->kind]) && LOCK_FIELDS[op->kind][f] && !known; f++)
            known = json_str_eq(d, k, LOCK_FIELDS[op->kind][f]);
        if (!known) {
            char name[80];
            field_name(d, k, name, sizeof name);
            return refuse(why, "lock_unknown_field", "unknown", "%s: a %s takes no field \"%s\"", at, LOCK_NAMES[op->kind],
                          name);
        }
    }
    int t = json_get(d, obj, "name");
    if (t < 0 || lock_text(d, t, ar, LOCKW_NAME_MAX_BYTES, 1, &op->name, &op->name_len) < 0)
        return refuse(why, "lock_invalid_name", t < 0 ? "name_missing" : "name_invalid",
                      "%s: name is a string of 1 to %d bytes without control characters and without '#'", at,
                      LOCKW_NAME_MAX_BYTES);
    if (op->kind == LOCKW_GET)
        return QERR_OK;
    t = json_get(d, obj, "owner");
    if (t >= 0 && lock_text(d, t, ar, LOCKW_OWNER_MAX_BYTES, 0, &op->owner, &op->owner_len) < 0)
        return refuse(why, "lock_invalid_owner", "owner_invalid",
                      "%s: owner is a string of 1 to %d bytes without control characters", at, LOCKW_OWNER_MAX_BYTES);
    if (op->kind != LOCKW_RELEASE) {
        int64_t s;
        int rc = int_member(d, obj, "ttlSeconds", &s);
        if (rc == 0)
            return refuse(why, "lock_invalid_ttl", "missing",
                          "%s: ttlSeconds is required (there is no forever: a holder that needs longer renews)", at);
        if (rc < 0 || s < 1 || s > KVW_TTL_MAX_S)
            return refuse(why, "lock_invalid_ttl", "out_of_range", "%s: ttlSeconds must be an integer from 1 to %lld", at,
                          KVW_TTL_MAX_S);
        op->ttl_s = s;
    }
    if (op->kind == LOCKW_ACQUIRE) {
        int64_t l = 1;
        if (int_member(d, obj, "limit", &l) < 0 || l < 1 || l > LOCKW_LIMIT_MAX)
            return refuse(why, "lock_invalid_limit", "out_of_range",
                          "%s: limit is a whole number from 1 (a lock) to %d (a semaphore's permits)", at, LOCKW_LIMIT_MAX);
        op->limit = (int32_t)l;
        return QERR_OK;
    }
    int64_t tok;
    int rc = int_member(d, obj, "token", &tok);
    if (rc <= 0 || tok < 1)
        return refuse(why, "lock_invalid_token", rc == 0 ? "missing" : "not_positive",
                      "%s: %s needs token, the positive integer the last acquire or renew answered", at,
                      LOCK_NAMES[op->kind]);
    op->token = tok;
    int64_t sl;
    t = json_get(d, obj, "slot");
    if (t >= 0 && json_type_of(d, t) != JSON_NULL) {
        if (int_member(d, obj, "slot", &sl) < 0 || sl < 0 || sl >= LOCKW_LIMIT_MAX)
            return refuse(why, "lock_invalid_slot", "out_of_range", "%s: slot is a whole number from 0 to %d", at,
                          LOCKW_LIMIT_MAX - 1);
        op->has_slot = 1;
        op->slot = (int32_t)sl;
    }
    return QERR_OK;
}

qerr lockw_parse_body(const json_doc *d, arena *ar, lockw_op **ops, int *n, qerr_detail *why)
{
    if (json_type_of(d, 0) != JSON_OBJECT)
        return refuse(why, "lock_invalid_body", "not_object", "the body must be {\"operations\": [op, ...]}");
    uint32_t cnt = d->toks[0].count;
    int k = json_first(d, 0);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        if (!json_str_eq(d, k, "operations")) {
            char name[80];
            field_name(d, k, name, sizeof name);
            return refuse(why, "lock_invalid_body", "unknown_field", "unknown field \"%s\": the body is {\"operations\": [op, ...]}",
                          name);
        }
    }
    int arr = json_get(d, 0, "operations");
    if (arr < 0)
        return refuse(why, "lock_invalid_body", "operations_missing", "the body must be {\"operations\": [op, ...]}");
    if (json_type_of(d, arr) != JSON_ARRAY)
        return refuse(why, "lock_invalid_body", "not_array", "operations must be an array of lock ops");
    uint32_t m = d->toks[arr].count;
    if (m > LOCKW_MAX_OPS)
        return refuse(why, "lock_limit_exceeded", "too_many_ops", "operations holds %u ops; at most %d are taken at once", m,
                      LOCKW_MAX_OPS);
    lockw_op *out = arena_alloc(ar, (m ? m : 1) * sizeof *out);
    int t = json_first(d, arr);
    for (uint32_t i = 0; i < m; i++, t = json_next(d, t)) {
        char at[64];
        snprintf(at, sizeof at, "operations[%u]", i);
        if (lock_op(d, t, ar, &out[i], at, why) != QERR_OK)
            return qerr_at(why, QERR_BAD_INPUT, (int)i);
    }
    *ops = out;
    *n = (int)m;
    return QERR_OK;
}

const char LOCK_OPS_SQL[] = "SELECT o_index, o_result FROM queen.lock_ops_v1($1::uuid, $2::int4[], $3::text[], "
                            "$4::text[], $5::int8[], $6::int4[], $7::int8[], $8::int4[])";

void lockw_params_build(const uint8_t tenant[16], const lockw_op *ops, int n, kvw_params *p)
{
    memset(p, 0, sizeof *p);
    enum { L_KIND, L_NAME, L_OWNER, L_TTL, L_LIMIT, L_TOKEN, L_SLOT, LN };
    static const uint32_t oids[LN] = {OID_INT4, OID_TEXT, OID_TEXT, OID_INT8, OID_INT4, OID_INT8, OID_INT4};
    for (int a = 0; a < LN; a++)
        pgarray_begin(&p->arr[a], oids[a]);
    for (int i = 0; i < n; i++) {
        const lockw_op *o = &ops[i];
        pgarray_add_i32(&p->arr[L_KIND], o->kind);
        pgarray_add(&p->arr[L_NAME], o->name, o->name_len);
        if (o->owner)
            pgarray_add(&p->arr[L_OWNER], o->owner, o->owner_len);
        else
            pgarray_add_null(&p->arr[L_OWNER]);
        pgarray_add_i64(&p->arr[L_TTL], o->ttl_s);
        pgarray_add_i32(&p->arr[L_LIMIT], o->limit > 0 ? o->limit : 1);
        pgarray_add_i64(&p->arr[L_TOKEN], o->token);
        if (o->has_slot)
            pgarray_add_i32(&p->arr[L_SLOT], o->slot);
        else
            pgarray_add_null(&p->arr[L_SLOT]);
    }
    memcpy(p->tenant, tenant, 16);
    p_bin(p, p->tenant, 16);
    for (int a = 0; a < LN; a++) {
        pgarray_finish(&p->arr[a]);
        p_bin(p, p->arr[a].b.data, p->arr[a].b.len);
    }
}
