/* sealq.c — the cache of queues this node seals for (see sealq.h). */
#include "sealq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "core/util.h"

typedef struct mark {
    char *key; /* tenant (16 bytes) then the queue name; owned, the map borrows it */
    uint32_t len;
    uint64_t until_ms; /* 0 = cleared */
} mark;

struct sealq {
    strmap map; /* key → index in marks */
    mark *marks;
    uint32_t n, cap;
};

sealq *sealq_new(void)
{
    sealq *q = xcalloc(1, sizeof *q);
    strmap_init(&q->map);
    return q;
}

void sealq_free(sealq *q)
{
    if (!q)
        return;
    for (uint32_t i = 0; i < q->n; i++)
        free(q->marks[i].key);
    free(q->marks);
    strmap_free(&q->map);
    free(q);
}

static size_t make_key(char *k, const uint8_t tenant[16], const char *queue, size_t len)
{
    memcpy(k, tenant, 16);
    memcpy(k + 16, queue, len);
    return 16 + len;
}

static mark *find(const sealq *q, const uint8_t tenant[16], const char *queue, size_t len)
{
    char k[16 + 256];
    if (len > 255)
        return NULL;
    uint32_t *i = strmap_get(&q->map, k, make_key(k, tenant, queue, len));
    return i ? &q->marks[*i] : NULL;
}

int sealq_wants(sealq *q, const uint8_t tenant[16], const char *queue, size_t len, uint64_t now_ms)
{
    const mark *m = find(q, tenant, queue, len);
    return m && m->until_ms > now_ms;
}

/* Drops cleared and expired marks; all of them when that frees too little. */
static void compact(sealq *q, uint64_t now_ms)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < q->n; i++) {
        if (q->marks[i].until_ms > now_ms)
            q->marks[keep++] = q->marks[i];
        else
            free(q->marks[i].key);
    }
    if (keep > SEALQ_MAX / 2) {
        for (uint32_t i = 0; i < keep; i++)
            free(q->marks[i].key);
        keep = 0;
    }
    q->n = keep;
    strmap_clear(&q->map);
    int ins;
    for (uint32_t i = 0; i < q->n; i++)
        strmap_put(&q->map, q->marks[i].key, q->marks[i].len, i, &ins);
}

void sealq_set(sealq *q, const uint8_t tenant[16], const char *queue, size_t len, int sealed, uint64_t now_ms)
{
    if (len > 255)
        return; /* not a queue name (names are at most 255 bytes) */
    mark *m = find(q, tenant, queue, len);
    if (m) {
        m->until_ms = sealed ? now_ms + SEALQ_TTL_MS : 0;
        return;
    }
    if (!sealed)
        return;
    if (q->n >= SEALQ_MAX)
        compact(q, now_ms);
    if (q->n == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 16;
        q->marks = xrealloc(q->marks, q->cap * sizeof *q->marks);
    }
    mark *nm = &q->marks[q->n];
    nm->key = xmalloc(16 + len);
    nm->len = (uint32_t)make_key(nm->key, tenant, queue, len);
    nm->until_ms = now_ms + SEALQ_TTL_MS;
    int ins;
    strmap_put(&q->map, nm->key, nm->len, q->n, &ins);
    q->n++;
}

uint32_t sealq_count(const sealq *q, uint64_t now_ms)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < q->n; i++)
        c += q->marks[i].until_ms > now_ms;
    return c;
}

uint32_t sealq_refused_group(const char *errmsg)
{
    unsigned g = 0;
    const char *p = errmsg ? strstr(errmsg, "push_v1: group ") : NULL;
    if (!p || sscanf(p, "push_v1: group %u", &g) != 1)
        return 0;
    return g;
}
