/* kv_ops.c — KV ops without I/O: constructors, validation, request parsing, the messages and
 * JSON of results and failures, and the parameters of the batch statement. */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kv.h"

const char *const KV_METRIC_OP_NAMES[8] = {"get", "put", "putIfAbsent", "delete", "incr", "check", "getMany", "getPrefix"};

static kv_op op_base(enum kv_kind kind, const char *ns, const char *key)
{
    kv_op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.ns = ns;
    o.ns_len = strlen(ns);
    o.key = key;
    o.key_len = strlen(key);
    return o;
}

kv_op kv_op_get(const char *ns, const char *key)
{
    return op_base(KV_GET, ns, key);
}

kv_op kv_op_put(const char *ns, const char *key, const char *json, int64_t ttl_ms)
{
    kv_op o = op_base(KV_PUT, ns, key);
    o.value = json;
    o.value_len = strlen(json);
    o.ttl_ms = ttl_ms;
    return o;
}

kv_op kv_op_put_if_absent(const char *ns, const char *key, const char *json, int64_t ttl_ms)
{
    kv_op o = kv_op_put(ns, key, json, ttl_ms);
    o.expect = KV_EXPECT_ABSENT;
    return o;
}

kv_op kv_op_put_if_version(const char *ns, const char *key, const char *json, int64_t ttl_ms, int64_t version)
{
    kv_op o = kv_op_put(ns, key, json, ttl_ms);
    o.expect = KV_EXPECT_VERSION;
    o.version = version;
    return o;
}

kv_op kv_op_delete(const char *ns, const char *key)
{
    return op_base(KV_DELETE, ns, key);
}

kv_op kv_op_delete_if_version(const char *ns, const char *key, int64_t version)
{
    kv_op o = op_base(KV_DELETE, ns, key);
    o.expect = KV_EXPECT_VERSION;
    o.version = version;
    return o;
}

kv_op kv_op_incr(const char *ns, const char *key, int64_t by)
{
    kv_op o = op_base(KV_INCR, ns, key);
    o.by = by;
    return o;
}

int kv_metric_slot(const kv_op *op)
{
    switch (op->kind) {
    case KV_GET: return 0;
    case KV_PUT: return op->expect == KV_EXPECT_ABSENT ? 2 : 1;
    case KV_DELETE: return 3;
    case KV_INCR: return 4;
    }
    return 0;
}

const char *kv_kind_name(const kv_op *op)
{
    return KV_METRIC_OP_NAMES[kv_metric_slot(op)];
}

const char *kv_fail_reason(enum kv_fail f)
{
    switch (f) {
    case KV_FAIL_NONE: return "none";
    case KV_FAIL_VERSION: return "version_mismatch";
    case KV_FAIL_EXISTS: return "exists";
    case KV_FAIL_ABSENT: return "absent";
    case KV_FAIL_MAX: return "max_exceeded";
    case KV_FAIL_NOT_INTEGER: return "not_integer";
    case KV_FAIL_OVERFLOW: return "overflow";
    }
    return "unknown";
}

qerr kv_check_name(const char *what, const char *s, size_t n, size_t max, qerr_detail *err)
{
    if (!s || n == 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "%s must be a non-empty string", what);
    if (n > max)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "%s is %zu bytes; at most %zu are allowed", what, n, max);
    if (memchr(s, '\0', n))
        return qerr_set(err, QERR_BAD_INPUT, NULL, "%s must not contain NUL characters", what);
    if (utf8_valid((const uint8_t *)s, n) < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "%s must be valid UTF-8", what);
    return QERR_OK;
}

qerr kv_check_op(const kv_op *op, qerr_detail *err)
{
    qerr e = kv_check_name("namespace", op->ns, op->ns_len, KV_NAMESPACE_MAX_BYTES, err);
    if (e == QERR_OK)
        e = kv_check_name("key", op->key, op->key_len, KV_KEY_MAX_BYTES, err);
    if (e != QERR_OK)
        return e;
    if (op->kind == KV_PUT) {
        if (!op->value || op->value_len == 0)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "value is required (any JSON value)");
        if (op->value_len > KV_VALUE_MAX_BYTES)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "value is %zu bytes; at most %u are allowed", op->value_len, KV_VALUE_MAX_BYTES);
    }
    if (op->ttl_ms < 0 || op->ttl_ms > KV_TTL_MAX_MS)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ttlMs must be an integer between 1 and %lld", (long long)KV_TTL_MAX_MS);
    if (op->expect == KV_EXPECT_VERSION && op->version < 1)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ifVersion must be a positive integer");
    return QERR_OK;
}

