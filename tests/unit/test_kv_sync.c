/* Tests of the in-process KV API (kv_batch_sync) on real PostgreSQL, the way the S3 sink will
 * use it: threads of their own, each with a blocking connection. The test starts a private
 * cluster with the broker's own embedded-PostgreSQL code (about two seconds) and applies the
 * migrations. Covers the lease + fence pattern, putIfAbsent races between threads, batches
 * that lock the same keys in opposite orders (no deadlock), all-or-nothing failures, incr with
 * max and TTL, and byte-exact values. */
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
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv/kv.h"
#include "support/pgtest.h"

static pgtest g_pg;
static const uint8_t TENANT[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

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
    return pgtest_start(&g_pg, "kvsync");
}

static int teardown(void **state)
{
    (void)state;
    pgtest_stop(&g_pg);
    return 0;
}

/* Runs a batch that must reach the database; returns the outcome (caller clears it). */
static kv_outcome run(PGconn *c, const kv_op *ops, int n)
{
    kv_outcome o;
    qerr_detail err;
    if (kv_batch_sync(c, TENANT, ops, n, &o, &err) != QERR_OK)
        fail_msg("kv_batch_sync: %s", err.text);
    return o;
}

/* The stored text of a key, or NULL when absent (caller frees). */
static char *value_of(PGconn *c, const char *ns, const char *key, int64_t *version)
{
    kv_op g = kv_op_get(ns, key);
    kv_outcome o = run(c, &g, 1);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    char *v = o.results[0].value ? strndup(o.results[0].value, o.results[0].value_len) : NULL;
    if (version)
        *version = o.results[0].version;
    kv_outcome_clear(&o);
    return v;
}

/* The S3 sink's pattern: take a lease with putIfAbsent and a TTL; every commit is a batch whose
 * first op rewrites the lease requiring the version this node last wrote. A node whose lease
 * was taken over cannot move a pointer, and its whole batch changes nothing. */
static void test_lease_fence(void **state)
{
    (void)state;
    PGconn *a = conn(), *b = conn();
    const char *NS = "queen-s3", *LEASE = "s3:default:orders:lease", *PTR = "s3:default:orders:commit";

    kv_op take = kv_op_put_if_absent(NS, LEASE, "{\"holder\":\"a\"}", 30000);
    kv_outcome o = run(a, &take, 1);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    assert_int_equal(o.results[0].flag, 1);
    int64_t va = o.results[0].version;
    assert_true(va > 0);
    assert_true(o.results[0].expires_at_us > 0);
    kv_outcome_clear(&o);

    /* b cannot take it while it is held */
    kv_op take_b = kv_op_put_if_absent(NS, LEASE, "{\"holder\":\"b\"}", 30000);
    o = run(b, &take_b, 1);
    assert_int_equal(o.fail, KV_FAIL_EXISTS);
    assert_int_equal(o.failed_op, 0);
    assert_int_equal(o.current.version, va);
    kv_outcome_clear(&o);

    /* a commits window 1: fence + pointer */
    kv_op commit1[2] = {kv_op_put_if_version(NS, LEASE, "{\"holder\":\"a\"}", 30000, va),
                        kv_op_put(NS, PTR, "{\"k\":1}", 0)};
    o = run(a, commit1, 2);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    int64_t va2 = o.results[0].version;
    assert_true(va2 > va);
    assert_true(o.results[1].version > va2);
    kv_outcome_clear(&o);

    /* a stalls; its lease is given up (here: deleted, as an expiry would) and b takes it */
    kv_op drop = kv_op_delete(NS, LEASE);
    o = run(b, &drop, 1);
    assert_int_equal(o.results[0].flag, 1);
    kv_outcome_clear(&o);
    o = run(b, &take_b, 1);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    int64_t vb = o.results[0].version;
    /* versions come from one sequence: the new row never repeats a version a held */
    assert_true(vb > va2);
    kv_outcome_clear(&o);

    /* a comes back and tries to commit window 2 with its old version: refused, nothing moves */
    kv_op commit2[2] = {kv_op_put_if_version(NS, LEASE, "{\"holder\":\"a\"}", 30000, va2),
                        kv_op_put(NS, PTR, "{\"k\":2}", 0)};
    o = run(a, commit2, 2);
    assert_int_equal(o.fail, KV_FAIL_VERSION);
    assert_int_equal(o.failed_op, 0);
    assert_int_equal(o.current.version, vb);
    kv_outcome_clear(&o);
    char *ptr = value_of(a, NS, PTR, NULL);
    assert_string_equal(ptr, "{\"k\":1}");
    free(ptr);
    int64_t lv;
    char *lease = value_of(a, NS, LEASE, &lv);
    assert_string_equal(lease, "{\"holder\":\"b\"}");
    assert_int_equal(lv, vb);
    free(lease);

    /* b's fence works with its own version */
    kv_op commit3[2] = {kv_op_put_if_version(NS, LEASE, "{\"holder\":\"b\"}", 30000, vb),
                        kv_op_put(NS, PTR, "{\"k\":2}", 0)};
    o = run(b, commit3, 2);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    kv_outcome_clear(&o);

    /* an expired lease reads as absent: the fence reports it, and putIfAbsent takes it over */
    kv_op short_lease = kv_op_put_if_absent(NS, "s3:default:short:lease", "{\"holder\":\"a\"}", 1);
    o = run(a, &short_lease, 1);
    int64_t vs = o.results[0].version;
    kv_outcome_clear(&o);
    usleep(20000);
    kv_op fence = kv_op_put_if_version(NS, "s3:default:short:lease", "{\"holder\":\"a\"}", 30000, vs);
    o = run(a, &fence, 1);
    assert_int_equal(o.fail, KV_FAIL_ABSENT);
    kv_outcome_clear(&o);
    short_lease.value = "{\"holder\":\"b\"}";
    short_lease.value_len = strlen(short_lease.value);
    o = run(b, &short_lease, 1);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    assert_true(o.results[0].version > vs);
    kv_outcome_clear(&o);
    PQfinish(a);
    PQfinish(b);
}

