/* strmap.c — open-addressing (linear probing) hash map. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

uint32_t hash_bytes(const void *p, size_t n, uint32_t seed)
{
    /* FNV-1a, then a finaliser to spread the low bits used for probing */
    const uint8_t *s = p;
    uint32_t h = 2166136261u ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 16777619u;
    }
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    return h;
}

void strmap_init(strmap *m)
{
    memset(m, 0, sizeof *m);
}

void strmap_free(strmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

void strmap_clear(strmap *m)
{
    if (m->slots)
        memset(m->slots, 0, (size_t)m->cap * sizeof *m->slots);
    m->count = 0;
}

static void grow(strmap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 16;
    strmap_slot *ns = xcalloc(ncap, sizeof *ns);
    for (uint32_t i = 0; i < m->cap; i++) {
        strmap_slot *s = &m->slots[i];
        if (!s->key)
            continue;
        uint32_t j = s->hash & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

uint32_t *strmap_get(const strmap *m, const void *key, size_t len)
{
    if (!m->cap)
        return NULL;
    uint32_t h = hash_bytes(key, len, 0);
    uint32_t j = h & (m->cap - 1);
    while (m->slots[j].key) {
        strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->len == len && (len == 0 || memcmp(s->key, key, len) == 0))
            return &s->value;
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

uint32_t *strmap_put(strmap *m, const void *key, size_t len, uint32_t init, int *inserted)
{
    if ((m->count + 1) * 4 > m->cap * 3)
        grow(m);
    uint32_t h = hash_bytes(key, len, 0);
    uint32_t j = h & (m->cap - 1);
    while (m->slots[j].key) {
        strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->len == len && (len == 0 || memcmp(s->key, key, len) == 0)) {
            if (inserted)
                *inserted = 0;
            return &s->value;
        }
        j = (j + 1) & (m->cap - 1);
    }
    /* a zero-length key needs a non-NULL pointer to mark the slot used */
    m->slots[j].key = key ? key : "";
    m->slots[j].len = (uint32_t)len;
    m->slots[j].hash = h;
    m->slots[j].value = init;
    m->count++;
    if (inserted)
        *inserted = 1;
    return &m->slots[j].value;
}
