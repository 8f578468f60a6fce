/* The column lists C reads stored functions' results by (db/results.h, one header beside each
 * caller) against the functions themselves, on real PostgreSQL: a private cluster started with
 * the broker's embedded-PostgreSQL code, the schema applied (support/pgtest.c). For every
 * function C calls, the list must be the function's result exactly — names, types, order,
 * count — so a column added, dropped, moved or retyped in src/db/functions/ fails here instead
 * of shifting what C reads. (Statements of C's own: test_db_statements.c.)
 * And every function the C sources name must be either listed here or one that C only calls
 * inside a statement of its own (whose columns it names next to the SQL text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/admin_results.h"
#include "api/txn_results.h"
#include "consume/consume_results.h"
#include "kv/kv_results.h"
#include "cp/cp_results.h"
#include "sink/sinkdb_results.h"
#include "storage/storage_results.h"
#include "streams/streams_results.h"
#include "timers/timer_results.h"
#include "support/pgtest.h"

typedef struct shape {
    const char *function;
    const db_col_spec *cols;
    int n;
} shape;

#define COLS(list) (const db_col_spec[]){list(DB_COL_SPEC)}, (int)(sizeof((const db_col_spec[]){list(DB_COL_SPEC)}) / sizeof(db_col_spec))

static const shape SHAPES[] = {
    {"pop_v1", COLS(POP_V1_COLUMNS)},
    {"pop_ns_v1", COLS(POP_NS_V1_COLUMNS)},
    {"pop_v2", COLS(POP_V2_COLUMNS)},
    {"pop_ns_v2", COLS(POP_NS_V2_COLUMNS)},
    {"lease_store_v1", COLS(LEASE_STORE_V1_COLUMNS)},
    {"ack_v1", COLS(ACK_V1_COLUMNS)},
    {"lease_extend_v2", COLS(LEASE_EXTEND_V2_COLUMNS)},
    {"push_v1", COLS(PUSH_V1_COLUMNS)},
    {"retention_v1", COLS(RETENTION_V1_COLUMNS)},
    {"partition_cleanup_v1", COLS(PARTITION_CLEANUP_V1_COLUMNS)},
    {"dedup_gc_v1", COLS(DEDUP_GC_V1_COLUMNS)},
    {"trace_gc_v1", COLS(TRACE_GC_V1_COLUMNS)},
    {"tick_v1", COLS(TICK_V1_COLUMNS)},
    {"kv_batch_v1", COLS(KV_BATCH_V1_COLUMNS)},
    {"kv_gc_v1", COLS(KV_GC_V1_COLUMNS)},
    {"kv_ops_v1", COLS(KV_OPS_V1_COLUMNS)},
    {"kv_ops_apply_v1", COLS(KV_OPS_APPLY_V1_COLUMNS)},
    {"lock_ops_v1", COLS(LOCK_OPS_V1_COLUMNS)},
    {"cp_sync_v1", COLS(CP_SYNC_V1_COLUMNS)},
    {"cp_clusters_v1", COLS(CP_CLUSTERS_V1_COLUMNS)},
    {"cp_purge_v1", COLS(CP_PURGE_V1_COLUMNS)},
    {"cp_s3_get_v1", COLS(CP_S3_GET_V1_COLUMNS)},
    {"cp_s3_put_v1", COLS(CP_S3_PUT_V1_COLUMNS)},
    {"cp_s3_delete_v1", COLS(CP_S3_DELETE_V1_COLUMNS)},
    {"timers_fire_v2", COLS(TIMERS_FIRE_V2_COLUMNS)},
    {"timer_ops_v1", COLS(TIMER_OPS_V1_COLUMNS)},
    {"sink_clock_v1", COLS(SINK_CLOCK_V1_COLUMNS)},
    {"sink_slice_v1", COLS(SINK_SLICE_V1_COLUMNS)},
    {"sink_positions_v1", COLS(SINK_POSITIONS_V1_COLUMNS)},
    {"sink_positions_at_v1", COLS(SINK_POSITIONS_AT_V1_COLUMNS)},
    {"cp_s3_sinks_v1", COLS(CP_S3_SINKS_V1_COLUMNS)},
    {"transaction_v1", COLS(TRANSACTION_V1_COLUMNS)},
    {"streams_register_v1", COLS(STREAMS_REGISTER_V1_COLUMNS)},
    {"streams_drop_v1", COLS(STREAMS_DROP_V1_COLUMNS)},
    {"streams_queries_v1", COLS(STREAMS_QUERIES_V1_COLUMNS)},
    {"streams_partitions_v1", COLS(STREAMS_PARTITIONS_V1_COLUMNS)},
    {"streams_state_get_v1", COLS(STREAMS_STATE_GET_V1_COLUMNS)},
    {"streams_cycle_v1", COLS(STREAMS_CYCLE_V1_COLUMNS)},
    {"streams_cycles_v1", COLS(STREAMS_CYCLES_V1_COLUMNS)},
    {"streams_cycle_v2", COLS(STREAMS_CYCLE_V1_COLUMNS)},
    {"streams_cycles_v2", COLS(STREAMS_CYCLES_V1_COLUMNS)},
    {"streams_state_rows_v1", COLS(STREAMS_STATE_ROWS_V1_COLUMNS)},
    {"seek_v1", COLS(SEEK_V1_COLUMNS)},
    {"delete_group_v1", COLS(DELETE_GROUP_V1_COLUMNS)},
    {"set_subscription_v1", COLS(SET_SUBSCRIPTION_V1_COLUMNS)},
    {"delete_queue_v1", COLS(DELETE_QUEUE_V1_COLUMNS)},
    {"delete_partition_v1", COLS(DELETE_PARTITION_V1_COLUMNS)},
    {"list_messages_v1", COLS(LIST_MESSAGES_V1_COLUMNS)},
    {"message_find_v1", COLS(MESSAGE_FIND_V1_COLUMNS)},
    {"record_at_v1", COLS(RECORD_AT_V1_COLUMNS)},
    {"dlq_claim_v1", COLS(DLQ_CLAIM_V1_COLUMNS)},
    {"metrics_lag_v1", COLS(METRICS_LAG_V1_COLUMNS)},
    {"message_delete_v1", COLS(MESSAGE_DELETE_V1_COLUMNS)},
};

/* Functions C names only inside statements of its own, whose result columns it names next to
 * that SQL text (a local enum): not read as a function result. */
