/* Unit tests for the µs ISO-8601 formatting and parsing (core/timeutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/timeutil.h"

static void fmt_us_eq(int64_t us, const char *want)
{
    char out[32];
    memset(out, 'X', sizeof out);
    size_t n = format_iso_us(us, out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void fmt_ms_eq(int64_t us, const char *want)
{
    char out[32];
    memset(out, 'X', sizeof out);
    size_t n = format_iso_ms(us, out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static int64_t parse(const char *s)
{
    int64_t v = 0x5a5a5a5a;
    if (parse_iso_us(s, strlen(s), &v) != 0)
        fail_msg("parse_iso_us rejected [%s]", s);
    return v;
}

static void test_format_known(void **state)
{
    (void)state;
    fmt_us_eq(0, "1970-01-01T00:00:00.000000Z");
    fmt_ms_eq(0, "1970-01-01T00:00:00.000Z");
    fmt_us_eq(1791009457501942LL, "2026-10-03T06:37:37.501942Z");
    fmt_ms_eq(1791009457501942LL, "2026-10-03T06:37:37.501Z"); /* truncates, does not round */
    fmt_us_eq(1, "1970-01-01T00:00:00.000001Z");
    fmt_ms_eq(999, "1970-01-01T00:00:00.000Z");
    fmt_ms_eq(1000, "1970-01-01T00:00:00.001Z");
    fmt_us_eq(86400000000LL - 1, "1970-01-01T23:59:59.999999Z");
    fmt_us_eq(86400000000LL, "1970-01-02T00:00:00.000000Z");
    fmt_us_eq(951782400000000LL, "2000-02-29T00:00:00.000000Z");
    fmt_us_eq(253402300799999999LL, "9999-12-31T23:59:59.999999Z");
    assert_int_equal(strlen("2026-10-03T06:37:37.501942Z"), 27);
    assert_int_equal(strlen("2026-10-03T06:37:37.501Z"), 24);
}

static void test_format_negative(void **state)
{
    (void)state;
    fmt_us_eq(-1, "1969-12-31T23:59:59.999999Z");
    fmt_ms_eq(-1, "1969-12-31T23:59:59.999Z");
    fmt_us_eq(-1000000, "1969-12-31T23:59:59.000000Z");
    fmt_us_eq(-1000001, "1969-12-31T23:59:58.999999Z");
    fmt_us_eq(-86400000000LL, "1969-12-31T00:00:00.000000Z");
    fmt_us_eq(-86400000001LL, "1969-12-30T23:59:59.999999Z");
    fmt_us_eq(-14182940000000LL, "1969-07-20T20:17:40.000000Z");
    fmt_us_eq(-2208988800000000LL, "1900-01-01T00:00:00.000000Z");
    fmt_us_eq(-62135596800000000LL, "0001-01-01T00:00:00.000000Z");
    fmt_ms_eq(-1500, "1969-12-31T23:59:59.998Z");
}

static void test_format_extremes_fit(void **state)
{
    (void)state;
    char out[32];
    size_t n = format_iso_us(INT64_MAX, out);
    assert_true(n < sizeof out);
    assert_int_equal(strlen(out), n);
    n = format_iso_us(INT64_MIN, out);
    assert_true(n < sizeof out);
    assert_int_equal(strlen(out), n);
    n = format_iso_ms(INT64_MIN, out);
    assert_true(n < sizeof out);
}

static void test_leap_day(void **state)
{
    (void)state;
    const int64_t leap = 1709210096LL * 1000000 + 123456; /* 2024-02-29T12:34:56.123456Z */
    fmt_us_eq(leap, "2024-02-29T12:34:56.123456Z");
    fmt_ms_eq(leap, "2024-02-29T12:34:56.123Z");
    assert_true(parse("2024-02-29T12:34:56.123456Z") == leap);
    assert_true(parse("2024-02-29") == 1709164800LL * 1000000);
    fmt_us_eq(1709251200LL * 1000000 - 1, "2024-02-29T23:59:59.999999Z");
    fmt_us_eq(1709251200LL * 1000000, "2024-03-01T00:00:00.000000Z");
    assert_true(parse("2024-03-01") == 1709251200LL * 1000000);
    assert_true(parse("2000-02-29") == 951782400LL * 1000000);
}

