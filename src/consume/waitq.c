/* waitq.c — parked long-poll pops. One list per (tenant, queue); one timer for the whole
 * queue that fires at the earliest deadline or recheck time among the parked waiters. */
#include <stdlib.h>
#include <string.h>

#include "consume.h"
#include "core/arena.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"

typedef struct slot {
    waiter *head;
} slot;

struct waitq {
    uv_loop_t *loop;
    uv_timer_t timer;
    strmap map;   /* key → slot index */
    arena keys;   /* map keys live as long as the queue */
    slot *slots;
    uint32_t nslots, cap;
    int count;
    uint64_t armed_at; /* when the timer is set to fire (0 = idle) */
};

static void arm(waitq *q);

static uint32_t slot_for(waitq *q, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    char tmp[16 + 256];
    size_t n = 16 + (qlen < 256 ? qlen : 256);
    memcpy(tmp, tenant, 16);
    memcpy(tmp + 16, queue, n - 16);
    uint32_t *v = strmap_get(&q->map, tmp, n);
    if (v)
        return *v;
    char *k = arena_alloc(&q->keys, n);
    memcpy(k, tmp, n);
    if (q->nslots == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 16;
        q->slots = xrealloc(q->slots, q->cap * sizeof *q->slots);
    }
    q->slots[q->nslots].head = NULL;
    strmap_put(&q->map, k, n, q->nslots, NULL);
    return q->nslots++;
}

static int lookup(const waitq *q, const uint8_t tenant[16], const char *queue, size_t qlen, uint32_t *out)
{
    char tmp[16 + 256];
    size_t n = 16 + (qlen < 256 ? qlen : 256);
    memcpy(tmp, tenant, 16);
    memcpy(tmp + 16, queue, n - 16);
    uint32_t *v = strmap_get(&q->map, tmp, n);
    if (!v)
        return -1;
    *out = *v;
    return 0;
}

static void unlink_w(waitq *q, waiter *w)
{
    if (!w->parked)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        q->slots[w->slot].head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->parked = 0;
    q->count--;
}

static uint64_t due_of(const waiter *w)
{
    return w->recheck_ms && w->recheck_ms < w->deadline_ms ? w->recheck_ms : w->deadline_ms;
}

static void on_timer(uv_timer_t *t)
{
    waitq *q = t->data;
    q->armed_at = 0;
    uint64_t now = mono_ms();
    /* collect the due waiters first: a wake callback may park again */
    waiter *due = NULL;
    for (uint32_t s = 0; s < q->nslots; s++) {
        waiter *w = q->slots[s].head;
        while (w) {
            waiter *next = w->next;
            if (due_of(w) <= now) {
                unlink_w(q, w);
                w->next = due;
                due = w;
            }
            w = next;
        }
    }
    while (due) {
        waiter *w = due;
        due = w->next;
        w->next = NULL;
        w->wake(w, w->deadline_ms <= now);
    }
    arm(q);
}

static void arm(waitq *q)
{
    if (q->count == 0) {
        uv_timer_stop(&q->timer);
        q->armed_at = 0;
        return;
    }
    uint64_t earliest = UINT64_MAX;
    for (uint32_t s = 0; s < q->nslots; s++)
        for (waiter *w = q->slots[s].head; w; w = w->next)
            earliest = MIN(earliest, due_of(w));
    if (q->armed_at && q->armed_at <= earliest)
        return;
    uint64_t now = mono_ms();
    q->armed_at = earliest;
    uv_timer_start(&q->timer, on_timer, earliest > now ? earliest - now : 0, 0);
}

waitq *waitq_new(uv_loop_t *loop)
{
    waitq *q = xcalloc(1, sizeof *q);
    q->loop = loop;
    strmap_init(&q->map);
    arena_init(&q->keys);
    uv_timer_init(loop, &q->timer);
    q->timer.data = q;
    return q;
}

void waitq_park(waitq *q, waiter *w, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    uint32_t s = slot_for(q, tenant, queue, qlen);
    w->slot = s;
    w->prev = NULL;
    w->next = q->slots[s].head;
    if (w->next)
        w->next->prev = w;
    q->slots[s].head = w;
    w->parked = 1;
    q->count++;
    arm(q);
}

void waitq_unpark(waitq *q, waiter *w)
{
    unlink_w(q, w);
    arm(q);
}

static void wake_slot(waitq *q, uint32_t s)
{
    waiter *list = q->slots[s].head;
    q->slots[s].head = NULL;
    /* detach the whole list first: a woken waiter may park again on this slot */
    for (waiter *w = list; w; w = w->next) {
        w->parked = 0;
        q->count--;
    }
    while (list) {
        waiter *w = list;
        list = w->next;
        w->prev = w->next = NULL;
        w->wake(w, 0);
    }
}

void waitq_wake(waitq *q, const uint8_t tenant[16], const char *queue, size_t qlen)
{
    uint32_t s;
    int woke = 0;
    if (lookup(q, tenant, queue, qlen, &s) == 0 && q->slots[s].head) {
        wake_slot(q, s);
        woke = 1;
    }
    /* namespace pops wait on every queue of their tenant */
    if (lookup(q, tenant, WAITQ_ANY_QUEUE, strlen(WAITQ_ANY_QUEUE), &s) == 0 && q->slots[s].head) {
        wake_slot(q, s);
        woke = 1;
    }
    if (woke)
        arm(q);
}

void waitq_wake_all(waitq *q)
{
    for (uint32_t s = 0; s < q->nslots; s++)
        if (q->slots[s].head)
            wake_slot(q, s);
    arm(q);
}

int waitq_count(const waitq *q)
{
    return q->count;
}

void waitq_close(waitq *q)
{
    for (uint32_t s = 0; s < q->nslots; s++) {
        waiter *list = q->slots[s].head;
        q->slots[s].head = NULL;
        while (list) {
            waiter *w = list;
            list = w->next;
            w->prev = w->next = NULL;
            w->parked = 0;
            q->count--;
            w->wake(w, 1);
        }
    }
    uv_timer_stop(&q->timer);
}
