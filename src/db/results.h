/* results.h — how C names the columns of a stored function's result.
 *
 * Beside each caller, a header lists the result of each function it calls as an X-macro,
 * column by column in the function's order: X(enum name, SQL column name, SQL type). The
 * caller's enum comes from it (DB_COL_ENUM), so C reads columns by name, never by number, and
 * the statement selects the function's columns as they are (SELECT * FROM queen.f(...)).
 * tests/unit/test_db_results.c checks every list against the function's RETURNS TABLE / OUT
 * parameters in the database (names, types, order, count), so a column added, removed or
 * retyped in SQL fails that test instead of silently shifting C. A scalar function (RETURNS
 * integer, ...) is one column named after the function. Row kinds, where a function returns
 * rows of several kinds, are an enum in the same header.
 *
 * Types are PostgreSQL's type names (pg_type.typname): int4, int8, text, uuid, bytea, bool. */
#ifndef QUEEN_DB_RESULTS_H
#define QUEEN_DB_RESULTS_H

#define DB_COL_ENUM(id, name, type) id,

/* For the test: one column as the list names it. */
typedef struct db_col_spec {
    const char *name;
    const char *type;
} db_col_spec;
#define DB_COL_SPEC(id, name, type) {#name, #type},

#endif
