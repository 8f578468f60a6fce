/* config.c — the environment table and its parser. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "json/json.h"

static int is_blank(const char *v)
{
    if (!v)
        return 1;
    for (; *v; v++)
        if (*v != ' ' && *v != '\t' && *v != '\n' && *v != '\r')
            return 0;
    return 1;
}

const char *cfg_raw(const cfg_opt *row, config_getenv_fn get, const char **used_name)
{
    const char *v = get(row->name);
    if (!is_blank(v)) {
        if (used_name)
            *used_name = row->name;
        return v;
    }
    if (row->alias) {
        v = get(row->alias);
        if (!is_blank(v)) {
            if (used_name)
                *used_name = row->alias;
            return v;
        }
    }
    return NULL;
}

static int parse_int(const char *v, int64_t *out)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (!*v)
        return -1;
    errno = 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v)
        return -1;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    if (*end)
        return -1;
    *out = x;
    return 0;
}

static int parse_bool(const char *v, int64_t *out)
{
    static const char *const t[] = {"true", "1", "yes", "on"};
    static const char *const f[] = {"false", "0", "no", "off"};
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == '\t'))
        n--;
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    for (size_t i = 0; i < 4; i++) {
        if (ascii_ieq(v, n, t[i])) {
            *out = 1;
            return 0;
        }
        if (ascii_ieq(v, n, f[i])) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static void choices_list(const char *const *choices, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; choices[i]; i++)
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", i ? ", " : "", choices[i]);
}

static int parse(const cfg_opt *rows, size_t nrows, void *target, const char *context, config_getenv_fn get,
                 char *err, size_t errlen)
{
    char *base = target;
    for (size_t i = 0; i < nrows; i++) {
        const cfg_opt *r = &rows[i];
        const char *name = r->name;
        const char *v = cfg_raw(r, get, &name);
        void *slot = base + r->offset;
        if (!v && r->required) {
            snprintf(err, errlen, "ERROR boot: FATAL: %s: %s is not set. %s", context, r->name, r->what);
            return -1;
        }
        switch (r->type) {
        case CFG_INT: {
            int64_t x = r->def;
            if (v && (parse_int(v, &x) < 0 || x < r->lo || x > r->hi)) {
                snprintf(err, errlen, "ERROR boot: FATAL: %s: %s=%s is outside %lld..=%lld. %s", context, name, v,
                         (long long)r->lo, (long long)r->hi, r->what);
                return -1;
            }
            *(int64_t *)slot = x;
            break;
        }
        case CFG_BOOL: {
            int64_t x = r->def;
            if (v && parse_bool(v, &x) < 0) {
                snprintf(err, errlen, "ERROR boot: FATAL: %s: %s=%s is not one of true, false. %s", context, name, v,
                         r->what);
                return -1;
            }
            *(int64_t *)slot = x;
            break;
        }
        case CFG_ENUM: {
            int idx = (int)r->def;
            if (v) {
                const char *t = v;
                while (*t == ' ' || *t == '\t')
                    t++;
                size_t n = strlen(t);
                while (n && (t[n - 1] == ' ' || t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == '\t'))
                    n--;
                idx = -1;
                for (int k = 0; r->choices[k]; k++)
                    if (ascii_ieq(t, n, r->choices[k]))
                        idx = k;
                if (idx < 0) {
                    char list[256];
                    choices_list(r->choices, list, sizeof list);
                    snprintf(err, errlen, "ERROR boot: FATAL: %s: %s=%s is not one of %s. %s", context, name, v, list,
                             r->what);
                    return -1;
                }
            }
            *(int *)slot = idx;
            break;
        }
        case CFG_STRING: {
            char **s = slot;
            free(*s);
            *s = v ? xstrdup(v) : r->def_str ? xstrdup(r->def_str) : NULL;
            break;
        }
        }
    }
    return 0;
}

qerr cfg_parse(const cfg_opt *rows, size_t nrows, void *target, const char *context, config_getenv_fn get,
               qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    d->text[0] = '\0';
    return parse(rows, nrows, target, context, get, d->text, sizeof d->text) < 0 ? qerr_mark(d, QERR_BAD_INPUT, NULL)
                                                                                   : QERR_OK;
}

static const char *const log_levels[] = {"trace", "debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
static const char *const sub_modes[] = {"all", "new", "new-only", "from_beginning", NULL};

#define ENCRYPTION_KEY_WHAT                                                                                   \
    "It is the AES-256-GCM key that seals the payloads of queues with encryptionEnabled; every node needs the " \
    "same one"

#define OFF(f) offsetof(queen_config, f)
static const cfg_opt broker_rows[] = {
    {"PORT", "QUEEN_PORT", CFG_INT, OFF(port), 6632, 1, 65535, NULL, NULL, 0,
     "It is the TCP port the HTTP API listens on"},
    {"HOST", "QUEEN_HOST", CFG_STRING, OFF(host), 0, 0, 0, "0.0.0.0", NULL, 0,
     "It is the address the HTTP API listens on"},
    {"QUEEN_DATA_DIR", NULL, CFG_STRING, OFF(data_dir), 0, 0, 0, "./queen-data", NULL, 0,
     "It is the directory that holds the embedded PostgreSQL cluster"},
    {"QUEEN_LOG_LEVEL", "LOG_LEVEL", CFG_ENUM, OFF(log_level), LOG_INFO, 0, 0, NULL, log_levels, 0,
     "It is the least severe level that is logged"},
    {"QUEEN_LOG_FORMAT", NULL, CFG_ENUM, OFF(log_format), LOG_FORMAT_TEXT, 0, 0, NULL, log_formats, 0,
     "It is the shape of each log line"},
    {"QUEEN_PG_URL", NULL, CFG_STRING, OFF(pg_url), 0, 0, 0, NULL, NULL, 0,
     "It is the libpq connection string or URI of an external PostgreSQL"},
    {"PG_HOST", NULL, CFG_STRING, OFF(pg_host), 0, 0, 0, NULL, NULL, 0, "It is the external PostgreSQL host"},
    {"PG_PORT", NULL, CFG_STRING, OFF(pg_port_s), 0, 0, 0, NULL, NULL, 0, "It is the external PostgreSQL port"},
    {"PG_USER", NULL, CFG_STRING, OFF(pg_user), 0, 0, 0, NULL, NULL, 0, "It is the external PostgreSQL user"},
    {"PG_PASSWORD", NULL, CFG_STRING, OFF(pg_password), 0, 0, 0, NULL, NULL, 0,
     "It is the external PostgreSQL password"},
    {"PG_DB", NULL, CFG_STRING, OFF(pg_db), 0, 0, 0, NULL, NULL, 0, "It is the external PostgreSQL database"},
    {"PG_USE_SSL", NULL, CFG_BOOL, OFF(pg_use_ssl), 0, 0, 1, NULL, NULL, 0,
     "It makes the external PostgreSQL connection require TLS"},
    {"QUEEN_PG_BIN_DIR", NULL, CFG_STRING, OFF(pg_bin_dir), 0, 0, 0, NULL, NULL, 0,
     "It is where initdb and pg_ctl are found for the embedded cluster"},
    {"DB_POOL_SIZE", "QUEEN_DB_POOL_SIZE", CFG_INT, OFF(db_pool_size), 8, 1, 1000, NULL, NULL, 0,
     "It is how many PostgreSQL connections this node keeps open for requests"},
    {"DB_STATEMENT_TIMEOUT", NULL, CFG_INT, OFF(db_statement_timeout_ms), 30000, 0, 3600000, NULL, NULL, 0,
     "It is how long in milliseconds one SQL statement may run (0 = no limit)"},
    {"DB_CONNECTION_TIMEOUT", NULL, CFG_INT, OFF(db_connect_timeout_ms), 5000, 500, 600000, NULL, NULL, 0,
     "It is how long in milliseconds a PostgreSQL connection attempt may take"},
    {"QUEEN_BOOT_DB_WAIT_MS", NULL, CFG_INT, OFF(boot_db_wait_ms), 60000, 0, 3600000, NULL, NULL, 0,
     "It is how long in milliseconds boot waits for PostgreSQL to accept connections"},
    {"QUEEN_MAX_BODY_BYTES", NULL, CFG_INT, OFF(max_body_bytes), 64 << 20, 1024, 1 << 30, NULL, NULL, 0,
     "It is the largest request body accepted, in bytes; larger ones get 413"},
    {"QUEEN_EPHEMERAL_MAX_BYTES", NULL, CFG_INT, OFF(ephemeral_max_bytes), 256ll << 20, 0, 64ll << 30, NULL, NULL, 0,
     "It is how many bytes this node's ephemeral (RAM) queues may hold together; 0 = no node-wide limit"},
    {"QUEEN_DEDUP_WINDOW_SECONDS", NULL, CFG_INT, OFF(dedup_window_s), 86400, 1, 31536000, NULL, NULL, 0,
     "It is how long a producer's transactionId is remembered to answer duplicate"},
    {"QUEEN_PUSH_MAX_BATCH", NULL, CFG_INT, OFF(push_max_batch), 10000, 1, 1000000, NULL, NULL, 0,
     "It is the most records one group commit carries"},
    {"QUEEN_PUSH_MAX_INFLIGHT", NULL, CFG_INT, OFF(push_max_inflight), 4, 1, 64, NULL, NULL, 0,
     "It is how many push transactions this node keeps in flight at once"},
    {"DEFAULT_TIMEOUT", "QUEEN_DEFAULT_TIMEOUT_MS", CFG_INT, OFF(default_timeout_ms), 30000, 0, 3600000, NULL, NULL, 0,
     "It is the long-poll timeout in milliseconds of a pop that sends none"},
    {"DEFAULT_BATCH_SIZE", "QUEEN_DEFAULT_BATCH_SIZE", CFG_INT, OFF(default_batch), 1, 1, 10000, NULL, NULL, 0,
     "It is the batch of a pop that sends none"},
    {"DEFAULT_SUBSCRIPTION_MODE", NULL, CFG_ENUM, OFF(default_subscription_mode), 0, 0, 0, NULL, sub_modes, 0,
     "It is where a new consumer group starts when a pop names no subscriptionMode"},
    {"RETENTION_INTERVAL", "QUEEN_RETENTION_INTERVAL_MS", CFG_INT, OFF(retention_interval_ms), 300000, 100, 86400000,
     NULL, NULL, 0, "It is how often in milliseconds the retention job deletes old records"},
    {"EVICTION_INTERVAL", "QUEEN_EVICTION_INTERVAL_MS", CFG_INT, OFF(eviction_interval_ms), 60000, 100, 86400000, NULL,
     NULL, 0, "It is how often in milliseconds records past maxWaitTimeSeconds are deleted"},
    {"PARTITION_CLEANUP_DAYS", "QUEEN_PARTITION_CLEANUP_DAYS", CFG_INT, OFF(partition_cleanup_days), 30, 0, 36500, NULL,
     NULL, 0, "It is how many days a partition stays empty and idle before it is deleted (0 never)"},
    {"RETENTION_BATCH_SIZE", NULL, CFG_INT, OFF(retention_batch), 1000, 1, 1000000, NULL, NULL, 0,
     "It is how many segments one retention round deletes at most"},
    {"QUEEN_TIMER_FIRE_BATCH", NULL, CFG_INT, OFF(timer_fire_batch), 1000, 1, 10000, NULL, NULL, 0,
     "It is the most timers one firing transaction takes"},
    {"QUEEN_SHUTDOWN_TIMEOUT_MS", NULL, CFG_INT, OFF(shutdown_timeout_ms), 30000, 0, 600000, NULL, NULL, 0,
     "It is how long SIGTERM waits for requests in flight before exiting anyway"},
    /* parsed and checked by encryption_key_load: its error line never shows the value */
    {"QUEEN_ENCRYPTION_KEY", NULL, CFG_STRING, OFF(encryption_key_text), 0, 0, 0, NULL, NULL, 0,
     ENCRYPTION_KEY_WHAT},
};
#undef OFF

