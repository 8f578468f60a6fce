/* strmap.h — open-addressing hash map from byte-string keys to uint32 values.
 * Keys are borrowed: the caller keeps them alive for the map's lifetime (typically spans of a
 * request body, or strings of a batch). */
#ifndef QUEEN_CORE_STRMAP_H
#define QUEEN_CORE_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct strmap_slot {
    const void *key;
    uint32_t len;
    uint32_t hash;
    uint32_t value;
} strmap_slot;

typedef struct strmap {
    strmap_slot *slots; /* owned */
    uint32_t cap;       /* power of two */
    uint32_t count;
} strmap;

uint32_t hash_bytes(const void *p, size_t n, uint32_t seed);
void strmap_init(strmap *m);
void strmap_free(strmap *m);
void strmap_clear(strmap *m);
/* Returns a pointer to the value for key; inserts it with `init` when absent (*inserted = 1). */
uint32_t *strmap_put(strmap *m, const void *key, size_t len, uint32_t init, int *inserted);
uint32_t *strmap_get(const strmap *m, const void *key, size_t len);

#endif
