/* pgres.c — in-memory PGresults for unit tests (see pgres.h). */
#include "pgres.h"

#include <stdlib.h>
#include <string.h>

PGresult *pgres_new(const db_col_spec *cols, int n, int format)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc *at = calloc((size_t)n, sizeof *at);
    for (int i = 0; i < n; i++) {
        at[i].name = (char *)cols[i].name;
        at[i].tableid = 0;
        at[i].columnid = 0;
        at[i].format = format;
        at[i].typid = 0;
        at[i].typlen = -1;
        at[i].atttypmod = -1;
    }
    if (!r || !PQsetResultAttrs(r, n, at))
        abort();
    free(at);
    return r;
}

static void set(PGresult *r, int row, int col, const void *p, int len)
{
    if (!PQsetvalue(r, row, col, (char *)p, len))
        abort();
}

void pgres_i64(PGresult *r, int row, int col, int64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
    set(r, row, col, b, 8);
}

void pgres_i32(PGresult *r, int row, int col, int32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)((uint32_t)v >> (24 - 8 * i));
    set(r, row, col, b, 4);
}

void pgres_f64(PGresult *r, int row, int col, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    pgres_i64(r, row, col, (int64_t)u);
}

void pgres_bool(PGresult *r, int row, int col, int v)
{
    uint8_t b = v ? 1 : 0;
    set(r, row, col, &b, 1);
}

void pgres_uuid(PGresult *r, int row, int col, const uint8_t u[16])
{
    set(r, row, col, u, 16);
}

void pgres_bytes(PGresult *r, int row, int col, const void *p, size_t n)
{
    set(r, row, col, n ? p : "", (int)n);
}

void pgres_text(PGresult *r, int row, int col, const char *s)
{
    set(r, row, col, s, (int)strlen(s));
}

void pgres_null(PGresult *r, int row, int col)
{
    set(r, row, col, NULL, -1);
}
