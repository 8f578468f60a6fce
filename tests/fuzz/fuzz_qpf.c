/* fuzz_qpf — the QPF1 writer (consume/qpf.h) driven by arbitrary input, read back by the tests'
 * own decoder (tests/qpf_decode.h). The input is a script: names, claims, and messages with
 * offset gaps, created_at changes, trace ids, producers and payload bytes. Checks: every answer
 * the writer finishes decodes whole, with exactly the messages accepted, in order, each with its
 * claim's partition, its offset, created_at, flags, id, trace, transactionId, producer and
 * payload; a message the writer refused changes nothing. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../qpf_decode.h"
#include "consume/qpf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_qpf: check failed at line %d: %s\n", __LINE__, #c);                         \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

typedef struct src {
    const uint8_t *p, *end;
} src;

static unsigned byte(src *s)
{
    return s->p < s->end ? *s->p++ : 0;
}

/* up to max bytes of the input as a span */
static const char *span(src *s, size_t max, size_t *n)
{
    size_t want = byte(s) % (max + 1), have = (size_t)(s->end - s->p);
    *n = want < have ? want : have;
    const char *r = (const char *)s->p;
    s->p += *n;
    return r;
}

static qd_answer A;
static qd_msg want[4096];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    src s = {data, data + size};
    size_t ql, ll, gl;
    const char *q = span(&s, 20, &ql), *l = span(&s, 36, &ll), *g = span(&s, 20, &gl);
    qpf_writer w;
    CHECK(qpf_begin(&w, (byte(&s) & 1) ? 2048 : 0, q, ql, l, ll, g, gl) == 0);
    uint32_t n = 0;
    int claim_open = 0, refused = 0;
    uint64_t pid = 0, next = 0, first = 0, last = 0;
    int64_t ts = 0;
    const uint8_t *pname = NULL;
    size_t pnl = 0;
    while (s.p < s.end && n < 4000) {
        unsigned op = byte(&s);
        if (op % 8 == 0 || !claim_open) {
            size_t nl;
            const char *name = span(&s, 12, &nl);
            pid = (uint64_t)byte(&s) << 40 | byte(&s);
            first = next + byte(&s) % 4;
            last = first + byte(&s) % 16;
            if (qpf_claim(&w, pid, name, nl, first, last, byte(&s)) < 0) {
                refused = 1;
                break;
            }
            claim_open = 1;
            pname = (const uint8_t *)name;
            pnl = nl;
            next = first;
            continue;
        }
        uint64_t off = next + (op & 0x30 ? 0 : byte(&s) % 3);
        if (op & 0x40)
            ts += byte(&s);
        uint8_t id[16], tr[16];
        for (int i = 0; i < 16; i++) {
            id[i] = (uint8_t)byte(&s);
            tr[i] = (uint8_t)(id[i] ^ 0x5a);
        }
        size_t tl, pl, yl;
        const char *txn = span(&s, 40, &tl);
        const char *prod = span(&s, 10, &pl);
        const char *pay = span(&s, 60, &yl);
        int has_tr = op & 1, has_prod = op & 2;
        int rc = qpf_message(&w, off, ts, id, has_tr ? tr : NULL, txn, tl, has_prod ? prod : NULL, pl, pay, yl);
        int fits = off >= first && off <= last;
        if (!fits) {
            CHECK(rc < 0);
            continue;
        }
        if (rc < 0) {
            refused = 1; /* past the max */
            break;
        }
        qd_msg *m = &want[n++];
        memset(m, 0, sizeof *m);
        m->partition_id = pid;
        m->partition = pname;
        m->partition_len = pnl;
        m->offset = off;
        m->created_us = ts;
        m->flags = (uint8_t)((has_tr ? 1 : 0) | (has_prod ? 2 : 0));
        m->id = NULL;
        memcpy(&m->attempt, id, 4); /* the id's first bytes, compared below */
        m->txn = (const uint8_t *)txn;
        m->txn_len = tl;
        m->producer = has_prod ? (const uint8_t *)prod : NULL;
        m->producer_len = has_prod ? pl : 0;
        m->payload = (const uint8_t *)pay;
        m->payload_len = yl;
        next = off + 1;
    }
    buf out;
    buf_init(&out, 0);
    int rc = qpf_finish(&w, "{\"frames\":true}", 15, &out);
    if (refused) {
        CHECK(rc < 0 || out.len > 0);
        buf_free(&out);
        return 0;
    }
    CHECK(rc == 0);
    CHECK(qd_decode((const uint8_t *)out.data, out.len, &A) == 0);
    CHECK(A.n == n);
    CHECK(A.queue_len == ql && memcmp(A.queue, q, ql) == 0);
    CHECK(A.lease_len == ll && A.group_len == gl);
    for (uint32_t i = 0; i < n; i++) {
        const qd_msg *a = &A.msgs[i], *b = &want[i];
        CHECK(a->partition_id == b->partition_id && a->offset == b->offset && a->created_us == b->created_us);
        CHECK(a->partition_len == b->partition_len && memcmp(a->partition, b->partition, a->partition_len) == 0);
        CHECK(a->flags == b->flags);
        CHECK(memcmp(a->id, &b->attempt, 4) == 0);
        if (a->flags & 1)
            CHECK(a->trace[0] == (uint8_t)(a->id[0] ^ 0x5a));
        CHECK(a->txn_len == b->txn_len && memcmp(a->txn, b->txn, a->txn_len) == 0);
        CHECK(a->producer_len == b->producer_len);
        if (b->producer)
            CHECK(memcmp(a->producer, b->producer, a->producer_len) == 0);
        CHECK(a->payload_len == b->payload_len && memcmp(a->payload, b->payload, a->payload_len) == 0);
    }
    buf_free(&out);
    return 0;
}
