/* pgres.h — a PGresult made in memory for a unit test, without a server: the columns of a
 * db/results.h or db/statements.h list, values set one by one in the broker's binary format
 * (int8/int4 big-endian, bool one byte, uuid 16 bytes, text and bytea as they are) or, for a
 * text-format statement, as text. A value not set is NULL. Linked into the tests that name it
 * in the Makefile (PGRES_BINS). */
#ifndef QUEEN_TESTS_PGRES_H
#define QUEEN_TESTS_PGRES_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "db/results.h"

/* A result with the columns of `list` (an X-macro column list), no rows yet; binary values
 * (format 1) or text (format 0). */
#define PGRES_NEW(list, format)                                                                                \
    pgres_new((const db_col_spec[]){list(DB_COL_SPEC)},                                                        \
              (int)(sizeof((const db_col_spec[]){list(DB_COL_SPEC)}) / sizeof(db_col_spec)), format)

PGresult *pgres_new(const db_col_spec *cols, int n, int format);

/* Setting a value of row `row` adds the row when row == PQntuples (rows in order). */
void pgres_i64(PGresult *r, int row, int col, int64_t v);
void pgres_i32(PGresult *r, int row, int col, int32_t v);
void pgres_f64(PGresult *r, int row, int col, double v);
void pgres_bool(PGresult *r, int row, int col, int v);
void pgres_uuid(PGresult *r, int row, int col, const uint8_t u[16]);
void pgres_bytes(PGresult *r, int row, int col, const void *p, size_t n);
void pgres_text(PGresult *r, int row, int col, const char *s);
void pgres_null(PGresult *r, int row, int col);

#endif
