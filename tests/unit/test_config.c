/* Unit tests for the environment configuration (config/config.h): defaults, every boot error
 * line, aliases, blanks, the node id and the PostgreSQL conninfo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/buf.h"

/* The injected environment: NULL-terminated name/value pairs. */
static const char *const *g_env;

static const char *env_get(const char *name)
{
    if (!g_env)
        return NULL;
    for (size_t i = 0; g_env[i]; i += 2)
        if (strcmp(g_env[i], name) == 0)
            return g_env[i + 1];
    return NULL;
}

#define ENV(...) (g_env = (const char *const[]){__VA_ARGS__, NULL})

static qerr_detail g_det;
#define g_err (g_det.text)

/* Loads expecting success; the caller frees. */
static void load_ok(queen_config *c)
{
    memset(&g_det, 0, sizeof g_det);
    if (config_load(c, env_get, &g_det) != QERR_OK)
        fail_msg("config_load failed: %s", g_err);
}

/* Loads expecting failure with exactly this line. */
static void load_fails(const char *want)
{
    queen_config c;
    memset(&g_det, 0, sizeof g_det);
    assert_int_equal(config_load(&c, env_get, &g_det), QERR_BAD_INPUT);
    assert_string_equal(g_err, want);
    config_free(&c);
}

#define FATAL "ERROR boot: FATAL: queen: "

static void test_defaults(void **state)
{
    (void)state;
    ENV("HOSTNAME", "node-a");
    queen_config c;
    load_ok(&c);
    assert_int_equal(c.port, 6632);
    assert_string_equal(c.host, "0.0.0.0");
    assert_string_equal(c.data_dir, "./queen-data");
    assert_string_equal(c.node_id, "node-a");
    assert_int_equal(c.log_level, LOG_INFO);
    assert_int_equal(c.log_format, LOG_FORMAT_TEXT);
    assert_null(c.pg_url);
    assert_null(c.pg_host);
    assert_null(c.pg_port_s);
    assert_null(c.pg_user);
    assert_null(c.pg_password);
    assert_null(c.pg_db);
    assert_int_equal(c.pg_use_ssl, 0);
    assert_null(c.pg_conninfo);
    assert_int_equal(c.pg_external, 0);
    assert_null(c.pg_bin_dir);
    assert_int_equal(c.db_pool_size, 8);
    assert_int_equal(c.db_statement_timeout_ms, 30000);
    assert_int_equal(c.db_connect_timeout_ms, 5000);
    assert_int_equal(c.boot_db_wait_ms, 60000);
    assert_int_equal(c.max_body_bytes, 64 << 20);
    assert_int_equal(c.dedup_window_s, 86400);
    assert_int_equal(c.push_max_batch, 10000);
    assert_int_equal(c.push_max_inflight, 4);
    assert_int_equal(c.timer_fire_batch, 1000);
    assert_int_equal(c.shutdown_timeout_ms, 30000);
    config_free(&c);
    /* config_free leaves a zeroed struct; freeing twice is harmless */
    assert_null(c.host);
    config_free(&c);
}

static void test_empty_environment_uses_gethostname(void **state)
{
    (void)state;
    g_env = NULL;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    queen_config c;
    load_ok(&c);
    assert_string_equal(c.node_id, host);
    config_free(&c);
    /* a blank HOSTNAME is ignored too */
    ENV("HOSTNAME", "  ");
    load_ok(&c);
    assert_string_equal(c.node_id, host);
    config_free(&c);
}

static void test_values_are_read(void **state)
{
    (void)state;
    ENV("HOSTNAME", "h", "PORT", "7000", "HOST", "127.0.0.1", "QUEEN_DATA_DIR", "/var/lib/queen", "QUEEN_LOG_LEVEL",
        "warn", "QUEEN_LOG_FORMAT", "json", "QUEEN_PG_BIN_DIR", "/usr/lib/postgresql/15/bin", "DB_POOL_SIZE", "16",
        "DB_STATEMENT_TIMEOUT", "0", "DB_CONNECTION_TIMEOUT", "500", "QUEEN_BOOT_DB_WAIT_MS", "1234",
        "QUEEN_MAX_BODY_BYTES", "1024", "QUEEN_DEDUP_WINDOW_SECONDS", "60", "QUEEN_PUSH_MAX_BATCH", "1",
        "QUEEN_PUSH_MAX_INFLIGHT", "64", "QUEEN_SHUTDOWN_TIMEOUT_MS", "0");
    queen_config c;
    load_ok(&c);
    assert_int_equal(c.port, 7000);
    assert_string_equal(c.host, "127.0.0.1");
    assert_string_equal(c.data_dir, "/var/lib/queen");
    assert_int_equal(c.log_level, LOG_WARN);
    assert_int_equal(c.log_format, LOG_FORMAT_JSON);
    assert_string_equal(c.pg_bin_dir, "/usr/lib/postgresql/15/bin");
    assert_int_equal(c.db_pool_size, 16);
    assert_int_equal(c.db_statement_timeout_ms, 0);
    assert_int_equal(c.db_connect_timeout_ms, 500);
    assert_int_equal(c.boot_db_wait_ms, 1234);
    assert_int_equal(c.max_body_bytes, 1024);
    assert_int_equal(c.dedup_window_s, 60);
    assert_int_equal(c.push_max_batch, 1);
    assert_int_equal(c.push_max_inflight, 64);
    assert_int_equal(c.shutdown_timeout_ms, 0);
    assert_string_equal(c.node_id, "h:7000");
    config_free(&c);
}