static void test_parse_round_trip(void **state)
{
    (void)state;
    static const int64_t vals[] = {0, 1, 999999, 1000000, 1791009457501942LL, 1709210096123456LL, -1,
                                   -1000001, -2208988800000000LL, 253402300799999999LL, -62135596800000000LL};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char s[32];
        size_t n = format_iso_us(vals[i], s);
        int64_t v;
        assert_int_equal(parse_iso_us(s, n, &v), 0);
        assert_true(v == vals[i]);
        n = format_iso_ms(vals[i], s);
        assert_int_equal(parse_iso_us(s, n, &v), 0);
        /* ms form floors to the millisecond */
        int64_t floor_ms = vals[i] / 1000 * 1000;
        if (vals[i] % 1000 < 0)
            floor_ms -= 1000;
        assert_true(v == floor_ms);
    }
    /* a sweep of instants across several years */
    for (int64_t us = -5000000000000000LL; us < 5000000000000000LL; us += 123456789012345LL) {
        char s[32];
        size_t n = format_iso_us(us, s);
        int64_t v;
        assert_int_equal(parse_iso_us(s, n, &v), 0);
        assert_true(v == us);
    }
}

static void test_parse_offsets(void **state)
{
    (void)state;
    const int64_t t = 1791009457501942LL; /* 2026-10-03T06:37:37.501942Z */
    assert_true(parse("2026-10-03T06:37:37.501942Z") == t);
    assert_true(parse("2026-10-03T06:37:37.501942z") == t);
    assert_true(parse("2026-10-03t06:37:37.501942Z") == t);
    assert_true(parse("2026-10-03 06:37:37.501942Z") == t);
    assert_true(parse("2026-10-03T08:37:37.501942+02:00") == t);
    assert_true(parse("2026-10-03T08:37:37.501942+0200") == t);
    assert_true(parse("2026-10-03T08:37:37.501942+02") == t);
    assert_true(parse("2026-10-03T01:07:37.501942-05:30") == t);
    assert_true(parse("2026-10-02T23:37:37.501942-07:00") == t);
    assert_true(parse("2026-10-03T06:37:37.501942+00:00") == t);
    assert_true(parse("2026-10-03T06:37:37.501942-00:00") == t);
    assert_true(parse("2026-10-03T06:37:37,501942Z") == t);
    /* no zone: UTC */
    assert_true(parse("2026-10-03T06:37:37.501942") == t);
    /* minutes only, no seconds */
    assert_true(parse("2026-10-03T06:37Z") == 1791009420LL * 1000000);
    assert_true(parse("2026-10-03T08:37+02:00") == 1791009420LL * 1000000);
    /* date only */
    assert_true(parse("2026-10-03") == 1790985600LL * 1000000);
    assert_true(parse("1970-01-01") == 0);
    assert_true(parse("1969-12-31") == -86400LL * 1000000);
    /* leap second 60 is accepted (it reads as the next second) */
    assert_true(parse("2016-12-31T23:59:60Z") == 1483228800LL * 1000000);
}

static void test_parse_fractions(void **state)
{
    (void)state;
    const int64_t base = 1791009457LL * 1000000;
    static const struct {
        const char *s;
        int64_t frac;
    } f[] = {
        {"2026-10-03T06:37:37.5Z", 500000},
        {"2026-10-03T06:37:37.50Z", 500000},
        {"2026-10-03T06:37:37.501Z", 501000},
        {"2026-10-03T06:37:37.5019Z", 501900},
        {"2026-10-03T06:37:37.50194Z", 501940},
        {"2026-10-03T06:37:37.501942Z", 501942},
        {"2026-10-03T06:37:37.5019429Z", 501942},     /* 7 digits: truncated */
        {"2026-10-03T06:37:37.50194299Z", 501942},    /* 8 */
        {"2026-10-03T06:37:37.501942999Z", 501942},   /* 9: never rounds up */
        {"2026-10-03T06:37:37.000000001Z", 0},
        {"2026-10-03T06:37:37.999999999Z", 999999},
        {"2026-10-03T06:37:37.0Z", 0},
        {"2026-10-03T06:37:37.000001Z", 1},
        {"2026-10-03T06:37:37.1234567890123456789Z", 123456}, /* many digits */
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int64_t v = parse(f[i].s);
        if (v != base + f[i].frac)
            fail_msg("[%s] parsed as %lld, want %lld", f[i].s, (long long)v, (long long)(base + f[i].frac));
    }
    /* fraction with an offset */
    assert_true(parse("2026-10-03T08:37:37.501942999+02:00") == base + 501942);
}

