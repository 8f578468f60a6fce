/* Lock-order tests of the SQL (docs/lock-order.md) on real PostgreSQL: each test puts two
 * transactions in the one interleaving that closes a wait cycle when a function takes its locks
 * out of order, step by step on two connections, and checks that both finish. Out of order,
 * PostgreSQL's deadlock check aborts one of them with 40P01 about a second later (the test then
 * fails with that error). A private cluster is started with the broker's own embedded-PostgreSQL
 * code and the migrations applied. Covered: a retention round against a group commit over two
 * queues (and that the round skips the partition a commit holds instead of waiting), the lease
 * store against an ack of the same group, partition cleanup against the dedup GC, a seek against
 * a group's first pop, two batches of timer ops naming the same keys in opposite orders, a stream
 * cycle against the drop of its query. */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/pgtest.h"

static pgtest g_pg;
#define TENANT "'00000000-0000-0000-0000-000000000001'::uuid"

static PGconn *conn(void)
{
    PGconn *c = PQconnectdb(g_pg.emb.conninfo);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("connect: %s", PQerrorMessage(c));
    return c;
}

static int setup(void **state)
{
    (void)state;
    return pgtest_start(&g_pg, "lockorder");
}

static int teardown(void **state)
{
    (void)state;
    pgtest_stop(&g_pg);
    return 0;
}