/* The "op" names a request may use. putIfAbsent is a put that requires absence. */
static int kind_from_name(const json_doc *d, int t, int *kind, int *if_absent)
{
    static const struct {
        const char *name;
        int kind;
        int absent;
    } names[] = {{"get", KV_GET, 0},     {"put", KV_PUT, 0},       {"putIfAbsent", KV_PUT, 1},
                 {"delete", KV_DELETE, 0}, {"incr", KV_INCR, 0}};
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    for (size_t i = 0; i < ARRAY_LEN(names); i++) {
        if (json_str_eq(d, t, names[i].name)) {
            *kind = names[i].kind;
            *if_absent = names[i].absent;
            return 0;
        }
    }
    return -1;
}

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

/* Members an op object may carry; anything else is refused, so a misspelt "ifVerison" cannot
 * silently turn a fenced write into an unconditional one. */
static const char *const OP_FIELDS[] = {"op", "namespace", "key", "value", "ttlMs", "ifVersion", "ifAbsent", "by", "max"};

qerr kv_parse_op_fields(const json_doc *d, int obj, int kind, int if_absent, arena *ar, kv_op *out,
                        qerr_detail *err)
{
    memset(out, 0, sizeof *out);
    if (json_type_of(d, obj) != JSON_OBJECT)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "an op must be a JSON object");
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        int known = 0;
        for (size_t f = 0; f < ARRAY_LEN(OP_FIELDS) && !known; f++)
            known = json_str_eq(d, k, OP_FIELDS[f]);
        if (!known) {
            buf nb;
            buf_init(&nb, 256);
            json_str_decode(d, k, &nb);
            qerr_set(err, QERR_BAD_INPUT, NULL,
                     "unknown field \"%.*s\" (fields: op, namespace, key, value, ttlMs, ifVersion, ifAbsent, by, max)",
                     (int)utf8_cut(nb.data ? nb.data : "", nb.len, 64), nb.data ? nb.data : "");
            buf_free(&nb);
            return QERR_BAD_INPUT;
        }
    }
    if (kind < 0) {
        int t = json_get(d, obj, "op");
        if (t < 0)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "op is required (get, put, putIfAbsent, delete or incr)");
        if (kind_from_name(d, t, &kind, &if_absent) < 0)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "op must be one of get, put, putIfAbsent, delete, incr");
    }
    out->kind = (enum kv_kind)kind;
    int rc = str_member(d, obj, "namespace", ar, &out->ns, &out->ns_len);
    if (rc < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "namespace must be a string");
    rc = str_member(d, obj, "key", ar, &out->key, &out->key_len);
    if (rc < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "key must be a string");
    int v = json_get(d, obj, "value");
    if (kind == KV_PUT) {
        if (v < 0)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "value is required (any JSON value)");
        out->value = json_raw(d, v, &out->value_len);
    } else if (v >= 0) {
        return qerr_set(err, QERR_BAD_INPUT, NULL, "value is only accepted by put and putIfAbsent");
    }
    rc = json_int_field(d, obj, "ttlMs", 1, KV_TTL_MAX_MS, &out->ttl_ms);
    if (rc < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ttlMs must be an integer between 1 and %lld", (long long)KV_TTL_MAX_MS);
    if (rc > 0 && kind != KV_PUT && kind != KV_INCR)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ttlMs is only accepted by put, putIfAbsent and incr");
    rc = json_int_field(d, obj, "ifVersion", 1, INT64_MAX, &out->version);
    if (rc < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ifVersion must be a positive integer (a version this store returned)");
    if (rc > 0)
        out->expect = KV_EXPECT_VERSION;
    int a = json_get(d, obj, "ifAbsent");
    if (a >= 0 && json_type_of(d, a) != JSON_NULL) {
        if (json_type_of(d, a) != JSON_TRUE && json_type_of(d, a) != JSON_FALSE)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "ifAbsent must be true or false");
        if (json_type_of(d, a) == JSON_TRUE)
            if_absent = 1;
    }
    if (if_absent) {
        if (out->expect == KV_EXPECT_VERSION)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "ifVersion and ifAbsent (or putIfAbsent) cannot be combined");
        out->expect = KV_EXPECT_ABSENT;
    }
    rc = json_int_field(d, obj, "by", INT64_MIN, INT64_MAX, &out->by);
    if (rc < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "by must be an integer (64-bit)");
    if (kind == KV_INCR && rc == 0)
        out->by = 1;
    if (rc > 0 && kind != KV_INCR)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "by is only accepted by incr");
    rc = json_int_field(d, obj, "max", INT64_MIN, INT64_MAX, &out->max);
    if (rc < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "max must be an integer (64-bit)");
    if (rc > 0) {
        if (kind != KV_INCR)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "max is only accepted by incr");
        out->has_max = 1;
    }
    return QERR_OK;
}