/* Every CFG_INT row of the broker's table, its range and its sentence. */
typedef struct int_row {
    const char *name;
    size_t offset;
    long long lo, hi;
    const char *what;
} int_row;

#define OFF(f) offsetof(queen_config, f)
static const int_row int_rows[] = {
    {"PORT", OFF(port), 1, 65535, "It is the TCP port the HTTP API listens on"},
    {"DB_POOL_SIZE", OFF(db_pool_size), 1, 1000,
     "It is how many PostgreSQL connections this node keeps open for requests"},
    {"DB_STATEMENT_TIMEOUT", OFF(db_statement_timeout_ms), 0, 3600000,
     "It is how long in milliseconds one SQL statement may run (0 = no limit)"},
    {"DB_CONNECTION_TIMEOUT", OFF(db_connect_timeout_ms), 500, 600000,
     "It is how long in milliseconds a PostgreSQL connection attempt may take"},
    {"QUEEN_BOOT_DB_WAIT_MS", OFF(boot_db_wait_ms), 0, 3600000,
     "It is how long in milliseconds boot waits for PostgreSQL to accept connections"},
    {"QUEEN_MAX_BODY_BYTES", OFF(max_body_bytes), 1024, 1073741824,
     "It is the largest request body accepted, in bytes; larger ones get 413"},
    {"QUEEN_DEDUP_WINDOW_SECONDS", OFF(dedup_window_s), 1, 31536000,
     "It is how long a producer's transactionId is remembered to answer duplicate"},
    {"QUEEN_PUSH_MAX_BATCH", OFF(push_max_batch), 1, 1000000, "It is the most records one group commit carries"},
    {"QUEEN_PUSH_MAX_INFLIGHT", OFF(push_max_inflight), 1, 64,
     "It is how many push transactions this node keeps in flight at once"},
    {"QUEEN_TIMER_FIRE_BATCH", OFF(timer_fire_batch), 1, 10000, "It is the most timers one firing transaction takes"},
    {"QUEEN_SHUTDOWN_TIMEOUT_MS", OFF(shutdown_timeout_ms), 0, 600000,
     "It is how long SIGTERM waits for requests in flight before exiting anyway"},
};
#undef OFF

static void test_int_rows_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof int_rows / sizeof int_rows[0]; i++) {
        const int_row *r = &int_rows[i];
        char val[32], want[512];
        const long long ok[] = {r->lo, r->hi};
        for (int k = 0; k < 2; k++) {
            snprintf(val, sizeof val, "%lld", ok[k]);
            ENV("HOSTNAME", "h", r->name, val);
            queen_config c;
            load_ok(&c);
            assert_int_equal(*(int64_t *)((char *)&c + r->offset), ok[k]);
            config_free(&c);
        }
        const long long bad[] = {r->lo - 1, r->hi + 1};
        for (int k = 0; k < 2; k++) {
            snprintf(val, sizeof val, "%lld", bad[k]);
            ENV("HOSTNAME", "h", r->name, val);
            snprintf(want, sizeof want, FATAL "%s=%s is outside %lld..=%lld. %s", r->name, val, r->lo, r->hi,
                     r->what);
            load_fails(want);
        }
        /* not an integer at all: same line */
        ENV("HOSTNAME", "h", r->name, "abc");
        snprintf(want, sizeof want, FATAL "%s=abc is outside %lld..=%lld. %s", r->name, r->lo, r->hi, r->what);
        load_fails(want);
    }
}

