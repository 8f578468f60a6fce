/* The column lists C reads its own statements' results by (db/statements.h, one header beside
 * each module's SQL texts) against the statements themselves, on real PostgreSQL with the
 * schema applied (support/pgtest.c). Each statement is prepared and described, never run
 * (PQprepare + PQdescribePrepared): its result must be its list exactly — names, types, order,
 * count — so a column added, dropped, moved or retyped in the SQL, or a table column whose
 * type changes under it, fails here instead of shifting what C reads.
 *
 * A module adds its statements with one include and one line in STATEMENTS below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "admin/admin_statements.h"
#include "admin/answers_traces.h"
#include "admin/messages_statements.h"
#include "sink/sinkdb_results.h"
#include "storage/logread.h"
#include "support/pgtest.h"

static const db_stmt_spec STATEMENTS[] = {
    ADMIN_STATEMENTS(DB_STMT_SPEC)
    MESSAGES_STATEMENTS(DB_STMT_SPEC)
    TRACES_STATEMENTS(DB_STMT_SPEC)
    LOGREAD_STATEMENTS(DB_STMT_SPEC)
    SINKDB_STATEMENTS(DB_STMT_SPEC)
};

static pgtest g_pg;

static int setup(void **state)
{
    (void)state;
    return pgtest_start(&g_pg, "statements");
}

static int teardown(void **state)
{
    (void)state;
    pgtest_stop(&g_pg);
    return 0;
}

/* pg_type.typname of a type oid ("?" if the lookup fails); out holds 64 bytes */
static void type_name(PGconn *c, Oid oid, char *out)
{
    char id[16];
    snprintf(id, sizeof id, "%u", oid);
    const char *vals[1] = {id};
    PGresult *r = PQexecParams(c, "SELECT typname FROM pg_type WHERE oid = $1::oid", 1, NULL, vals, NULL, NULL, 0);
    snprintf(out, 64, "%s", PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "?");
    PQclear(r);
}

/* The differences between one statement's result and its list, on stderr; how many. */
static int check_statement(PGconn *c, const db_stmt_spec *s)
{
    PGresult *p = PQprepare(c, "", s->sql, 0, NULL);
    if (PQresultStatus(p) != PGRES_COMMAND_OK) {
        fprintf(stderr, "%s does not prepare: %s", s->name, PQresultErrorMessage(p));
        PQclear(p);
        return 1;
    }
    PQclear(p);
    PGresult *d = PQdescribePrepared(c, "");
    if (PQresultStatus(d) != PGRES_COMMAND_OK) {
        fprintf(stderr, "%s: describe: %s", s->name, PQresultErrorMessage(d));
        PQclear(d);
        return 1;
    }
    int failures = 0, n = PQnfields(d);
    if (n != s->ncols) {
        fprintf(stderr, "%s has %d result columns, its list names %d\n", s->name, n, s->ncols);
        failures++;
    }
    for (int i = 0; i < n || i < s->ncols; i++) {
        char dt[64] = "";
        if (i < n)
            type_name(c, PQftype(d, i), dt);
        const char *dn = i < n ? PQfname(d, i) : "(none)";
        const char *cn = i < s->ncols ? s->cols[i].name : "(none)";
        const char *ct = i < s->ncols ? s->cols[i].type : "";
        if (strcmp(dn, cn) != 0 || strcmp(dt, ct) != 0) {
            fprintf(stderr, "%s column %d: the database has %s %s, C names %s %s\n", s->name, i + 1, dn, dt, cn, ct);
            failures++;
        }
    }
    PQclear(d);
    return failures;
}

static void test_shapes(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t k = 0; k < sizeof STATEMENTS / sizeof STATEMENTS[0]; k++)
        failures += check_statement(g_pg.conn, &STATEMENTS[k]);
    assert_int_equal(failures, 0);
}

/* The check itself can fail: a list one column short, one with a column renamed, one with a
 * type changed, and a statement that does not prepare are each reported. */
#define SHORT_COLUMNS(X) X(A, queue_uuid, uuid)
#define RENAMED_COLUMNS(X) X(A, id, int8) X(B, oops, int8)
#define RETYPED_COLUMNS(X) X(A, id, int4)
#define BROKEN_COLUMNS(X) X(A, id, int8)
static const char TWO_SQL[] = "SELECT q.uuid AS queue_uuid, q.id FROM queen.queues q";
static const char ONE_SQL[] = "SELECT q.id FROM queen.queues q";
static const char RENAMED_SQL[] = "SELECT q.id, q.id + 1 AS n FROM queen.queues q";
static const char BROKEN_SQL[] = "SELECT q.no_such_column AS id FROM queen.queues q";

static void test_mismatches_fail(void **state)
{
    (void)state;
    const db_stmt_spec wrong[] = {
        {"short", TWO_SQL, (const db_col_spec[]){SHORT_COLUMNS(DB_COL_SPEC)}, 1},
        {"renamed", RENAMED_SQL, (const db_col_spec[]){RENAMED_COLUMNS(DB_COL_SPEC)}, 2},
        {"retyped", ONE_SQL, (const db_col_spec[]){RETYPED_COLUMNS(DB_COL_SPEC)}, 1},
        {"broken", BROKEN_SQL, (const db_col_spec[]){BROKEN_COLUMNS(DB_COL_SPEC)}, 1},
    };
    fprintf(stderr, "(the four reports below are expected)\n");
    assert_int_equal(check_statement(g_pg.conn, &wrong[0]), 2); /* count, and column 2 */
    assert_int_equal(check_statement(g_pg.conn, &wrong[1]), 1);
    assert_int_equal(check_statement(g_pg.conn, &wrong[2]), 1);
    assert_int_equal(check_statement(g_pg.conn, &wrong[3]), 1);
    const db_stmt_spec right[] = {DB_STMT_SPEC(ONE_SQL, BROKEN_COLUMNS)};
    assert_int_equal(check_statement(g_pg.conn, &right[0]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_mismatches_fail),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
