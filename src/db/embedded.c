/* embedded.c — initdb, start, supervise and stop the embedded PostgreSQL cluster. */
#include "embedded.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"

#define T "embedded-pg"
/* Unix socket paths are limited to ~108 bytes by the kernel; PostgreSQL appends
 * "/.s.PGSQL.5432". Past this, the socket moves to /tmp. */
#define SOCK_DIR_MAX 90

static int mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, mode) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, mode) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static char *find_bindir(const char *opt)
{
    if (opt) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/initdb", opt);
        return file_exists(p) ? xstrdup(opt) : NULL;
    }
    int best = -1;
    DIR *d = opendir("/usr/lib/postgresql");
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            int v = atoi(de->d_name);
            char p[PATH_MAX];
            snprintf(p, sizeof p, "/usr/lib/postgresql/%s/bin/initdb", de->d_name);
            if (v > best && file_exists(p))
                best = v;
        }
        closedir(d);
    }
    if (best > 0) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "/usr/lib/postgresql/%d/bin", best);
        return xstrdup(p);
    }
    /* fall back to PATH */
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    char *copy = xstrdup(path), *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/initdb", dir);
        if (file_exists(p)) {
            char *r = xstrdup(dir);
            free(copy);
            return r;
        }
    }
    free(copy);
    return NULL;
}

/* Runs argv (as postgres when e->as_postgres), output appended to e->logfile. Returns the exit
 * status, or -1 if it could not run. */
static int run(embedded_pg *e, char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* drop privileges first, so every file the command creates belongs to postgres */
        if (e->as_postgres) {
            if (setgid(e->gid) != 0 || initgroups("postgres", e->gid) != 0 || setuid(e->uid) != 0)
                _exit(126);
        }
        int fd = open(e->logfile, O_WRONLY | O_CREAT | O_APPEND, 0640);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, 0);
            close(nul);
        }
        if (chdir("/") != 0)
            _exit(126);
        setenv("LC_ALL", "C", 1);
        /* the cluster must outlive a Ctrl-C aimed at the broker's terminal */
        setsid();
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void tail_log(embedded_pg *e)
{
    FILE *f = fopen(e->logfile, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, sz > 2000 ? sz - 2000 : 0, SEEK_SET);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n')
            line[n - 1] = '\0';
        log_error(T, "%s", line);
    }
    fclose(f);
}

static int chown_postgres(embedded_pg *e, const char *p)
{
    if (!e->as_postgres)
        return 0;
    if (chown(p, e->uid, e->gid) != 0) {
        log_error(T, "cannot give %s to the postgres user: %s", p, strerror(errno));
        return -1;
    }
    return 0;
}

/* The postgres user must be able to walk down to the data directory. */
static void ensure_traversable(embedded_pg *e, const char *dir)
{
    if (!e->as_postgres)
        return;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (;;) {
        char *slash = strrchr(tmp, '/');
        if (!slash || slash == tmp)
            break;
        *slash = '\0';
        struct stat st;
        if (stat(tmp, &st) != 0)
            break;
        int ok = (st.st_mode & S_IXOTH) || (st.st_uid == e->uid && (st.st_mode & S_IXUSR)) ||
                 (st.st_gid == e->gid && (st.st_mode & S_IXGRP));
        if (!ok) {
            if (chmod(tmp, st.st_mode | S_IXOTH) == 0)
                log_warn(T, "added o+x to %s so the postgres user can reach the data directory", tmp);
            else
                log_error(T, "the postgres user cannot reach %s (%s)", tmp, strerror(errno));
        }
    }
}