static void test_int_exact_lines(void **state)
{
    (void)state;
    ENV("PORT", "0");
    load_fails("ERROR boot: FATAL: queen: PORT=0 is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "abc");
    load_fails("ERROR boot: FATAL: queen: PORT=abc is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "65536");
    load_fails(
        "ERROR boot: FATAL: queen: PORT=65536 is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "-1");
    load_fails("ERROR boot: FATAL: queen: PORT=-1 is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "80x");
    load_fails("ERROR boot: FATAL: queen: PORT=80x is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "1.5");
    load_fails("ERROR boot: FATAL: queen: PORT=1.5 is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "0x50");
    load_fails(
        "ERROR boot: FATAL: queen: PORT=0x50 is outside 1..=65535. It is the TCP port the HTTP API listens on");
    ENV("PORT", "99999999999999999999999");
    load_fails("ERROR boot: FATAL: queen: PORT=99999999999999999999999 is outside 1..=65535. It is the TCP port the "
               "HTTP API listens on");
    ENV("DB_POOL_SIZE", "0");
    load_fails("ERROR boot: FATAL: queen: DB_POOL_SIZE=0 is outside 1..=1000. It is how many PostgreSQL connections "
               "this node keeps open for requests");
    ENV("QUEEN_MAX_BODY_BYTES", "1073741825");
    load_fails("ERROR boot: FATAL: queen: QUEEN_MAX_BODY_BYTES=1073741825 is outside 1024..=1073741824. It is the "
               "largest request body accepted, in bytes; larger ones get 413");
}

static void test_int_whitespace_tolerated(void **state)
{
    (void)state;
    static const char *const vals[] = {" 7000", "7000 ", "\t7000\n", "7000\r\n"};
    for (size_t i = 0; i < 4; i++) {
        ENV("HOSTNAME", "h", "PORT", vals[i]);
        queen_config c;
        load_ok(&c);
        assert_int_equal(c.port, 7000);
        config_free(&c);
    }
}

static void test_enum_rows(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        int level;
    } levels[] = {{"trace", LOG_TRACE}, {"debug", LOG_DEBUG}, {"DEBUG", LOG_DEBUG}, {"Info", LOG_INFO},
                  {"WaRn", LOG_WARN},   {"error", LOG_ERROR}, {"ERROR", LOG_ERROR}, {"warn\n", LOG_WARN},
                  {"debug ", LOG_DEBUG}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        ENV("HOSTNAME", "h", "QUEEN_LOG_LEVEL", levels[i].v);
        queen_config c;
        load_ok(&c);
        assert_int_equal(c.log_level, levels[i].level);
        config_free(&c);
    }
    ENV("HOSTNAME", "h", "QUEEN_LOG_FORMAT", "JSON");
    queen_config c;
    load_ok(&c);
    assert_int_equal(c.log_format, LOG_FORMAT_JSON);
    config_free(&c);
    ENV("HOSTNAME", "h", "QUEEN_LOG_FORMAT", "Text");
    load_ok(&c);
    assert_int_equal(c.log_format, LOG_FORMAT_TEXT);
    config_free(&c);

    ENV("QUEEN_LOG_FORMAT", "xml");
    load_fails("ERROR boot: FATAL: queen: QUEEN_LOG_FORMAT=xml is not one of text, json. It is the shape of each log "
               "line");
    ENV("QUEEN_LOG_LEVEL", "verbose");
    load_fails("ERROR boot: FATAL: queen: QUEEN_LOG_LEVEL=verbose is not one of trace, debug, info, warn, error. It "
               "is the least severe level that is logged");
    ENV("QUEEN_LOG_LEVEL", "infos");
    load_fails("ERROR boot: FATAL: queen: QUEEN_LOG_LEVEL=infos is not one of trace, debug, info, warn, error. It is "
               "the least severe level that is logged");
    /* the alias is named in the error when it is the one that was set */
    ENV("LOG_LEVEL", "loud");
    load_fails("ERROR boot: FATAL: queen: LOG_LEVEL=loud is not one of trace, debug, info, warn, error. It is the "
               "least severe level that is logged");
}

static void test_bool_row(void **state)
{
    (void)state;
    static const char *const yes[] = {"true", "TRUE", "1", "yes", "Yes", "on", "ON", " true ", "true\n"};
    static const char *const no[] = {"false", "False", "0", "no", "NO", "off", "Off", "\tfalse\r\n"};
    queen_config c;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        ENV("HOSTNAME", "h", "PG_USE_SSL", yes[i]);
        load_ok(&c);
        assert_int_equal(c.pg_use_ssl, 1);
        config_free(&c);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        ENV("HOSTNAME", "h", "PG_USE_SSL", no[i]);
        load_ok(&c);
        assert_int_equal(c.pg_use_ssl, 0);
        config_free(&c);
    }
    ENV("PG_USE_SSL", "maybe");
    load_fails("ERROR boot: FATAL: queen: PG_USE_SSL=maybe is not one of true, false. It makes the external "
               "PostgreSQL connection require TLS");
    ENV("PG_USE_SSL", "2");
    load_fails("ERROR boot: FATAL: queen: PG_USE_SSL=2 is not one of true, false. It makes the external PostgreSQL "
               "connection require TLS");
    ENV("PG_USE_SSL", "truee");
    load_fails("ERROR boot: FATAL: queen: PG_USE_SSL=truee is not one of true, false. It makes the external "
               "PostgreSQL connection require TLS");
}

static void test_blank_is_unset(void **state)
{
    (void)state;
    ENV("HOSTNAME", "h", "PORT", "", "HOST", "   ", "QUEEN_LOG_LEVEL", "\t\n", "QUEEN_LOG_FORMAT", " ", "PG_USE_SSL",
        "\r\n", "DB_POOL_SIZE", " \t ", "PG_HOST", "", "QUEEN_PG_URL", "  ", "QUEEN_NODE_ID", " ");
    queen_config c;
    load_ok(&c);
    assert_int_equal(c.port, 6632);
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.log_level, LOG_INFO);
    assert_int_equal(c.log_format, LOG_FORMAT_TEXT);
    assert_int_equal(c.pg_use_ssl, 0);
    assert_int_equal(c.db_pool_size, 8);
    assert_null(c.pg_host);
    assert_null(c.pg_url);
    assert_int_equal(c.pg_external, 0);
    assert_null(c.pg_conninfo);
    assert_string_equal(c.node_id, "h");
    config_free(&c);
}

static void test_aliases(void **state)
{
    (void)state;
    queen_config c;
    ENV("HOSTNAME", "h", "LOG_LEVEL", "debug", "QUEEN_PORT", "7001", "QUEEN_HOST", "::1", "QUEEN_DB_POOL_SIZE", "3",
        "QUEEN_RAFT_NODE_ID", "raft-1");
    load_ok(&c);
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_int_equal(c.port, 7001);
    assert_string_equal(c.host, "::1");
    assert_int_equal(c.db_pool_size, 3);
    assert_string_equal(c.node_id, "raft-1");
    config_free(&c);

    /* the primary name wins over the alias */
    ENV("HOSTNAME", "h", "QUEEN_LOG_LEVEL", "error", "LOG_LEVEL", "debug", "PORT", "7002", "QUEEN_PORT", "7001",
        "QUEEN_NODE_ID", "primary", "QUEEN_RAFT_NODE_ID", "raft-1");
    load_ok(&c);
    assert_int_equal(c.log_level, LOG_ERROR);
    assert_int_equal(c.port, 7002);
    assert_string_equal(c.node_id, "primary");
    config_free(&c);

    /* a blank primary falls through to the alias */
    ENV("HOSTNAME", "h", "PORT", " ", "QUEEN_PORT", "7003", "QUEEN_LOG_LEVEL", "", "LOG_LEVEL", "TRACE");
    load_ok(&c);
    assert_int_equal(c.port, 7003);
    assert_int_equal(c.log_level, LOG_TRACE);
    config_free(&c);

    /* an error through an alias names the alias */
    ENV("QUEEN_PORT", "0");
    load_fails("ERROR boot: FATAL: queen: QUEEN_PORT=0 is outside 1..=65535. It is the TCP port the HTTP API listens "
               "on");
    ENV("QUEEN_DB_POOL_SIZE", "1001");
    load_fails("ERROR boot: FATAL: queen: QUEEN_DB_POOL_SIZE=1001 is outside 1..=1000. It is how many PostgreSQL "
               "connections this node keeps open for requests");
}

static void test_node_id(void **state)
{
    (void)state;
    queen_config c;
    static const struct {
        const char *host, *want;
    } ord[] = {{"queen-2", "2"}, {"queen-007", "7"}, {"queen-0", "0"},   {"queen-00", "0"},
               {"queen-10", "10"}, {"web42", "42"},  {"123", "123"},     {"queen-100", "100"}};
    for (size_t i = 0; i < sizeof ord / sizeof ord[0]; i++) {
        ENV("HOSTNAME", ord[i].host, "QUEEN_NODE_ID", "ordinal");
        load_ok(&c);
        assert_string_equal(c.node_id, ord[i].want);
        config_free(&c);
    }
    ENV("HOSTNAME", "queen-3", "QUEEN_NODE_ID", "ORDINAL");
    load_ok(&c);
    assert_string_equal(c.node_id, "3");
    config_free(&c);
    ENV("HOSTNAME", "queen-4", "QUEEN_RAFT_NODE_ID", "ordinal");
    load_ok(&c);
    assert_string_equal(c.node_id, "4");
    config_free(&c);

    /* default: hostname, or hostname:port when the port is not the default */
    ENV("HOSTNAME", "box");
    load_ok(&c);
    assert_string_equal(c.node_id, "box");
    config_free(&c);
    ENV("HOSTNAME", "box", "PORT", "6632");
    load_ok(&c);
    assert_string_equal(c.node_id, "box");
    config_free(&c);
    ENV("HOSTNAME", "box", "PORT", "6633");
    load_ok(&c);
    assert_string_equal(c.node_id, "box:6633");
    config_free(&c);
    ENV("HOSTNAME", "box", "QUEEN_PORT", "1");
    load_ok(&c);
    assert_string_equal(c.node_id, "box:1");
    config_free(&c);

    /* explicit ids */
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "node-α.1");
    load_ok(&c);
    assert_string_equal(c.node_id, "node-α.1");
    config_free(&c);
    char id128[129];
    memset(id128, 'n', 128);
    id128[128] = '\0';
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", id128);
    load_ok(&c);
    assert_string_equal(c.node_id, id128);
    config_free(&c);

    ENV("HOSTNAME", "queen", "QUEEN_NODE_ID", "ordinal");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=ordinal needs a hostname ending in a number, and this host is "
               "queen. It names this node in status, logs and the sink's leases");
    ENV("HOSTNAME", "queen-2a", "QUEEN_NODE_ID", "Ordinal");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=Ordinal needs a hostname ending in a number, and this host "
               "is queen-2a. It names this node in status, logs and the sink's leases");
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "node 1");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=node 1 may not contain spaces, quotes, backslashes or "
               "control characters. It names this node in status, logs and the sink's leases");
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "a\"b");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=a\"b may not contain spaces, quotes, backslashes or control "
               "characters. It names this node in status, logs and the sink's leases");
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "a\\b");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=a\\b may not contain spaces, quotes, backslashes or control "
               "characters. It names this node in status, logs and the sink's leases");
    /* not UTF-8: /health, /status, the log and the sink's JSON documents carry the id */
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "n\xff");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=<2 bytes, not valid UTF-8> is not valid UTF-8. It names this "
               "node in status, logs and the sink's leases");
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "\xed\xa0\x80");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=<3 bytes, not valid UTF-8> is not valid UTF-8. It names this "
               "node in status, logs and the sink's leases");
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", "a\x7f");
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=a\x7f may not contain spaces, quotes, backslashes or control "
               "characters. It names this node in status, logs and the sink's leases");
    char id129[130];
    memset(id129, 'n', 129);
    id129[129] = '\0';
    ENV("HOSTNAME", "box", "QUEEN_NODE_ID", id129);
    load_fails("ERROR boot: FATAL: queen: QUEEN_NODE_ID=nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn... is longer than "
               "128 bytes. It names this node in status, logs and the sink's leases");
}

