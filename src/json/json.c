/* json.c — strict JSON reader with raw spans, and writer helpers. */
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/util.h"

static int fail(json_doc *d, size_t pos, const char *what)
{
    if (pos < d->len) {
        unsigned char c = (unsigned char)d->src[pos];
        if (c >= 0x20 && c < 0x7f)
            snprintf(d->err, sizeof d->err, "%s at position %zu (found '%c')", what, pos, c);
        else
            snprintf(d->err, sizeof d->err, "%s at position %zu (found byte 0x%02x)", what, pos, c);
    } else {
        snprintf(d->err, sizeof d->err, "%s at position %zu (unexpected end of input)", what, pos);
    }
    return -1;
}

static int add_tok(json_doc *d, const json_opts *o, uint8_t type, size_t start)
{
    if (o && o->max_tokens && d->ntok >= o->max_tokens)
        return -1;
    if (d->ntok == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        d->toks = xrealloc(d->toks, (size_t)cap * sizeof *d->toks);
        d->cap = cap;
    }
    json_tok *t = &d->toks[d->ntok];
    t->start = (uint32_t)start;
    t->end = (uint32_t)start;
    t->next = d->ntok + 1;
    t->count = 0;
    t->type = type;
    t->flags = 0;
    return (int)d->ntok++;
}

static inline int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int utf8_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return -1;
        }
        if (n - i <= need)
            return -1;
        for (size_t k = 1; k <= need; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return -1;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return -1;
        i += need + 1;
    }
    return 0;
}

static int hex4(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Scans a string starting at the opening quote s[*i]. On success *i is past the closing quote. */
static int scan_string(json_doc *d, size_t *i, int *escaped)
{
    const char *s = d->src;
    size_t n = d->len, p = *i + 1;
    *escaped = 0;
    for (;;) {
        while (p < n) {
            unsigned char c = (unsigned char)s[p];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            p++;
        }
        if (p >= n)
            return fail(d, p, "unterminated string");
        unsigned char c = (unsigned char)s[p];
        if (c == '"') {
            *i = p + 1;
            return 0;
        }
        if (c < 0x20)
            return fail(d, p, "control character in string");
        if (c == '\\') {
            *escaped = 1;
            if (p + 1 >= n)
                return fail(d, p + 1, "unterminated escape");
            char e = s[p + 1];
            switch (e) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case 'u': {
                uint32_t v;
                if (p + 6 > n || hex4(s + p + 2, &v) < 0)
                    return fail(d, p, "invalid \\u escape");
                p += 6;
                break;
            }
            default:
                return fail(d, p + 1, "invalid escape");
            }
            continue;
        }
        /* UTF-8 sequence: validate this one code point. */
        size_t need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
        if (n - p < need + 1 || utf8_valid((const uint8_t *)s + p, need + 1) < 0)
            return fail(d, p, "invalid UTF-8 in string");
        p += need + 1;
    }
}

static int scan_number(json_doc *d, size_t *i, int *integer)
{
    const char *s = d->src;
    size_t n = d->len, p = *i;
    *integer = 1;
    if (p < n && s[p] == '-')
        p++;
    if (p >= n)
        return fail(d, p, "invalid number");
    if (s[p] == '0') {
        p++;
    } else if (s[p] >= '1' && s[p] <= '9') {
        while (p < n && s[p] >= '0' && s[p] <= '9')
            p++;
    } else {
        return fail(d, p, "invalid number");
    }
    if (p < n && s[p] == '.') {
        *integer = 0;
        p++;
        if (p >= n || s[p] < '0' || s[p] > '9')
            return fail(d, p, "invalid number: digit expected after '.'");
        while (p < n && s[p] >= '0' && s[p] <= '9')
            p++;
    }
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
        *integer = 0;
        p++;
        if (p < n && (s[p] == '+' || s[p] == '-'))
            p++;
        if (p >= n || s[p] < '0' || s[p] > '9')
            return fail(d, p, "invalid number: digit expected in exponent");
        while (p < n && s[p] >= '0' && s[p] <= '9')
            p++;
    }
    *i = p;
    return 0;
}

