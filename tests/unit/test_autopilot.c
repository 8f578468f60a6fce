/* Unit tests for pop sizing (consume/autopilot.h): the 2.x rule that autopilot fills only the
 * knobs the client left unset, the 0.15 defaults without it, and the pacing advice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "consume/autopilot.h"

static pop_sizing sized(int autopilot, int64_t batch, int64_t partitions)
{
    pop_sizing s = {.autopilot = autopilot, .batch_set = batch > 0, .partitions_set = partitions > 0,
                    .batch = batch, .partitions = partitions};
    pop_size(&s, 1, 10000, 100);
    return s;
}

static void test_without_autopilot_the_015_defaults(void **state)
{
    (void)state;
    pop_sizing s = sized(0, 0, 0);
    assert_int_equal(s.batch, 1);
    assert_int_equal(s.partitions, 1);
    s = sized(0, 50, 0);
    assert_int_equal(s.batch, 50);
    assert_int_equal(s.partitions, 1);
    s = sized(0, 0, 7);
    assert_int_equal(s.batch, 1);
    assert_int_equal(s.partitions, 7);
    /* the node's default batch (DEFAULT_BATCH_SIZE) is the fallback, not a constant */
    pop_sizing d = {.autopilot = 0};
    pop_size(&d, 25, 10000, 100);
    assert_int_equal(d.batch, 25);
}

static void test_autopilot_fills_only_what_is_unset(void **state)
{
    (void)state;
    pop_sizing s = sized(1, 0, 0);
    assert_int_equal(s.batch, AUTOPILOT_BATCH);
    assert_int_equal(s.partitions, AUTOPILOT_MAX_PARTITIONS);
    /* a pinned batch is sacred; the width never exceeds it */
    s = sized(1, 1, 0);
    assert_int_equal(s.batch, 1);
    assert_int_equal(s.partitions, 1);
    s = sized(1, 3, 0);
    assert_int_equal(s.batch, 3);
    assert_int_equal(s.partitions, 3);
    s = sized(1, 500, 0);
    assert_int_equal(s.batch, 500);
    assert_int_equal(s.partitions, AUTOPILOT_MAX_PARTITIONS);
    /* a pinned width is sacred too, even 1 */
    s = sized(1, 0, 1);
    assert_int_equal(s.batch, AUTOPILOT_BATCH);
    assert_int_equal(s.partitions, 1);
    s = sized(1, 0, 40);
    assert_int_equal(s.partitions, 40);
    /* both pinned: nothing to decide */
    s = sized(1, 9, 2);
    assert_int_equal(s.batch, 9);
    assert_int_equal(s.partitions, 2);
}

static void test_bounds(void **state)
{
    (void)state;
    pop_sizing s = {.autopilot = 1};
    pop_size(&s, 1, 50, 4);
    assert_int_equal(s.batch, 50);
    assert_int_equal(s.partitions, 4);
}

static void test_wait_advice(void **state)
{
    (void)state;
    assert_int_equal(pop_wait_advice_ms(1, 0, 0), 0);
    assert_int_equal(pop_wait_advice_ms(1, 5000000, 0), 0);
    assert_int_equal(pop_wait_advice_ms(0, 0, 1000), AUTOPILOT_IDLE_WAIT_MS);
    int64_t now = 1800000000000000;
    assert_int_equal(pop_wait_advice_ms(0, now + 250000, now), 250);
    assert_int_equal(pop_wait_advice_ms(0, now + 1, now), AUTOPILOT_MIN_WAIT_MS);
    assert_int_equal(pop_wait_advice_ms(0, now - 5000000, now), AUTOPILOT_MIN_WAIT_MS);
    assert_int_equal(pop_wait_advice_ms(0, now + 60000000, now), AUTOPILOT_MAX_WAIT_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_autopilot_the_015_defaults),
        cmocka_unit_test(test_autopilot_fills_only_what_is_unset),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_wait_advice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
