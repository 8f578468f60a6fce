/* migrate.c — applies the embedded schema at boot, once, even when several nodes boot at the
 * same time: the whole run holds a session advisory lock. First the migrations (tables), each
 * committed with its version row and checksum; then, in one transaction, the retired functions
 * dropped, every stored function (re)created from src/db/functions/ and the option defaults
 * written, so the database runs the function bodies of the node that booted last
 * (docs/storage.md, "Migrations and functions"). Blocking libpq: it runs before the event loop
 * starts. */
#include "migrate.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

/* Arbitrary constant, the same on every node: "queen migrations". */
#define MIGRATE_LOCK_KEY 0x717565656e6d6967LL

/* Runs sql; on failure writes "<what>: <server message>" to err. */
static int exec_ok(PGconn *c, const char *sql, const char *what, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY;
    if (!ok) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        /* 42P13: CREATE OR REPLACE cannot change a function's result type or parameter names */
        const char *hint = state && strcmp(state, "42P13") == 0
                               ? " (a function whose result or parameters change gets a new _vN name, and the old "
                                 "one retires: docs/storage.md)"
                               : "";
        snprintf(err, errlen, "%s: %s%s", what, PQresultErrorMessage(r), hint);
    }
    PQclear(r);
    return ok ? 0 : -1;
}

static void rollback(PGconn *c)
{
    char e[64];
    exec_ok(c, "ROLLBACK", "rollback", e, sizeof e);
}

typedef struct recorded {
    int version;
    char checksum[65]; /* "" = recorded by a build before checksums */
} recorded;

static const recorded *find_recorded(const recorded *rec, int n, int version)
{
    for (int k = 0; k < n; k++)
        if (rec[k].version == version)
            return &rec[k];
    return NULL;
}

