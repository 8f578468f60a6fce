/* arena.c — chunked bump allocator. */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define ARENA_CHUNK 16384

struct arena_chunk {
    arena_chunk *next;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

void arena_init(arena *a)
{
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}

void *arena_alloc(arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->used + n > a->head->cap) {
        size_t cap = n > ARENA_CHUNK / 2 ? n : ARENA_CHUNK;
        arena_chunk *c = xmalloc(sizeof *c + cap);
        c->cap = cap;
        if (a->head && n > ARENA_CHUNK / 2) {
            /* a big block goes behind the current chunk so its free space stays usable */
            c->next = a->head->next;
            a->head->next = c;
            a->total += n;
            return c->data;
        }
        c->next = a->head;
        a->head = c;
        a->used = 0;
    }
    void *p = a->head->data + a->used;
    a->used += n;
    a->total += n;
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void arena_free(arena *a)
{
    arena_chunk *c = a->head;
    while (c) {
        arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used = a->total = 0;
}
