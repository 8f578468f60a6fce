/* qpf_decode.h — a QPF1 decoder of the tests' own (tests/unit/test_qpf.c, tests/fuzz/fuzz_qpf.c),
 * written from the format (src/consume/qpf.h, docs/http-api.md) as the 2.x client reads it: the
 * messages in delivery order, each with its claim's fields. Strict: every length must match and
 * nothing may follow the last claim. Header-only (static functions). */
#ifndef QUEEN_TESTS_QPF_DECODE_H
#define QUEEN_TESTS_QPF_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct qd_msg {
    uint64_t partition_id;
    const uint8_t *partition;
    size_t partition_len;
    uint32_t attempt;
    uint64_t offset;
    int64_t created_us;
    uint8_t flags;
    const uint8_t *id, *trace;
    const uint8_t *txn, *producer, *payload;
    size_t txn_len, producer_len, payload_len;
} qd_msg;

typedef struct qd_answer {
    const uint8_t *extra, *queue, *lease, *group;
    size_t extra_len, queue_len, lease_len, group_len;
    uint32_t claims, records;
    qd_msg msgs[4096];
    uint32_t n;
} qd_answer;

typedef struct qd_in {
    const uint8_t *p, *end;
} qd_in;

static int qd_take(qd_in *in, size_t n, const uint8_t **out)
{
    if ((size_t)(in->end - in->p) < n)
        return -1;
    *out = in->p;
    in->p += n;
    return 0;
}

static int qd_uint(qd_in *in, int bytes, uint64_t *v)
{
    const uint8_t *p;
    if (qd_take(in, (size_t)bytes, &p) < 0)
        return -1;
    *v = 0;
    for (int i = 0; i < bytes; i++)
        *v |= (uint64_t)p[i] << (8 * i);
    return 0;
}

static int qd_text(qd_in *in, const uint8_t **s, size_t *n)
{
    uint64_t l;
    if (qd_uint(in, 2, &l) < 0 || qd_take(in, (size_t)l, s) < 0)
        return -1;
    *n = (size_t)l;
    return 0;
}

/* 0, or -1 when the answer is not whole QPF1 (or holds more than 4096 messages). */
static int qd_decode(const uint8_t *data, size_t len, qd_answer *a)
{
    qd_in in = {data, data + len};
    const uint8_t *m;
    uint64_t v;
    memset(a, 0, offsetof(qd_answer, msgs));
    a->n = 0;
    if (qd_take(&in, 4, &m) < 0 || memcmp(m, "QPF1", 4) != 0 || qd_take(&in, 1, &m) < 0 || m[0] != 1)
        return -1;
    if (qd_uint(&in, 4, &v) < 0 || qd_take(&in, (size_t)v, &a->extra) < 0)
        return -1;
    a->extra_len = (size_t)v;
    if (qd_text(&in, &a->queue, &a->queue_len) < 0 || qd_text(&in, &a->lease, &a->lease_len) < 0 ||
        qd_text(&in, &a->group, &a->group_len) < 0 || qd_uint(&in, 4, &v) < 0)
        return -1;
    a->claims = (uint32_t)v;
    for (uint32_t c = 0; c < a->claims; c++) {
        qd_msg base;
        memset(&base, 0, sizeof base);
        uint64_t start, end, attempt, records;
        if (qd_uint(&in, 8, &base.partition_id) < 0 || qd_text(&in, &base.partition, &base.partition_len) < 0 ||
            qd_uint(&in, 8, &start) < 0 || qd_uint(&in, 8, &end) < 0 || qd_uint(&in, 4, &attempt) < 0 ||
            qd_uint(&in, 4, &records) < 0)
            return -1;
        base.attempt = (uint32_t)attempt;
        for (uint64_t r = 0; r < records; r++) {
            uint64_t off, ts, count, codec, rl;
            const uint8_t *bytes;
            if (qd_uint(&in, 8, &off) < 0 || qd_uint(&in, 8, &ts) < 0 || qd_uint(&in, 4, &count) < 0 ||
                qd_uint(&in, 1, &codec) < 0 || codec != 0 || qd_uint(&in, 4, &rl) < 0 ||
                qd_take(&in, (size_t)rl, &bytes) < 0)
                return -1;
            a->records++;
            qd_in fr = {bytes, bytes + rl};
            for (uint64_t i = 0; i < count; i++) {
                uint64_t bl;
                const uint8_t *body;
                if (qd_uint(&fr, 4, &bl) < 0 || qd_take(&fr, (size_t)bl, &body) < 0)
                    return -1;
                qd_in f = {body, body + bl};
                qd_msg x = base;
                uint64_t fl;
                if (qd_uint(&f, 1, &fl) < 0 || qd_take(&f, 16, &x.id) < 0)
                    return -1;
                x.flags = (uint8_t)fl;
                if ((fl & 1) && qd_take(&f, 16, &x.trace) < 0)
                    return -1;
                if (qd_text(&f, &x.txn, &x.txn_len) < 0)
                    return -1;
                if ((fl & 2) && qd_text(&f, &x.producer, &x.producer_len) < 0)
                    return -1;
                x.payload = f.p;
                x.payload_len = (size_t)(f.end - f.p);
                x.offset = off + i;
                x.created_us = (int64_t)ts;
                if (x.offset < start || x.offset > end)
                    continue; /* outside the claim: not delivered */
                if (a->n == 4096)
                    return -1;
                a->msgs[a->n++] = x;
            }
            if (fr.p != fr.end)
                return -1;
        }
    }
    return in.p == in.end ? 0 : -1;
}

#endif