/* A batch whose second op fails changes nothing, and says which op failed. */
static void test_all_or_nothing(void **state)
{
    (void)state;
    PGconn *c = conn();
    kv_op seed[2] = {kv_op_put("t2", "a", "1", 0), kv_op_put("t2", "b", "1", 0)};
    kv_outcome o = run(c, seed, 2);
    int64_t vb = o.results[1].version;
    kv_outcome_clear(&o);
    kv_op batch[3] = {kv_op_put("t2", "a", "2", 0), kv_op_put_if_version("t2", "b", "2", 0, vb + 1000),
                      kv_op_put("t2", "new", "1", 0)};
    o = run(c, batch, 3);
    assert_int_equal(o.fail, KV_FAIL_VERSION);
    assert_int_equal(o.failed_op, 1);
    kv_outcome_clear(&o);
    char *v = value_of(c, "t2", "a", NULL);
    assert_string_equal(v, "1");
    free(v);
    assert_null(value_of(c, "t2", "new", NULL));
    /* and the placeholder of the absent key is gone: no row at all */
    PGresult *r = PQexec(c, "SELECT count(*) FROM queen.kv WHERE namespace = 't2' AND key = 'new'");
    assert_string_equal(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
    PQfinish(c);
}

static void test_incr(void **state)
{
    (void)state;
    PGconn *c = conn();
    kv_op inc = kv_op_incr("rl", "u1", 1);
    inc.has_max = 1;
    inc.max = 3;
    inc.ttl_ms = 60000;
    int64_t exp = 0;
    for (int i = 1; i <= 3; i++) {
        kv_outcome o = run(c, &inc, 1);
        assert_int_equal(o.fail, KV_FAIL_NONE);
        char want[16];
        snprintf(want, sizeof want, "%d", i);
        assert_int_equal(o.results[0].value_len, 1);
        assert_memory_equal(o.results[0].value, want, 1);
        assert_int_equal(o.results[0].flag, i == 1);
        /* the TTL is set when the incr creates the key, and kept after */
        if (i == 1)
            exp = o.results[0].expires_at_us;
        assert_true(exp > 0);
        assert_int_equal(o.results[0].expires_at_us, exp);
        kv_outcome_clear(&o);
    }
    kv_outcome o = run(c, &inc, 1);
    assert_int_equal(o.fail, KV_FAIL_MAX);
    assert_memory_equal(o.current.value, "3", 1);
    kv_outcome_clear(&o);
    /* a decrement is never refused by max */
    inc.by = -1;
    o = run(c, &inc, 1);
    assert_int_equal(o.fail, KV_FAIL_NONE);
    assert_memory_equal(o.results[0].value, "2", 1);
    kv_outcome_clear(&o);
    /* only integers count */
    kv_op puts[2] = {kv_op_put("rl", "f", "1.5", 0), kv_op_put("rl", "big", "9223372036854775807", 0)};
    o = run(c, puts, 2);
    kv_outcome_clear(&o);
    kv_op bad = kv_op_incr("rl", "f", 1);
    o = run(c, &bad, 1);
    assert_int_equal(o.fail, KV_FAIL_NOT_INTEGER);
    kv_outcome_clear(&o);
    bad = kv_op_incr("rl", "big", 1);
    o = run(c, &bad, 1);
    assert_int_equal(o.fail, KV_FAIL_OVERFLOW);
    kv_outcome_clear(&o);
    PQfinish(c);
}

static void test_bytes_and_bad_ops(void **state)
{
    (void)state;
    PGconn *c = conn();
    const char *values[] = {"42.00", "{ \"a\" :\t[1 , 2.50] }", "\"caf\\u00e9 \\ud83d\\ude00\"", "\"café ☕\"", "null",
                            "-0", "1e400"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        kv_op p = kv_op_put("bytes", "k", values[i], 0);
        kv_outcome o = run(c, &p, 1);
        kv_outcome_clear(&o);
        char *v = value_of(c, "bytes", "k", NULL);
        assert_string_equal(v, values[i]);
        free(v);
    }
    kv_outcome o;
    qerr_detail err;
    kv_op empty_key = kv_op_get("ns", "");
    assert_int_equal(kv_batch_sync(c, TENANT, &empty_key, 1, &o, &err), QERR_BAD_INPUT);
    assert_string_equal(err.text, "op 0: key must be a non-empty string");
    assert_int_equal(kv_batch_sync(c, TENANT, &empty_key, 0, &o, &err), QERR_BAD_INPUT);
    assert_string_equal(err.text, "a batch holds 1 to 1000 ops, not 0");
    PQfinish(c);
}

/* ---- races between threads, each with its own connection ---- */

#define RACE_ROUNDS 150

typedef struct racer {
    int id;
    pthread_barrier_t *bar;
    int wins;
    int errors;
} racer;

static void *race_put_if_absent(void *arg)
{
    racer *r = arg;
    PGconn *c = conn();
    for (int i = 0; i < RACE_ROUNDS; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "race-%d", i);
        snprintf(val, sizeof val, "%d", r->id);
        kv_op op = kv_op_put_if_absent("race", key, val, 0);
        pthread_barrier_wait(r->bar);
        kv_outcome o;
        qerr_detail err;
        if (kv_batch_sync(c, TENANT, &op, 1, &o, &err) != QERR_OK)
            r->errors++;
        else if (o.fail == KV_FAIL_NONE)
            r->wins++;
        else if (o.fail != KV_FAIL_EXISTS)
            r->errors++;
        kv_outcome_clear(&o);
    }
    PQfinish(c);
    return NULL;
}

