/* buf.h — growable byte buffer with a hard ceiling.
 *
 * Every buffer a client can grow has a maximum; appending past it sets `overflow` and
 * leaves the contents as they were, so the caller checks once at the end instead of after
 * every append. The buffer owns `data` (heap); buf_free releases it. */
#ifndef QUEEN_CORE_BUF_H
#define QUEEN_CORE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct buf {
    char *data;   /* owned; NUL-terminated when len < cap (see buf_cstr) */
    size_t len;
    size_t cap;
    size_t max;   /* hard ceiling on len; 0 means SIZE_MAX */
    int overflow; /* set once an append would have passed max */
} buf;

void buf_init(buf *b, size_t max);
void buf_free(buf *b);
void buf_reset(buf *b);                    /* len = 0, overflow cleared, memory kept */
int buf_reserve(buf *b, size_t extra);     /* 0 ok, -1 would pass max */
int buf_append(buf *b, const void *p, size_t n);
int buf_putc(buf *b, char c);
int buf_puts(buf *b, const char *s);
int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap);
int buf_put_u64(buf *b, uint64_t v);       /* decimal */
int buf_put_i64(buf *b, int64_t v);
const char *buf_cstr(buf *b);              /* NUL-terminated view (appends a hidden NUL) */
char *buf_steal(buf *b, size_t *len);      /* hands data to the caller; b is reset empty */

/* Varints (LEB128, unsigned) used by the record encoding. */
int buf_put_varint(buf *b, uint64_t v);
/* Reads a varint from [*p, end); returns 0 and advances *p, or -1 on truncation/overlong. */
int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out);
size_t varint_len(uint64_t v);

#endif
