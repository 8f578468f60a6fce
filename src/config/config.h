/* config.h — environment configuration, read once at boot.
 *
 * Every variable is one row of a table (name, alias, type, default, range, what it is for).
 * A blank value is unset, enumerated values ignore case, and a bad value produces exactly one
 * line in the spec's form:
 *   ERROR boot: FATAL: <context>: <VAR>=<value> is outside <lo>..=<hi>. <what it is>
 * The same machinery parses the S3 sink's variables (with context "QUEEN_S3_EMBEDDED=true"). */
#ifndef QUEEN_CONFIG_CONFIG_H
#define QUEEN_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "core/qerr.h"
#include "crypto/seal.h"

typedef const char *(*config_getenv_fn)(const char *name);

enum cfg_type { CFG_INT, CFG_BOOL, CFG_ENUM, CFG_STRING };

typedef struct cfg_opt {
    const char *name;
    const char *alias;             /* accepted older name, or NULL */
    enum cfg_type type;
    size_t offset;                 /* into the target struct: int64_t, int, int (enum index), char* */
    int64_t def, lo, hi;           /* CFG_INT / CFG_BOOL default */
    const char *def_str;           /* CFG_STRING default (NULL = unset) */
    const char *const *choices;    /* CFG_ENUM: NULL-terminated; def is the index */
    int required;
    const char *what;              /* "It is ..." sentence, no trailing period */
} cfg_opt;

/* Parses rows into `target`. QERR_OK, or QERR_BAD_INPUT with the one boot line (without
 * newline) as err's text (err may be NULL). `context` is the prefix naming why the variables
 * matter. */
qerr cfg_parse(const cfg_opt *rows, size_t nrows, void *target, const char *context, config_getenv_fn get,
               qerr_detail *err);
/* The value as given (blank → NULL), looking at name then alias. */
const char *cfg_raw(const cfg_opt *row, config_getenv_fn get, const char **used_name);

typedef struct queen_config {
    char *host;
    int64_t port;
    char *data_dir;
    char *node_id;
    int log_level;  /* enum log_level */
    int log_format; /* enum log_format */

    /* database: pg_conninfo NULL means the embedded cluster */
    char *pg_url;
    char *pg_host, *pg_port_s, *pg_user, *pg_password, *pg_db;
    int64_t pg_use_ssl;
    char *pg_conninfo; /* derived: what libpq is given (owned) */
    int pg_external;   /* derived */
    char *pg_bin_dir;
    int64_t db_pool_size;
    int64_t db_statement_timeout_ms;
    int64_t db_connect_timeout_ms;
    int64_t boot_db_wait_ms;

    int64_t max_body_bytes;
    int64_t ephemeral_max_bytes;
    int64_t dedup_window_s;
    int64_t push_max_batch;
    int64_t push_max_inflight;
    int64_t timer_fire_batch;
    int64_t shutdown_timeout_ms;
    int64_t default_timeout_ms;
    int64_t retention_interval_ms;
    int64_t eviction_interval_ms;
    int64_t retention_batch;
    int64_t partition_cleanup_days;
    int64_t default_batch;
    int default_subscription_mode; /* 0 all, 1 new, 2 new-only (= new), 3 from_beginning (= all) */

    /* QUEEN_ENCRYPTION_KEY, parsed: the text itself is wiped and freed by config_load */
    char *encryption_key_text;
    int has_encryption_key;
    seal_key encryption_key;
} queen_config;

/* Loads the broker's own variables. Returns QERR_OK, or QERR_BAD_INPUT with the detail's text
 * the boot line ("ERROR boot: FATAL: queen: ..."). */
qerr config_load(queen_config *c, config_getenv_fn get, qerr_detail *err);
void config_free(queen_config *c);

/* Resolves QUEEN_NODE_ID's value against a hostname; exposed for tests. Returns a heap string,
 * or NULL with err set (QERR_BAD_INPUT: the boot line). */
char *config_node_id(const char *value, const char *hostname, int64_t port, qerr_detail *err);
/* The same, naming the variable the value came from (QUEEN_NODE_ID or QUEEN_RAFT_NODE_ID). */
char *config_node_id_named(const char *name, const char *value, const char *hostname, int64_t port, qerr_detail *err);

#endif
