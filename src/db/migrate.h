/* migrate.h — versioned schema migrations applied at boot. */
#ifndef QUEEN_DB_MIGRATE_H
#define QUEEN_DB_MIGRATE_H

#include <stddef.h>

struct migration {
    int version;
    const char *name;
    const char *sql;
};

extern const struct migration queen_migrations[];
extern const unsigned queen_migrations_count;

struct pg_conn;
/* Applies every migration the database has not recorded yet, in version order (also one
 * numbered below the newest applied: versions are reserved per piece of work and may land out
 * of order). c is a blocking connection. */
int migrate_apply(struct pg_conn *c, char *err, size_t errlen);
int migrate_schema_version(struct pg_conn *c);

#endif