/* Runs one statement that must succeed; returns its result (caller clears). */
static PGresult *run(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static PGresult *run(PGconn *c, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s\n-> %s", sql, PQresultErrorMessage(r));
    return r;
}

/* The one value of a one-row, one-column statement, as a number. */
static long long value(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static long long value(PGconn *c, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = run(c, "%s", sql);
    if (PQntuples(r) != 1)
        fail_msg("%s: %d rows", sql, PQntuples(r));
    long long v = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts a statement on c without waiting for it. */
static void start(PGconn *c, const char *sql)
{
    if (!PQsendQuery(c, sql))
        fail_msg("send: %s", PQerrorMessage(c));
}

enum { DONE, BLOCKED };

/* Waits until the statement started on c has finished or waits for a lock (seen from watcher). */
static int done_or_blocked(PGconn *c, PGconn *watcher)
{
    int pid = PQbackendPID(c);
    for (int i = 0; i < 1000; i++) {
        if (!PQconsumeInput(c))
            fail_msg("consume: %s", PQerrorMessage(c));
        if (!PQisBusy(c))
            return DONE;
        if (value(watcher, "SELECT cardinality(pg_blocking_pids(%d))", pid) > 0)
            return BLOCKED;
        sleep_ms(5);
    }
    fail_msg("statement neither finished nor waited within 5 s");
    return DONE;
}

/* Collects the result of the statement started on c; fails the test with its error (40P01 when
 * PostgreSQL broke a deadlock). Returns the last result (caller clears). */
static PGresult *finish(PGconn *c, const char *what)
{
    PGresult *last = NULL, *r;
    while ((r = PQgetResult(c)) != NULL) {
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            fail_msg("%s failed (%s): %s", what, code ? code : "?", PQresultErrorMessage(r));
        }
        if (last)
            PQclear(last);
        last = r;
    }
    return last;
}

/* A group commit holds the lower-id partition of queue B and wants a higher-id partition of
 * queue A (partition-id order); a retention round works queue A (lower id) first. A round that
 * locked A's partitions and then waited for B's would close the cycle. */
static void test_retention_vs_group_commit(void **state)
{
    (void)state;
    PGconn *push = conn(), *ret = conn(), *w = conn();
    /* partitions created in the order A/x, B/y, A/z: ids interleave across the two queues */
    const char *parts[3][2] = {{"lo_a", "x"}, {"lo_b", "y"}, {"lo_a", "z"}};
    for (int i = 0; i < 3; i++)
        PQclear(run(w,
                    "SELECT * FROM queen.push_v1(ARRAY[" TENANT "], ARRAY['%s'], ARRAY['%s'], ARRAY[1], ARRAY[1], "
                    "ARRAY['\\x00'::bytea], '{}', '{}', '{}', 0)",
                    parts[i][0], parts[i][1]));
    PQclear(run(w, "UPDATE queen.queues SET options = '{\"maxWaitTimeSeconds\": 1}' WHERE name IN ('lo_a', 'lo_b')"));
    long long qa = value(w, "SELECT id FROM queen.queues WHERE name = 'lo_a'");
    long long qb = value(w, "SELECT id FROM queen.queues WHERE name = 'lo_b'");
    long long py = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 'y'", qb);
    long long pz = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 'z'", qa);
    assert_true(qa < qb);
    assert_true(py < pz);
    /* every segment an hour old: all of them are due for eviction */
    PQclear(run(w, "UPDATE queen.segments SET ts = ts - 3600000000 WHERE partition_id IN "
                   "(SELECT id FROM queen.partitions WHERE queue_id IN (%lld, %lld))",
                qa, qb));

    /* the commit has locked B/y (its lowest partition), as push_v1 step 3 does */
    PQclear(run(push, "BEGIN"));
    PQclear(run(push, "SELECT 1 FROM queen.partitions WHERE id = %lld FOR NO KEY UPDATE", py));
    start(ret, "SELECT queue_name, kind, segments FROM queen.retention_v1(1000, false, true) ORDER BY queue_name, kind");
    const char *push_sql =
        "SELECT * FROM queen.push_v1(ARRAY[" TENANT ", " TENANT "], ARRAY['lo_b', 'lo_a'], ARRAY['y', 'z'], "
        "ARRAY[1, 1], ARRAY[1, 1], ARRAY['\\x00'::bytea, '\\x00'::bytea], '{}', '{}', '{}', 0)";
    if (done_or_blocked(ret, w) == BLOCKED) {
        /* out of order: the commit's next lock closes the cycle, and PostgreSQL aborts one of
         * the two (40P01: the test fails with that error) */
        PQclear(run(push, "%s", push_sql));
        PQclear(run(push, "COMMIT"));
        PQclear(finish(ret, "retention round"));
        fail_msg("the retention round waited for the group commit");
    }
    /* the round gave way: it finished without waiting for the commit */
    PGresult *r = finish(ret, "retention round");
    int evicted_a = 0, busy_b = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        if (strcmp(PQgetvalue(r, i, 0), "lo_a") == 0 && strcmp(PQgetvalue(r, i, 1), "eviction") == 0)
            evicted_a = atoi(PQgetvalue(r, i, 2));
        if (strcmp(PQgetvalue(r, i, 0), "lo_b") == 0) {
            assert_string_equal(PQgetvalue(r, i, 1), "busy");
            busy_b = atoi(PQgetvalue(r, i, 2));
        }
    }
    PQclear(r);
    assert_int_equal(evicted_a, 2);
    assert_int_equal(busy_b, 1);
    /* the commit goes on to A/z (and its clocks) and commits */
    PQclear(run(push, "%s", push_sql));
    PQclear(run(push, "COMMIT"));
    /* the next round catches B/y's old segment; the new records stay */
    r = run(ret, "SELECT queue_name, kind, segments FROM queen.retention_v1(1000, false, true) WHERE queue_name = 'lo_b'");
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 1), "eviction");
    assert_string_equal(PQgetvalue(r, 0, 2), "1");
    PQclear(r);
    assert_int_equal(value(w, "SELECT start_offset FROM queen.partitions WHERE id = %lld", py), 1);
    assert_int_equal(value(w, "SELECT count(*) FROM queen.segments WHERE partition_id IN (%lld, %lld)", py, pz), 2);
    PQfinish(push);
    PQfinish(ret);
    PQfinish(w);
}

/* A pop claimed partition B before partition A (B's id is higher) under one lease; an ack of the
 * same group locks A's cursor, then B's (partition-id order). A lease store that wrote B's
 * cursor first and then waited for A's would close the cycle. */