qerr kv_parse_batch(const json_doc *d, arena *ar, kv_op **ops, int *n, qerr_detail *err)
{
    const char *def_ns = NULL;
    size_t def_ns_len = 0;
    uint32_t cnt = d->toks[0].count;
    int k = json_first(d, 0);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        if (!json_str_eq(d, k, "namespace") && !json_str_eq(d, k, "ops"))
            return qerr_set(err, QERR_BAD_INPUT, NULL, "unknown field in the batch body (fields: namespace, ops)");
    }
    if (str_member(d, 0, "namespace", ar, &def_ns, &def_ns_len) < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "namespace must be a string");
    int arr = json_get(d, 0, "ops");
    if (json_type_of(d, arr) != JSON_ARRAY)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ops array is required");
    uint32_t m = d->toks[arr].count;
    if (m == 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ops must hold at least one op");
    if (m > KV_BATCH_MAX_OPS)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "ops holds %u ops; at most %d are allowed", m, KV_BATCH_MAX_OPS);
    kv_op *out = arena_alloc(ar, m * sizeof *out);
    int t = json_first(d, arr);
    for (uint32_t i = 0; i < m; i++, t = json_next(d, t)) {
        qerr_detail e;
        if (kv_parse_op_fields(d, t, -1, 0, ar, &out[i], &e) != QERR_OK)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "ops[%u]: %s", i, e.text);
        if (!out[i].ns) {
            out[i].ns = def_ns;
            out[i].ns_len = def_ns_len;
        }
        if (!out[i].ns)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "ops[%u]: namespace is required (in the op or for the whole batch)", i);
        if (!out[i].key)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "ops[%u]: key is required", i);
        if (kv_check_op(&out[i], &e) != QERR_OK)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "ops[%u]: %s", i, e.text);
    }
    *ops = out;
    *n = (int)m;
    return QERR_OK;
}

/* namespace/key for messages, cut so a message stays readable */
static void put_name(buf *b, const kv_op *op)
{
    buf_printf(b, "%.*s/%.*s", (int)utf8_cut(op->ns, op->ns_len, 80), op->ns, (int)utf8_cut(op->key, op->key_len, 160),
               op->key);
}

void kv_fail_message(const kv_op *ops, const kv_outcome *o, buf *out)
{
    const kv_op *op = &ops[o->failed_op];
    const kv_result *c = &o->current;
    buf_printf(out, "op %d (%s ", o->failed_op, kv_kind_name(op));
    put_name(out, op);
    buf_puts(out, "): ");
    switch (o->fail) {
    case KV_FAIL_VERSION:
        buf_printf(out, "version mismatch: required version %lld, found %lld", (long long)op->version,
                   (long long)c->version);
        break;
    case KV_FAIL_EXISTS:
        buf_printf(out, "the key exists (version %lld) and absence was required", (long long)c->version);
        break;
    case KV_FAIL_ABSENT:
        buf_printf(out, "the key is absent and version %lld was required", (long long)op->version);
        break;
    case KV_FAIL_MAX:
        buf_printf(out, "incr refused: %.*s + %lld would pass max %lld", c->value ? (int)MIN(c->value_len, 32) : 1,
                   c->value ? c->value : "0", (long long)op->by, (long long)op->max);
        break;
    case KV_FAIL_NOT_INTEGER:
        buf_puts(out, "incr needs an integer value and the stored value is not one");
        break;
    case KV_FAIL_OVERFLOW:
        buf_printf(out, "incr by %lld would leave the 64-bit integer range", (long long)op->by);
        break;
    case KV_FAIL_NONE:
        buf_puts(out, "no failure");
        break;
    }
}

