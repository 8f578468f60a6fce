/* The column lists C reads its own statements' results by (db/statements.h, one header beside
 * each module's SQL texts) against the statements themselves, on real PostgreSQL with the
 * schema applied (support/pgtest.c). Each statement is prepared and described, never run
 * (PQprepare + PQdescribePrepared): its result must be its list exactly — names, types, order,
 * count — so a column added, dropped, moved or retyped in the SQL, or a table column whose
 * type changes under it, fails here instead of shifting what C reads.
 *
 * A module adds its statements with one include and one line in STATEMENTS below. And every
 * SQL text constant in src/ that returns rows of its own (SELECT, WITH, RETURNING; not one call
 * of a stored function, which test_db_results.c checks) must be listed there, or in PENDING:
 * the statements whose modules still read them by column number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <regex.h>
#include <sys/stat.h>

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

/* Not named yet: their modules read them by column number. Remove a name when its module lists
 * the statement above. */
static const char *const PENDING[] = {
    /* KV (kv/kv_ops.c) and timers (timers/timer_ops.c) */
    "KV_GET_SQL", "KV_LIST_SQL", "TIMER_PEEK_SQL", "TIMER_LIST_SQL", "TIMER_UNSEALED_SQL", "TIMER_RESEAL_SQL",
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

/* ---- every statement of C's own is listed ------------------------------------------------ */

static int g_unlisted, g_seen;

static int listed(const char *name)
{
    for (size_t k = 0; k < sizeof STATEMENTS / sizeof STATEMENTS[0]; k++)
        if (strcmp(STATEMENTS[k].name, name) == 0)
            return 1;
    for (size_t k = 0; k < sizeof PENDING / sizeof PENDING[0]; k++)
        if (strcmp(PENDING[k], name) == 0)
            return 1;
    return 0;
}

/* The text of the string literals from p up to the `;` that ends the initializer (macros
 * between them are skipped). */
static char *initializer_text(const char *p)
{
    size_t cap = 256, n = 0;
    char *out = malloc(cap);
    for (int in = 0; *p && (in || *p != ';'); p++) {
        if (*p == '"') {
            in = !in;
            continue;
        }
        if (!in)
            continue;
        if (*p == '\\' && p[1])
            p++;
        if (n + 2 > cap)
            out = realloc(out, cap *= 2);
        out[n++] = *p;
    }
    out[n] = '\0';
    return out;
}

static int scan_file(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    size_t len = strlen(path);
    if (flag != FTW_F || len < 3 || strcmp(path + len - 2, ".c") != 0)
        return 0;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    char *text = calloc((size_t)st->st_size + 1, 1);
    size_t got = fread(text, 1, (size_t)st->st_size, fp);
    fclose(fp);
    text[got] = '\0';
    regex_t decl, rows, call;
    assert_int_equal(regcomp(&decl, "const char ([A-Za-z0-9_]+)\\[\\] =", REG_EXTENDED), 0);
    assert_int_equal(regcomp(&rows, "^[[:space:]]*(SELECT|WITH)[[:space:]]|[[:space:]]RETURNING[[:space:]]",
                             REG_EXTENDED | REG_ICASE),
                     0);
    /* one call of a stored function, whose columns test_db_results.c checks */
    assert_int_equal(regcomp(&call, "^SELECT ([a-z_0-9, *.]+ FROM )?queen\\.[a-z_0-9]+\\(.*\\)( ORDER BY [a-z_0-9, ]+)?$",
                             REG_EXTENDED),
                     0);
    regmatch_t m[2];
    for (const char *at = text; regexec(&decl, at, 2, m, 0) == 0; at += m[0].rm_eo) {
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), at + m[1].rm_so);
        char *sql = initializer_text(at + m[0].rm_eo);
        if (regexec(&rows, sql, 0, NULL, 0) == 0 && regexec(&call, sql, 0, NULL, 0) != 0) {
            g_seen++;
            if (!listed(name)) {
                fprintf(stderr, "%s: %s returns rows of its own, and no column list names them (db/statements.h)\n",
                        path, name);
                g_unlisted++;
            }
        }
        free(sql);
    }
    regfree(&decl);
    regfree(&rows);
    regfree(&call);
    free(text);
    return 0;
}

static void test_every_statement_listed(void **state)
{
    (void)state;
    /* make unit runs from the repository root */
    assert_int_equal(nftw("src", scan_file, 16, FTW_PHYS), 0);
    /* every listed statement but the two built by a macro (ADMIN_GROUPED_BY), and the pending */
    assert_true(g_seen >= (int)(sizeof STATEMENTS / sizeof STATEMENTS[0]) - 2);
    assert_int_equal(g_unlisted, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_mismatches_fail),
        cmocka_unit_test(test_every_statement_listed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