static void test_config_node_id_direct(void **state)
{
    (void)state;
    qerr_detail err;
    char *s = config_node_id(NULL, "host", 6632, &err);
    assert_string_equal(s, "host");
    free(s);
    s = config_node_id(NULL, "host", 65535, &err);
    assert_string_equal(s, "host:65535");
    free(s);
    s = config_node_id("ordinal", "x-09", 1, &err);
    assert_string_equal(s, "9");
    free(s);
    memset(&err, 0, sizeof err);
    assert_null(config_node_id("ordinal", "", 6632, &err));
    assert_string_equal(err.text, "ERROR boot: FATAL: queen: QUEEN_NODE_ID=ordinal needs a hostname ending in a number, "
                                  "and this host is . It names this node in status, logs and the sink's leases");
    assert_null(config_node_id("tab\there", "h", 6632, &err));
    assert_non_null(strstr(err.text, "may not contain spaces"));
}

static void test_pg_external(void **state)
{
    (void)state;
    queen_config c;
    ENV("HOSTNAME", "h", "PG_HOST", "db.example");
    load_ok(&c);
    assert_int_equal(c.pg_external, 1);
    assert_string_equal(c.pg_conninfo,
                        "host='db.example' port='5432' user='postgres' dbname='postgres' sslmode='prefer'");
    config_free(&c);

    ENV("HOSTNAME", "h", "PG_HOST", "10.0.0.5", "PG_PORT", "5433", "PG_USER", "queen", "PG_PASSWORD", "s3cret",
        "PG_DB", "queendb", "PG_USE_SSL", "true");
    load_ok(&c);
    assert_int_equal(c.pg_external, 1);
    assert_int_equal(c.pg_use_ssl, 1);
    assert_string_equal(c.pg_host, "10.0.0.5");
    assert_string_equal(c.pg_port_s, "5433");
    assert_string_equal(c.pg_user, "queen");
    assert_string_equal(c.pg_password, "s3cret");
    assert_string_equal(c.pg_db, "queendb");
    assert_string_equal(c.pg_conninfo, "host='10.0.0.5' port='5433' user='queen' password='s3cret' "
                                       "dbname='queendb' sslmode='require'");
    config_free(&c);

    /* libpq quoting: ' and \ are backslash-escaped inside single quotes; spaces and = are kept */
    ENV("HOSTNAME", "h", "PG_PASSWORD", "pa'ss\\word x=y");
    load_ok(&c);
    assert_int_equal(c.pg_external, 1);
    assert_string_equal(c.pg_conninfo, "host='localhost' port='5432' user='postgres' password='pa\\'ss\\\\word x=y' "
                                       "dbname='postgres' sslmode='prefer'");
    config_free(&c);

    /* any one PG_ variable makes the database external */
    static const char *const one[] = {"PG_PORT", "PG_USER", "PG_DB"};
    for (size_t i = 0; i < 3; i++) {
        ENV("HOSTNAME", "h", one[i], "5999");
        load_ok(&c);
        assert_int_equal(c.pg_external, 1);
        assert_non_null(c.pg_conninfo);
        config_free(&c);
    }
    /* PG_USE_SSL alone does not */
    ENV("HOSTNAME", "h", "PG_USE_SSL", "yes");
    load_ok(&c);
    assert_int_equal(c.pg_external, 0);
    assert_null(c.pg_conninfo);
    config_free(&c);

    /* QUEEN_PG_URL passes through untouched and wins over PG_* */
    ENV("HOSTNAME", "h", "QUEEN_PG_URL", "postgresql://u:p%27w@db:5432/q?sslmode=require", "PG_HOST", "other");
    load_ok(&c);
    assert_int_equal(c.pg_external, 1);
    assert_string_equal(c.pg_url, "postgresql://u:p%27w@db:5432/q?sslmode=require");
    assert_string_equal(c.pg_conninfo, "postgresql://u:p%27w@db:5432/q?sslmode=require");
    config_free(&c);
    ENV("HOSTNAME", "h", "QUEEN_PG_URL", "host=/run/postgresql dbname=queen");
    load_ok(&c);
    assert_string_equal(c.pg_conninfo, "host=/run/postgresql dbname=queen");
    config_free(&c);
}