static void put_opt_i64(buf *b, int64_t v)
{
    if (v)
        buf_put_i64(b, v);
    else
        buf_puts(b, "null");
}

void kv_result_json(buf *b, const kv_op *op, const kv_result *r)
{
    buf_puts(b, "{\"op\":");
    jw_cstr(b, kv_kind_name(op));
    buf_puts(b, ",\"namespace\":");
    jw_string(b, op->ns, op->ns_len);
    buf_puts(b, ",\"key\":");
    jw_string(b, op->key, op->key_len);
    switch (op->kind) {
    case KV_GET:
        buf_puts(b, r->flag ? ",\"found\":true" : ",\"found\":false");
        break;
    case KV_PUT:
    case KV_INCR:
        buf_puts(b, r->flag ? ",\"created\":true" : ",\"created\":false");
        break;
    case KV_DELETE:
        buf_puts(b, r->flag ? ",\"deleted\":true" : ",\"deleted\":false");
        break;
    }
    if (op->kind == KV_GET || op->kind == KV_INCR) {
        buf_puts(b, ",\"value\":");
        if (r->value)
            buf_append(b, r->value, r->value_len);
        else
            buf_puts(b, "null");
    }
    buf_puts(b, ",\"version\":");
    put_opt_i64(b, r->version);
    buf_puts(b, ",\"expiresAt\":");
    put_opt_i64(b, r->expires_at_us);
    buf_putc(b, '}');
}

void kv_fail_json(buf *b, const kv_op *ops, const kv_outcome *o)
{
    const kv_op *op = &ops[o->failed_op];
    buf msg;
    buf_init(&msg, 0);
    kv_fail_message(ops, o, &msg);
    buf_puts(b, "{\"error\":");
    jw_string(b, msg.data ? msg.data : "", msg.len);
    buf_free(&msg);
    /* code: the error shape every 409 has (docs/http-api.md, "Errors"); reason says which */
    buf_printf(b, ",\"code\":\"conflict\",\"failedOp\":%d,\"reason\":\"%s\",\"op\":", o->failed_op,
               kv_fail_reason(o->fail));
    jw_cstr(b, kv_kind_name(op));
    buf_puts(b, ",\"namespace\":");
    jw_string(b, op->ns, op->ns_len);
    buf_puts(b, ",\"key\":");
    jw_string(b, op->key, op->key_len);
    buf_puts(b, ",\"currentVersion\":");
    put_opt_i64(b, o->current.version);
    if (op->kind == KV_INCR) {
        buf_puts(b, ",\"currentValue\":");
        if (o->current.value)
            buf_append(b, o->current.value, o->current.value_len);
        else
            buf_puts(b, "null");
    }
    buf_putc(b, '}');
}

void kv_like_prefix(const char *prefix, size_t n, buf *out)
{
    for (size_t i = 0; i < n; i++) {
        char c = prefix[i];
        if (c == '\\' || c == '%' || c == '_')
            buf_putc(out, '\\');
        buf_putc(out, c);
    }
    buf_putc(out, '%');
}

/* ---- parameters ---- */

void kv_params_free(kv_params *p)
{
    for (size_t i = 0; i < ARRAY_LEN(p->arr); i++)
        pgarray_free(&p->arr[i]);
    buf_free(&p->like);
}

static void p_text(kv_params *p, const char *s, size_t n)
{
    int i = p->n++;
    p->values[i] = s;
    p->lengths[i] = (int)n;
    p->formats[i] = 1; /* binary text is the bytes themselves: no NUL terminator needed */
}

static void p_uuid(kv_params *p, const uint8_t b[16])
{
    int i = p->n++;
    memcpy(p->text[i], b, 16);
    p->values[i] = p->text[i];
    p->lengths[i] = 16;
    p->formats[i] = 1;
}

static void p_i64(kv_params *p, int64_t v)
{
    int i = p->n++;
    be_put64((uint8_t *)p->text[i], (uint64_t)v);
    p->values[i] = p->text[i];
    p->lengths[i] = 8;
    p->formats[i] = 1;
}

static void p_array(kv_params *p, pgarray *a)
{
    int i = p->n++;
    pgarray_finish(a);
    p->values[i] = a->b.data;
    p->lengths[i] = (int)a->b.len;
    p->formats[i] = 1;
}

const char KV_BATCH_SQL[] =
    "SELECT * FROM queen.kv_batch_v1("
    "$1::uuid, $2::int4[], $3::text[], $4::text[], $5::text[], $6::int4[], $7::int8[], $8::int8[], $9::int8[], "
    "$10::int8[])";

