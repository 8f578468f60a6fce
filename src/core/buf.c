/* buf.c — growable byte buffer with a hard ceiling. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void buf_init(buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max ? max : SIZE_MAX;
    b->overflow = 0;
}

void buf_free(buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->overflow = 0;
}

void buf_reset(buf *b)
{
    b->len = 0;
    b->overflow = 0;
}

int buf_reserve(buf *b, size_t extra)
{
    if (b->overflow)
        return -1;
    if (extra > b->max - b->len) {
        b->overflow = 1;
        return -1;
    }
    size_t need = b->len + extra + 1; /* +1 keeps room for buf_cstr's NUL */
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap < SIZE_MAX / 2 ? cap * 2 : need;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
    return 0;
}

int buf_append(buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int buf_putc(buf *b, char c)
{
    if (buf_reserve(b, 1) < 0)
        return -1;
    b->data[b->len++] = c;
    return 0;
}

int buf_puts(buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof tmp)
        return buf_append(b, tmp, (size_t)n);
    if (buf_reserve(b, (size_t)n) < 0)
        return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

int buf_put_u64(buf *b, uint64_t v)
{
    char tmp[24];
    char *e = tmp + sizeof tmp, *p = e;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return buf_append(b, p, (size_t)(e - p));
}

int buf_put_i64(buf *b, int64_t v)
{
    if (v < 0) {
        if (buf_putc(b, '-') < 0)
            return -1;
        return buf_put_u64(b, (uint64_t)0 - (uint64_t)v);
    }
    return buf_put_u64(b, (uint64_t)v);
}

const char *buf_cstr(buf *b)
{
    /* cap > len always holds once data exists: buf_reserve keeps one spare byte. */
    if (!b->data)
        return "";
    b->data[b->len] = '\0';
    return b->data;
}

char *buf_steal(buf *b, size_t *len)
{
    buf_cstr(b);
    char *d = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    b->overflow = 0;
    return d;
}

size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

int buf_put_varint(buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    return buf_append(b, tmp, n);
}

int varint_get(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t c = *p++;
        if (shift == 63 && c > 1)
            return -1;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}