static const char *const INSIDE[] = {
    "now_us",           /* an expression in many statements */
    "queue_options_v1", /* a queue's effective options, inside the admin and timer statements */
    "group_lag_v1",     /* aggregated and filtered by the admin statements (admin_results.h) */
    "partition_uuid_v1", /* a framed pop's u64 partition id as the uuid, inside the trace statements */
};

static pgtest g_pg;
static PGconn *g_c;

static int setup(void **state)
{
    (void)state;
    if (pgtest_start(&g_pg, "results") < 0)
        return -1;
    g_c = g_pg.conn;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pgtest_stop(&g_pg);
    return 0;
}

/* The result columns of queen.<fn> as "name type" lines: its OUT / TABLE parameters, or for a
 * scalar function one column named after it. */
static const char RESULT_SQL[] =
    "WITH f AS (SELECT p.* FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace AND p.proname = $1), "
    "o AS (SELECT a.name, a.typ, a.i FROM f, unnest(f.proargnames, f.proallargtypes, f.proargmodes::text[]) "
    "        WITH ORDINALITY AS a(name, typ, mode, i) WHERE a.mode IN ('o', 't', 'b')) "
    "SELECT (SELECT count(*) FROM f), x.name, t.typname FROM ("
    "  SELECT o.name, o.typ, o.i FROM o "
    "  UNION ALL "
    "  SELECT f.proname::text, f.prorettype, 0 FROM f WHERE NOT EXISTS (SELECT 1 FROM o)) x "
    "JOIN pg_type t ON t.oid = x.typ ORDER BY x.i";

