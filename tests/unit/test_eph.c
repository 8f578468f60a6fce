/* Unit tests for ephemeral queues (ephemeral/eph.h): FIFO per partition, fan-out and competing
 * groups, leases running out, retries spent, bounds and policies, TTL, stale ids, and the byte
 * accounting returning to zero when everything has been consumed or dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ephemeral/eph.h"

static const uint8_t T[16] = {1};

static void push(eph *e, const char *q, const char *p, int from, int n, int64_t now, qerr expect)
{
    const char *pl[64];
    size_t lens[64];
    char texts[64][16];
    for (int i = 0; i < n; i++) {
        snprintf(texts[i], sizeof texts[i], "%d", from + i);
        pl[i] = texts[i];
        lens[i] = strlen(texts[i]);
    }
    qerr_detail err;
    qerr got = eph_push(e, T, q, strlen(q), p, strlen(p), pl, lens, (uint32_t)n, now, &err);
    assert_int_equal(got, expect);
    if (got == QERR_LIMIT) {
        assert_string_equal(err.code, "ephemeral_queue_full");
        assert_string_equal(err.reason, "queue_full");
        assert_non_null(strstr(err.text, "nothing was pushed"));
    } else if (got == QERR_UNAVAILABLE) {
        assert_string_equal(err.code, "ephemeral_node_full");
        assert_string_equal(err.reason, "node_full");
    }
}

static uint32_t pop(eph *e, const char *q, const char *g, uint32_t batch, int auto_ack, int64_t now, arena *ar,
                    eph_msg *out)
{
    return eph_pop(e, T, q, strlen(q), NULL, 0, g, g ? strlen(g) : 0, batch, auto_ack, now, ar, out);
}

static void test_groups_and_accounting(void **state)
{
    (void)state;
    eph *e = eph_new(0xabc, 0);
    arena ar;
    arena_init(&ar);
    eph_msg m[16];
    push(e, "q", "p", 0, 4, 1000, QERR_OK);
    /* two groups: each sees everything; a message leaves once every group that exists has it */
    assert_int_equal(pop(e, "q", "a", 16, 0, 1000, &ar, m), 4);
    assert_memory_equal(m[0].payload, "0", 1);
    assert_memory_equal(m[3].payload, "3", 1);
    eph_msg mb[16];
    assert_int_equal(pop(e, "q", "b", 2, 1, 1000, &ar, mb), 2);
    for (int i = 0; i < 4; i++)
        assert_int_equal(eph_ack(e, T, "q", 1, "a", 1, m[i].id, strlen(m[i].id), EPH_COMPLETED, 1000), EPH_ACKED);
    eph_stats st;
    eph_get_stats(e, &st);
    assert_int_equal(st.messages, 2); /* b has not had 2 and 3 yet */
    assert_int_equal(pop(e, "q", "b", 16, 1, 1000, &ar, mb), 2);
    assert_memory_equal(mb[0].payload, "2", 1);
    eph_get_stats(e, &st);
    assert_int_equal(st.messages, 0);
    assert_int_equal(st.bytes, 0);
    /* a group that comes later starts at what is still held */
    push(e, "q", "p", 10, 1, 1000, QERR_OK);
    assert_int_equal(pop(e, "q", "c", 16, 1, 1000, &ar, mb), 1);
    assert_memory_equal(mb[0].payload, "10", 2);
    /* acking again: stale; a foreign incarnation: stale; garbage: unknown */
    assert_int_equal(eph_ack(e, T, "q", 1, "a", 1, m[0].id, strlen(m[0].id), EPH_COMPLETED, 1000), EPH_STALE);
    char other[64];
    snprintf(other, sizeof other, "%016x.1.0.0", 0xdef);
    assert_int_equal(eph_ack(e, T, "q", 1, "a", 1, other, strlen(other), EPH_COMPLETED, 1000), EPH_STALE);
    assert_int_equal(eph_ack(e, T, "q", 1, "a", 1, "nope", 4, EPH_COMPLETED, 1000), EPH_UNKNOWN);
    arena_free(&ar);
    eph_free(e);
}

