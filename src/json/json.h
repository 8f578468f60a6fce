/* json.h — a strict JSON (RFC 8259) reader that hands back raw spans, and a small writer.
 *
 * The reader validates the whole text (grammar, number syntax, string escapes, UTF-8) and
 * records a flat array of tokens. A token is a span [start, end) of the source, so a value
 * can be copied out byte for byte: a payload is never re-serialised. Containers below
 * `token_depth` are validated but not tokenised (their own token still has its span), which
 * keeps a push of large payloads at a few tokens per item.
 *
 * Ownership: json_doc borrows the source text (it must outlive the doc) and owns `toks`. */
#ifndef QUEEN_JSON_JSON_H
#define QUEEN_JSON_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "../core/arena.h"
#include "../core/buf.h"

enum json_type { JSON_NONE = 0, JSON_OBJECT, JSON_ARRAY, JSON_STRING, JSON_NUMBER, JSON_TRUE, JSON_FALSE, JSON_NULL };

#define JSON_TOK_ESCAPED 1u   /* string contains backslash escapes */
#define JSON_TOK_OPAQUE 2u    /* container whose children were not tokenised */
#define JSON_TOK_INTEGER 4u   /* number without fraction or exponent */

/* JSON_MAX_DEPTH bounds nesting so a hostile body cannot exhaust the parser's stack array;
 * 512 is far beyond any payload seen in practice. */
#define JSON_MAX_DEPTH 512

typedef struct json_tok {
    uint32_t start; /* first byte of the value (the quote for strings) */
    uint32_t end;   /* one past the last byte */
    uint32_t next;  /* index of the token after this value's subtree */
    uint32_t count; /* objects: members; arrays: elements (0 when opaque) */
    uint8_t type;
    uint8_t flags;
} json_tok;

typedef struct json_doc {
    const char *src;
    size_t len;
    json_tok *toks; /* owned */
    uint32_t ntok;
    uint32_t cap;
    char err[160];  /* set when json_parse fails: what was wrong and where */
} json_doc;

typedef struct json_opts {
    uint32_t max_tokens;  /* 0 = unlimited */
    uint32_t token_depth; /* values nested deeper than this get no tokens; 0 = unlimited */
} json_opts;

/* d must be zeroed before its first parse (memset, or `json_doc d = {0}`): a parse keeps and
 * reuses d's token buffer, so d can be parsed into again; json_doc_free when done, failed or not. */
int json_parse(json_doc *d, const char *src, size_t len, const json_opts *opts);
void json_doc_free(json_doc *d);

/* Navigation. Indexes are token indexes; -1 means absent. */
static inline int json_type_of(const json_doc *d, int t) { return t < 0 ? JSON_NONE : d->toks[t].type; }
int json_first(const json_doc *d, int container); /* first element, or first key of an object */
static inline int json_next(const json_doc *d, int t) { return (int)d->toks[t].next; }
int json_get(const json_doc *d, int object, const char *key); /* value of key (last one wins) */
/* Iterate object members: for (int k = json_first(d, o), n = 0; n < cnt; n++, k = json_next(d, json_next(d,k)))  value = k + 1 */

/* Raw span of any value. */
static inline const char *json_raw(const json_doc *d, int t, size_t *len)
{
    *len = d->toks[t].end - d->toks[t].start;
    return d->src + d->toks[t].start;
}

/* Strings. json_str_eq compares the decoded value with a C string. json_str_decode
 * appends the decoded UTF-8 to `out` (lone surrogates become U+FFFD). json_str_span gives
 * the bytes between the quotes when the string has no escapes (returns 0), else -1. */
int json_str_eq(const json_doc *d, int t, const char *s);
int json_str_decode(const json_doc *d, int t, buf *out);
int json_str_span(const json_doc *d, int t, const char **p, size_t *len);
size_t json_str_decoded_len(const json_doc *d, int t);

/* Numbers: 0 on success; -1 if not an integer number or out of range. */
/* Decodes a string token (an object key too) into the arena, NUL-terminated: 0, or
 * JSON_STR_NUL when it holds a NUL character (\u0000) — such a string cannot be stored as
 * PostgreSQL text, nor be a C string. (The reader has already checked it is valid UTF-8.) */
#define JSON_STR_NUL (-2)
int json_text_dup(arena *ar, const json_doc *d, int tok, const char **out, size_t *len);
/* A string field of an object: 1 present (decoded into the arena), 0 absent or null, -1 wrong
 * type, JSON_STR_NUL when it holds a NUL character (*out NULL). */
int json_str_field(arena *ar, const json_doc *d, int obj, const char *key, const char **out, size_t *len);
/* The message for a refused string field: for JSON_STR_NUL "<where> must not hold a NUL
 * character (\u0000)", else `otherwise`. Returns out, filled. */
const char *json_str_field_msg(int rc, const char *where, const char *otherwise, char *out, size_t n);
int json_int64(const json_doc *d, int t, int64_t *out);
/* An integer field of an object: 1 present, 0 absent or null, -1 not an integer in [lo, hi]. */
int json_int_field(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out);
/* The first key token of object `obj` not in `known` (NULL-terminated), or -1. */
int json_unknown_key(const json_doc *d, int obj, const char *const *known);
int json_double(const json_doc *d, int t, double *out);

/* 1 when the JSON text s[0..n) (one valid JSON value, as the reader checked it) has a string,
 * or an object key, holding the escape \u0000: a text PostgreSQL's jsonb cannot hold. 0 else. */
int json_raw_has_nul(const char *s, size_t n);

/* Writer helpers (append to a buf). */
int jw_string(buf *b, const char *s, size_t n); /* quoted and escaped */
int jw_cstr(buf *b, const char *s);
/* jw_string for text that may not be valid UTF-8 (a message quoting a cut name): each byte
 * that does not start a valid sequence is written as U+FFFD. */
int jw_string_lossy(buf *b, const char *s, size_t n);
int jw_key(buf *b, const char *key);            /* "key": (key is trusted ASCII) */

/* Validates UTF-8 (no overlongs, no surrogates, max U+10FFFF). 0 ok, -1 bad. */
int utf8_valid(const uint8_t *p, size_t n);
/* The length of the longest prefix of s[0..n) of at most max bytes that does not end inside a
 * multi-byte character, for cutting names into messages without breaking their UTF-8. */
size_t utf8_cut(const char *s, size_t n, size_t max);

#endif