enum { ST_VALUE, ST_VALUE_OR_CLOSE, ST_KEY, ST_KEY_OR_CLOSE, ST_AFTER_VALUE };

/* tok >= 0: container and its children are tokenised; tok <= -2: the container's token is
 * -2 - tok but its children are not (opaque); tok == -1: nothing is tokenised. */
typedef struct frame {
    int tok;
    char kind; /* '{' or '[' */
} frame;

static void close_frame(json_doc *d, const frame *f, size_t end)
{
    int t = f->tok >= 0 ? f->tok : f->tok <= -2 ? -2 - f->tok : -1;
    if (t >= 0) {
        d->toks[t].end = (uint32_t)end;
        d->toks[t].next = d->ntok;
    }
}

int json_parse(json_doc *d, const char *src, size_t len, const json_opts *o)
{
    d->src = src;
    d->len = len;
    d->ntok = 0;
    d->err[0] = '\0';
    if (len > UINT32_MAX - 1) {
        snprintf(d->err, sizeof d->err, "document too large");
        return -1;
    }
    uint32_t tdepth = o && o->token_depth ? o->token_depth : UINT32_MAX;
    frame stack[JSON_MAX_DEPTH];
    uint32_t depth = 0;
    size_t i = 0;
    int state = ST_VALUE;
    while (i < len && is_ws(src[i]))
        i++;
    for (;;) {
        if (state == ST_AFTER_VALUE) {
            while (i < len && is_ws(src[i]))
                i++;
            if (depth == 0) {
                if (i != len)
                    return fail(d, i, "unexpected data after the JSON value");
                return 0;
            }
            frame *f = &stack[depth - 1];
            if (i >= len)
                return fail(d, i, f->kind == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
            char c = src[i];
            if (c == ',') {
                i++;
                state = f->kind == '{' ? ST_KEY : ST_VALUE;
                while (i < len && is_ws(src[i]))
                    i++;
                continue;
            }
            if ((c == '}' && f->kind == '{') || (c == ']' && f->kind == '[')) {
                i++;
                close_frame(d, f, i);
                depth--;
                continue;
            }
            return fail(d, i, f->kind == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        if (state == ST_KEY || state == ST_KEY_OR_CLOSE) {
            if (i >= len)
                return fail(d, i, "expected a string key");
            frame *f = &stack[depth - 1];
            if (state == ST_KEY_OR_CLOSE && src[i] == '}') {
                i++;
                close_frame(d, f, i);
                depth--;
                state = ST_AFTER_VALUE;
                continue;
            }
            if (src[i] != '"')
                return fail(d, i, "expected a string key");
            size_t start = i;
            int esc;
            if (scan_string(d, &i, &esc) < 0)
                return -1;
            if (f->tok >= 0) {
                int k = add_tok(d, o, JSON_STRING, start);
                if (k < 0)
                    return fail(d, start, "too many JSON tokens");
                d->toks[k].end = (uint32_t)i;
                d->toks[k].flags = esc ? JSON_TOK_ESCAPED : 0;
                d->toks[f->tok].count++;
            }
            while (i < len && is_ws(src[i]))
                i++;
            if (i >= len || src[i] != ':')
                return fail(d, i, "expected ':'");
            i++;
            while (i < len && is_ws(src[i]))
                i++;
            state = ST_VALUE;
            continue;
        }
        /* ST_VALUE / ST_VALUE_OR_CLOSE */
        if (i >= len)
            return fail(d, i, "expected a value");
        char c = src[i];
        frame *parent = depth ? &stack[depth - 1] : NULL;
        if (state == ST_VALUE_OR_CLOSE && c == ']') {
            i++;
            close_frame(d, parent, i);
            depth--;
            state = ST_AFTER_VALUE;
            continue;
        }
        int tokenise = !parent || parent->tok >= 0;
        if (tokenise && parent && parent->kind == '[')
            d->toks[parent->tok].count++;
        int t = -1;
        if (c == '{' || c == '[') {
            if (depth >= JSON_MAX_DEPTH)
                return fail(d, i, "nesting too deep");
            stack[depth].kind = c;
            stack[depth].tok = -1;
            if (tokenise) {
                t = add_tok(d, o, c == '{' ? JSON_OBJECT : JSON_ARRAY, i);
                if (t < 0)
                    return fail(d, i, "too many JSON tokens");
                if (depth + 1 > tdepth) {
                    d->toks[t].flags |= JSON_TOK_OPAQUE;
                    stack[depth].tok = -2 - t;
                } else {
                    stack[depth].tok = t;
                }
            }
            depth++;
            i++;
            while (i < len && is_ws(src[i]))
                i++;
            state = c == '{' ? ST_KEY_OR_CLOSE : ST_VALUE_OR_CLOSE;
            continue;
        }
        size_t start = i;
        uint8_t type, flags = 0;
        if (c == '"') {
            int esc;
            if (scan_string(d, &i, &esc) < 0)
                return -1;
            type = JSON_STRING;
            flags = esc ? JSON_TOK_ESCAPED : 0;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            int integer;
            if (scan_number(d, &i, &integer) < 0)
                return -1;
            type = JSON_NUMBER;
            flags = integer ? JSON_TOK_INTEGER : 0;
        } else if (c == 't' && len - i >= 4 && memcmp(src + i, "true", 4) == 0) {
            i += 4;
            type = JSON_TRUE;
        } else if (c == 'f' && len - i >= 5 && memcmp(src + i, "false", 5) == 0) {
            i += 5;
            type = JSON_FALSE;
        } else if (c == 'n' && len - i >= 4 && memcmp(src + i, "null", 4) == 0) {
            i += 4;
            type = JSON_NULL;
        } else {
            return fail(d, i, "expected a value");
        }
        if (tokenise) {
            t = add_tok(d, o, type, start);
            if (t < 0)
                return fail(d, start, "too many JSON tokens");
            d->toks[t].end = (uint32_t)i;
            d->toks[t].flags = flags;
        }
        state = ST_AFTER_VALUE;
    }
}

void json_doc_free(json_doc *d)
{
    free(d->toks);
    d->toks = NULL;
    d->ntok = d->cap = 0;
}

int json_first(const json_doc *d, int c)
{
    if (c < 0 || (d->toks[c].type != JSON_OBJECT && d->toks[c].type != JSON_ARRAY))
        return -1;
    if (d->toks[c].count == 0)
        return -1;
    return c + 1;
}

int json_get(const json_doc *d, int o, const char *key)
{
    if (json_type_of(d, o) != JSON_OBJECT)
        return -1;
    int found = -1;
    int k = o + 1;
    for (uint32_t n = 0; n < d->toks[o].count; n++) {
        if (json_str_eq(d, k, key))
            found = k + 1;
        k = json_next(d, k + 1);
    }
    return found;
}

/* Decodes one escape at s (pointing at the backslash); returns bytes consumed, writes UTF-8. */
static size_t decode_escape(const char *s, const char *end, char out[4], size_t *outlen)
{
    char e = s[1];
    switch (e) {
    case '"': out[0] = '"'; *outlen = 1; return 2;
    case '\\': out[0] = '\\'; *outlen = 1; return 2;
    case '/': out[0] = '/'; *outlen = 1; return 2;
    case 'b': out[0] = '\b'; *outlen = 1; return 2;
    case 'f': out[0] = '\f'; *outlen = 1; return 2;
    case 'n': out[0] = '\n'; *outlen = 1; return 2;
    case 'r': out[0] = '\r'; *outlen = 1; return 2;
    case 't': out[0] = '\t'; *outlen = 1; return 2;
    default: break;
    }
    uint32_t cp;
    hex4(s + 2, &cp);
    size_t used = 6;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        uint32_t lo;
        if (end - (s + 6) >= 6 && s[6] == '\\' && s[7] == 'u' && hex4(s + 8, &lo) == 0 && lo >= 0xdc00 &&
            lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            used = 12;
        } else {
            cp = 0xfffd;
        }
    } else if (cp >= 0xdc00 && cp <= 0xdfff) {
        cp = 0xfffd;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        *outlen = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        *outlen = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        *outlen = 3;
    } else {
        out[0] = (char)(0xf0 | cp >> 18);
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        *outlen = 4;
    }
    return used;
}

int json_raw_has_nul(const char *s, size_t n)
{
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!in_str) {
            in_str = ch == '"';
            continue;
        }
        if (ch == '"') {
            in_str = 0;
        } else if (ch == '\\' && i + 1 < n) {
            if (s[i + 1] == 'u' && i + 5 < n && memcmp(s + i + 2, "0000", 4) == 0)
                return 1;
            i++; /* the escaped character (for \uXXXX the hex digits are plain bytes after it) */
        }
    }
    return 0;
}

