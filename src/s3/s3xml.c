/* s3xml.c — the bounded, one-pass XML reader behind s3xml.h. One walker checks the whole
 * document and, on the way, copies the text of the element the caller's path names and the
 * root's name; the three public calls are views of that walk. Nothing is allocated but the
 * caller's output buffer, and every loop advances through the input, so a hostile body costs
 * at most one pass. */
#include "s3xml.h"

#include <stdint.h>
#include <string.h>

typedef struct xwalk {
    const char *p, *end;
    /* the path asked for */
    const char *comp[S3XML_MAX_PATH];
    size_t comp_len[S3XML_MAX_PATH];
    int ncomp;
    buf *out;  /* the element's text, or NULL */
    buf *root; /* the root's local name, or NULL */
    int found;
    int collecting; /* inside the element at path, copying its direct text */
    int matched;    /* how many leading open elements match the path */
    /* open elements (names point into the input) */
    const char *open[S3XML_MAX_DEPTH];
    size_t open_len[S3XML_MAX_DEPTH];
    int depth;
    int seen_root;
} xwalk;

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_name_start(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || c >= 0x80;
}

static int is_name_char(unsigned char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static int starts(const xwalk *w, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(w->end - w->p) >= n && memcmp(w->p, lit, n) == 0;
}

/* Moves past the first occurrence of lit; -1 when it never comes. */
static int skip_past(xwalk *w, const char *lit)
{
    size_t n = strlen(lit);
    while ((size_t)(w->end - w->p) >= n) {
        if (memcmp(w->p, lit, n) == 0) {
            w->p += n;
            return 0;
        }
        w->p++;
    }
    return -1;
}

static void local_name(const char *name, size_t len, const char **ln, size_t *ll)
{
    const char *colon = memchr(name, ':', len);
    if (colon) {
        *ln = colon + 1;
        *ll = len - (size_t)(colon + 1 - name);
    } else {
        *ln = name;
        *ll = len;
    }
}

static int read_name(xwalk *w, const char **name, size_t *len)
{
    if (w->p >= w->end || !is_name_start((unsigned char)*w->p))
        return -1;
    const char *s = w->p;
    while (w->p < w->end && is_name_char((unsigned char)*w->p))
        w->p++;
    *name = s;
    *len = (size_t)(w->p - s);
    return 0;
}

static void skip_ws(xwalk *w)
{
    while (w->p < w->end && is_ws(*w->p))
        w->p++;
}

static int put_utf8(buf *b, uint32_t cp)
{
    char tmp[4];
    size_t n;
    if (cp < 0x80) {
        tmp[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        tmp[0] = (char)(0xC0 | (cp >> 6));
        tmp[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (char)(0xE0 | (cp >> 12));
        tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        tmp[0] = (char)(0xF0 | (cp >> 18));
        tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return buf_append(b, tmp, n);
}

/* At '&': decodes one entity into out (when not NULL) and moves past its ';'. */
static int entity(xwalk *w, buf *out)
{
    const char *semi = NULL;
    /* the longest entity we accept is &#x10FFFF; (10 bytes) */
    for (const char *q = w->p + 1; q < w->end && q - w->p <= 10; q++) {
        if (*q == ';') {
            semi = q;
            break;
        }
    }
    if (!semi)
        return -1;
    const char *s = w->p + 1;
    size_t n = (size_t)(semi - s);
    uint32_t cp;
    if (n == 2 && memcmp(s, "lt", 2) == 0)
        cp = '<';
    else if (n == 2 && memcmp(s, "gt", 2) == 0)
        cp = '>';
    else if (n == 3 && memcmp(s, "amp", 3) == 0)
        cp = '&';
    else if (n == 4 && memcmp(s, "quot", 4) == 0)
        cp = '"';
    else if (n == 4 && memcmp(s, "apos", 4) == 0)
        cp = '\'';
    else if (n >= 2 && s[0] == '#') {
        int hex = s[1] == 'x';
        size_t i = hex ? 2 : 1;
        if (i >= n)
            return -1;
        cp = 0;
        for (; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            uint32_t d;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (hex && c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (hex && c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                return -1;
            cp = cp * (hex ? 16 : 10) + d;
            if (cp > 0x10FFFF)
                return -1;
        }
        if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
            return -1;
    } else
        return -1;
    w->p = semi + 1;
    return out ? put_utf8(out, cp) : 0;
}

/* Character data up to the next '<'. */
static int text(xwalk *w)
{
    buf *out = w->collecting && w->depth == w->ncomp ? w->out : NULL;
    while (w->p < w->end && *w->p != '<') {
        const char *s = w->p;
        while (w->p < w->end && *w->p != '<' && *w->p != '&')
            w->p++;
        if (w->depth == 0) {
            /* outside the root only whitespace may appear */
            for (const char *q = s; q < w->p; q++)
                if (!is_ws(*q))
                    return -1;
        } else if (out && buf_append(out, s, (size_t)(w->p - s)) < 0)
            return -1;
        if (w->p < w->end && *w->p == '&') {
            if (w->depth == 0 || entity(w, out) < 0)
                return -1;
        }
    }
    return 0;
}

static int start_tag(xwalk *w)
{
    w->p++; /* '<' */
    const char *name;
    size_t len;
    if (read_name(w, &name, &len) < 0)
        return -1;
    int self_close = 0;
    for (;;) {
        int had_ws = w->p < w->end && is_ws(*w->p);
        skip_ws(w);
        if (w->p >= w->end)
            return -1;
        if (*w->p == '>') {
            w->p++;
            break;
        }
        if (*w->p == '/') {
            if (w->end - w->p < 2 || w->p[1] != '>')
                return -1;
            w->p += 2;
            self_close = 1;
            break;
        }
        /* an attribute: name = "value" (skipped, but its shape is checked) */
        const char *an;
        size_t al;
        if (!had_ws || read_name(w, &an, &al) < 0)
            return -1;
        skip_ws(w);
        if (w->p >= w->end || *w->p != '=')
            return -1;
        w->p++;
        skip_ws(w);
        if (w->p >= w->end || (*w->p != '"' && *w->p != '\''))
            return -1;
        char q = *w->p++;
        while (w->p < w->end && *w->p != q) {
            if (*w->p == '<')
                return -1;
            w->p++;
        }
        if (w->p >= w->end)
            return -1;
        w->p++;
    }
    if (w->depth == 0) {
        if (w->seen_root)
            return -1; /* a second root */
        w->seen_root = 1;
        if (w->root) {
            const char *ln;
            size_t ll;
            local_name(name, len, &ln, &ll);
            if (buf_append(w->root, ln, ll) < 0)
                return -1;
        }
    }
    if (w->depth >= S3XML_MAX_DEPTH)
        return -1;
    const char *ln;
    size_t ll;
    local_name(name, len, &ln, &ll);
    int d = w->depth;
    if (w->matched == d && d < w->ncomp && ll == w->comp_len[d] && memcmp(ln, w->comp[d], ll) == 0)
        w->matched = d + 1;
    int at_target = !w->found && w->matched == w->ncomp && d + 1 == w->ncomp && w->ncomp > 0;
    if (self_close) {
        if (at_target)
            w->found = 1;
        if (w->matched > d)
            w->matched = d;
        return 0;
    }
    w->open[d] = name;
    w->open_len[d] = len;
    w->depth = d + 1;
    if (at_target)
        w->collecting = 1;
    return 0;
}

static int end_tag(xwalk *w)
{
    w->p += 2; /* "</" */
    const char *name;
    size_t len;
    if (read_name(w, &name, &len) < 0)
        return -1;
    skip_ws(w);
    if (w->p >= w->end || *w->p != '>')
        return -1;
    w->p++;
    if (w->depth == 0)
        return -1;
    int d = w->depth - 1;
    if (w->open_len[d] != len || memcmp(w->open[d], name, len) != 0)
        return -1;
    w->depth = d;
    if (w->collecting && d + 1 == w->ncomp) {
        w->collecting = 0;
        w->found = 1;
    }
    if (w->matched > d)
        w->matched = d;
    return 0;
}

static int walk(xwalk *w)
{
    /* a UTF-8 byte order mark */
    if (w->end - w->p >= 3 && memcmp(w->p, "\xEF\xBB\xBF", 3) == 0)
        w->p += 3;
    while (w->p < w->end) {
        if (*w->p != '<') {
            if (text(w) < 0)
                return -1;
            continue;
        }
        if (starts(w, "<?")) {
            w->p += 2;
            if (skip_past(w, "?>") < 0)
                return -1;
        } else if (starts(w, "<!--")) {
            w->p += 4;
            if (skip_past(w, "-->") < 0)
                return -1;
        } else if (starts(w, "<![CDATA[")) {
            if (w->depth == 0)
                return -1;
            w->p += 9;
            const char *s = w->p;
            if (skip_past(w, "]]>") < 0)
                return -1;
            if (w->collecting && w->depth == w->ncomp && buf_append(w->out, s, (size_t)(w->p - 3 - s)) < 0)
                return -1;
        } else if (starts(w, "<!")) {
            return -1; /* DOCTYPE and friends */
        } else if (starts(w, "</")) {
            if (end_tag(w) < 0)
                return -1;
        } else if (start_tag(w) < 0)
            return -1;
    }
    return w->depth == 0 ? 0 : -1;
}

static int walk_init(xwalk *w, const char *xml, size_t len, const char *path, buf *out, buf *root)
{
    memset(w, 0, sizeof *w);
    w->p = xml ? xml : "";
    w->end = w->p + (xml ? len : 0);
    w->out = out;
    w->root = root;
    if (path) {
        const char *s = path;
        while (*s) {
            const char *e = strchr(s, '/');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            if (n == 0 || w->ncomp >= S3XML_MAX_PATH)
                return -1;
            w->comp[w->ncomp] = s;
            w->comp_len[w->ncomp] = n;
            w->ncomp++;
            s += n;
            if (*s == '/')
                s++;
        }
    }
    return 0;
}

int s3xml_text(const char *xml, size_t len, const char *path, buf *out)
{
    xwalk w;
    if (!path || walk_init(&w, xml, len, path, out, NULL) < 0 || w.ncomp == 0)
        return -1;
    if (walk(&w) < 0)
        return -1;
    return w.found ? 1 : 0;
}

int s3xml_root(const char *xml, size_t len, buf *out)
{
    xwalk w;
    walk_init(&w, xml, len, NULL, NULL, out);
    if (walk(&w) < 0)
        return -1;
    return w.seen_root ? 1 : 0;
}

static void copy_trunc(char *dst, size_t cap, const buf *src)
{
    if (!dst || cap == 0)
        return;
    size_t n = src->len < cap - 1 ? src->len : cap - 1;
    if (n)
        memcpy(dst, src->data, n);
    dst[n] = '\0';
}

/* An error's Code and Message are short; anything longer is cut, not refused. */
#define S3XML_FIELD_MAX 4096

int s3xml_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg, size_t msg_cap)
{
    if (code && code_cap)
        code[0] = '\0';
    if (msg && msg_cap)
        msg[0] = '\0';
    buf root, c, m;
    buf_init(&root, 256);
    buf_init(&c, S3XML_FIELD_MAX);
    buf_init(&m, S3XML_FIELD_MAX);
    int rc = s3xml_root(xml, len, &root);
    if (rc <= 0)
        goto out;
    if (root.len != 5 || memcmp(root.data, "Error", 5) != 0) {
        rc = 0;
        goto out;
    }
    /* a Code or Message past the field ceiling is malformed for s3xml_text; keep what fits */
    if (s3xml_text(xml, len, "Error/Code", &c) < 0 && !c.overflow) {
        rc = -1;
        goto out;
    }
    if (s3xml_text(xml, len, "Error/Message", &m) < 0 && !m.overflow) {
        rc = -1;
        goto out;
    }
    copy_trunc(code, code_cap, &c);
    copy_trunc(msg, msg_cap, &m);
    rc = 1;
out:
    buf_free(&root);
    buf_free(&c);
    buf_free(&m);
    return rc;
}