static int ensure_database(embedded_pg *e)
{
    char ci[PATH_MAX + 128];
    snprintf(ci, sizeof ci, "host=%s port=5432 user=postgres dbname=postgres connect_timeout=10", e->sockdir);
    PGconn *c = PQconnectdb(ci);
    if (PQstatus(c) != CONNECTION_OK) {
        log_error(T, "cannot connect to the embedded cluster: %s", PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    PGresult *r = PQexec(c, "SELECT 1 FROM pg_database WHERE datname = 'queen'");
    int exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    if (!exists) {
        r = PQexec(c, "CREATE DATABASE queen");
        if (PQresultStatus(r) != PGRES_COMMAND_OK && !strstr(PQresultErrorMessage(r), "already exists")) {
            log_error(T, "cannot create database queen: %s", PQresultErrorMessage(r));
            PQclear(r);
            PQfinish(c);
            return -1;
        }
        PQclear(r);
    }
    PQfinish(c);
    return 0;
}

static int pg_running(embedded_pg *e)
{
    char ctl[PATH_MAX];
    snprintf(ctl, sizeof ctl, "%s/pg_ctl", e->bindir);
    char *argv[] = {ctl, "status", "-D", e->pgdata, NULL};
    return run(e, argv) == 0;
}

static int pg_start(embedded_pg *e)
{
    char ctl[PATH_MAX], opts[PATH_MAX + 64];
    snprintf(ctl, sizeof ctl, "%s/pg_ctl", e->bindir);
    snprintf(opts, sizeof opts, "-k %s -p 5432 -c listen_addresses=''", e->sockdir);
    char *argv[] = {ctl, "start", "-w", "-t", "120", "-D", e->pgdata, "-l", e->logfile, "-o", opts, NULL};
    return run(e, argv) == 0 ? 0 : -1;
}

int embedded_start(embedded_pg *e, const char *data_dir, const char *bindir_opt)
{
    memset(e, 0, sizeof *e);
    e->lock_fd = -1;
    e->bindir = find_bindir(bindir_opt);
    if (!e->bindir) {
        log_error(T, "no PostgreSQL server binaries found (looked in %s); install postgresql or set "
                     "QUEEN_PG_URL",
                  bindir_opt ? bindir_opt : "/usr/lib/postgresql/*/bin and PATH");
        return -1;
    }
    if (mkdir_p(data_dir, 0755) != 0) {
        log_error(T, "cannot create QUEEN_DATA_DIR %s: %s", data_dir, strerror(errno));
        return -1;
    }
    char abs[PATH_MAX];
    if (!realpath(data_dir, abs)) {
        log_error(T, "cannot resolve QUEEN_DATA_DIR %s: %s", data_dir, strerror(errno));
        return -1;
    }
    e->data_dir = xstrdup(abs);
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/queen.lock", abs);
    e->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        log_error(T, "another queen process is using %s (its embedded PostgreSQL belongs to that process)", abs);
        return -1;
    }
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw) {
            log_error(T, "running as root needs a 'postgres' user to run the embedded cluster; create one or run "
                         "queen as a normal user");
            return -1;
        }
        e->as_postgres = 1;
        e->uid = pw->pw_uid;
        e->gid = pw->pw_gid;
    }
    snprintf(p, sizeof p, "%s/pg", abs);
    e->pgdata = xstrdup(p);
    snprintf(p, sizeof p, "%s/log", abs);
    char logdir[PATH_MAX + 32];
    snprintf(logdir, sizeof logdir, "%s", p);
    snprintf(p, sizeof p, "%s/log/postgresql.log", abs);
    e->logfile = xstrdup(p);
    snprintf(p, sizeof p, "%s/run", abs);
    if (strlen(p) > SOCK_DIR_MAX) {
        /* a short, stable path derived from the data directory */
        unsigned long h = 5381;
        for (const char *s = abs; *s; s++)
            h = h * 33 + (unsigned char)*s;
        snprintf(p, sizeof p, "/tmp/queen-pg-%08lx", h & 0xffffffffUL);
    }
    e->sockdir = xstrdup(p);
    if (mkdir_p(e->pgdata, 0700) != 0 || mkdir_p(logdir, 0755) != 0 || mkdir_p(e->sockdir, 0755) != 0) {
        log_error(T, "cannot create directories under %s: %s", abs, strerror(errno));
        return -1;
    }
    chmod(e->pgdata, 0700);
    if (chown_postgres(e, e->pgdata) || chown_postgres(e, logdir) || chown_postgres(e, e->sockdir))
        return -1;
    ensure_traversable(e, e->pgdata);
    ensure_traversable(e, e->sockdir);

    snprintf(p, sizeof p, "%s/PG_VERSION", e->pgdata);
    if (!file_exists(p)) {
        log_info(T, "initialising a PostgreSQL cluster in %s", e->pgdata);
        char initdb[PATH_MAX];
        snprintf(initdb, sizeof initdb, "%s/initdb", e->bindir);
        char *argv[] = {initdb, "-D", e->pgdata, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", NULL};
        if (run(e, argv) != 0) {
            log_error(T, "initdb failed; its output is in %s", e->logfile);
            tail_log(e);
            return -1;
        }
        snprintf(p, sizeof p, "%s/postgresql.conf", e->pgdata);
        FILE *f = fopen(p, "a");
        if (f) {
            /* Settings for a broker's working set. Durability settings stay at their defaults:
             * fsync and synchronous_commit on, so a 2xx always means committed to disk. */
            fputs("\n# added by queen\n"
                  "listen_addresses = ''\n"
                  "max_connections = 200\n"
                  "shared_buffers = 256MB\n"
                  "max_wal_size = 4GB\n"
                  "checkpoint_timeout = 15min\n"
                  "wal_compression = lz4\n"
                  "default_toast_compression = lz4\n"
                  "log_min_messages = warning\n"
                  "timezone = 'UTC'\n",
                  f);
            fclose(f);
        }
    }
    if (pg_running(e)) {
        log_info(T, "adopting the PostgreSQL server already running in %s", e->pgdata);
    } else {
        log_info(T, "starting PostgreSQL (socket in %s, log in %s)", e->sockdir, e->logfile);
        if (pg_start(e) != 0) {
            log_error(T, "PostgreSQL did not start; the end of its log follows");
            tail_log(e);
            return -1;
        }
    }
    e->we_started = 1;
    if (ensure_database(e) != 0)
        return -1;
    snprintf(p, sizeof p, "host=%s port=5432 user=postgres dbname=queen", e->sockdir);
    e->conninfo = xstrdup(p);
    return 0;
}