int json_str_span(const json_doc *d, int t, const char **p, size_t *len)
{
    if (json_type_of(d, t) != JSON_STRING || (d->toks[t].flags & JSON_TOK_ESCAPED))
        return -1;
    *p = d->src + d->toks[t].start + 1;
    *len = d->toks[t].end - d->toks[t].start - 2;
    return 0;
}

int json_str_decode(const json_doc *d, int t, buf *out)
{
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    const char *s = d->src + d->toks[t].start + 1;
    const char *end = d->src + d->toks[t].end - 1;
    if (!(d->toks[t].flags & JSON_TOK_ESCAPED))
        return buf_append(out, s, (size_t)(end - s));
    while (s < end) {
        const char *q = s;
        while (q < end && *q != '\\')
            q++;
        if (buf_append(out, s, (size_t)(q - s)) < 0)
            return -1;
        if (q >= end)
            break;
        char tmp[4];
        size_t tl;
        size_t used = decode_escape(q, end, tmp, &tl);
        if (buf_append(out, tmp, tl) < 0)
            return -1;
        s = q + used;
    }
    return 0;
}

size_t json_str_decoded_len(const json_doc *d, int t)
{
    if (!(d->toks[t].flags & JSON_TOK_ESCAPED))
        return d->toks[t].end - d->toks[t].start - 2;
    const char *s = d->src + d->toks[t].start + 1;
    const char *end = d->src + d->toks[t].end - 1;
    size_t n = 0;
    while (s < end) {
        if (*s != '\\') {
            n++;
            s++;
            continue;
        }
        char tmp[4];
        size_t tl;
        s += decode_escape(s, end, tmp, &tl);
        n += tl;
    }
    return n;
}

