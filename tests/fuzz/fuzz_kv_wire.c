/* fuzz_kv_wire — json_parse then kvw_parse_body on arbitrary input, as POST /api/v1/kv does.
 * Checks: the outcome does not depend on whether values below the op fields were tokenised;
 * a refusal has a stable code and reason, a sentence and an index inside the batch; an
 * accepted batch holds ops within their bounds (names without NUL, values that are spans of
 * the input and valid JSON, exactly one expiry on every write, check with expect, a clamped
 * getPrefix limit); the parameters build. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kv/kv.h"
#include "kv/kv_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_kv_wire: check failed at line %d: %s\n", __LINE__, #c);                     \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static int valid_json(const char *p, size_t n)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    int ok = json_parse(&d, p, n, NULL) == 0;
    json_doc_free(&d);
    return ok;
}

static int name_ok(const char *s, size_t n, size_t max)
{
    return s && n >= 1 && n <= max && !memchr(s, '\0', n);
}

/* -2: not JSON; else kvw_parse_body's result (QERR_OK or QERR_BAD_INPUT) */
static int parse_with(const char *src, size_t len, uint32_t depth, arena *ar, kvw_op **ops, int *n, qerr_detail *why)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = depth};
    int r = -2;
    if (json_parse(&d, src, len, &jo) == 0) {
        memset(why, 0, sizeof *why);
        r = (int)kvw_parse_body(&d, ar, ops, n, why);
        CHECK(r == QERR_OK || r == QERR_BAD_INPUT);
    }
    json_doc_free(&d);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    arena a1, a2;
    arena_init(&a1);
    arena_init(&a2);
    kvw_op *o1 = NULL, *o2 = NULL;
    int n1 = 0, n2 = 0;
    qerr_detail w1, w2;
    int r1 = parse_with(src, size, 4, &a1, &o1, &n1, &w1);
    int r2 = parse_with(src, size, 0, &a2, &o2, &n2, &w2);
    CHECK(r1 == r2);
    if (r1 == QERR_BAD_INPUT) {
        CHECK(w1.code && w1.reason && w1.text[0]);
        CHECK(strcmp(w1.code, w2.code) == 0 && strcmp(w1.reason, w2.reason) == 0 && w1.index == w2.index);
        CHECK(strcmp(w1.text, w2.text) == 0);
        CHECK(w1.index >= -1 && w1.index < KV_BATCH_MAX_OPS);
    }
    if (r1 == QERR_OK) {
        CHECK(n1 == n2 && n1 >= 0 && n1 <= KV_BATCH_MAX_OPS);
        for (int i = 0; i < n1; i++) {
            const kvw_op *o = &o1[i];
            CHECK(o->kind >= 0 && o->kind < KVW_NKINDS && o->kind == o2[i].kind);
            CHECK(name_ok(o->ns, o->ns_len, KV_NAMESPACE_MAX_BYTES));
            CHECK(o->ns_len == o2[i].ns_len && memcmp(o->ns, o2[i].ns, o->ns_len) == 0);
            int write = o->kind == KVW_PUT || o->kind == KVW_PUT_IF_ABSENT || o->kind == KVW_INCR;
            if (o->kind == KVW_GET_MANY) {
                CHECK(o->key == NULL && o->nkeys >= 1 && o->nkeys <= KVW_MANY_MAX_KEYS && o->nkeys == o2[i].nkeys);
                for (int k = 0; k < o->nkeys; k++)
                    CHECK(name_ok(o->keys[k], o->key_lens[k], KV_KEY_MAX_BYTES));
            } else {
                CHECK(name_ok(o->key, o->key_len, KV_KEY_MAX_BYTES));
                CHECK(o->key_len == o2[i].key_len && memcmp(o->key, o2[i].key, o->key_len) == 0);
            }
            if (o->kind == KVW_GET_PREFIX)
                CHECK(o->limit >= 1 && o->limit <= KVW_PREFIX_LIMIT_MAX);
            if (o->after)
                CHECK(name_ok(o->after, o->after_len, KV_KEY_MAX_BYTES));
            if (write)
                CHECK(o->forever != (o->ttl_s > 0) && o->ttl_s <= KVW_TTL_MAX_S);
            else
                CHECK(!o->forever && o->ttl_s == 0);
            if (o->kind == KVW_PUT || o->kind == KVW_PUT_IF_ABSENT) {
                CHECK(o->value >= src && o->value + o->value_len <= src + size);
                CHECK(o->value_len <= KV_VALUE_MAX_BYTES && valid_json(o->value, o->value_len));
            } else {
                CHECK(o->value == NULL);
            }
            if (o->kind == KVW_CHECK || o->kind == KVW_PUT_IF_ABSENT)
                CHECK(o->has_expect);
            if (o->kind == KVW_PUT_IF_ABSENT)
                CHECK(o->expect == 0);
            if (o->kind == KVW_INCR || o->kind == KVW_GET || o->kind >= KVW_GET_MANY)
                CHECK(!o->has_expect && (o->kind == KVW_INCR || !o->required));
            if (o->has_expect)
                CHECK(o->expect >= 0 && o->expect == o2[i].expect);
            if (o->has_min && o->has_max)
                CHECK(o->min <= o->max);
        }
        uint8_t tenant[16] = {0};
        kvw_params p;
        kvw_params_build(tenant, n1 & 1, o1, n1, &p);
        CHECK(p.n == 17);
        kvw_params_free(&p);
    }
    arena_free(&a1);
    arena_free(&a2);
    return 0;
}
