/* migrate.c — applies the embedded migrations at boot, once, even when several nodes boot
 * at the same time: the whole run holds a session advisory lock, and each migration commits
 * with its version row. Blocking libpq: it runs before the event loop starts. */
#include "migrate.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

/* Arbitrary constant, the same on every node: "queen migrations". */
#define MIGRATE_LOCK_KEY 0x717565656e6d6967LL

static int exec_ok(PGconn *c, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        snprintf(err, errlen, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

int migrate_apply(PGconn *c, char *err, size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)", (long long)MIGRATE_LOCK_KEY);
    if (exec_ok(c, sql, err, errlen) < 0)
        return -1;
    int rc = -1;
    int *applied = NULL;
    if (exec_ok(c,
                "CREATE TABLE IF NOT EXISTS public.queen_schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                err, errlen) < 0)
        goto out;
    /* Every migration whose version is not recorded yet is applied, not only those above the
     * highest recorded one: versions are reserved per piece of work and can land out of order
     * (010 before 003), and a database that already has 010 must still get 003. */
    PGresult *r = PQexec(c, "SELECT version FROM public.queen_schema_migrations");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        PQclear(r);
        goto out;
    }
    int napplied = PQntuples(r);
    applied = calloc((size_t)napplied + 1, sizeof *applied);
    if (!applied) {
        PQclear(r);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < napplied; i++)
        applied[i] = atoi(PQgetvalue(r, i, 0));
    PQclear(r);
    for (unsigned i = 0; i < queen_migrations_count; i++) {
        const struct migration *m = &queen_migrations[i];
        int have = 0;
        for (int k = 0; k < napplied && !have; k++)
            have = applied[k] == m->version;
        if (have)
            continue;
        log_info("db", "applying migration %s", m->name);
        if (exec_ok(c, "BEGIN", err, errlen) < 0)
            goto out;
        if (exec_ok(c, m->sql, err, errlen) < 0) {
            char e2[64];
            exec_ok(c, "ROLLBACK", e2, sizeof e2);
            char tmp[512];
            snprintf(tmp, sizeof tmp, "migration %s failed: %s", m->name, err);
            snprintf(err, errlen, "%s", tmp);
            goto out;
        }
        const char *vals[2];
        char ver[16];
        snprintf(ver, sizeof ver, "%d", m->version);
        vals[0] = ver;
        vals[1] = m->name;
        r = PQexecParams(c, "INSERT INTO public.queen_schema_migrations (version, name) VALUES ($1, $2)", 2, NULL,
                         vals, NULL, NULL, 0);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        PQclear(r);
        if (!ok || exec_ok(c, "COMMIT", err, errlen) < 0)
            goto out;
    }
    rc = 0;
out:
    free(applied);
    snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", (long long)MIGRATE_LOCK_KEY);
    char e3[128];
    exec_ok(c, sql, e3, sizeof e3);
    return rc;
}

int migrate_schema_version(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT coalesce(max(version), 0) FROM public.queen_schema_migrations");
    int v = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
}