int json_str_eq(const json_doc *d, int t, const char *want)
{
    if (json_type_of(d, t) != JSON_STRING)
        return 0;
    const char *s = d->src + d->toks[t].start + 1;
    const char *end = d->src + d->toks[t].end - 1;
    size_t wl = strlen(want);
    if (!(d->toks[t].flags & JSON_TOK_ESCAPED))
        return (size_t)(end - s) == wl && memcmp(s, want, wl) == 0;
    size_t wi = 0;
    while (s < end) {
        if (*s != '\\') {
            if (wi >= wl || want[wi] != *s)
                return 0;
            wi++;
            s++;
            continue;
        }
        char tmp[4];
        size_t tl;
        s += decode_escape(s, end, tmp, &tl);
        if (wi + tl > wl || memcmp(want + wi, tmp, tl) != 0)
            return 0;
        wi += tl;
    }
    return wi == wl;
}

int json_int64(const json_doc *d, int t, int64_t *out)
{
    if (json_type_of(d, t) != JSON_NUMBER || !(d->toks[t].flags & JSON_TOK_INTEGER))
        return -1;
    const char *s = d->src + d->toks[t].start;
    size_t n = d->toks[t].end - d->toks[t].start;
    int neg = 0;
    size_t i = 0;
    if (s[0] == '-') {
        neg = 1;
        i = 1;
    }
    uint64_t v = 0;
    for (; i < n; i++) {
        uint64_t dgt = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - dgt) / 10)
            return -1;
        v = v * 10 + dgt;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return -1;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return -1;
        *out = (int64_t)v;
    }
    return 0;
}