static void test_put_if_absent_race(void **state)
{
    (void)state;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    racer rs[2] = {{.id = 1, .bar = &bar}, {.id = 2, .bar = &bar}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, race_put_if_absent, &rs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(rs[0].errors + rs[1].errors, 0);
    assert_int_equal(rs[0].wins + rs[1].wins, RACE_ROUNDS);
    /* each key holds its winner's value */
    PGconn *c = conn();
    PGresult *r = PQexec(c, "SELECT count(*) FROM queen.kv WHERE namespace = 'race' AND version > 0");
    assert_int_equal(atoi(PQgetvalue(r, 0, 0)), RACE_ROUNDS);
    PQclear(r);
    PQfinish(c);
}

/* Two threads run batches over the same keys named in opposite orders. The function locks in
 * key order, so no statement ever fails with a deadlock: the statement is sent directly, not
 * through kv_batch_sync (which would retry one and hide it). */
static void *race_batches(void *arg)
{
    racer *r = arg;
    PGconn *c = conn();
    for (int i = 0; i < RACE_ROUNDS; i++) {
        kv_op ops[8];
        char keys[8][16];
        for (int k = 0; k < 8; k++) {
            int kk = r->id == 1 ? k : 7 - k;
            snprintf(keys[k], sizeof keys[k], "k%d", kk);
            ops[k] = kv_op_incr("order", keys[k], 1);
        }
        kv_params p;
        kv_batch_params(TENANT, ops, 8, &p);
        pthread_barrier_wait(r->bar);
        PGresult *res = PQexecParams(c, KV_BATCH_SQL, p.n, NULL, p.values, p.lengths, p.formats, 1);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            fprintf(stderr, "batch failed: %s", PQresultErrorMessage(res));
            r->errors++;
        }
        PQclear(res);
        kv_params_free(&p);
    }
    PQfinish(c);
    return NULL;
}

static void test_opposite_orders_do_not_deadlock(void **state)
{
    (void)state;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    racer rs[2] = {{.id = 1, .bar = &bar}, {.id = 2, .bar = &bar}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, race_batches, &rs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(rs[0].errors + rs[1].errors, 0);
    PGconn *c = conn();
    char *v = value_of(c, "order", "k3", NULL);
    char want[16];
    snprintf(want, sizeof want, "%d", 2 * RACE_ROUNDS);
    assert_string_equal(v, want);
    free(v);
    PQfinish(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_fence),
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_incr),
        cmocka_unit_test(test_bytes_and_bad_ops),
        cmocka_unit_test(test_put_if_absent_race),
        cmocka_unit_test(test_opposite_orders_do_not_deadlock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
