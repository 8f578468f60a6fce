/* Unit tests for the FIFO of distinct ids behind pop hints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/idring.h"

static void test_fifo_and_dedup(void **state)
{
    (void)state;
    idring r;
    idring_init(&r, 8);
    assert_int_equal(idring_push(&r, 5), 1);
    assert_int_equal(idring_push(&r, 0), 1); /* 0 is a valid id */
    assert_int_equal(idring_push(&r, 5), 0); /* already queued */
    assert_int_equal(idring_push(&r, 7), 1);
    assert_int_equal(idring_count(&r), 3);
    uint64_t v;
    assert_int_equal(idring_pop(&r, &v), 1);
    assert_int_equal(v, 5);
    assert_int_equal(idring_push(&r, 5), 1); /* popped ids may come back, at the end */
    assert_int_equal(idring_pop(&r, &v), 1);
    assert_int_equal(v, 0);
    assert_int_equal(idring_pop(&r, &v), 1);
    assert_int_equal(v, 7);
    assert_int_equal(idring_pop(&r, &v), 1);
    assert_int_equal(v, 5);
    assert_int_equal(idring_pop(&r, &v), 0);
    idring_free(&r);
}

static void test_full_and_wraparound(void **state)
{
    (void)state;
    idring r;
    idring_init(&r, 4);
    for (uint64_t round = 0; round < 1000; round++) {
        for (uint64_t k = 0; k < 4; k++)
            assert_int_equal(idring_push(&r, round * 10 + k), 1);
        assert_int_equal(idring_push(&r, 999999), 0); /* full */
        for (uint64_t k = 0; k < 4; k++) {
            uint64_t v;
            assert_int_equal(idring_pop(&r, &v), 1);
            assert_int_equal(v, round * 10 + k);
        }
    }
    idring_free(&r);
}

static void test_deletes_keep_lookups_right(void **state)
{
    (void)state;
    /* colliding ids: after popping some, the others must still be found as present */
    idring r;
    idring_init(&r, 64);
    for (uint64_t i = 0; i < 64; i++)
        assert_int_equal(idring_push(&r, i * 64), 1);
    for (int k = 0; k < 32; k++) {
        uint64_t v;
        idring_pop(&r, &v);
    }
    for (uint64_t i = 32; i < 64; i++)
        assert_int_equal(idring_push(&r, i * 64), 0);
    for (uint64_t i = 0; i < 32; i++)
        assert_int_equal(idring_push(&r, i * 64), 1);
    idring_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_dedup),
        cmocka_unit_test(test_full_and_wraparound),
        cmocka_unit_test(test_deletes_keep_lookups_right),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
