/* Unit tests for the error convention (core/qerr.h): qerr_set fills the detail and returns
 * the enum, every enum has a name, a sentence and a status, and only 4xx details are shown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/qerr.h"

static qerr refuse(qerr_detail *d, int n)
{
    if (n > 3)
        return qerr_set(d, QERR_BAD_INPUT, "too_many_entries", "%d entries: at most %d", n, 3);
    return QERR_OK;
}

static void test_set_and_return(void **state)
{
    (void)state;
    qerr_detail d;
    memset(&d, 0, sizeof d);
    assert_int_equal(refuse(&d, 2), QERR_OK);
    assert_int_equal(refuse(&d, 5), QERR_BAD_INPUT);
    assert_string_equal(d.code, "too_many_entries");
    assert_string_equal(d.text, "5 entries: at most 3");
    /* no detail wanted: the enum alone */
    assert_int_equal(refuse(NULL, 9), QERR_BAD_INPUT);
    /* no sentence given: the enum's */
    assert_int_equal(qerr_set(&d, QERR_CORRUPT, NULL, NULL), QERR_CORRUPT);
    assert_null(d.code);
    assert_string_equal(d.text, qerr_str(QERR_CORRUPT));
    /* a long sentence is cut to the buffer, NUL-terminated */
    char big[QERR_TEXT_MAX * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    qerr_set(&d, QERR_INTERNAL, NULL, "%s", big);
    assert_int_equal(strlen(d.text), QERR_TEXT_MAX - 1);
}

static void test_reason_and_index(void **state)
{
    (void)state;
    qerr_detail d;
    memset(&d, 0x5a, sizeof d);
    /* qerr_set clears what an earlier failure left */
    assert_int_equal(qerr_set(&d, QERR_BAD_INPUT, "x", "y"), QERR_BAD_INPUT);
    assert_null(d.reason);
    assert_int_equal(d.index, -1);
    assert_int_equal(qerr_set_reason(&d, QERR_BAD_INPUT, "timer_invalid_payload", "not_base64", "op %d", 2),
                     QERR_BAD_INPUT);
    assert_string_equal(d.code, "timer_invalid_payload");
    assert_string_equal(d.reason, "not_base64");
    assert_string_equal(d.text, "op 2");
    assert_int_equal(d.index, -1);
    assert_int_equal(qerr_at(&d, QERR_BAD_INPUT, 3), QERR_BAD_INPUT);
    assert_int_equal(d.index, 3);
    assert_int_equal(qerr_at(NULL, QERR_LIMIT, 3), QERR_LIMIT);
    assert_int_equal(qerr_set_reason(NULL, QERR_CONFLICT, "a", "b", "c"), QERR_CONFLICT);
    /* a sentence the module wrote itself is kept; kind and code are set, reason and index cleared */
    snprintf(d.text, sizeof d.text, "ERROR boot: FATAL: queen: X=1 is outside 2..=3.");
    assert_int_equal(qerr_mark(&d, QERR_BAD_INPUT, NULL), QERR_BAD_INPUT);
    assert_string_equal(d.text, "ERROR boot: FATAL: queen: X=1 is outside 2..=3.");
    assert_null(d.code);
    assert_null(d.reason);
    assert_int_equal(d.index, -1);
}

static void test_every_enum(void **state)
{
    (void)state;
    static const int want[QERR_COUNT] = {200, 400, 404, 409, 413, 429, 503, 500, 500, 500};
    for (int e = 0; e < QERR_COUNT; e++) {
        assert_non_null(qerr_name((qerr)e));
        assert_true(strlen(qerr_str((qerr)e)) > 0);
        assert_int_equal(qerr_http_status((qerr)e), want[e]);
        assert_int_equal(qerr_client_visible((qerr)e), want[e] >= 400 && want[e] < 500);
    }
    assert_string_equal(qerr_name(QERR_BAD_INPUT), "bad_input");
    assert_string_equal(qerr_name(QERR_DATABASE), "database_error");
    /* out of range reads as internal */
    assert_int_equal(qerr_http_status((qerr)99), 500);
    assert_string_equal(qerr_name((qerr)99), "internal_error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_and_return),
        cmocka_unit_test(test_every_enum),
        cmocka_unit_test(test_reason_and_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
