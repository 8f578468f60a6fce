/* qpf.c — the framed pop answer QPF1 (qpf.h). */
#include <string.h>

#include "qpf.h"

static void put_u16(buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    buf_append(b, x, 2);
}

static void put_u32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_append(b, x, 4);
}

static void put_u64(buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    buf_append(b, x, 8);
}

/* Overwrites the u32 at `at` (written before as a placeholder). */
static void set_u32(buf *b, size_t at, uint32_t v)
{
    if (b->overflow || at + 4 > b->len)
        return;
    uint8_t *p = (uint8_t *)b->data + at;
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static int put_text16(buf *b, const char *s, size_t n)
{
    if (n > 0xffff)
        return -1;
    put_u16(b, (uint16_t)n);
    buf_append(b, s, n);
    return 0;
}

int qpf_begin(qpf_writer *w, size_t max, const char *queue, size_t ql, const char *lease, size_t ll,
              const char *group, size_t gl)
{
    memset(w, 0, sizeof *w);
    buf_init(&w->body, max);
    if (put_text16(&w->body, queue, ql) < 0 || put_text16(&w->body, lease, ll) < 0 ||
        put_text16(&w->body, group, gl) < 0)
        return -1;
    put_u32(&w->body, 0); /* claims, set by qpf_finish */
    return w->body.overflow ? -1 : 0;
}

static void close_record(qpf_writer *w)
{
    if (!w->in_record)
        return;
    set_u32(&w->body, w->rec_count_at, w->rec_count);
    size_t bytes_at = w->rec_count_at + 4 + 1 + 4;
    set_u32(&w->body, w->rec_count_at + 5, (uint32_t)(w->body.len - bytes_at));
    w->in_record = 0;
}

static void close_claim(qpf_writer *w)
{
    if (!w->in_claim)
        return;
    close_record(w);
    set_u32(&w->body, w->claim_records_at, w->claim_records);
    w->in_claim = 0;
}

int qpf_claim(qpf_writer *w, uint64_t partition_id, const char *name, size_t nl, uint64_t first, uint64_t last,
              uint32_t delivery_attempt)
{
    close_claim(w);
    if (last < first)
        return -1;
    put_u64(&w->body, partition_id);
    if (put_text16(&w->body, name, nl) < 0)
        return -1;
    put_u64(&w->body, first);
    put_u64(&w->body, last);
    put_u32(&w->body, delivery_attempt);
    w->claim_records_at = w->body.len;
    put_u32(&w->body, 0);
    w->claim_records = 0;
    w->claim_start = first;
    w->claim_end = last;
    w->claim_next = first;
    w->in_claim = 1;
    w->claims++;
    return w->body.overflow ? -1 : 0;
}

int qpf_message(qpf_writer *w, uint64_t offset, int64_t created_at_us, const uint8_t id[16],
                const uint8_t *trace, const char *txn, size_t tl, const char *producer, size_t pl,
                const char *payload, size_t plen)
{
    if (!w->in_claim || offset < w->claim_start || offset > w->claim_end || tl > 0xffff ||
        (producer && pl > 0xffff))
        return -1;
    if (offset < w->claim_next)
        return -1; /* not ascending */
    /* the frame's body: flags .. payload */
    size_t body_len = 1 + 16 + (trace ? 16 : 0) + 2 + tl + (producer ? 2 + pl : 0) + plen;
    if (body_len > UINT32_MAX - 64)
        return -1;
    if (!w->in_record || offset != w->rec_next || created_at_us != w->rec_ts) {
        close_record(w);
        put_u64(&w->body, offset);
        put_u64(&w->body, (uint64_t)created_at_us);
        w->rec_count_at = w->body.len;
        put_u32(&w->body, 0);
        buf_putc(&w->body, QPF_CODEC_RAW);
        put_u32(&w->body, 0);
        w->rec_count = 0;
        w->rec_ts = created_at_us;
        w->in_record = 1;
        w->claim_records++;
    }
    if (buf_reserve(&w->body, 4 + body_len) < 0)
        return -1;
    put_u32(&w->body, (uint32_t)body_len);
    buf_putc(&w->body, (char)((trace ? QPF_FLAG_TRACE : 0) | (producer ? QPF_FLAG_PRODUCER : 0)));
    buf_append(&w->body, id, 16);
    if (trace)
        buf_append(&w->body, trace, 16);
    put_text16(&w->body, txn, tl);
    if (producer)
        put_text16(&w->body, producer, pl);
    buf_append(&w->body, payload, plen);
    w->rec_count++;
    w->rec_next = offset + 1;
    w->claim_next = offset + 1;
    w->messages++;
    return w->body.overflow ? -1 : 0;
}

int qpf_stored(qpf_writer *w, uint64_t base_offset, int64_t created_at_us, uint32_t count, const uint8_t *z,
               size_t zlen)
{
    uint64_t last = base_offset + count - 1;
    if (!w->in_claim || count == 0 || base_offset < w->claim_start || last > w->claim_end || zlen > UINT32_MAX)
        return -1;
    if (base_offset < w->claim_next)
        return -1; /* not ascending */
    close_record(w);
    put_u64(&w->body, base_offset);
    put_u64(&w->body, (uint64_t)created_at_us);
    put_u32(&w->body, count);
    buf_putc(&w->body, QPF_CODEC_ZSTD);
    put_u32(&w->body, (uint32_t)zlen);
    buf_append(&w->body, z, zlen);
    w->claim_records++;
    w->rec_next = last + 1;
    w->claim_next = last + 1;
    w->messages += count;
    return w->body.overflow ? -1 : 0;
}

int qpf_finish(qpf_writer *w, const char *extra, size_t el, buf *out)
{
    close_claim(w);
    if (!extra || el == 0) {
        extra = "{}";
        el = 2;
    }
    /* claims sits after the three names */
    const uint8_t *p = (const uint8_t *)w->body.data;
    size_t at = 0;
    int rc = w->body.overflow ? -1 : 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (at + 2 > w->body.len) {
            rc = -1;
            break;
        }
        at += 2 + (size_t)(p[at] | (p[at + 1] << 8));
    }
    if (rc == 0 && at + 4 <= w->body.len) {
        set_u32(&w->body, at, w->claims);
        buf_append(out, QPF_MAGIC, 4);
        buf_putc(out, QPF_VERSION);
        put_u32(out, (uint32_t)el);
        buf_append(out, extra, el);
        buf_append(out, w->body.data, w->body.len);
        rc = out->overflow ? -1 : 0;
    } else {
        rc = -1;
    }
    buf_free(&w->body);
    return rc;
}

void qpf_free(qpf_writer *w)
{
    buf_free(&w->body);
}
