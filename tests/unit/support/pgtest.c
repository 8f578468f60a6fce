/* pgtest.c — see pgtest.h. */
#include "pgtest.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/log.h"
#include "db/migrate.h"
#include "queue/options.h"

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

int pgtest_start(pgtest *t, const char *tag)
{
    memset(t, 0, sizeof *t);
    log_setup(LOG_WARN, LOG_FORMAT_TEXT);
    snprintf(t->dir, sizeof t->dir, "/tmp/queen-%s-XXXXXX", tag);
    if (!mkdtemp(t->dir)) {
        perror("mkdtemp");
        return -1;
    }
    chmod(t->dir, 0755);
    if (embedded_start(&t->emb, t->dir, NULL) < 0) {
        fprintf(stderr, "embedded PostgreSQL did not start in %s\n", t->dir);
        return -1;
    }
    t->conn = PQconnectdb(t->emb.conninfo);
    if (PQstatus(t->conn) != CONNECTION_OK) {
        fprintf(stderr, "connect: %s", PQerrorMessage(t->conn));
        return -1;
    }
    buf defaults;
    buf_init(&defaults, 0);
    queue_options_defaults_json(&defaults);
    qerr_detail err;
    int rc = migrate_apply(t->conn, buf_cstr(&defaults), &err) == QERR_OK ? 0 : -1;
    buf_free(&defaults);
    if (rc < 0)
        fprintf(stderr, "migrations: %s\n", err.text);
    return rc;
}

void pgtest_stop(pgtest *t)
{
    if (t->conn)
        PQfinish(t->conn);
    t->conn = NULL;
    embedded_stop(&t->emb);
    embedded_free(&t->emb);
    if (t->dir[0])
        nftw(t->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
