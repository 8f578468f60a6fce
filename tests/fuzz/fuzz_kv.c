/* fuzz_kv — json_parse then kv_parse_batch on arbitrary input, as POST /api/v1/kv/batch does.
 * Checks: the outcome does not depend on whether values below the op fields were tokenised;
 * an accepted batch holds ops that pass kv_check_op, whose values are spans of the input that
 * are themselves valid JSON; results and failures written for those ops are valid JSON; the
 * parameters build. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kv/kv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_kv: check failed at line %d: %s\n", __LINE__, #c);                          \
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

/* Parses with a token depth; returns -2 when the text is not a JSON object, else the result of
 * kv_parse_batch (QERR_OK or QERR_BAD_INPUT; ops in the arena). */
static int parse_with(const char *src, size_t len, uint32_t depth, arena *ar, kv_op **ops, int *n, qerr_detail *err)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.token_depth = depth};
    int r = -2;
    if (json_parse(&d, src, len, &jo) == 0 && json_type_of(&d, 0) == JSON_OBJECT) {
        memset(err, 0, sizeof *err);
        r = (int)kv_parse_batch(&d, ar, ops, n, err);
        CHECK(r == QERR_OK || r == QERR_BAD_INPUT);
        if (r == QERR_BAD_INPUT)
            CHECK(err->text[0] != '\0' && strlen(err->text) < sizeof err->text);
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
    kv_op *o1 = NULL, *o2 = NULL;
    int n1 = 0, n2 = 0;
    qerr_detail e1, e2;
    int r1 = parse_with(src, size, 3, &a1, &o1, &n1, &e1);
    int r2 = parse_with(src, size, 0, &a2, &o2, &n2, &e2);
    CHECK(r1 == r2);
    if (r1 == QERR_BAD_INPUT)
        CHECK(strcmp(e1.text, e2.text) == 0);
    if (r1 == QERR_OK) {
        CHECK(n1 == n2 && n1 >= 1 && n1 <= KV_BATCH_MAX_OPS);
        for (int i = 0; i < n1; i++) {
            kv_op *o = &o1[i];
            qerr_detail err;
            CHECK(kv_check_op(o, &err) == QERR_OK);
            CHECK(o->kind == o2[i].kind && o->expect == o2[i].expect && o->version == o2[i].version);
            CHECK(o->ns_len == o2[i].ns_len && memcmp(o->ns, o2[i].ns, o->ns_len) == 0);
            CHECK(o->key_len == o2[i].key_len && memcmp(o->key, o2[i].key, o->key_len) == 0);
            if (o->kind == KV_PUT) {
                CHECK(o->value >= src && o->value + o->value_len <= src + size);
                CHECK(valid_json(o->value, o->value_len));
            } else {
                CHECK(o->value == NULL);
            }
            buf b;
            buf_init(&b, 0);
            kv_result r = {.version = 7, .value = o->value ? o->value : "1", .value_len = o->value ? o->value_len : 1,
                           .flag = 1};
            kv_result_json(&b, o, &r);
            CHECK(valid_json(b.data, b.len));
            buf_reset(&b);
            kv_outcome out;
            memset(&out, 0, sizeof out);
            out.failed_op = i;
            out.fail = (enum kv_fail)(1 + (i % (KV_FAIL_COUNT - 1)));
            out.current = r;
            kv_fail_json(&b, o1, &out);
            CHECK(valid_json(b.data, b.len));
            buf_free(&b);
        }
        uint8_t tenant[16] = {0};
        kv_params p;
        kv_batch_params(tenant, o1, n1, &p);
        CHECK(p.n == 10);
        kv_params_free(&p);
    }
    arena_free(&a1);
    arena_free(&a2);
    return 0;
}