/* Wipes and frees the key's text; on a bad value the boot line names its length, never its
 * characters (a boot line ends up in logs that more people read than hold the key). */
static int encryption_key_load(queen_config *c, char *err, size_t errlen)
{
    if (!c->encryption_key_text)
        return 0;
    qerr_detail why;
    size_t n = strlen(c->encryption_key_text);
    qerr e = seal_key_parse(c->encryption_key_text, &c->encryption_key, &why);
    explicit_bzero(c->encryption_key_text, n);
    free(c->encryption_key_text);
    c->encryption_key_text = NULL;
    if (e != QERR_OK) {
        snprintf(err, errlen, "ERROR boot: FATAL: queen: QUEEN_ENCRYPTION_KEY=<%zu characters, not shown> %.255s. %s", n,
                 why.text, ENCRYPTION_KEY_WHAT);
        return -1;
    }
    c->has_encryption_key = 1;
    return 0;
}

static const char *const node_id_what = "It names this node in status, logs and the sink's leases";

static char *node_id(const char *name, const char *value, const char *hostname, int64_t port, char *err,
                     size_t errlen)
{
    if (!value) {
        char tmp[300];
        if (port == 6632)
            snprintf(tmp, sizeof tmp, "%s", hostname);
        else
            snprintf(tmp, sizeof tmp, "%s:%lld", hostname, (long long)port);
        return xstrdup(tmp);
    }
    size_t n = strlen(value);
    if (ascii_ieq(value, n, "ordinal")) {
        size_t hl = strlen(hostname), k = hl;
        while (k > 0 && hostname[k - 1] >= '0' && hostname[k - 1] <= '9')
            k--;
        if (k == hl) {
            snprintf(err, errlen,
                     "ERROR boot: FATAL: queen: %s=%s needs a hostname ending in a number, and this "
                     "host is %s. %s",
                     name, value, hostname, node_id_what);
            return NULL;
        }
        /* strip leading zeros but keep one digit */
        while (k + 1 < hl && hostname[k] == '0')
            k++;
        return xstrdup(hostname + k);
    }
    if (n > 128) {
        snprintf(err, errlen, "ERROR boot: FATAL: queen: %s=%.40s... is longer than 128 bytes. %s", name, value,
                 node_id_what);
        return NULL;
    }
    if (utf8_valid((const uint8_t *)value, n) < 0) {
        /* the bytes are not shown: the line itself must stay valid UTF-8 (JSON log format) */
        snprintf(err, errlen, "ERROR boot: FATAL: queen: %s=<%zu bytes, not valid UTF-8> is not valid UTF-8. %s", name, n,
                 node_id_what);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c <= 0x20 || c == 0x7f || c == '"' || c == '\\') {
            snprintf(err, errlen,
                     "ERROR boot: FATAL: queen: %s=%s may not contain spaces, quotes, backslashes or "
                     "control characters. %s",
                     name, value, node_id_what);
            return NULL;
        }
    }
    return xstrdup(value);
}