static int run_migration(PGconn *c, const struct migration *m, char *err, size_t errlen)
{
    char what[96];
    snprintf(what, sizeof what, "migration %s failed", m->name);
    log_info("db", "applying migration %s", m->name);
    if (exec_ok(c, "BEGIN", what, err, errlen) < 0)
        return -1;
    if (exec_ok(c, m->sql, what, err, errlen) < 0) {
        rollback(c);
        return -1;
    }
    char ver[16];
    snprintf(ver, sizeof ver, "%d", m->version);
    const char *vals[3] = {ver, m->name, m->checksum};
    PGresult *r = PQexecParams(
        c, "INSERT INTO public.queen_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)", 3, NULL, vals,
        NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        snprintf(err, errlen, "%s: %s", what, PQresultErrorMessage(r));
    PQclear(r);
    if (!ok) {
        rollback(c);
        return -1;
    }
    return exec_ok(c, "COMMIT", what, err, errlen);
}

/* A recorded migration whose checksum is missing was applied by a build before checksums
 * (before issue 10, whose restructuring moved the functions out of the migrations: the one
 * edit a landed migration had). It gets this binary's checksum; any later edit is refused. */
static int check_recorded(PGconn *c, const struct migration *m, const recorded *rec, char *err, size_t errlen)
{
    if (rec->checksum[0]) {
        if (strcmp(rec->checksum, m->checksum) == 0)
            return 0;
        snprintf(err, errlen,
                 "migration %s was changed after the database applied it (recorded sha-256 %.16s..., this binary "
                 "carries %.16s...): a landed migration is never edited, a change is a new migration",
                 m->name, rec->checksum, m->checksum);
        return -2;
    }
    char ver[16];
    snprintf(ver, sizeof ver, "%d", m->version);
    const char *vals[2] = {ver, m->checksum};
    PGresult *r = PQexecParams(c,
                               "UPDATE public.queen_schema_migrations SET checksum = $2 "
                               "WHERE version = $1 AND checksum IS NULL",
                               2, NULL, vals, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        snprintf(err, errlen, "recording the checksum of %s: %s", m->name, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The retired functions, then every stored function, then the option defaults: one
 * transaction, so a database has all of one binary's bodies or none of them. */
static int apply_functions(PGconn *c, const char *option_defaults, char *err, size_t errlen)
{
    if (exec_ok(c, "BEGIN", "stored functions", err, errlen) < 0)
        return -1;
    if (exec_ok(c, queen_retired_sql, "dropping retired functions (src/db/retired.sql)", err, errlen) < 0)
        goto fail;
    for (unsigned i = 0; i < queen_functions_count; i++) {
        char what[128];
        snprintf(what, sizeof what, "src/db/functions/%s.sql", queen_functions[i].name);
        if (exec_ok(c, queen_functions[i].sql, what, err, errlen) < 0)
            goto fail;
    }
    const char *vals[1] = {option_defaults};
    PGresult *r = PQexecParams(c,
                               "INSERT INTO queen.option_defaults (id, options) VALUES (true, $1::jsonb) "
                               "ON CONFLICT (id) DO UPDATE SET options = excluded.options",
                               1, NULL, vals, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        snprintf(err, errlen, "writing the option defaults: %s", PQresultErrorMessage(r));
    PQclear(r);
    if (!ok)
        goto fail;
    return exec_ok(c, "COMMIT", "stored functions", err, errlen);
fail:
    rollback(c);
    return -1;
}

/* migrate_apply's steps: 0, -1 when the database failed, -2 when a recorded migration is not
 * this binary's (err says which). */
static int apply(PGconn *c, const char *option_defaults, char *err, size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)", (long long)MIGRATE_LOCK_KEY);
    if (exec_ok(c, sql, "migration lock", err, errlen) < 0)
        return -1;
    int rc = -1;
    recorded *rec = NULL;
    if (exec_ok(c,
                "SET client_min_messages = warning;" /* no NOTICE for what exists, or is gone, already */
                "CREATE TABLE IF NOT EXISTS public.queen_schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());"
                "ALTER TABLE public.queen_schema_migrations ADD COLUMN IF NOT EXISTS checksum text",
                "migration table", err, errlen) < 0)
        goto out;
    /* Every migration whose version is not recorded yet is applied, not only those above the
     * highest recorded one: versions are reserved per piece of work and can land out of order
     * (010 before 003), and a database that already has 010 must still get 003. */
    PGresult *r = PQexec(c, "SELECT version, coalesce(checksum, '') FROM public.queen_schema_migrations");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "reading the migration table: %s", PQresultErrorMessage(r));
        PQclear(r);
        goto out;
    }
    int nrec = PQntuples(r);
    rec = calloc((size_t)nrec + 1, sizeof *rec);
    if (!rec) {
        PQclear(r);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < nrec; i++) {
        rec[i].version = atoi(PQgetvalue(r, i, 0));
        snprintf(rec[i].checksum, sizeof rec[i].checksum, "%s", PQgetvalue(r, i, 1));
    }
    PQclear(r);
    for (unsigned i = 0; i < queen_migrations_count; i++) {
        const struct migration *m = &queen_migrations[i];
        const recorded *have = find_recorded(rec, nrec, m->version);
        int step = have ? check_recorded(c, m, have, err, errlen) : run_migration(c, m, err, errlen);
        if (step < 0) {
            rc = step;
            goto out;
        }
    }
    /* A version this binary does not carry was applied by a newer build: its functions are
     * newer than ours (and may be what its nodes call), so they stay as they are. */
    int newer = 0;
    for (int k = 0; k < nrec && !newer; k++) {
        int known = 0;
        for (unsigned i = 0; i < queen_migrations_count && !known; i++)
            known = queen_migrations[i].version == rec[k].version;
        if (!known) {
            newer = rec[k].version;
            log_warn("db",
                     "the database has migration %d, which this binary does not carry: a newer build migrated it, "
                     "and its stored functions are left as they are",
                     newer);
        }
    }
    if (!newer && apply_functions(c, option_defaults, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    free(rec);
    snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", (long long)MIGRATE_LOCK_KEY);
    char e3[128];
    exec_ok(c, sql, "migration unlock", e3, sizeof e3);
    return rc;
}

qerr migrate_apply(PGconn *c, const char *option_defaults, qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    d->text[0] = '\0';
    int rc = apply(c, option_defaults, d->text, sizeof d->text);
    if (rc == 0)
        return QERR_OK;
    qerr e = rc == -2 ? QERR_CONFLICT : QERR_DATABASE;
    d->code = rc == -2 ? "migration_changed" : NULL;
    d->reason = NULL;
    d->index = -1;
    return e;
}

int migrate_schema_version(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT coalesce(max(version), 0) FROM public.queen_schema_migrations");
    int v = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
}
