/* statements.h — how C names the columns of a statement of its own (an inline SELECT).
 *
 * A statement C writes itself (not SELECT * FROM a stored function: db/results.h names those)
 * is a named SQL text constant, `const char NAME_SQL[]`, declared in a header of its module
 * beside its column list: an X-macro X(enum name, SQL column name, SQL type), the same
 * convention as db/results.h, column by column in the statement's order. Every result column
 * is named in the SQL (`AS name` where the expression would be "count", "coalesce", ...), and
 * the caller reads it through the enum (DB_COL_ENUM), never by number.
 *
 * Each module header lists its statements once more, for the test:
 *     #define MODULE_STATEMENTS(S) S(NAME_SQL, NAME_COLUMNS) S(...)
 * tests/unit/test_db_statements.c expands every such list with DB_STMT_SPEC and, on a real
 * PostgreSQL with the schema applied, prepares each statement without running it
 * (PQprepare + PQdescribePrepared): the names, types, order and count of its result columns
 * must be its list's exactly. A column added, dropped, moved or retyped in the SQL, or a table
 * column that changes type, fails there instead of shifting what C reads.
 *
 * Types are PostgreSQL's type names (pg_type.typname): int4, int8, float8, text, uuid, bool. */
#ifndef QUEEN_DB_STATEMENTS_H
#define QUEEN_DB_STATEMENTS_H

#include "db/results.h"

/* For the test: one statement as its module lists it. */
typedef struct db_stmt_spec {
    const char *name; /* the C name of its text */
    const char *sql;
    const db_col_spec *cols;
    int ncols;
} db_stmt_spec;

#define DB_STMT_SPEC(sql, columns)                                                                              \
    {#sql, sql, (const db_col_spec[]){columns(DB_COL_SPEC)},                                                 \
     (int)(sizeof((const db_col_spec[]){columns(DB_COL_SPEC)}) / sizeof(db_col_spec))},

#endif
