/* embedded.h — the private PostgreSQL cluster a node runs when no database is configured.
 *
 * Layout under QUEEN_DATA_DIR: pg/ (the cluster), run/ (its unix socket), log/ (its server
 * log), queen.lock (held while a node uses the directory, so two nodes never share one
 * embedded cluster). The server listens on the unix socket only. As root, the cluster belongs
 * to the `postgres` user and every command runs as that user.
 *
 * embedded_start and embedded_stop block (they run before the loop starts and after it ends).
 * embedded_supervise_start watches the postmaster from the loop and restarts it if it dies. */
#ifndef QUEEN_DB_EMBEDDED_H
#define QUEEN_DB_EMBEDDED_H

#include <uv.h>

typedef struct embedded_pg {
    char *data_dir;  /* absolute */
    char *pgdata;
    char *sockdir;
    char *logfile;
    char *bindir;
    char *conninfo;  /* for libpq: host=<sockdir> ... dbname=queen */
    int lock_fd;
    int as_postgres; /* running as root: commands run as the postgres user */
    unsigned uid, gid;
    int we_started;  /* stop it on exit */
    /* supervision */
    uv_timer_t timer;
    uv_process_t proc;
    int restarting;
    int timer_active;
} embedded_pg;

/* Returns 0, or -1 after logging why. */
int embedded_start(embedded_pg *e, const char *data_dir, const char *bindir_opt);
void embedded_supervise_start(embedded_pg *e, uv_loop_t *loop);
void embedded_supervise_stop(embedded_pg *e);
void embedded_stop(embedded_pg *e);
void embedded_free(embedded_pg *e);

#endif