static void test_pg_long_values(void **state)
{
    (void)state;
    /* long values are carried whole, and the keywords after them are not dropped (a fixed
     * 2048-byte buffer used to cut the password and lose sslmode=require) */
    enum { N = 5000 };
    char *pw = malloc(N + 1), *host = malloc(N + 1);
    for (size_t i = 0; i < N; i++) {
        pw[i] = i % 100 == 7 ? '\'' : i % 100 == 8 ? '\\' : (char)('a' + i % 26);
        host[i] = (char)('a' + i % 26);
    }
    pw[N] = host[N] = '\0';
    ENV("HOSTNAME", "h", "PG_HOST", host, "PG_PASSWORD", pw, "PG_USE_SSL", "true");
    queen_config c;
    load_ok(&c);
    buf want;
    buf_init(&want, 0);
    buf_printf(&want, "host='%s' port='5432' user='postgres' password='", host);
    for (size_t i = 0; i < N; i++) {
        if (pw[i] == '\'' || pw[i] == '\\')
            buf_putc(&want, '\\');
        buf_putc(&want, pw[i]);
    }
    buf_puts(&want, "' dbname='postgres' sslmode='require'");
    assert_string_equal(c.pg_conninfo, buf_cstr(&want));
    buf_free(&want);
    config_free(&c);
    free(pw);
    free(host);
}