int json_double(const json_doc *d, int t, double *out)
{
    if (json_type_of(d, t) != JSON_NUMBER)
        return -1;
    char tmp[64];
    size_t n = d->toks[t].end - d->toks[t].start;
    if (n >= sizeof tmp)
        return -1;
    memcpy(tmp, d->src + d->toks[t].start, n);
    tmp[n] = '\0';
    errno = 0;
    char *e;
    double v = strtod(tmp, &e);
    if (errno == ERANGE || *e)
        return -1;
    *out = v;
    return 0;
}

int jw_string(buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, n + 2) < 0)
        return -1;
    b->data[b->len++] = '"';
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (buf_append(b, s + run, i - run) < 0)
            return -1;
        run = i + 1;
        char esc[6];
        size_t el = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        if (buf_append(b, esc, el) < 0)
            return -1;
    }
    if (buf_append(b, s + run, n - run) < 0)
        return -1;
    return buf_putc(b, '"');
}

int jw_cstr(buf *b, const char *s)
{
    return jw_string(b, s, strlen(s));
}

int jw_key(buf *b, const char *key)
{
    buf_putc(b, '"');
    buf_puts(b, key);
    return buf_append(b, "\":", 2);
}

int jw_string_lossy(buf *b, const char *s, size_t n)
{
    if (utf8_valid((const uint8_t *)s, n) == 0)
        return jw_string(b, s, n);
    buf tmp;
    buf_init(&tmp, 0);
    for (size_t i = 0; i < n;) {
        uint8_t c = (uint8_t)s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (len && len <= n - i && utf8_valid((const uint8_t *)s + i, len) == 0) {
            buf_append(&tmp, s + i, len);
            i += len;
        } else {
            buf_append(&tmp, "\xef\xbf\xbd", 3); /* U+FFFD */
            i++;
        }
    }
    int rc = tmp.overflow ? -1 : jw_string(b, tmp.data ? tmp.data : "", tmp.len);
    buf_free(&tmp);
    return rc;
}

size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t k = max;
    /* back off over continuation bytes to the start of the character that would be cut */
    while (k > 0 && ((uint8_t)s[k] & 0xC0) == 0x80)
        k--;
    return k;
}

int json_text_dup(arena *ar, const json_doc *d, int tok, const char **out, size_t *len)
{
    const char *p;
    size_t n;
    if (json_str_span(d, tok, &p, &n) == 0) {
        /* no escapes: the bytes between the quotes, which the reader checked are UTF-8 and
         * (control characters being refused raw) hold no NUL */
        *out = arena_strndup(ar, p, n);
        *len = n;
        return 0;
    }
    buf b;
    buf_init(&b, 0);
    json_str_decode(d, tok, &b);
    int nul = b.len && memchr(b.data, '\0', b.len) != NULL;
    *out = arena_strndup(ar, b.data ? b.data : "", b.len);
    *len = b.len;
    buf_free(&b);
    return nul ? JSON_STR_NUL : 0;
}

int json_int_field(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    int64_t v;
    if (json_int64(d, t, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 1;
}

int json_unknown_key(const json_doc *d, int obj, const char *const *known)
{
    uint32_t cnt = d->toks[obj].count;
    int k = json_first(d, obj);
    for (uint32_t i = 0; i < cnt; i++, k = json_next(d, k + 1)) {
        const char *const *p = known;
        while (*p && !json_str_eq(d, k, *p))
            p++;
        if (!*p)
            return k;
    }
    return -1;
}

int json_str_field(arena *ar, const json_doc *d, int obj, const char *key, const char **out, size_t *len)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_STRING)
        return -1;
    if (json_text_dup(ar, d, t, out, len) == JSON_STR_NUL) {
        *out = NULL;
        *len = 0;
        return JSON_STR_NUL;
    }
    return 1;
}

const char *json_str_field_msg(int rc, const char *where, const char *otherwise, char *out, size_t n)
{
    if (rc == JSON_STR_NUL)
        snprintf(out, n, "%s must not hold a NUL character (\\u0000)", where);
    else
        snprintf(out, n, "%s", otherwise);
    return out;
}
