/* util.h — small helpers every module may use: allocation that never returns NULL,
 * array length, branch hints, and big-endian load/store. No dependencies beyond libc. */
#ifndef QUEEN_CORE_UTIL_H
#define QUEEN_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#define UNUSED(x) (void)(x)
#define STRLIT(s) (s), (sizeof(s) - 1)

/* Allocation failure is fatal: the broker cannot answer anything sensible without memory,
 * and the alternative is a NULL check on every small allocation. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

static inline void be_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void be_put64(uint8_t *p, uint64_t v)
{
    be_put32(p, (uint32_t)(v >> 32));
    be_put32(p + 4, (uint32_t)v);
}
static inline uint32_t be_get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t be_get64(const uint8_t *p)
{
    return ((uint64_t)be_get32(p) << 32) | be_get32(p + 4);
}

/* Case-insensitive ASCII comparison of a counted string with a C string. */
int ascii_ieq(const char *a, size_t alen, const char *b);

#endif