static void test_pg_port_errors(void **state)
{
    (void)state;
    ENV("HOSTNAME", "h", "PG_PORT", "70000");
    load_fails("ERROR boot: FATAL: queen: PG_PORT=70000 is outside 1..=65535. It is the external PostgreSQL port");
    ENV("HOSTNAME", "h", "PG_PORT", "0");
    load_fails("ERROR boot: FATAL: queen: PG_PORT=0 is outside 1..=65535. It is the external PostgreSQL port");
    ENV("HOSTNAME", "h", "PG_PORT", "pg");
    load_fails("ERROR boot: FATAL: queen: PG_PORT=pg is outside 1..=65535. It is the external PostgreSQL port");
    queen_config c;
    ENV("HOSTNAME", "h", "PG_PORT", "65535");
    load_ok(&c);
    config_free(&c);
    ENV("HOSTNAME", "h", "PG_PORT", "1");
    load_ok(&c);
    config_free(&c);
}

static void test_first_error_wins(void **state)
{
    (void)state;
    /* rows are checked in table order: PORT comes before the log format */
    ENV("PORT", "0", "QUEEN_LOG_FORMAT", "xml");
    load_fails("ERROR boot: FATAL: queen: PORT=0 is outside 1..=65535. It is the TCP port the HTTP API listens on");
}

/* A boot line quoting a value longer than the detail is cut inside it, NUL-terminated. */
static void test_error_buffer_truncation(void **state)
{
    (void)state;
    static char port[2 * QERR_TEXT_MAX];
    memset(port, '9', sizeof port - 1);
    port[sizeof port - 1] = '\0';
    ENV("PORT", port);
    queen_config c;
    memset(&g_det, 'X', sizeof g_det);
    assert_int_equal(config_load(&c, env_get, &g_det), QERR_BAD_INPUT);
    assert_int_equal(strlen(g_err), QERR_TEXT_MAX - 1);
    assert_memory_equal(g_err, "ERROR boot: FATAL: queen: PORT=999", 34);
    config_free(&c);
}

/* --- cfg_parse with a custom table (the S3 sink's shape) --- */

typedef struct s3_cfg {
    int64_t max_window_ms;
    int64_t embedded;
    int mode;
    char *bucket;
    char *prefix;
} s3_cfg;