static void test_parse_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "garbage",
        "2026",
        "2026-10",
        "2026-1-03",
        "2026-10-3",
        "26-10-03",
        "2026/10/03",
        "2026-10-03T",
        "2026-10-03T06",
        "2026-10-03T06:",
        "2026-10-03T6:37:37Z",
        "2026-10-03T06:37:",
        "2026-10-03T06:37:3Z",
        "2026-10-03T06:37:37.",
        "2026-10-03T06:37:37.Z",
        "2026-10-03T06:37:37.x",
        "2026-10-03T06:37:37ZZ",
        "2026-10-03T06:37:37Z ",
        " 2026-10-03T06:37:37Z",
        "2026-10-03T06:37:37+",
        "2026-10-03T06:37:37+2",
        "2026-10-03T06:37:37+02:0",
        "2026-10-03T06:37:37+02:",
        "2026-10-03T06:37:37+24:00",
        "2026-10-03T06:37:37+02:60",
        "2026-10-03T06:37:37+99:99",
        "2026-10-03T06:37:37+02:00Z",
        "2026-10-03T06:37:37 UTC",
        "2026-10-03Z",
        "2026-10-03x",
        "2026-00-03",
        "2026-13-03",
        "2026-10-00",
        "2026-10-32",
        "2023-02-29",
        "2100-02-29",
        "2024-02-30",
        "2024-04-31",
        "2024-06-31",
        "2024-09-31",
        "2024-11-31",
        "2026-10-03T24:00:00Z",
        "2026-10-03T23:60:00Z",
        "2026-10-03T23:59:61Z",
        "2026-10-03T-1:00:00Z",
        "+2026-10-03",
        "２０２６-10-03",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 77;
        if (parse_iso_us(bad[i], strlen(bad[i]), &v) == 0)
            fail_msg("accepted [%s] as %lld", bad[i], (long long)v);
        assert_int_equal(v, 77); /* out untouched on failure */
    }
    /* month ends that are valid */
    assert_true(parse("2024-01-31") > 0);
    assert_true(parse("2024-04-30") > 0);
    assert_true(parse("2023-02-28") > 0);
    assert_true(parse("2400-02-29") > 0);
    assert_true(parse("2026-10-03T23:59:59+23:59") > 0);
}

static void test_parse_respects_length(void **state)
{
    (void)state;
    /* the length argument bounds the parse; no NUL is needed */
    const char *s = "2026-10-03T06:37:37.501942Zjunk";
    int64_t v;
    assert_int_equal(parse_iso_us(s, 27, &v), 0);
    assert_true(v == 1791009457501942LL);
    assert_int_equal(parse_iso_us(s, 10, &v), 0);
    assert_true(v == 1790985600LL * 1000000);
    assert_int_equal(parse_iso_us(s, 26, &v), 0); /* no zone */
    assert_int_equal(parse_iso_us(s, 9, &v), -1);
    assert_int_equal(parse_iso_us(s, 31, &v), -1);
}

static void test_clocks(void **state)
{
    (void)state;
    int64_t w = wall_us();
    assert_true(w > 1704067200LL * 1000000); /* after 2024 */
    uint64_t a = mono_us(), b = mono_us();
    assert_true(b >= a);
    assert_true(mono_ms() >= a / 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_known),
        cmocka_unit_test(test_format_negative),
        cmocka_unit_test(test_format_extremes_fit),
        cmocka_unit_test(test_leap_day),
        cmocka_unit_test(test_parse_round_trip),
        cmocka_unit_test(test_parse_offsets),
        cmocka_unit_test(test_parse_fractions),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_parse_respects_length),
        cmocka_unit_test(test_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