static void on_restart_exit(uv_process_t *proc, int64_t status, int sig)
{
    embedded_pg *e = proc->data;
    (void)sig;
    e->restarting = 0;
    if (status == 0)
        log_info(T, "PostgreSQL restarted");
    else
        log_error(T, "PostgreSQL restart failed (pg_ctl exit %lld); see %s", (long long)status, e->logfile);
    uv_close((uv_handle_t *)proc, NULL);
}

static int postmaster_alive(embedded_pg *e)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/postmaster.pid", e->pgdata);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    long pid = 0;
    int n = fscanf(f, "%ld", &pid);
    fclose(f);
    if (n != 1 || pid <= 0)
        return 0;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static void on_watch(uv_timer_t *t)
{
    embedded_pg *e = t->data;
    if (e->restarting || postmaster_alive(e))
        return;
    log_warn(T, "the embedded PostgreSQL server is not running; restarting it");
    static char ctl[PATH_MAX], opts[PATH_MAX + 64];
    snprintf(ctl, sizeof ctl, "%s/pg_ctl", e->bindir);
    snprintf(opts, sizeof opts, "-k %s -p 5432 -c listen_addresses=''", e->sockdir);
    char *args[] = {ctl, "start", "-w", "-t", "120", "-D", e->pgdata, "-l", e->logfile, "-o", opts, NULL};
    uv_process_options_t o;
    memset(&o, 0, sizeof o);
    o.file = ctl;
    o.args = args;
    o.exit_cb = on_restart_exit;
    o.cwd = "/";
    o.flags = UV_PROCESS_DETACHED;
    if (e->as_postgres) {
        o.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
        o.uid = e->uid;
        o.gid = e->gid;
    }
    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_IGNORE}};
    o.stdio = stdio;
    o.stdio_count = 3;
    e->proc.data = e;
    int rc = uv_spawn(t->loop, &e->proc, &o);
    if (rc != 0) {
        log_error(T, "cannot run pg_ctl: %s", uv_strerror(rc));
        return;
    }
    e->restarting = 1;
}

void embedded_supervise_start(embedded_pg *e, uv_loop_t *loop)
{
    uv_timer_init(loop, &e->timer);
    e->timer.data = e;
    uv_timer_start(&e->timer, on_watch, 2000, 2000);
    e->timer_active = 1;
}

void embedded_supervise_stop(embedded_pg *e)
{
    if (e->timer_active) {
        uv_timer_stop(&e->timer);
        uv_close((uv_handle_t *)&e->timer, NULL);
        e->timer_active = 0;
    }
}

void embedded_stop(embedded_pg *e)
{
    if (!e->we_started)
        return;
    char ctl[PATH_MAX];
    snprintf(ctl, sizeof ctl, "%s/pg_ctl", e->bindir);
    char *argv[] = {ctl, "stop", "-D", e->pgdata, "-m", "fast", "-w", "-t", "60", NULL};
    if (run(e, argv) != 0) {
        log_warn(T, "fast stop did not finish; stopping immediately");
        char *argv2[] = {ctl, "stop", "-D", e->pgdata, "-m", "immediate", "-w", NULL};
        run(e, argv2);
    } else {
        log_info(T, "PostgreSQL stopped");
    }
    e->we_started = 0;
}

void embedded_free(embedded_pg *e)
{
    free(e->data_dir);
    free(e->pgdata);
    free(e->sockdir);
    free(e->logfile);
    free(e->bindir);
    free(e->conninfo);
    if (e->lock_fd >= 0)
        close(e->lock_fd);
    memset(e, 0, sizeof *e);
    e->lock_fd = -1;
}
