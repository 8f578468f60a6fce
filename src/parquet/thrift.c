/* thrift.c — Thrift compact protocol writer and a bounded skipping reader. */
#include "thrift.h"

#include <string.h>

uint64_t tc_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

int64_t tc_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

void tc_init(tc_writer *w, buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->depth = -1;
}

static void push_ctx(tc_writer *w)
{
    /* nesting is fixed by the Parquet structures we write; deeper is a programming error */
    if (w->depth + 1 < TC_MAX_DEPTH)
        w->depth++;
    w->last[w->depth] = 0;
}

void tc_struct_begin(tc_writer *w)
{
    push_ctx(w);
}

static void field_header(tc_writer *w, int16_t id, enum tc_type type)
{
    int16_t delta = (int16_t)(id - w->last[w->depth]);
    if (delta > 0 && delta <= 15) {
        buf_putc(w->out, (char)((delta << 4) | type));
    } else {
        buf_putc(w->out, (char)type);
        buf_put_varint(w->out, tc_zigzag(id));
    }
    w->last[w->depth] = id;
}

void tc_field_struct(tc_writer *w, int16_t id)
{
    field_header(w, id, TC_STRUCT);
    push_ctx(w);
}

void tc_struct_end(tc_writer *w)
{
    buf_putc(w->out, TC_STOP);
    if (w->depth >= 0)
        w->depth--;
}

void tc_field_i16(tc_writer *w, int16_t id, int16_t v)
{
    field_header(w, id, TC_I16);
    buf_put_varint(w->out, tc_zigzag(v));
}

void tc_field_i32(tc_writer *w, int16_t id, int32_t v)
{
    field_header(w, id, TC_I32);
    buf_put_varint(w->out, tc_zigzag(v));
}

void tc_field_i64(tc_writer *w, int16_t id, int64_t v)
{
    field_header(w, id, TC_I64);
    buf_put_varint(w->out, tc_zigzag(v));
}

void tc_field_bool(tc_writer *w, int16_t id, int v)
{
    field_header(w, id, v ? TC_TRUE : TC_FALSE);
}

void tc_field_binary(tc_writer *w, int16_t id, const void *p, size_t n)
{
    field_header(w, id, TC_BINARY);
    buf_put_varint(w->out, n);
    buf_append(w->out, p, n);
}

void tc_field_string(tc_writer *w, int16_t id, const char *s)
{
    tc_field_binary(w, id, s, strlen(s));
}

void tc_field_list(tc_writer *w, int16_t id, enum tc_type elem, uint32_t size)
{
    field_header(w, id, TC_LIST);
    if (size < 15) {
        buf_putc(w->out, (char)((size << 4) | elem));
    } else {
        buf_putc(w->out, (char)(0xf0 | elem));
        buf_put_varint(w->out, size);
    }
}

void tc_elem_i32(tc_writer *w, int32_t v)
{
    buf_put_varint(w->out, tc_zigzag(v));
}

void tc_elem_binary(tc_writer *w, const void *p, size_t n)
{
    buf_put_varint(w->out, n);
    buf_append(w->out, p, n);
}

void tc_elem_struct_begin(tc_writer *w)
{
    push_ctx(w);
}

/* ---- reader ---- */

int tc_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    return varint_get(p, end, v);
}

int tc_read_field(const uint8_t **p, const uint8_t *end, int16_t *last, int16_t *id, enum tc_type *type)
{
    if (*p >= end)
        return -1;
    uint8_t b = *(*p)++;
    *type = (enum tc_type)(b & 0x0f);
    if (*type == TC_STOP) {
        if (b != 0)
            return -1;
        *id = 0;
        return 0;
    }
    int delta = b >> 4;
    if (delta) {
        *id = (int16_t)(*last + delta);
    } else {
        uint64_t z;
        if (varint_get(p, end, &z) < 0)
            return -1;
        int64_t v = tc_unzigzag(z);
        if (v < INT16_MIN || v > INT16_MAX)
            return -1;
        *id = (int16_t)v;
    }
    *last = *id;
    return 0;
}

int tc_skip(const uint8_t **p, const uint8_t *end, enum tc_type type, int depth)
{
    if (depth > TC_MAX_DEPTH)
        return -1;
    uint64_t v;
    switch (type) {
    case TC_TRUE:
    case TC_FALSE:
        return 0; /* in a field header the value is the type; list elements are handled below */
    case TC_BYTE:
        if (*p >= end)
            return -1;
        (*p)++;
        return 0;
    case TC_I16:
    case TC_I32:
    case TC_I64:
        return varint_get(p, end, &v);
    case TC_DOUBLE:
        if (end - *p < 8)
            return -1;
        *p += 8;
        return 0;
    case TC_BINARY:
        if (varint_get(p, end, &v) < 0 || v > (uint64_t)(end - *p))
            return -1;
        *p += v;
        return 0;
    case TC_LIST:
    case TC_SET: {
        if (*p >= end)
            return -1;
        uint8_t h = *(*p)++;
        enum tc_type et = (enum tc_type)(h & 0x0f);
        uint64_t n = h >> 4;
        if (n == 15 && varint_get(p, end, &n) < 0)
            return -1;
        if (n > (uint64_t)(end - *p) + 1) /* every element takes at least a byte (bools too) */
            return -1;
        for (uint64_t i = 0; i < n; i++) {
            if (et == TC_TRUE || et == TC_FALSE) {
                if (*p >= end)
                    return -1;
                (*p)++;
            } else if (tc_skip(p, end, et, depth + 1) < 0) {
                return -1;
            }
        }
        return 0;
    }
    case TC_MAP: {
        uint64_t n;
        if (varint_get(p, end, &n) < 0)
            return -1;
        if (n == 0)
            return 0;
        if (*p >= end || n > (uint64_t)(end - *p))
            return -1;
        uint8_t kv = *(*p)++;
        for (uint64_t i = 0; i < n; i++)
            if (tc_skip(p, end, (enum tc_type)(kv >> 4), depth + 1) < 0 ||
                tc_skip(p, end, (enum tc_type)(kv & 0x0f), depth + 1) < 0)
                return -1;
        return 0;
    }
    case TC_STRUCT: {
        int16_t last = 0, id;
        enum tc_type ft;
        for (;;) {
            if (tc_read_field(p, end, &last, &id, &ft) < 0)
                return -1;
            if (ft == TC_STOP)
                return 0;
            if (tc_skip(p, end, ft, depth + 1) < 0)
                return -1;
        }
    }
    default:
        return -1;
    }
}
