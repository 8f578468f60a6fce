/* idring.h — a bounded FIFO of distinct 64-bit ids (pop's partition hints). Adding an id that
 * is already queued does nothing; adding to a full ring drops the id (the full scan that pops
 * fall back to finds it again). */
#ifndef QUEEN_CORE_IDRING_H
#define QUEEN_CORE_IDRING_H

#include <stdint.h>

typedef struct idring {
    uint64_t *q;     /* circular queue, capacity cap */
    uint64_t *set;   /* open addressing, 0 = empty (ids are stored + 1), capacity 2 * cap */
    uint32_t cap, head, count;
} idring;

void idring_init(idring *r, uint32_t cap); /* cap a power of two */
void idring_free(idring *r);
int idring_push(idring *r, uint64_t id);   /* 1 added, 0 present or full */
int idring_pop(idring *r, uint64_t *id);   /* 1 got one, 0 empty */
uint32_t idring_count(const idring *r);

#endif