static void test_lease_store_vs_ack(void **state)
{
    (void)state;
    PGconn *ack = conn(), *store = conn(), *w = conn();
    for (int i = 0; i < 2; i++)
        PQclear(run(w,
                    "SELECT * FROM queen.push_v1(ARRAY[" TENANT "], ARRAY['lo_lease'], ARRAY['%s'], ARRAY[1], ARRAY[1], "
                    "ARRAY['\\x00'::bytea], '{}', '{}', '{}', 0)",
                    i ? "b" : "a"));
    long long q = value(w, "SELECT id FROM queen.queues WHERE name = 'lo_lease'");
    long long pa = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 'a'", q);
    long long pb = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 'b'", q);
    assert_true(pa < pb);
    /* the pop's claims: one lease over both partitions, offset 0 of each */
    const char *lease = "'0190c2e1-0000-7000-8000-000000000001'::uuid";
    PQclear(run(w,
                "INSERT INTO queen.cursors (partition_id, consumer_group, queue_id, next_offset, lease_id, "
                "lease_expires_at, lease_start, lease_end) "
                "SELECT p, 'g', %lld, 0, %s, queen.now_us() + 60000000, 0, 1 FROM unnest(ARRAY[%lld, %lld]) AS p",
                q, lease, pa, pb));

    /* the ack has locked A's cursor (its lowest) */
    PQclear(run(ack, "BEGIN"));
    PQclear(run(ack, "SELECT 1 FROM queen.cursors WHERE partition_id = %lld AND consumer_group = 'g' FOR UPDATE", pa));
    /* the lease store, entries in claim order: B first */
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT queen.lease_store_v1('g', ARRAY[%s, %s], ARRAY[%lld, %lld]::int8[], ARRAY[1, 1], "
             "ARRAY['txn-b', 'txn-a'])",
             lease, lease, pb, pa);
    start(store, sql);
    assert_int_equal(done_or_blocked(store, w), BLOCKED);
    /* the ack goes on to B's cursor (the records are not the lease's yet: "Message not found") */
    char ua[40], ub[40];
    PGresult *r = run(w, "SELECT (SELECT uuid FROM queen.partitions WHERE id = %lld), "
                         "(SELECT uuid FROM queen.partitions WHERE id = %lld)",
                      pa, pb);
    snprintf(ua, sizeof ua, "%s", PQgetvalue(r, 0, 0));
    snprintf(ub, sizeof ub, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    r = run(ack,
            "SELECT idx FROM queen.ack_v1(" TENANT ", 'g', ARRAY['%s', '%s']::uuid[], ARRAY['txn-a', 'txn-b'], "
            "ARRAY['completed', 'completed'], ARRAY[NULL, NULL]::uuid[], ARRAY[NULL, NULL]::text[])",
            ua, ub);
    assert_int_equal(PQntuples(r), 2);
    PQclear(r);
    PQclear(run(ack, "COMMIT"));
    r = finish(store, "lease store");
    assert_string_equal(PQgetvalue(r, 0, 0), "2");
    PQclear(r);
    /* each cursor got its own transactionId, whatever order the entries were written in */
    r = run(w, "SELECT lease_txns[1] FROM queen.cursors WHERE consumer_group = 'g' AND partition_id IN (%lld, %lld) "
               "ORDER BY partition_id",
            pa, pb);
    assert_string_equal(PQgetvalue(r, 0, 0), "txn-a");
    assert_string_equal(PQgetvalue(r, 1, 0), "txn-b");
    PQclear(r);
    /* and an ack now finds them, and the cursors move on */
    r = run(ack,
            "SELECT bool_and(success) FROM queen.ack_v1(" TENANT ", 'g', ARRAY['%s', '%s']::uuid[], "
            "ARRAY['txn-b', 'txn-a'], ARRAY['completed', 'completed'], ARRAY[%s, %s], ARRAY[NULL, NULL]::text[])",
            ub, ua, lease, lease);
    assert_string_equal(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    assert_int_equal(value(w, "SELECT sum(next_offset) FROM queen.cursors WHERE consumer_group = 'g' AND queue_id = %lld", q),
                     2);
    PQfinish(ack);
    PQfinish(store);
    PQfinish(w);
}

/* Two empty, idle partitions with dedup rows. The dedup GC holds the second one's row and then
 * deletes the first one's; a cleanup that deleted the first partition (its dedup rows by cascade)
 * and then waited for the second one's would close the cycle. */
static void test_cleanup_vs_dedup_gc(void **state)
{
    (void)state;
    PGconn *gc = conn(), *clean = conn(), *w = conn();
    PQclear(run(w, "INSERT INTO queen.queues (tenant_id, name) VALUES (" TENANT ", 'lo_clean')"));
    long long q = value(w, "SELECT id FROM queen.queues WHERE name = 'lo_clean'");
    PQclear(run(w,
                "INSERT INTO queen.partitions (queue_id, name, start_offset, next_offset, last_ts, created_at) "
                "VALUES (%lld, 'c1', 1, 1, 1, now() - interval '2 days'), (%lld, 'c2', 1, 1, 1, now() - interval '2 days')",
                q, q));
    long long c1 = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 'c1'", q);
    long long c2 = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 'c2'", q);
    PQclear(run(w, "INSERT INTO queen.dedup (partition_id, txn_id, off, ts) VALUES (%lld, 't1', 0, 1), (%lld, 't2', 0, 1)",
                c1, c2));

    PQclear(run(gc, "BEGIN"));
    PQclear(run(gc, "DELETE FROM queen.dedup WHERE partition_id = %lld", c2));
    start(clean, "SELECT queen.partition_cleanup_v1(100, 86400000000)");
    if (done_or_blocked(clean, w) == BLOCKED) {
        /* the GC's next delete closes the cycle: 40P01 for one of the two */
        PQclear(run(gc, "DELETE FROM queen.dedup WHERE partition_id = %lld", c1));
        PQclear(run(gc, "COMMIT"));
        PQclear(finish(clean, "partition cleanup"));
        fail_msg("the partition cleanup waited for the dedup GC");
    }
    /* the cleanup never waits: it left c2 for a later round */
    PGresult *r = finish(clean, "partition cleanup");
    assert_true(atoi(PQgetvalue(r, 0, 0)) >= 1);
    PQclear(r);
    PQclear(run(gc, "DELETE FROM queen.dedup WHERE partition_id = %lld", c1));
    PQclear(run(gc, "COMMIT"));
    assert_int_equal(value(w, "SELECT count(*) FROM queen.partitions WHERE id = %lld", c1), 0);
    assert_int_equal(value(w, "SELECT count(*) FROM queen.partitions WHERE id = %lld", c2), 1);
    /* once the GC is done, the next round takes c2 */
    assert_true(value(clean, "SELECT queen.partition_cleanup_v1(100, 86400000000)") >= 1);
    assert_int_equal(value(w, "SELECT count(*) FROM queen.partitions WHERE queue_id = %lld", q), 0);
    PQfinish(gc);
    PQfinish(clean);
    PQfinish(w);
}

/* A group's first pop creates its cursors in claim order (here its hints: s5, then s3); a seek
 * of the group creates the missing ones in partition-id order (s3, then s5). Each waits on the
 * unique index for the cursor the other inserted; the seek must give way, not the pop. */
static void test_seek_vs_first_pop(void **state)
{
    (void)state;
    PGconn *seek = conn(), *pop = conn(), *w = conn();
    for (int i = 0; i < 2; i++)
        PQclear(run(w,
                    "SELECT * FROM queen.push_v1(ARRAY[" TENANT "], ARRAY['lo_seek'], ARRAY['%s'], ARRAY[1], ARRAY[1], "
                    "ARRAY['\\x00'::bytea], '{}', '{}', '{}', 0)",
                    i ? "s5" : "s3"));
    long long q = value(w, "SELECT id FROM queen.queues WHERE name = 'lo_seek'");
    long long p3 = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 's3'", q);
    long long p5 = value(w, "SELECT id FROM queen.partitions WHERE queue_id = %lld AND name = 's5'", q);
    assert_true(p3 < p5);

    /* the seek has created s3's cursor (the lower id comes first in its upsert) */
    PQclear(run(seek, "BEGIN"));
    PQclear(run(seek, "SELECT * FROM queen.seek_v1(" TENANT ", 'gs', 'lo_seek', 's3', 'start', NULL, NULL)"));
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FILTER (WHERE kind = 0) FROM queen.pop_v1(" TENANT ", 'lo_seek', NULL, 'gs', 2, false, "
             "NULL, NULL, 2, ARRAY['0190c2e1-0000-7000-8000-000000000002'::uuid], 60, false, ARRAY[%lld, %lld]::int8[])",
             p5, p3);
    start(pop, sql);
    assert_int_equal(done_or_blocked(pop, w), BLOCKED);
    /* the seek goes on to s5, whose cursor the pop has just created */
    PGresult *r = PQexec(seek, "SELECT * FROM queen.seek_v1(" TENANT ", 'gs', 'lo_seek', 's5', 'start', NULL, NULL)");
    const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        /* the seek waited until PostgreSQL broke the cycle, aborting the pop (40P01) */
        PQclear(r);
        PQclear(run(seek, "COMMIT"));
        PQclear(finish(pop, "pop"));
        fail_msg("the seek waited for the pop");
    }
    /* lock_not_available: the seek gave way (its caller retries it) */
    assert_string_equal(code ? code : "?", "55P03");
    PQclear(r);
    PQclear(run(seek, "ROLLBACK"));
    r = finish(pop, "pop");
    assert_string_equal(PQgetvalue(r, 0, 0), "2");
    PQclear(r);
    PQfinish(seek);
    PQfinish(pop);
    PQfinish(w);
}

/* Timer ops lock their keys in (queue, timerKey) byte order whatever the order of the ops
 * (timer_ops_v1): a batch naming k2 then k1, behind a transaction that holds k1, must hold
 * nothing of k2 meanwhile, or that transaction's next op on k2 would close the cycle. */
#define TIMER_OP_ARGS(ops, keys, txns, ids)                                                                    \
    "SELECT o_status FROM queen.timer_ops_v1(" TENANT ", ARRAY[" ops "], ARRAY['lo_t','lo_t'], ARRAY[" keys "], " \
    "ARRAY['p','p'], ARRAY[" txns "], ARRAY[3600000000,3600000000]::int8[], ARRAY[" ids "]::uuid[], ARRAY[1,1], "  \
    "ARRAY['\\x00','\\x00']::bytea[]) ORDER BY o_index"
static void test_timer_ops_key_order(void **state)
{
    (void)state;
    PGconn *a = conn(), *b = conn(), *w = conn();
    PQclear(run(w, TIMER_OP_ARGS("0,0", "'k1','k2'", "'t1','t2'",
                                 "'0190c2e1-0000-7000-8000-0000000000a1','0190c2e1-0000-7000-8000-0000000000a2'")));
    PQclear(run(a, "BEGIN"));
    PQclear(run(a, "SELECT * FROM queen.timer_ops_v1(" TENANT ", ARRAY[1], ARRAY['lo_t'], ARRAY['k1'], ARRAY['p'], "
                   "ARRAY['a1'], ARRAY[1]::int8[], ARRAY['0190c2e1-0000-7000-8000-0000000000b1']::uuid[], ARRAY[1], "
                   "ARRAY['\\x00']::bytea[])"));
    start(b, TIMER_OP_ARGS("1,1", "'k2','k1'", "'b2','b1'",
                           "'0190c2e1-0000-7000-8000-0000000000c2','0190c2e1-0000-7000-8000-0000000000c1'"));
    assert_int_equal(done_or_blocked(b, w), BLOCKED);
    /* k2 is free: the batch waiting for k1 has not taken it */
    PGresult *r = run(a, "SELECT o_status FROM queen.timer_ops_v1(" TENANT ", ARRAY[1], ARRAY['lo_t'], ARRAY['k2'], "
                         "ARRAY['p'], ARRAY['a2'], ARRAY[1]::int8[], ARRAY['0190c2e1-0000-7000-8000-0000000000b2']::uuid[], "
                         "ARRAY[1], ARRAY['\\x00']::bytea[])");
    assert_string_equal(PQgetvalue(r, 0, 0), "1");
    PQclear(r);
    PQclear(run(a, "COMMIT"));
    r = finish(b, "the second batch");
    assert_int_equal(PQntuples(r), 2);
    assert_string_equal(PQgetvalue(r, 0, 0), "1");
    assert_string_equal(PQgetvalue(r, 1, 0), "1");
    PQclear(r);
    assert_int_equal(value(w, "SELECT count(*) FROM queen.log_timers WHERE queue = 'lo_t' AND txn_id LIKE 'b%%'"), 2);
    PQfinish(a);
    PQfinish(b);
    PQfinish(w);
}

/* One flush-shaped stream cycle (no pushes, no ack) upserting `key` of shard (Q, P). */
#define STREAM_Q "'0190c2e1-0000-7000-8000-00000000d001'::uuid"
#define STREAM_P "'0190c2e1-0000-7000-8000-00000000d002'::uuid"
#define STREAM_UPSERT(key)                                                                                      \
    "SELECT * FROM queen.streams_cycle_v2(" TENANT ", " STREAM_Q ", " STREAM_P ", 'g', ARRAY['upsert'], "        \
    "ARRAY['" key "'], ARRAY['{}'], NULL::int8[], NULL::uuid[], NULL::text[], NULL::text[], NULL::int[], NULL::int[], "        \
    "NULL::bytea[], NULL::int[], NULL::int[], NULL::text[], 0, NULL, NULL, NULL, NULL, true, NULL, true, false)"

/* A cycle holds a state row of its query (an upsert of an existing key) and then inserts a new
 * key, whose foreign key wants a key-share lock on the query row; a drop of the query between the
 * two takes the query row FOR UPDATE and waits for the state row. Without the key-share lock the
 * cycle takes first, the two close a cycle; with it, the drop waits for the cycle from the start. */
static void test_stream_cycle_vs_drop(void **state)
{
    (void)state;
    PGconn *a = conn(), *b = conn(), *w = conn();
    PQclear(run(w, "SELECT * FROM queen.streams_register_v1(" TENANT ", " STREAM_Q ", 'lo_q', 's', NULL, 'h', false)"));
    PQclear(run(w, STREAM_UPSERT("k1")));
    PQclear(run(a, "BEGIN"));
    PQclear(run(a, STREAM_UPSERT("k1")));
    start(b, "SELECT * FROM queen.streams_drop_v1(" TENANT ", 'lo_q')");
    assert_int_equal(done_or_blocked(b, w), BLOCKED);
    PQclear(run(a, STREAM_UPSERT("k2")));
    PQclear(run(a, "COMMIT"));
    PGresult *r = finish(b, "the drop");
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 1), "2");
    PQclear(r);
    assert_int_equal(value(w, "SELECT count(*) FROM queen.stream_state WHERE query_id = " STREAM_Q), 0);
    PQfinish(a);
    PQfinish(b);
    PQfinish(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention_vs_group_commit),
        cmocka_unit_test(test_lease_store_vs_ack),
        cmocka_unit_test(test_cleanup_vs_dedup_gc),
        cmocka_unit_test(test_seek_vs_first_pop),
        cmocka_unit_test(test_timer_ops_key_order),
        cmocka_unit_test(test_stream_cycle_vs_drop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
