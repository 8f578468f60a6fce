/* fuzz_json — the strict JSON reader: acceptance must not depend on token_depth or
 * max_tokens (beyond "too many tokens"), every token must be well formed, strings must decode
 * to valid UTF-8 that the writer re-serialises and the reader reads back identically. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_json: check failed at line %d: %s\n", __LINE__, #c);                        \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void check_string(const json_doc *d, int t)
{
    const json_tok *k = &d->toks[t];
    CHECK(k->end - k->start >= 2);
    CHECK(d->src[k->start] == '"' && d->src[k->end - 1] == '"');
    buf b;
    buf_init(&b, 0);
    CHECK(json_str_decode(d, t, &b) == 0);
    CHECK(json_str_decoded_len(d, t) == b.len);
    CHECK(utf8_valid((const uint8_t *)b.data, b.len) == 0);
    const char *p;
    size_t n;
    if (json_str_span(d, t, &p, &n) == 0) {
        CHECK(!(k->flags & JSON_TOK_ESCAPED));
        CHECK(n == b.len && (n == 0 || memcmp(p, b.data, n) == 0));
    } else {
        CHECK(k->flags & JSON_TOK_ESCAPED);
    }
    const char *cs = buf_cstr(&b);
    if (strlen(cs) == b.len) {
        CHECK(json_str_eq(d, t, cs));
        if (b.len) {
            /* one byte shorter is a different string */
            char *shorter = strndup(cs, b.len - 1);
            CHECK(!json_str_eq(d, t, shorter));
            free(shorter);
        }
    }
    /* write it back out and read it again: same bytes */
    buf w;
    buf_init(&w, 0);
    CHECK(jw_string(&w, b.data ? b.data : "", b.len) == 0);
    json_doc d2;
    memset(&d2, 0, sizeof d2);
    if (json_parse(&d2, w.data, w.len, NULL) != 0) {
        fprintf(stderr, "fuzz_json: jw_string output rejected: %s\n", d2.err);
        abort();
    }
    CHECK(d2.ntok == 1 && d2.toks[0].type == JSON_STRING);
    buf b2;
    buf_init(&b2, 0);
    CHECK(json_str_decode(&d2, 0, &b2) == 0);
    CHECK(b2.len == b.len && (b.len == 0 || memcmp(b2.data, b.data, b.len) == 0));
    buf_free(&b2);
    json_doc_free(&d2);
    buf_free(&w);
    buf_free(&b);
}

static void check_number(const json_doc *d, int t)
{
    const json_tok *k = &d->toks[t];
    size_t n;
    const char *raw = json_raw(d, t, &n);
    int64_t v;
    int r = json_int64(d, t, &v);
    if (!(k->flags & JSON_TOK_INTEGER)) {
        CHECK(r == -1);
        CHECK(memchr(raw, '.', n) || memchr(raw, 'e', n) || memchr(raw, 'E', n));
    } else {
        CHECK(!memchr(raw, '.', n) && !memchr(raw, 'e', n) && !memchr(raw, 'E', n));
        if (r == 0 && !(n == 2 && raw[0] == '-' && raw[1] == '0')) {
            buf b;
            buf_init(&b, 0);
            buf_put_i64(&b, v);
            CHECK(b.len == n && memcmp(b.data, raw, n) == 0);
            buf_free(&b);
        } else if (r != 0) {
            /* only out-of-range integers fail */
            CHECK(n >= 19);
        }
    }
    double dv;
    (void)json_double(d, t, &dv);
}