void kv_batch_params(const uint8_t tenant[16], const kv_op *ops, int n, kv_params *p)
{
    memset(p, 0, sizeof *p);
    enum { KIND, NS, KEY, VAL, EXPECT, VER, TTL, BY, MAXV };
    static const uint32_t oids[] = {OID_INT4, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT4,
                                    OID_INT8, OID_INT8, OID_INT8, OID_INT8};
    for (int a = 0; a < 9; a++)
        pgarray_begin(&p->arr[a], oids[a]);
    for (int i = 0; i < n; i++) {
        const kv_op *o = &ops[i];
        pgarray_add_i32(&p->arr[KIND], (int32_t)o->kind);
        pgarray_add(&p->arr[NS], o->ns, o->ns_len);
        pgarray_add(&p->arr[KEY], o->key, o->key_len);
        if (o->kind == KV_PUT)
            pgarray_add(&p->arr[VAL], o->value, o->value_len);
        else
            pgarray_add_null(&p->arr[VAL]);
        pgarray_add_i32(&p->arr[EXPECT], (int32_t)o->expect);
        pgarray_add_i64(&p->arr[VER], o->expect == KV_EXPECT_VERSION ? o->version : 0);
        pgarray_add_i64(&p->arr[TTL], o->ttl_ms);
        pgarray_add_i64(&p->arr[BY], o->by);
        if (o->kind == KV_INCR && o->has_max)
            pgarray_add_i64(&p->arr[MAXV], o->max);
        else
            pgarray_add_null(&p->arr[MAXV]);
    }
    p_uuid(p, tenant);
    for (int a = 0; a < 9; a++)
        p_array(p, &p->arr[a]);
}

/* columns: enum kv_get_col (kv.h) */
const char KV_GET_SQL[] =
    "SELECT x.value, x.version, x.expires_at FROM queen.kv x "
    "WHERE x.tenant_id = $1::uuid AND x.namespace = $2::text AND x.key = $3::text "
    "AND (x.expires_at IS NULL OR x.expires_at > queen.now_us())";

void kv_get_params(const uint8_t tenant[16], const char *ns, size_t ns_len, const char *key, size_t key_len,
                   kv_params *p)
{
    memset(p, 0, sizeof *p);
    p_uuid(p, tenant);
    p_text(p, ns, ns_len);
    p_text(p, key, key_len);
}

/* LIKE with a constant prefix on a "C"-collated column becomes an index range (the statement
 * is planned with its parameter values), so a prefix listing reads only its own keys. The
 * innermost query takes limit + 1 rows; the outer ones drop the rows past $6 bytes of values
 * (always keeping the first), so the database never sends a gigabyte of documents, and report
 * how many rows the limit took (total > rows returned: there is more). */
/* columns: enum kv_list_col (kv.h) */
const char KV_LIST_SQL[] =
    "SELECT y.key, y.value, y.version, y.expires_at, y.total FROM ("
    " SELECT x.*, sum(octet_length(x.value)) OVER (ORDER BY x.key) AS cum, count(*) OVER () AS total FROM ("
    "  SELECT k.key, k.value, k.version, k.expires_at FROM queen.kv k "
    "  WHERE k.tenant_id = $1::uuid AND k.namespace = $2::text AND k.key > $3::text AND k.key LIKE $4::text "
    "  AND (k.expires_at IS NULL OR k.expires_at > queen.now_us()) "
    "  ORDER BY k.key LIMIT $5::int8) x) y "
    "WHERE y.cum - octet_length(y.value) < $6::int8 ORDER BY y.key";

void kv_list_params(const uint8_t tenant[16], const char *ns, size_t ns_len, const char *prefix, size_t prefix_len,
                    const char *after, size_t after_len, int64_t limit, kv_params *p)
{
    memset(p, 0, sizeof *p);
    buf_init(&p->like, 0);
    kv_like_prefix(prefix ? prefix : "", prefix ? prefix_len : 0, &p->like);
    p_uuid(p, tenant);
    p_text(p, ns, ns_len);
    p_text(p, after ? after : "", after ? after_len : 0);
    p_text(p, p->like.data, p->like.len);
    p_i64(p, limit + 1);
    p_i64(p, KV_ANSWER_MAX_BYTES);
}
