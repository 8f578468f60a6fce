/* migrate.h — the schema, applied at boot: versioned migrations (tables), then the stored
 * functions, under one advisory lock (docs/storage.md, "Migrations and functions"). */
#ifndef QUEEN_DB_MIGRATE_H
#define QUEEN_DB_MIGRATE_H

#include <stddef.h>

#include "core/qerr.h"

/* src/db/migrations/NNN_name.sql: applied once, recorded with its sha-256, never edited. */
struct migration {
    int version;
    const char *name;
    const char *checksum; /* sha-256 of the file, hex */
    const char *sql;
};

enum stored_kind { SF_FUNCTION, SF_VIEW };

/* src/db/functions/<name>.sql: the only body of queen.<name>, CREATE OR REPLACE at every boot.
 * In dependency order (scripts/embed-sql.sh). */
struct stored_function {
    const char *name;
    enum stored_kind kind;
    const char *sql;
};

extern const struct migration queen_migrations[];
extern const unsigned queen_migrations_count;
extern const struct stored_function queen_functions[];
extern const unsigned queen_functions_count;
extern const char queen_retired_sql[]; /* src/db/retired.sql */

struct pg_conn;
/* Applies every migration the database has not recorded yet, in version order (also one
 * numbered below the newest applied: versions are reserved per piece of work and may land out
 * of order), refuses to go on when a recorded migration's checksum differs from this binary's,
 * then in one transaction drops the retired functions, (re)creates every stored function and
 * writes option_defaults (the full default option set as a JSON object, src/queue/options.c).
 * When the database records a migration this binary does not carry, a newer build owns the
 * functions and they are left alone. c is a blocking connection. Returns QERR_OK;
 * QERR_CONFLICT (code migration_changed) when a recorded migration differs from this binary's;
 * QERR_DATABASE when the database failed. The detail is for the boot log. */
qerr migrate_apply(struct pg_conn *c, const char *option_defaults, qerr_detail *err);
int migrate_schema_version(struct pg_conn *c);

#endif