static void check_doc(const json_doc *d, const char *src, size_t len)
{
    CHECK(d->ntok >= 1);
    size_t a = 0, z = len;
    while (a < z && is_ws(src[a]))
        a++;
    while (z > a && is_ws(src[z - 1]))
        z--;
    size_t rl;
    const char *root = json_raw(d, 0, &rl);
    CHECK(root == src + a && rl == z - a);
    CHECK(d->toks[0].next == d->ntok);
    for (uint32_t i = 0; i < d->ntok; i++) {
        const json_tok *k = &d->toks[i];
        CHECK(k->start < k->end && k->end <= len);
        CHECK(k->next > i && k->next <= d->ntok);
        CHECK(k->type >= JSON_OBJECT && k->type <= JSON_NULL);
        switch (k->type) {
        case JSON_OBJECT:
        case JSON_ARRAY: {
            CHECK(src[k->start] == (k->type == JSON_OBJECT ? '{' : '['));
            CHECK(src[k->end - 1] == (k->type == JSON_OBJECT ? '}' : ']'));
            if (k->flags & JSON_TOK_OPAQUE) {
                CHECK(k->count == 0 && k->next == i + 1);
                CHECK(json_first(d, (int)i) == -1);
                break;
            }
            /* walk the children: they tile (i, next) and sit inside the parent's span */
            uint32_t per = k->type == JSON_OBJECT ? 2 : 1;
            int c = json_first(d, (int)i);
            CHECK(k->count == 0 ? c == -1 : c == (int)i + 1);
            uint32_t seen = 0;
            uint32_t at = i + 1;
            uint32_t prev_end = k->start;
            while (at < k->next) {
                const json_tok *ch = &d->toks[at];
                CHECK(ch->start > prev_end || (at == i + 1 && ch->start > k->start));
                CHECK(ch->end < k->end);
                if (k->type == JSON_OBJECT && seen % 2 == 0)
                    CHECK(ch->type == JSON_STRING);
                prev_end = ch->end;
                at = ch->next;
                seen++;
            }
            CHECK(at == k->next);
            CHECK(seen == k->count * per);
            if (k->type == JSON_OBJECT) {
                int kk = (int)i + 1;
                for (uint32_t m = 0; m < k->count; m++) {
                    buf key;
                    buf_init(&key, 0);
                    CHECK(json_str_decode(d, kk, &key) == 0);
                    const char *ks = buf_cstr(&key);
                    if (strlen(ks) == key.len) {
                        int g = json_get(d, (int)i, ks);
                        CHECK(g >= kk + 1); /* last one wins: never an earlier duplicate */
                        CHECK(json_str_eq(d, g - 1, ks));
                    }
                    buf_free(&key);
                    kk = json_next(d, kk + 1);
                }
            }
            break;
        }
        case JSON_STRING:
            check_string(d, (int)i);
            CHECK(json_get(d, (int)i, "x") == -1);
            break;
        case JSON_NUMBER:
            check_number(d, (int)i);
            break;
        case JSON_TRUE:
            CHECK(k->end - k->start == 4 && memcmp(src + k->start, "true", 4) == 0);
            break;
        case JSON_FALSE:
            CHECK(k->end - k->start == 5 && memcmp(src + k->start, "false", 5) == 0);
            break;
        case JSON_NULL:
            CHECK(k->end - k->start == 4 && memcmp(src + k->start, "null", 4) == 0);
            break;
        }
        if (k->type != JSON_STRING) {
            buf b;
            buf_init(&b, 0);
            CHECK(json_str_decode(d, (int)i, &b) == -1);
            CHECK(!json_str_eq(d, (int)i, ""));
            buf_free(&b);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    json_doc full;
    memset(&full, 0, sizeof full);
    int ok = json_parse(&full, src, size, NULL) == 0;
    if (ok) {
        check_doc(&full, src, size);
        /* json_raw_has_nul: exactly when some string (or key) decodes to a NUL */
        int nul = 0;
        for (uint32_t i = 0; i < full.ntok && !nul; i++) {
            if (full.toks[i].type != JSON_STRING)
                continue;
            buf b;
            buf_init(&b, 0);
            CHECK(json_str_decode(&full, (int)i, &b) == 0);
            nul = b.len && memchr(b.data, 0, b.len) != NULL;
            buf_free(&b);
        }
        size_t rl;
        const char *root = json_raw(&full, 0, &rl);
        CHECK(json_raw_has_nul(root, rl) == nul);
    } else {
        CHECK(full.err[0] != '\0');
    }

    /* token_depth changes what is tokenised, never what is accepted */
    for (uint32_t depth = 1; depth <= 3; depth++) {
        json_doc d;
        memset(&d, 0, sizeof d);
        json_opts o = {.max_tokens = 0, .token_depth = depth};
        int r = json_parse(&d, src, size, &o) == 0;
        CHECK(r == ok);
        if (r) {
            check_doc(&d, src, size);
            CHECK(d.ntok <= full.ntok);
            CHECK(d.toks[0].type == full.toks[0].type);
        }
        json_doc_free(&d);
    }

    /* max_tokens: accepted iff the full parse was and fits */
    if (ok) {
        uint32_t lim = 1 + (uint32_t)(size % 7);
        json_doc d;
        memset(&d, 0, sizeof d);
        json_opts o = {.max_tokens = lim, .token_depth = 0};
        int r = json_parse(&d, src, size, &o) == 0;
        CHECK(r == (full.ntok <= lim));
        if (!r)
            CHECK(strstr(d.err, "too many") != NULL);
        json_doc_free(&d);
    }

    /* the doc can be reused for a second parse */
    if (ok) {
        int r = json_parse(&full, src, size, NULL);
        CHECK(r == 0);
        check_doc(&full, src, size);
    }
    json_doc_free(&full);
    return 0;
}