static const char *const s3_modes[] = {"fast", "safe", NULL};

static const cfg_opt s3_rows[] = {
    {"QUEEN_S3_MAX_WINDOW_MS", NULL, CFG_INT, offsetof(s3_cfg, max_window_ms), 60000, 100, 86400000, NULL, NULL, 0,
     "It is how long a window may stay open; the lag SLO is about this plus the safe lag"},
    {"QUEEN_S3_FLAG", NULL, CFG_BOOL, offsetof(s3_cfg, embedded), 1, 0, 1, NULL, NULL, 0, "It is a flag"},
    {"QUEEN_S3_MODE", "S3_MODE", CFG_ENUM, offsetof(s3_cfg, mode), 1, 0, 0, NULL, s3_modes, 0,
     "It is the write mode"},
    {"QUEEN_S3_BUCKET", "S3_BUCKET", CFG_STRING, offsetof(s3_cfg, bucket), 0, 0, 0, NULL, NULL, 1,
     "It is the bucket the sink writes to"},
    {"QUEEN_S3_PREFIX", NULL, CFG_STRING, offsetof(s3_cfg, prefix), 0, 0, 0, "queen/", NULL, 0,
     "It is the key prefix"},
};

#define S3CTX "QUEEN_S3_EMBEDDED=true"

static qerr s3_parse(s3_cfg *c, qerr_detail *err)
{
    memset(c, 0, sizeof *c);
    return cfg_parse(s3_rows, sizeof s3_rows / sizeof s3_rows[0], c, S3CTX, env_get, err);
}

static void s3_free(s3_cfg *c)
{
    free(c->bucket);
    free(c->prefix);
    memset(c, 0, sizeof *c);
}

static void s3_fails(const char *want)
{
    s3_cfg c;
    qerr_detail err;
    assert_int_equal(s3_parse(&c, &err), QERR_BAD_INPUT);
    assert_string_equal(err.text, want);
    assert_null(err.code);
    s3_free(&c);
    /* without a detail: the same kind */
    assert_int_equal(s3_parse(&c, NULL), QERR_BAD_INPUT);
    s3_free(&c);
}

static void test_cfg_parse_spec_line(void **state)
{
    (void)state;
    ENV("QUEEN_S3_MAX_WINDOW_MS", "50", "QUEEN_S3_BUCKET", "b");
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_MAX_WINDOW_MS=50 is outside 100..=86400000. It is "
             "how long a window may stay open; the lag SLO is about this plus the safe lag");
    ENV("QUEEN_S3_MAX_WINDOW_MS", "86400001", "QUEEN_S3_BUCKET", "b");
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_MAX_WINDOW_MS=86400001 is outside 100..=86400000. "
             "It is how long a window may stay open; the lag SLO is about this plus the safe lag");
    ENV("QUEEN_S3_BUCKET", "b", "QUEEN_S3_FLAG", "nope");
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_FLAG=nope is not one of true, false. It is a flag");
    ENV("QUEEN_S3_BUCKET", "b", "S3_MODE", "slow");
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: S3_MODE=slow is not one of fast, safe. It is the write mode");
}

static void test_cfg_parse_required(void **state)
{
    (void)state;
    ENV("QUEEN_S3_MAX_WINDOW_MS", "100");
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_BUCKET is not set. It is the bucket the sink "
             "writes to");
    ENV("QUEEN_S3_BUCKET", "   ");
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_BUCKET is not set. It is the bucket the sink "
             "writes to");
    g_env = NULL;
    s3_fails("ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_BUCKET is not set. It is the bucket the sink "
             "writes to");

    /* satisfied through the alias */
    ENV("S3_BUCKET", "from-alias");
    s3_cfg c;
    qerr_detail err;
    assert_int_equal(s3_parse(&c, &err), QERR_OK);
    assert_string_equal(c.bucket, "from-alias");
    s3_free(&c);
}

static void test_cfg_parse_values(void **state)
{
    (void)state;
    s3_cfg c;
    qerr_detail err;
    ENV("QUEEN_S3_BUCKET", "bkt");
    assert_int_equal(s3_parse(&c, &err), QERR_OK);
    assert_int_equal(c.max_window_ms, 60000);
    assert_int_equal(c.embedded, 1);
    assert_int_equal(c.mode, 1);
    assert_string_equal(c.bucket, "bkt");
    assert_string_equal(c.prefix, "queen/");
    s3_free(&c);

    ENV("QUEEN_S3_BUCKET", "bkt", "QUEEN_S3_MAX_WINDOW_MS", "100", "QUEEN_S3_FLAG", "off", "QUEEN_S3_MODE", "FAST",
        "QUEEN_S3_PREFIX", "p/");
    assert_int_equal(s3_parse(&c, NULL), QERR_OK);
    assert_int_equal(c.max_window_ms, 100);
    assert_int_equal(c.embedded, 0);
    assert_int_equal(c.mode, 0);
    assert_string_equal(c.prefix, "p/");
    /* parsing again over a filled struct replaces (and frees) the strings */
    ENV("QUEEN_S3_BUCKET", "bkt2", "QUEEN_S3_MAX_WINDOW_MS", "86400000");
    assert_int_equal(cfg_parse(s3_rows, sizeof s3_rows / sizeof s3_rows[0], &c, S3CTX, env_get, &err), QERR_OK);
    assert_int_equal(c.max_window_ms, 86400000);
    assert_string_equal(c.bucket, "bkt2");
    assert_string_equal(c.prefix, "queen/");
    s3_free(&c);
}

