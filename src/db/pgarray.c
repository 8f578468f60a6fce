/* pgarray.c — binary array parameters. */
#include "pgarray.h"

#include "core/util.h"

/* header: ndim, flags (has nulls), element oid, dim length, lower bound */
#define HDR 20

void pgarray_begin(pgarray *a, uint32_t elem_oid)
{
    buf_init(&a->b, 0);
    a->count = 0;
    a->has_null = 0;
    uint8_t h[HDR];
    be_put32(h, 1);
    be_put32(h + 4, 0);
    be_put32(h + 8, elem_oid);
    be_put32(h + 12, 0);
    be_put32(h + 16, 1);
    buf_append(&a->b, h, HDR);
}

void pgarray_add(pgarray *a, const void *p, size_t n)
{
    uint8_t l[4];
    be_put32(l, (uint32_t)n);
    buf_append(&a->b, l, 4);
    buf_append(&a->b, p, n);
    a->count++;
}

void pgarray_add_null(pgarray *a)
{
    uint8_t l[4];
    be_put32(l, 0xffffffffu);
    buf_append(&a->b, l, 4);
    a->count++;
    a->has_null = 1;
}

void pgarray_add_i32(pgarray *a, int32_t v)
{
    uint8_t x[4];
    be_put32(x, (uint32_t)v);
    pgarray_add(a, x, 4);
}

void pgarray_add_i64(pgarray *a, int64_t v)
{
    uint8_t x[8];
    be_put64(x, (uint64_t)v);
    pgarray_add(a, x, 8);
}

void pgarray_finish(pgarray *a)
{
    be_put32((uint8_t *)a->b.data + 4, a->has_null ? 1 : 0);
    be_put32((uint8_t *)a->b.data + 12, a->count);
}

void pgarray_free(pgarray *a)
{
    buf_free(&a->b);
}

void pgarray_append_array(pgarray *a, const pgarray *src)
{
    if (src->b.len > HDR)
        buf_append(&a->b, src->b.data + HDR, src->b.len - HDR);
    a->count += src->count;
    a->has_null |= src->has_null;
}
