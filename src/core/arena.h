/* arena.h — bump allocator in chunks: many small allocations with one lifetime (a request, a
 * batch), freed together. Pointers stay valid until arena_free. */
#ifndef QUEEN_CORE_ARENA_H
#define QUEEN_CORE_ARENA_H

#include <stddef.h>

typedef struct arena_chunk arena_chunk;
typedef struct arena {
    arena_chunk *head;
    size_t used;  /* in head */
    size_t total; /* bytes handed out, for accounting */
} arena;

void arena_init(arena *a);
void *arena_alloc(arena *a, size_t n); /* 16-byte aligned */
char *arena_strndup(arena *a, const char *s, size_t n);
void arena_free(arena *a);

#endif
