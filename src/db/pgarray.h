/* pgarray.h — builds one-dimensional PostgreSQL arrays in the binary wire format (array_recv),
 * so batches of text, bytea, integers and UUIDs go to the server without text escaping. */
#ifndef QUEEN_DB_PGARRAY_H
#define QUEEN_DB_PGARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT4 23
#define OID_TEXT 25
#define OID_UUID 2950

typedef struct pgarray {
    buf b;
    uint32_t count;
    int has_null;
} pgarray;

void pgarray_begin(pgarray *a, uint32_t elem_oid);
void pgarray_add(pgarray *a, const void *p, size_t n);
void pgarray_add_null(pgarray *a);
void pgarray_add_i32(pgarray *a, int32_t v);
void pgarray_add_i64(pgarray *a, int64_t v);
/* Patches the header; the array's bytes are a->b.data / a->b.len. */
void pgarray_finish(pgarray *a);
/* Appends the elements of another array of the same element type (finished or not). */
void pgarray_append_array(pgarray *a, const pgarray *src);
void pgarray_free(pgarray *a);

#endif