/* Builds a libpq keyword=value string; values are quoted per libpq rules. The buffer grows
 * as needed: a fixed one silently cut long values and dropped the keywords after them. */
static void conninfo_add(buf *out, const char *key, const char *val)
{
    buf_printf(out, "%s%s='", out->len ? " " : "", key);
    for (const char *p = val; *p; p++) {
        if (*p == '\'' || *p == '\\')
            buf_putc(out, '\\');
        buf_putc(out, *p);
    }
    buf_putc(out, '\'');
}

static int load(queen_config *c, config_getenv_fn get, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (parse(broker_rows, ARRAY_LEN(broker_rows), c, "queen", get, err, errlen) < 0 ||
        encryption_key_load(c, err, errlen) < 0)
        return -1;
    /* node identity: QUEEN_NODE_ID, or the spec's QUEEN_RAFT_NODE_ID */
    static const cfg_opt node_row = {"QUEEN_NODE_ID", "QUEEN_RAFT_NODE_ID", CFG_STRING, 0, 0, 0, 0,
                                     NULL, NULL, 0, NULL};
    const char *node_var = node_row.name;
    const char *nv = cfg_raw(&node_row, get, &node_var);
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    const char *hn = get("HOSTNAME");
    if (!is_blank(hn) && strlen(hn) < sizeof host)
        snprintf(host, sizeof host, "%s", hn);
    c->node_id = node_id(node_var, nv, host, c->port, err, errlen);
    if (!c->node_id)
        return -1;
    if (c->pg_port_s) {
        int64_t p;
        if (parse_int(c->pg_port_s, &p) < 0 || p < 1 || p > 65535) {
            snprintf(err, errlen, "ERROR boot: FATAL: queen: PG_PORT=%s is outside 1..=65535. %s", c->pg_port_s,
                     "It is the external PostgreSQL port");
            return -1;
        }
    }
    if (c->pg_url) {
        c->pg_external = 1;
        c->pg_conninfo = xstrdup(c->pg_url);
    } else if (c->pg_host || c->pg_port_s || c->pg_user || c->pg_password || c->pg_db) {
        c->pg_external = 1;
        buf ci;
        buf_init(&ci, 0);
        conninfo_add(&ci, "host", c->pg_host ? c->pg_host : "localhost");
        conninfo_add(&ci, "port", c->pg_port_s ? c->pg_port_s : "5432");
        conninfo_add(&ci, "user", c->pg_user ? c->pg_user : "postgres");
        if (c->pg_password)
            conninfo_add(&ci, "password", c->pg_password);
        conninfo_add(&ci, "dbname", c->pg_db ? c->pg_db : "postgres");
        conninfo_add(&ci, "sslmode", c->pg_use_ssl ? "require" : "prefer");
        c->pg_conninfo = buf_steal(&ci, NULL);
    }
    return 0;
}

