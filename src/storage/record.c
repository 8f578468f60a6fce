/* record.c — segment record encoding and decoding. */
#include "record.h"

#include <string.h>

#include "core/uuid.h"

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
    if (len < 1 || data[0] != SEGMENT_VERSION)
        return -1;
    s->p = data + 1;
    s->end = data + len;
    s->next_offset = base_offset;
    s->remaining = count;
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

int seg_reader_next(seg_reader *s, record_view *v)
{
    if (s->remaining == 0)
        return s->p == s->end ? 0 : -1;
    if (s->p >= s->end)
        return -1;
    memset(v, 0, sizeof *v);
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
    v->offset = s->next_offset++;
    s->remaining--;
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
