/* migrate.h — versioned schema migrations applied at boot. */
#ifndef QUEEN_DB_MIGRATE_H
#define QUEEN_DB_MIGRATE_H

struct migration {
    int version;
    const char *name;
    const char *sql;
};

extern const struct migration queen_migrations[];
extern const unsigned queen_migrations_count;

#endif
