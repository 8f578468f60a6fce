/* fuzz_config — config_load with an environment made from the input.
 *
 * Input: lines "NAME=VALUE" separated by '\n' (a line without '=' is ignored). The injected
 * getenv answers from them (first match wins). config_load must never crash; it returns 0 with
 * a sane config, or -1 with one boot line starting "ERROR boot: FATAL: ". When it builds a
 * libpq conninfo from PG_*, the conninfo must parse back (libpq quoting) to the given values.
 * A bad QUEEN_ENCRYPTION_KEY's line shows its length, never its value. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_config: check failed at line %d: %s\n", __LINE__, #c);                     \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

#define MAX_VARS 64

static char *g_names[MAX_VARS];
static char *g_values[MAX_VARS];
static size_t g_n;

static const char *fuzz_getenv(const char *name)
{
    for (size_t i = 0; i < g_n; i++)
        if (strcmp(g_names[i], name) == 0)
            return g_values[i];
    return NULL;
}

static int blank(const char *v)
{
    if (!v)
        return 1;
    for (; *v; v++)
        if (*v != ' ' && *v != '\t' && *v != '\n' && *v != '\r')
            return 0;
    return 1;
}

/* The value config_load should have used for a row with an optional alias. */
static const char *given(const char *name, const char *alias)
{
    const char *v = fuzz_getenv(name);
    if (!blank(v))
        return v;
    if (alias) {
        v = fuzz_getenv(alias);
        if (!blank(v))
            return v;
    }
    return NULL;
}

/* Reads the next keyword='value' of a conninfo built by config_load; returns 0 or -1. */
static int next_pair(const char **pp, char *key, size_t kcap, char *val, size_t vcap)
{
    const char *p = *pp;
    while (*p == ' ')
        p++;
    if (!*p)
        return -1;
    size_t k = 0;
    while (*p && *p != '=' && k + 1 < kcap)
        key[k++] = *p++;
    key[k] = '\0';
    if (*p++ != '=' || *p++ != '\'')
        return -2;
    size_t n = 0;
    for (;;) {
        if (!*p)
            return -2; /* unterminated quote */
        if (*p == '\'')
            break;
        if (*p == '\\') {
            p++;
            if (!*p)
                return -2;
        }
        if (n + 1 >= vcap)
            return -2;
        val[n++] = *p++;
    }
    val[n] = '\0';
    *pp = p + 1;
    return 0;
}

static void check_conninfo(const queen_config *c)
{
    static const char *const keys[] = {"host", "port", "user", "password", "dbname", "sslmode"};
    const char *want[6] = {
        c->pg_host ? c->pg_host : "localhost",
        c->pg_port_s ? c->pg_port_s : "5432",
        c->pg_user ? c->pg_user : "postgres",
        c->pg_password,
        c->pg_db ? c->pg_db : "postgres",
        c->pg_use_ssl ? "require" : "prefer",
    };
    const char *p = c->pg_conninfo;
    static char key[64], val[8192];
    for (size_t i = 0; i < 6; i++) {
        if (!want[i])
            continue;
        int r = next_pair(&p, key, sizeof key, val, sizeof val);
        if (r != 0 || strcmp(key, keys[i]) != 0 || strcmp(val, want[i]) != 0) {
            fprintf(stderr, "fuzz_config: conninfo does not carry %s=%s: [%s]\n", keys[i], want[i], c->pg_conninfo);
            abort();
        }
    }
    while (*p == ' ')
        p++;
    CHECK(*p == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* split into NAME=VALUE lines (NUL bytes end a C string, which is what getenv gives) */
    char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    copy[size] = '\0';
    g_n = 0;
    char *line = copy;
    while (line && g_n < MAX_VARS) {
        char *nl = memchr(line, '\n', (size_t)(copy + size - line));
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            g_names[g_n] = line;
            g_values[g_n] = eq + 1;
            g_n++;
        }
        line = nl ? nl + 1 : NULL;
    }

    queen_config c;
    qerr_detail det;
    memset(&det, 0, sizeof det);
    char *err = det.text;
    int r = config_load(&c, fuzz_getenv, &det) == QERR_OK ? 0 : -1;
    if (r != 0) {
        CHECK(r == -1);
        if (strncmp(err, "ERROR boot: FATAL: ", 19) != 0) {
            fprintf(stderr, "fuzz_config: bad error line [%s]\n", err);
            abort();
        }
        CHECK(strlen(err) < sizeof det.text);
        /* the encryption key is never shown: only its length */
        static const char kline[] = "ERROR boot: FATAL: queen: QUEEN_ENCRYPTION_KEY=";
        if (strncmp(err, kline, sizeof kline - 1) == 0)
            CHECK(err[sizeof kline - 1] == '<' && strstr(err, " characters, not shown> ") != NULL);
    } else {
        CHECK(c.has_encryption_key == (given("QUEEN_ENCRYPTION_KEY", NULL) != NULL));
        CHECK(c.encryption_key_text == NULL);
        CHECK(c.host && c.data_dir && c.node_id);
        CHECK(c.port >= 1 && c.port <= 65535);
        CHECK(c.log_level >= LOG_TRACE && c.log_level <= LOG_ERROR);
        CHECK(c.log_format == LOG_FORMAT_TEXT || c.log_format == LOG_FORMAT_JSON);
        CHECK(c.db_pool_size >= 1 && c.db_pool_size <= 1000);
        CHECK(c.pg_use_ssl == 0 || c.pg_use_ssl == 1);
        CHECK(c.node_id[0] != '\0');
        const char *nv = given("QUEEN_NODE_ID", "QUEEN_RAFT_NODE_ID");
        if (nv && strcasecmp(nv, "ordinal") != 0)
            CHECK(strcmp(c.node_id, nv) == 0);
        if (c.pg_url) {
            CHECK(c.pg_external == 1 && c.pg_conninfo && strcmp(c.pg_conninfo, c.pg_url) == 0);
        } else if (c.pg_host || c.pg_port_s || c.pg_user || c.pg_password || c.pg_db) {
            CHECK(c.pg_external == 1 && c.pg_conninfo);
            check_conninfo(&c);
        } else {
            CHECK(c.pg_external == 0 && c.pg_conninfo == NULL);
        }
        const char *h = given("HOST", "QUEEN_HOST");
        CHECK(strcmp(c.host, h ? h : "0.0.0.0") == 0);
    }
    config_free(&c);
    free(copy);
    return 0;
}
