/* pgtest.h — a private PostgreSQL for a unit test: a cluster started with the broker's
 * embedded-PostgreSQL code in a fresh directory under /tmp, the schema applied (migrations,
 * then the stored functions), and a connection to it. Linked into the tests that name it in
 * the Makefile (PGTEST_BINS). */
#ifndef QUEEN_TESTS_PGTEST_H
#define QUEEN_TESTS_PGTEST_H

#include <libpq-fe.h>

#include "db/embedded.h"

typedef struct pgtest {
    embedded_pg emb;
    char dir[64];
    PGconn *conn;
} pgtest;

/* Starts the cluster (dir /tmp/queen-<tag>-XXXXXX), connects, applies the schema. 0, or -1
 * with the reason on stderr. */
int pgtest_start(pgtest *t, const char *tag);
/* Disconnects, stops the cluster and removes its directory. */
void pgtest_stop(pgtest *t);

#endif