qerr config_load(queen_config *c, config_getenv_fn get, qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    d->text[0] = '\0';
    return load(c, get, d->text, sizeof d->text) < 0 ? qerr_mark(d, QERR_BAD_INPUT, NULL) : QERR_OK;
}

char *config_node_id_named(const char *name, const char *value, const char *hostname, int64_t port, qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    d->text[0] = '\0';
    char *id = node_id(name, value, hostname, port, d->text, sizeof d->text);
    if (!id)
        qerr_mark(d, QERR_BAD_INPUT, NULL);
    return id;
}

char *config_node_id(const char *value, const char *hostname, int64_t port, qerr_detail *err)
{
    return config_node_id_named("QUEEN_NODE_ID", value, hostname, port, err);
}

void config_free(queen_config *c)
{
    free(c->host);
    free(c->data_dir);
    free(c->node_id);
    free(c->pg_url);
    free(c->pg_host);
    free(c->pg_port_s);
    free(c->pg_user);
    free(c->pg_password);
    free(c->pg_db);
    free(c->pg_conninfo);
    free(c->pg_bin_dir);
    if (c->encryption_key_text) {
        explicit_bzero(c->encryption_key_text, strlen(c->encryption_key_text));
        free(c->encryption_key_text);
    }
    explicit_bzero(&c->encryption_key, sizeof c->encryption_key);
    memset(c, 0, sizeof *c);
}