static void test_shapes(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
        const shape *s = &SHAPES[k];
        const char *vals[1] = {s->function};
        PGresult *r = PQexecParams(g_c, RESULT_SQL, 1, NULL, vals, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            fail_msg("%s: %s", s->function, PQresultErrorMessage(r));
        int rows = PQntuples(r);
        if (rows == 0) {
            fprintf(stderr, "queen.%s does not exist\n", s->function);
            failures++;
        } else if (atoi(PQgetvalue(r, 0, 0)) != 1) {
            fprintf(stderr, "queen.%s has %s signatures\n", s->function, PQgetvalue(r, 0, 0));
            failures++;
        }
        for (int i = 0; i < rows || i < s->n; i++) {
            const char *dn = i < rows ? PQgetvalue(r, i, 1) : "(none)";
            const char *dt = i < rows ? PQgetvalue(r, i, 2) : "";
            const char *cn = i < s->n ? s->cols[i].name : "(none)";
            const char *ct = i < s->n ? s->cols[i].type : "";
            if (strcmp(dn, cn) != 0 || strcmp(dt, ct) != 0) {
                fprintf(stderr, "queen.%s column %d: the database has %s %s, C names %s %s\n", s->function, i + 1,
                        dn, dt, cn, ct);
                failures++;
            }
        }
        PQclear(r);
    }
    assert_int_equal(failures, 0);
}

/* ---- every function the C sources call is covered -------------------------------------- */

static char **g_named;
static size_t g_nnamed;

static void note_name(const char *name, size_t n)
{
    for (size_t i = 0; i < g_nnamed; i++)
        if (strlen(g_named[i]) == n && memcmp(g_named[i], name, n) == 0)
            return;
    g_named = realloc(g_named, (g_nnamed + 1) * sizeof *g_named);
    g_named[g_nnamed++] = strndup(name, n);
}

static int scan_file(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    size_t len = strlen(p);
    if (flag != FTW_F || len < 3 || (strcmp(p + len - 2, ".c") != 0 && strcmp(p + len - 2, ".h") != 0))
        return 0;
    FILE *fp = fopen(p, "r");
    if (!fp)
        return 0;
    char *text = calloc((size_t)st->st_size + 1, 1);
    size_t got = fread(text, 1, (size_t)st->st_size, fp);
    fclose(fp);
    text[got] = '\0';
    regex_t re;
    assert_int_equal(regcomp(&re, "queen\\.([a-z_0-9]+)\\(", REG_EXTENDED), 0);
    regmatch_t m[2];
    for (const char *at = text; regexec(&re, at, 2, m, 0) == 0; at += m[0].rm_eo)
        note_name(at + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so));
    regfree(&re);
    free(text);
    return 0;
}

static void test_every_call_listed(void **state)
{
    (void)state;
    /* make unit runs from the repository root */
    assert_int_equal(nftw("src", scan_file, 16, FTW_PHYS), 0);
    assert_true(g_nnamed > 10);
    int failures = 0;
    for (size_t i = 0; i < g_nnamed; i++) {
        const char *vals[1] = {g_named[i]};
        PGresult *r = PQexecParams(g_c,
                                   "SELECT count(*) FROM pg_proc WHERE pronamespace = 'queen'::regnamespace "
                                   "AND proname = $1",
                                   1, NULL, vals, NULL, NULL, 0);
        int is_fn = PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0)) > 0;
        PQclear(r);
        if (!is_fn)
            continue; /* a table, a comment's prose */
        int listed = 0;
        for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0] && !listed; k++)
            listed = strcmp(SHAPES[k].function, g_named[i]) == 0;
        for (size_t k = 0; k < sizeof INSIDE / sizeof INSIDE[0] && !listed; k++)
            listed = strcmp(INSIDE[k], g_named[i]) == 0;
        if (!listed) {
            fprintf(stderr, "src/ calls queen.%s, and no result list names its columns (db/results.h)\n",
                    g_named[i]);
            failures++;
        }
    }
    for (size_t i = 0; i < g_nnamed; i++)
        free(g_named[i]);
    free(g_named);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_every_call_listed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