static void test_cfg_raw(void **state)
{
    (void)state;
    const char *used = NULL;
    ENV("S3_MODE", "x");
    assert_string_equal(cfg_raw(&s3_rows[2], env_get, &used), "x");
    assert_string_equal(used, "S3_MODE");
    ENV("QUEEN_S3_MODE", "y", "S3_MODE", "x");
    assert_string_equal(cfg_raw(&s3_rows[2], env_get, &used), "y");
    assert_string_equal(used, "QUEEN_S3_MODE");
    ENV("QUEEN_S3_MODE", "\t", "S3_MODE", "\n");
    used = "untouched";
    assert_null(cfg_raw(&s3_rows[2], env_get, &used));
    assert_string_equal(used, "untouched");
    assert_null(cfg_raw(&s3_rows[0], env_get, NULL));
}

/* QUEEN_ENCRYPTION_KEY: hex or base64 of 32 bytes; a bad value stops the boot with one line
 * that gives its length and never its characters. */
static void test_encryption_key(void **state)
{
    (void)state;
    queen_config c;
    ENV("HOSTNAME", "h");
    load_ok(&c);
    assert_int_equal(c.has_encryption_key, 0);
    config_free(&c);
    ENV("HOSTNAME", "h", "QUEEN_ENCRYPTION_KEY", "   ");
    load_ok(&c);
    assert_int_equal(c.has_encryption_key, 0);
    config_free(&c);
    static const char *const good[] = {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                                       "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                                       "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ENV("HOSTNAME", "h", "QUEEN_ENCRYPTION_KEY", good[i]);
        load_ok(&c);
        assert_int_equal(c.has_encryption_key, 1);
        for (int j = 0; j < 32; j++)
            assert_int_equal(c.encryption_key.key[j], j);
        assert_null(c.encryption_key_text); /* the text is not kept */
        config_free(&c);
    }
    ENV("HOSTNAME", "h", "QUEEN_ENCRYPTION_KEY", "hunter2!hunter2");
    load_fails(FATAL "QUEEN_ENCRYPTION_KEY=<15 characters, not shown> is not 64 hex digits or the base64 of 32 "
                     "bytes: it has 15 characters, not all of them hex digits or base64. It is the AES-256-GCM key "
                     "that seals the payloads of queues with encryptionEnabled; every node needs the same one");
    ENV("HOSTNAME", "h", "QUEEN_ENCRYPTION_KEY", "000102030405060708090a0b0c0d0e0f");
    load_fails(FATAL "QUEEN_ENCRYPTION_KEY=<32 characters, not shown> is not 64 hex digits or the base64 of 32 "
                     "bytes: it has 32 characters and decodes as base64 to 24 bytes. It is the AES-256-GCM key "
                     "that seals the payloads of queues with encryptionEnabled; every node needs the same one");
    assert_null(strstr(g_err, "000102030405"));
    /* an earlier bad value is the one named */
    ENV("HOSTNAME", "h", "PORT", "0", "QUEEN_ENCRYPTION_KEY", "short");
    load_fails(FATAL "PORT=0 is outside 1..=65535. It is the TCP port the HTTP API listens on");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_empty_environment_uses_gethostname),
        cmocka_unit_test(test_values_are_read),
        cmocka_unit_test(test_int_rows_bounds),
        cmocka_unit_test(test_int_exact_lines),
        cmocka_unit_test(test_int_whitespace_tolerated),
        cmocka_unit_test(test_enum_rows),
        cmocka_unit_test(test_bool_row),
        cmocka_unit_test(test_blank_is_unset),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_node_id),
        cmocka_unit_test(test_config_node_id_direct),
        cmocka_unit_test(test_pg_external),
        cmocka_unit_test(test_pg_long_values),
        cmocka_unit_test(test_pg_port_errors),
        cmocka_unit_test(test_first_error_wins),
        cmocka_unit_test(test_error_buffer_truncation),
        cmocka_unit_test(test_cfg_parse_spec_line),
        cmocka_unit_test(test_cfg_parse_required),
        cmocka_unit_test(test_cfg_parse_values),
        cmocka_unit_test(test_cfg_raw),
        cmocka_unit_test(test_encryption_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
