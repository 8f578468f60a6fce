/* thrift.h — the Thrift compact protocol, as much of it as a Parquet footer and page headers
 * need: writing structs, lists, integers, binaries and booleans, and (for tests and the
 * fuzzer) a reader that walks the same encoding.
 *
 * Compact protocol, in short: a field header is one byte (delta of the field id from the
 * previous field of the struct in the high nibble, type in the low nibble) when the delta is
 * 1..15, else the type byte followed by the id as a zigzag varint; integers are zigzag
 * varints; binaries a varint length then the bytes; booleans live in the field header's type
 * (1 true, 2 false); a list header is (size << 4 | element type) below 15 elements, else
 * 0xf0 | type then the size as a varint; a struct ends with a 0 byte. */
#ifndef QUEEN_PARQUET_THRIFT_H
#define QUEEN_PARQUET_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

enum tc_type {
    TC_STOP = 0,
    TC_TRUE = 1,
    TC_FALSE = 2,
    TC_BYTE = 3,
    TC_I16 = 4,
    TC_I32 = 5,
    TC_I64 = 6,
    TC_DOUBLE = 7,
    TC_BINARY = 8,
    TC_LIST = 9,
    TC_SET = 10,
    TC_MAP = 11,
    TC_STRUCT = 12,
};

#define TC_MAX_DEPTH 16

typedef struct tc_writer {
    buf *out;
    int16_t last[TC_MAX_DEPTH]; /* last field id per open struct */
    int depth;
} tc_writer;

void tc_init(tc_writer *w, buf *out);
/* Opens the outermost struct (writes nothing) or, inside one, a struct field. */
void tc_struct_begin(tc_writer *w);
void tc_field_struct(tc_writer *w, int16_t id); /* a struct field: header, then its fields */
void tc_struct_end(tc_writer *w);               /* writes STOP, pops the field-id context */
void tc_field_i16(tc_writer *w, int16_t id, int16_t v);
void tc_field_i32(tc_writer *w, int16_t id, int32_t v);
void tc_field_i64(tc_writer *w, int16_t id, int64_t v);
void tc_field_bool(tc_writer *w, int16_t id, int v);
void tc_field_binary(tc_writer *w, int16_t id, const void *p, size_t n);
void tc_field_string(tc_writer *w, int16_t id, const char *s);
/* A list field: header with size and element type; then its elements (tc_elem_* or, for
 * structs, tc_elem_struct_begin ... tc_struct_end per element). */
void tc_field_list(tc_writer *w, int16_t id, enum tc_type elem, uint32_t size);
void tc_elem_i32(tc_writer *w, int32_t v);
void tc_elem_binary(tc_writer *w, const void *p, size_t n);
void tc_elem_struct_begin(tc_writer *w);

uint64_t tc_zigzag(int64_t v);
int64_t tc_unzigzag(uint64_t v);

/* Reader: skips a whole value of the given type at *p (bounded by end and depth). Returns 0
 * and advances *p, or -1 when the input is malformed or too deep. Used to check that what
 * the writer produced is one well-formed struct, and by the fuzzer. */
int tc_skip(const uint8_t **p, const uint8_t *end, enum tc_type type, int depth);
/* Reads one field header inside a struct: *type TC_STOP at the end of the struct. */
int tc_read_field(const uint8_t **p, const uint8_t *end, int16_t *last, int16_t *id, enum tc_type *type);
int tc_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

#endif