static void test_leases_and_retries(void **state)
{
    (void)state;
    eph *e = eph_new(1, 0);
    eph_opts o;
    eph_opts_default(&o);
    o.lease_ms = 100;
    o.retry_limit = 1;
    eph_configure(e, T, "q", 1, &o);
    arena ar;
    arena_init(&ar);
    eph_msg m[4];
    push(e, "q", "p", 7, 1, 0, QERR_OK);
    assert_int_equal(pop(e, "q", NULL, 4, 0, 0, &ar, m), 1);
    assert_int_equal(m[0].attempts, 1);
    assert_int_equal(pop(e, "q", NULL, 4, 0, 50, &ar, m), 0);
    assert_int_equal(eph_next_expiry(e, T, "q", 1), 100);
    assert_int_equal(pop(e, "q", NULL, 4, 0, 100, &ar, m), 1);
    assert_int_equal(m[0].attempts, 2);
    /* its second lease runs out: retryLimit 1 is spent, dropped */
    assert_int_equal(pop(e, "q", NULL, 4, 0, 250, &ar, m), 0);
    eph_stats st;
    eph_get_stats(e, &st);
    assert_int_equal(st.dropped_retries, 1);
    assert_int_equal(st.messages, 0);
    arena_free(&ar);
    eph_free(e);
}

static void test_bounds_ttl_and_delete(void **state)
{
    (void)state;
    eph *e = eph_new(2, 1000);
    eph_opts o;
    eph_opts_default(&o);
    o.max_length = 3;
    eph_configure(e, T, "q", 1, &o);
    push(e, "q", "p", 0, 3, 0, QERR_OK);
    push(e, "q", "p", 3, 1, 0, QERR_LIMIT);
    push(e, "q", "p", 0, 4, 0, QERR_LIMIT);
    o.policy = EPH_DROP_OLDEST;
    o.ttl_ms = 500;
    eph_configure(e, T, "q", 1, &o);
    push(e, "q", "p", 3, 2, 100, QERR_OK);
    arena ar;
    arena_init(&ar);
    eph_msg m[8];
    /* the oldest (0, 1) made room; at 550 the three stamped 0 and 100 are past the TTL... */
    assert_int_equal(eph_available(e, T, "q", 1, NULL, 0, NULL, 0, 200), 3);
    assert_int_equal(eph_available(e, T, "q", 1, NULL, 0, NULL, 0, 600), 0);
    /* the node budget (1000 bytes): 16 messages of 64 + 1 do not fit */
    push(e, "r", "p", 0, 16, 600, QERR_UNAVAILABLE);
    assert_int_equal(eph_reset(e, T, "q", 1), 0);
    push(e, "q", "p", 0, 1, 700, QERR_OK);
    assert_int_equal(pop(e, "q", "g", 8, 0, 700, &ar, m), 1);
    assert_int_equal(eph_delete(e, T, "q", 1), 1);
    assert_int_equal(eph_delete(e, T, "q", 1), 0);
    push(e, "q", "p", 0, 1, 700, QERR_OK);
    /* an id from before the delete does not settle the new queue's message */
    assert_int_equal(eph_ack(e, T, "q", 1, "g", 1, m[0].id, strlen(m[0].id), EPH_COMPLETED, 700), EPH_STALE);
    buf b;
    buf_init(&b, 0);
    assert_int_equal(eph_depth_json(e, T, "q", 1, 700, &b), 0);
    assert_non_null(strstr(b.data, "\"length\":1"));
    assert_int_equal(eph_depth_json(e, T, "zz", 2, 700, &b), -1);
    buf_free(&b);
    arena_free(&ar);
    eph_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_and_accounting),
        cmocka_unit_test(test_leases_and_retries),
        cmocka_unit_test(test_bounds_ttl_and_delete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
