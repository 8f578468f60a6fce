/* idring.c — FIFO of distinct ids with a hash set beside it. */
#include "idring.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static uint32_t slot_of(uint64_t id, uint32_t mask)
{
    uint64_t h = id * 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(h >> 32) & mask;
}

void idring_init(idring *r, uint32_t cap)
{
    r->cap = cap;
    r->q = xcalloc(cap, sizeof *r->q);
    r->set = xcalloc((size_t)cap * 2, sizeof *r->set);
    r->head = r->count = 0;
}

void idring_free(idring *r)
{
    free(r->q);
    free(r->set);
    memset(r, 0, sizeof *r);
}

static int set_has(const idring *r, uint64_t id)
{
    uint32_t mask = r->cap * 2 - 1, i = slot_of(id, mask);
    while (r->set[i]) {
        if (r->set[i] == id + 1)
            return 1;
        i = (i + 1) & mask;
    }
    return 0;
}

static void set_add(idring *r, uint64_t id)
{
    uint32_t mask = r->cap * 2 - 1, i = slot_of(id, mask);
    while (r->set[i])
        i = (i + 1) & mask;
    r->set[i] = id + 1;
}

/* Linear-probing delete: move later entries of the cluster back so lookups still find them. */
static void set_del(idring *r, uint64_t id)
{
    uint32_t mask = r->cap * 2 - 1, i = slot_of(id, mask);
    while (r->set[i] && r->set[i] != id + 1)
        i = (i + 1) & mask;
    if (!r->set[i])
        return;
    r->set[i] = 0;
    uint32_t j = (i + 1) & mask;
    while (r->set[j]) {
        uint64_t v = r->set[j] - 1;
        r->set[j] = 0;
        set_add(r, v);
        j = (j + 1) & mask;
    }
}

int idring_push(idring *r, uint64_t id)
{
    if (r->count == r->cap || set_has(r, id))
        return 0;
    r->q[(r->head + r->count) & (r->cap - 1)] = id;
    r->count++;
    set_add(r, id);
    return 1;
}

int idring_pop(idring *r, uint64_t *id)
{
    if (!r->count)
        return 0;
    *id = r->q[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    r->count--;
    set_del(r, *id);
    return 1;
}

uint32_t idring_count(const idring *r)
{
    return r->count;
}
