/* record.c — segment record encoding and decoding. */
#include "record.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/uuid.h"
#include "core/zdctx.h"

#define CHUNK_BROKEN 0xffu

struct seg_mem {
    seg_mem *next;
    uint8_t data[];
};

int txn_is_lower_uuid(const char *s, size_t n)
{
    if (n != UUID_STR_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

void segment_begin(buf *out)
{
    buf_putc(out, SEGMENT_VERSION);
}

size_t record_encoded_size(const record_in *r)
{
    size_t n = 1;
    if (txn_is_lower_uuid(r->txn, r->txn_len))
        n += 16;
    else
        n += varint_len(r->txn_len) + r->txn_len;
    if (r->trace)
        n += 16;
    if (r->producer)
        n += varint_len(r->producer_len) + r->producer_len;
    n += varint_len(r->payload_len) + r->payload_len;
    return n;
}

int record_encode(buf *out, const record_in *r)
{
    uint8_t flags = 0;
    int is_uuid = txn_is_lower_uuid(r->txn, r->txn_len);
    if (is_uuid)
        flags |= REC_TXN_UUID;
    if (r->trace)
        flags |= REC_TRACE;
    if (r->producer)
        flags |= REC_PRODUCER;
    if (r->encrypted)
        flags |= REC_ENCRYPTED;
    if (r->txn_producer)
        flags |= REC_TXN_PRODUCER;
    if (buf_reserve(out, record_encoded_size(r)) < 0)
        return -1;
    buf_putc(out, (char)flags);
    if (is_uuid) {
        uuid u;
        uuid_parse(r->txn, r->txn_len, &u);
        buf_append(out, u.b, 16);
    } else {
        buf_put_varint(out, r->txn_len);
        buf_append(out, r->txn, r->txn_len);
    }
    if (r->trace)
        buf_append(out, r->trace, 16);
    if (r->producer) {
        buf_put_varint(out, r->producer_len);
        buf_append(out, r->producer, r->producer_len);
    }
    buf_put_varint(out, r->payload_len);
    return buf_append(out, r->payload, r->payload_len);
}

int seg_reader_init(seg_reader *s, const uint8_t *data, size_t len, uint64_t base_offset, uint32_t count)
{
    memset(s, 0, sizeof *s);
    if (len < 1 || (data[0] != SEGMENT_VERSION && data[0] != SEGMENT_CHUNKED))
        return -1;
    s->next_offset = base_offset;
    s->remaining = count;
    if (data[0] == SEGMENT_VERSION) {
        s->p = data + 1;
        s->end = data + len;
        return 0;
    }
    s->codec = 1;
    s->p = s->end = data + 1;
    s->cp = data + 1;
    s->cend = data + len;
    return 0;
}

int segment_is_chunked(const uint8_t *data, size_t len)
{
    return len >= 1 && data[0] == SEGMENT_CHUNKED;
}

void seg_reader_done(seg_reader *s)
{
    while (s->mem) {
        seg_mem *m = s->mem;
        s->mem = m->next;
        free(m);
    }
}

void seg_reader_skip_below(seg_reader *s, uint64_t off)
{
    s->skip_below = off;
}

/* The head of the chunk at s->cp: kind, count, and the span of its body (records, or for a
 * zstd chunk the producer and z). Does not move. */
typedef struct chunk_head {
    uint8_t kind;
    uint32_t count;
    const char *producer;
    size_t producer_len;
    const uint8_t *body; /* records, or z */
    size_t body_len;
    const uint8_t *next;
} chunk_head;

static int chunk_peek(const seg_reader *s, chunk_head *h)
{
    const uint8_t *p = s->cp;
    uint64_t count, n;
    if (p >= s->cend)
        return -1;
    h->kind = *p++;
    if (h->kind != CHUNK_RECORDS && h->kind != CHUNK_ZFRAMES && h->kind != CHUNK_ZFRAMES_ANON)
        return -1;
    if (varint_get(&p, s->cend, &count) < 0 || count == 0 || count > s->remaining)
        return -1;
    h->count = (uint32_t)count;
    h->producer = NULL;
    h->producer_len = 0;
    if (h->kind != CHUNK_RECORDS) {
        if (varint_get(&p, s->cend, &n) < 0 || n > (uint64_t)(s->cend - p))
            return -1;
        if (n) {
            h->producer = (const char *)p;
            h->producer_len = (size_t)n;
        }
        p += n;
    }
    if (varint_get(&p, s->cend, &n) < 0 || n > (uint64_t)(s->cend - p))
        return -1;
    h->body = p;
    h->body_len = (size_t)n;
    h->next = p + n;
    return 0;
}

/* Inflates a zstd chunk's frame into memory the reader owns. */
static int chunk_inflate(seg_reader *s, const chunk_head *h)
{
    unsigned long long size = ZSTD_getFrameContentSize(h->body, h->body_len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > CHUNK_MAX_RAW ||
        size < (unsigned long long)h->count * ZFRAME_MIN)
        return -1;
    size_t fsz = ZSTD_findFrameCompressedSize(h->body, h->body_len);
    if (ZSTD_isError(fsz) || fsz != h->body_len)
        return -1;
    seg_mem *m = malloc(sizeof *m + (size_t)size);
    if (!m)
        return -1;
    m->next = s->mem;
    s->mem = m;
    size_t got = zdctx_decompress(m->data, (size_t)size, h->body, h->body_len);
    if (ZSTD_isError(got) || got != size)
        return -1;
    s->p = m->data;
    s->end = m->data + size;
    return 0;
}

int seg_reader_zchunk(seg_reader *s, seg_zchunk *z)
{
    if (s->kind == CHUNK_BROKEN)
        return -1;
    if (s->codec != 1 || s->p != s->end || s->chunk_left || s->remaining == 0)
        return 0;
    chunk_head h;
    if (chunk_peek(s, &h) < 0)
        return -1;
    if (h.kind == CHUNK_RECORDS)
        return 0;
    z->base_offset = s->next_offset;
    z->count = h.count;
    z->producer = h.producer;
    z->producer_len = h.producer_len;
    z->z = h.body;
    z->zlen = h.body_len;
    return 1;
}

void seg_reader_pass(seg_reader *s, const seg_zchunk *z)
{
    s->cp = z->z + z->zlen;
    s->next_offset += z->count;
    s->remaining -= z->count;
}

/* Enters the next chunk that holds a record at or past skip_below. 0, or -1 corrupt. */
static int chunk_enter(seg_reader *s)
{
    for (;;) {
        chunk_head h;
        if (chunk_peek(s, &h) < 0)
            return -1;
        s->cp = h.next;
        s->kind = h.kind;
        s->chunk_left = h.count;
        if (h.kind == CHUNK_RECORDS) {
            s->p = h.body;
            s->end = h.body + h.body_len;
            s->producer = NULL;
            s->producer_len = 0;
            return 0;
        }
        if (s->next_offset + h.count <= s->skip_below && h.count < s->remaining) {
            s->next_offset += h.count;
            s->remaining -= h.count;
            s->chunk_left = 0;
            continue;
        }
        s->producer = h.producer;
        s->producer_len = h.producer_len;
        s->zsrc = h.kind == CHUNK_ZFRAMES ? h.body : NULL; /* only these go out as stored */
        s->zsrc_len = h.body_len;
        s->zcount = h.count;
        return chunk_inflate(s, &h);
    }
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One producer frame of the current zstd chunk. */
static int zframe_next(seg_reader *s, record_view *v)
{
    if (s->end - s->p < 4)
        return -1;
    uint32_t blen = le32(s->p);
    s->p += 4;
    if (blen > (size_t)(s->end - s->p) || blen < 1 + 16 + 2)
        return -1;
    const uint8_t *f = s->p, *fend = s->p + blen;
    s->p = fend;
    if (f[0] != 0)
        return -1;
    const uint8_t *id = f + 1;
    uint32_t tlen = (uint32_t)f[17] | (uint32_t)f[18] << 8;
    const uint8_t *txn = f + 19;
    if (tlen > (size_t)(fend - txn))
        return -1;
    if (tlen) {
        v->flags = REC_TXN_PRODUCER;
        v->txn = txn;
        v->txn_len = tlen;
    } else {
        v->flags = REC_TXN_UUID;
        v->txn = id;
        v->txn_len = 16;
    }
    if (s->producer) {
        v->flags |= REC_PRODUCER;
        v->producer = s->producer;
        v->producer_len = s->producer_len;
    }
    v->payload = (const char *)txn + tlen;
    v->payload_len = (size_t)(fend - (txn + tlen));
    v->zchunk = s->zsrc;
    v->zchunk_len = s->zsrc ? s->zsrc_len : 0;
    v->zcount = s->zcount;
    v->zindex = s->zcount - s->chunk_left;
    return 0;
}

static int take_bytes(seg_reader *s, const uint8_t **out, size_t *len)
{
    uint64_t n;
    if (varint_get(&s->p, s->end, &n) < 0 || n > (uint64_t)(s->end - s->p))
        return -1;
    *out = s->p;
    *len = (size_t)n;
    s->p += n;
    return 0;
}

static int record_next(seg_reader *s, record_view *v)
{
    if (s->p >= s->end)
        return -1;
    v->flags = *s->p++;
    if (v->flags & ~REC_KNOWN_FLAGS)
        return -1;
    if (v->flags & REC_TXN_UUID) {
        if (s->end - s->p < 16)
            return -1;
        v->txn = s->p;
        v->txn_len = 16;
        s->p += 16;
    } else if (take_bytes(s, &v->txn, &v->txn_len) < 0) {
        return -1;
    }
    if (v->flags & REC_TRACE) {
        if (s->end - s->p < 16)
            return -1;
        v->trace = s->p;
        s->p += 16;
    }
    if (v->flags & REC_PRODUCER) {
        const uint8_t *pp;
        if (take_bytes(s, &pp, &v->producer_len) < 0)
            return -1;
        v->producer = (const char *)pp;
    }
    const uint8_t *pl;
    if (take_bytes(s, &pl, &v->payload_len) < 0)
        return -1;
    v->payload = (const char *)pl;
    return 0;
}

int seg_reader_next(seg_reader *s, record_view *v)
{
    if (s->codec == 0) {
        if (s->remaining == 0)
            return s->p == s->end ? 0 : -1;
        memset(v, 0, sizeof *v);
        if (record_next(s, v) < 0)
            return -1;
        v->offset = s->next_offset++;
        s->remaining--;
        return 1;
    }
    if (s->kind == CHUNK_BROKEN)
        return -1;
    if (s->chunk_left == 0) {
        /* the chunk just read must have been used up exactly */
        if (s->p != s->end || (s->remaining == 0 && s->cp != s->cend)) {
            s->kind = CHUNK_BROKEN;
            return -1;
        }
        if (s->remaining == 0)
            return 0;
        if (chunk_enter(s) < 0) {
            s->kind = CHUNK_BROKEN; /* stays corrupt */
            return -1;
        }
    }
    memset(v, 0, sizeof *v);
    if ((s->kind == CHUNK_RECORDS ? record_next(s, v) : zframe_next(s, v)) < 0) {
        s->kind = CHUNK_BROKEN;
        return -1;
    }
    v->offset = s->next_offset++;
    s->remaining--;
    s->chunk_left--;
    return 1;
}

size_t record_txn_text(const record_view *v, char *out, size_t cap)
{
    if (v->flags & REC_TXN_UUID) {
        if (cap < UUID_STR_LEN + 1)
            return 0;
        uuid u;
        memcpy(u.b, v->txn, 16);
        uuid_format(&u, out);
        return UUID_STR_LEN;
    }
    size_t n = v->txn_len < cap ? v->txn_len : cap;
    memcpy(out, v->txn, n);
    return n;
}

void segment_begin_chunked(buf *out)
{
    buf_putc(out, SEGMENT_CHUNKED);
}

int segment_chunk_records(buf *out, uint32_t count, const void *records, size_t len)
{
    buf_putc(out, CHUNK_RECORDS);
    buf_put_varint(out, count);
    buf_put_varint(out, len);
    return buf_append(out, records, len);
}

int segment_chunk_zframes(buf *out, uint32_t count, const char *producer, size_t producer_len, const void *z,
                          size_t zlen, int anon)
{
    buf_putc(out, anon ? CHUNK_ZFRAMES_ANON : CHUNK_ZFRAMES);
    buf_put_varint(out, count);
    buf_put_varint(out, producer ? producer_len : 0);
    if (producer && producer_len)
        buf_append(out, producer, producer_len);
    buf_put_varint(out, zlen);
    return buf_append(out, z, zlen);
}

int segment_to_records(const uint8_t *data, size_t len, uint32_t count, buf *out)
{
    buf_reset(out);
    if (len >= 1 && data[0] == SEGMENT_VERSION)
        return buf_append(out, data, len);
    seg_reader s;
    if (seg_reader_init(&s, data, len, 0, count) < 0)
        return -1;
    segment_begin(out);
    record_view v;
    int rc;
    char txt[UUID_STR_LEN + 1];
    while ((rc = seg_reader_next(&s, &v)) == 1) {
        record_in r = {
            .txn_producer = !!(v.flags & REC_TXN_PRODUCER),
            .trace = v.trace,
            .producer = v.producer,
            .producer_len = v.producer_len,
            .payload = v.payload,
            .payload_len = v.payload_len,
            .encrypted = !!(v.flags & REC_ENCRYPTED),
        };
        if (v.flags & REC_DELETED) {
            rc = -1; /* codec 1 never holds a deleted record: a segment is re-encoded before one is */
            break;
        }
        if (v.flags & REC_TXN_UUID) {
            r.txn_len = record_txn_text(&v, txt, sizeof txt);
            r.txn = txt;
        } else {
            r.txn = (const char *)v.txn;
            r.txn_len = v.txn_len;
        }
        if (record_encode(out, &r) < 0) {
            rc = -1;
            break;
        }
    }
    seg_reader_done(&s);
    return rc == 0 ? 0 : -1;
}
