/* Unit tests for the window rules (sink/window.h): alignment floors and boundaries, the start
 * of a window (first window at its first record's hour, empty stretches skipped), every
 * closing rule at both sides of its threshold and their order, t_end above t_start, the
 * read limit, and the spec's own first window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sink/window.h"

#define H S3_US_PER_HOUR
#define D S3_US_PER_DAY
#define S 1000000LL
#define MIDNIGHT 1790985600000000LL /* 2026-10-03T00:00:00Z */
#define SIX (MIDNIGHT + 6 * H)      /* 2026-10-03T06:00:00Z */

static s3_window_rules rules(enum s3_align a)
{
    s3_window_rules r;
    memset(&r, 0, sizeof r);
    r.target_bytes = 128u << 20;
    r.max_window_us = 300 * S;
    r.align = a;
    return r;
}

/* A state with records at [min_ts, ...), read to read_to, ceiling at ceiling. */
static s3_window_state st(int64_t t0, int64_t min_ts, uint64_t records, uint64_t bytes, int64_t read_to,
                          int64_t ceiling)
{
    s3_window_state w;
    memset(&w, 0, sizeof w);
    w.t0 = t0;
    w.min_ts = min_ts;
    w.records = records;
    w.bytes = bytes;
    w.read_to = read_to;
    w.ceiling = ceiling;
    return w;
}

static enum s3_close decide(const s3_window_state *w, const s3_window_rules *r, int64_t *a, int64_t *b)
{
    *a = -1;
    *b = -1;
    return s3_window_decide(w, r, a, b);
}

static void test_align(void **state)
{
    (void)state;
    assert_int_equal(s3_align_floor(SIX, S3_ALIGN_HOUR), SIX);
    assert_int_equal(s3_align_floor(SIX + H - 1, S3_ALIGN_HOUR), SIX);
    assert_int_equal(s3_align_floor(SIX - 1, S3_ALIGN_HOUR), SIX - H);
    assert_int_equal(s3_align_floor(SIX + 1234, S3_ALIGN_NONE), SIX); /* none floors to the hour too */
    assert_int_equal(s3_align_floor(SIX + 1234, S3_ALIGN_DAY), MIDNIGHT);
    assert_int_equal(s3_align_floor(MIDNIGHT, S3_ALIGN_DAY), MIDNIGHT);
    assert_int_equal(s3_align_floor(MIDNIGHT - 1, S3_ALIGN_DAY), MIDNIGHT - D);
    assert_int_equal(s3_align_floor(0, S3_ALIGN_HOUR), 0);
    assert_int_equal(s3_align_floor(-1, S3_ALIGN_HOUR), -H);
    /* the next boundary is strictly above */
    assert_int_equal(s3_align_next(SIX, S3_ALIGN_HOUR), SIX + H);
    assert_int_equal(s3_align_next(SIX - 1, S3_ALIGN_HOUR), SIX);
    assert_int_equal(s3_align_next(SIX + 1, S3_ALIGN_HOUR), SIX + H);
    assert_int_equal(s3_align_next(MIDNIGHT, S3_ALIGN_DAY), MIDNIGHT + D);
    assert_int_equal(s3_align_next(MIDNIGHT - 1, S3_ALIGN_DAY), MIDNIGHT);
    assert_int_equal(s3_align_next(SIX, S3_ALIGN_NONE), INT64_MAX);
    assert_int_equal(s3_align_next(INT64_MAX - 5, S3_ALIGN_HOUR), INT64_MAX);
}

static void test_start(void **state)
{
    (void)state;
    /* nothing buffered: t0 */
    s3_window_state w = st(SIX + 17, 0, 0, 0, SIX + 100, SIX + 100);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX + 17);
    /* read from the start: the hour (or day) of the first record */
    w = st(0, SIX + 37 * 60 * S, 1, 100, SIX + H - 1, SIX + H);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_NONE), SIX);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_DAY), MIDNIGHT);
    /* right after a window: t0, even though the record's hour began earlier */
    w = st(SIX + 10 * S, SIX + 20 * S, 1, 100, SIX + 30 * S, SIX + 30 * S);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX + 10 * S);
    /* an empty stretch before the first buffered record is skipped: hours later */
    w = st(SIX + 10 * S, SIX + 5 * H + 3 * S, 1, 100, SIX + 5 * H + 4 * S, SIX + 5 * H + 4 * S);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX + 5 * H);
    /* a record exactly on t0 */
    w = st(SIX, SIX, 1, 1, SIX + 1, SIX + 1);
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX);
}

static void test_spec_first_window(void **state)
{
    (void)state;
    /* QUEEN_S3_START=earliest, QUEEN_S3_MAX_WINDOW_MS=10000: three records stamped
     * 06:37:37.501942, the ceiling at 06:37:38.377855 when the window is decided */
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    r.max_window_us = 10 * S;
    s3_window_state w = st(0, 1791009457501942LL, 3, 3 * 200, 1791009458377855LL, 1791009458377855LL);
    int64_t a, b;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, 1791007200000000LL);
    assert_int_equal(b, 1791009458377855LL);
    /* window 2 starts at window 1's end, and waits for its own age */
    w = st(1791009458377855LL, 1791009460000000LL, 1, 200, 1791009460000001LL, 1791009460000001LL);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.ceiling = w.read_to = 1791009458377855LL + 10 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, 1791009458377855LL);
    assert_int_equal(b, 1791009458377855LL + 10 * S);
}

static void test_empty_stretch(void **state)
{
    (void)state;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    r.memory_pressure = 1;
    r.draining = 1;
    int64_t a, b;
    /* nothing buffered, nothing lost: no rule closes anything, however old or full */
    s3_window_state w = st(SIX, 0, 0, 0, SIX + 5 * H, SIX + 5 * H);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    assert_int_equal(a, -1);
    assert_int_equal(b, -1);
    w.bytes = 1u << 30; /* not possible without records, and still nothing */
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    /* the read limit is the ceiling: the whole stretch may be read at once */
    w = st(SIX, 0, 0, 0, SIX, SIX + 5 * H);
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_HOUR), SIX + 5 * H);
}

static void test_lost_only(void **state)
{
    (void)state;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    int64_t a, b;
    /* a lost range waits with no record: the window spans [t0, read_to) once a rule holds */
    s3_window_state w = st(SIX + S, 0, 0, 0, SIX + 2 * S, SIX + 2 * S);
    w.lost = 1;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.ceiling = w.read_to = SIX + S + 300 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, SIX + S);
    assert_int_equal(b, SIX + S + 300 * S);
    /* past the hour it closes at the hour */
    w.read_to = w.ceiling = SIX + H + 5;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_ALIGN);
    assert_int_equal(a, SIX + S);
    assert_int_equal(b, SIX + H);
    /* t_end must be above t_start: nothing read beyond t0 yet */
    r.memory_pressure = 1;
    w = st(SIX + S, 0, 0, 0, SIX + S, SIX + S + 400 * S);
    w.lost = 1;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    assert_int_equal(a, -1);
}

/* QUEEN_S3_START=earliest (t0 = 0) meeting a retention gap before any record: the window
 * that records the loss lies at the stamp the loss was seen at, not in the first hour of
 * 1970 (the bug: [0, 3600000000) was committed). */
static void test_lost_only_from_the_start(void **state)
{
    (void)state;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    int64_t a, b;
    s3_window_state w = st(0, 0, 0, 0, SIX + 20 * S, SIX + 20 * S);
    w.lost = 1;
    w.lost_ts = SIX + 10 * S;
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE); /* young: 20 s of a 300 s window */
    w.read_to = w.ceiling = SIX + 400 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, SIX);
    assert_int_equal(b, SIX + 400 * S);
    assert_true(a <= w.lost_ts && w.lost_ts < b);
    /* read well past the hour of the loss: closed at that hour's end, which still holds it */
    w.read_to = w.ceiling = SIX + 3 * H;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_ALIGN);
    assert_int_equal(a, SIX);
    assert_int_equal(b, SIX + H);
    /* the read limit stops at that boundary too */
    w.read_to = SIX + 20 * S;
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_HOUR), SIX + H);
    /* a day alignment floors to the day */
    w.read_to = w.ceiling = SIX + 400 * S;
    r = rules(S3_ALIGN_DAY);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, MIDNIGHT);
    /* records and a loss seen earlier: the window starts at the earlier of the two */
    r = rules(S3_ALIGN_HOUR);
    w = st(0, SIX + H + 5 * S, 3, 300, SIX + H + 400 * S, SIX + H + 400 * S);
    w.lost = 1;
    w.lost_ts = SIX + 10 * S;
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX);
    /* a loss seen later than the records does not move the start */
    w.lost_ts = SIX + H + 300 * S;
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), SIX + H);
    /* never before t0: a loss stamp below the committed end is clamped to it */
    w = st(SIX + 100 * S, 0, 0, 0, SIX + 500 * S, SIX + 500 * S);
    w.lost = 1;
    w.lost_ts = SIX + 10 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, SIX + 100 * S);
    /* lost_ts without a pending loss is ignored */
    w = st(0, 0, 0, 0, SIX + 500 * S, SIX + 500 * S);
    w.lost_ts = SIX;
    assert_int_equal(s3_window_start(&w, S3_ALIGN_HOUR), 0);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
}

static void test_align_rule(void **state)
{
    (void)state;
    int64_t a, b;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    r.max_window_us = 86400 * S; /* age out of the way */
    s3_window_state w = st(SIX, SIX + 10 * S, 5, 500, SIX + H - 1, SIX + H - 1);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.read_to = w.ceiling = SIX + H;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_ALIGN);
    assert_int_equal(a, SIX);
    assert_int_equal(b, SIX + H);
    /* read past the boundary (nothing was buffered when the slice was read): still the hour */
    w.read_to = w.ceiling = SIX + 3 * H;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_ALIGN);
    assert_int_equal(b, SIX + H);
    /* align wins over size, age, memory and drain */
    w.bytes = r.target_bytes;
    r.memory_pressure = r.draining = 1;
    r.max_window_us = 100 * 1000;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_ALIGN);
    assert_string_equal(s3_close_name(S3_CLOSE_ALIGN), "align");
    /* day alignment: the boundary is midnight */
    r = rules(S3_ALIGN_DAY);
    r.max_window_us = 86400 * S;
    w = st(0, SIX, 1, 10, MIDNIGHT + D - 1, MIDNIGHT + D - 1);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.read_to = w.ceiling = MIDNIGHT + D;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_ALIGN);
    assert_int_equal(a, MIDNIGHT);
    assert_int_equal(b, MIDNIGHT + D);
    /* none: no boundary at all */
    r = rules(S3_ALIGN_NONE);
    r.max_window_us = 86400 * S;
    w = st(0, SIX, 1, 10, SIX + 5 * H, SIX + 5 * H);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.bytes = r.target_bytes;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_SIZE);
    assert_int_equal(a, SIX);
    assert_int_equal(b, SIX + 5 * H);
}

static void test_size_rule(void **state)
{
    (void)state;
    int64_t a, b;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    r.target_bytes = 1000;
    s3_window_state w = st(SIX + S, SIX + 2 * S, 10, 999, SIX + 3 * S, SIX + 3 * S);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.bytes = 1000;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_SIZE);
    assert_int_equal(a, SIX + S);
    assert_int_equal(b, SIX + 3 * S); /* read_to, below the boundary */
    /* the end is read_to even when the ceiling is further */
    w.ceiling = SIX + 40 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_SIZE);
    assert_int_equal(b, SIX + 3 * S);
    /* size wins over age, memory and drain */
    r.max_window_us = 1;
    r.memory_pressure = r.draining = 1;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_SIZE);
    assert_string_equal(s3_close_name(S3_CLOSE_SIZE), "size");
}

static void test_age_rule(void **state)
{
    (void)state;
    int64_t a, b;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    /* the age is ceiling - t_start on the broker's clock */
    s3_window_state w = st(SIX + S, SIX + 2 * S, 1, 10, SIX + 100 * S, SIX + S + 300 * S - 1);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.ceiling++;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(a, SIX + S);
    assert_int_equal(b, SIX + 100 * S); /* what was read, not the ceiling */
    /* a quiet queue: read_to follows the ceiling, and the window reaches its age */
    w = st(SIX + S, SIX + 2 * S, 1, 10, SIX + 3 * S, SIX + 3 * S);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    w.read_to = w.ceiling = SIX + S + 300 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(b, SIX + S + 300 * S);
    /* age never reaches past the boundary: read_to cannot (read limit), and b is capped */
    w = st(SIX + H - 10 * S, SIX + H - 5 * S, 1, 10, SIX + H - 1, SIX + H + 400 * S);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    assert_int_equal(b, SIX + H - 1);
    /* age wins over memory and drain */
    r.memory_pressure = r.draining = 1;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_AGE);
    /* a ceiling below t_start (safeTime read before the window moved) is no age */
    w = st(SIX + 10 * S, SIX + 10 * S, 1, 10, SIX + 11 * S, SIX);
    r = rules(S3_ALIGN_HOUR);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    assert_string_equal(s3_close_name(S3_CLOSE_AGE), "age");
}

static void test_memory_rule(void **state)
{
    (void)state;
    int64_t a, b;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    s3_window_state w = st(SIX + S, SIX + 2 * S, 1, 10, SIX + 3 * S, SIX + 3 * S);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    r.memory_pressure = 1;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_MEMORY);
    assert_int_equal(a, SIX + S);
    assert_int_equal(b, SIX + 3 * S);
    r.draining = 1; /* memory wins over drain */
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_MEMORY);
    assert_string_equal(s3_close_name(S3_CLOSE_MEMORY), "memory");
}

static void test_drain_rule(void **state)
{
    (void)state;
    int64_t a, b;
    s3_window_rules r = rules(S3_ALIGN_HOUR);
    r.draining = 1;
    /* young and small: stays in the log for the next owner */
    s3_window_state w = st(SIX + S, SIX + 2 * S, 3, S3_DRAIN_MIN_BYTES - 1, SIX + 5 * S, SIX + S + 10 * S - 1);
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    /* 1 MiB buffered */
    w.bytes = S3_DRAIN_MIN_BYTES;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_DRAIN);
    assert_int_equal(a, SIX + S);
    assert_int_equal(b, SIX + 5 * S);
    /* or open for ten seconds on the broker's clock */
    w.bytes = 10;
    w.ceiling = SIX + S + 10 * S;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_DRAIN);
    assert_int_equal(b, SIX + 5 * S);
    /* not draining: nothing */
    r.draining = 0;
    assert_int_equal(decide(&w, &r, &a, &b), S3_CLOSE_NONE);
    assert_string_equal(s3_close_name(S3_CLOSE_DRAIN), "drain");
    assert_string_equal(s3_close_name(S3_CLOSE_NONE), "none");
}

static void test_read_limit(void **state)
{
    (void)state;
    /* something buffered: not past the open window's boundary */
    s3_window_state w = st(SIX, SIX + 10 * S, 1, 10, SIX + 20 * S, SIX + 2 * H);
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_HOUR), SIX + H);
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_DAY), SIX + 2 * H); /* midnight is further */
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_NONE), SIX + 2 * H);
    /* the ceiling below the boundary */
    w.ceiling = SIX + 30 * S;
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_HOUR), SIX + 30 * S);
    /* never below read_to (a slice read past the boundary while nothing was buffered) */
    w = st(SIX, SIX + 10 * S, 1, 10, SIX + 3 * H, SIX + 4 * H);
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_HOUR), SIX + 3 * H);
    w = st(SIX, 0, 0, 0, SIX + 50, SIX + 10);
    assert_int_equal(s3_window_read_limit(&w, S3_ALIGN_HOUR), SIX + 50);
}

static void test_weight(void **state)
{
    (void)state;
    assert_int_equal(s3_record_weight(6, 36, 0), 6 + 36 + 64);
    assert_int_equal(s3_record_weight(6, 36, 1000), 1000 + 6 + 36 + 64);
    assert_int_equal(S3_RECORD_ENVELOPE, 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_align),       cmocka_unit_test(test_start),      cmocka_unit_test(test_spec_first_window),
        cmocka_unit_test(test_empty_stretch), cmocka_unit_test(test_lost_only), cmocka_unit_test(test_lost_only_from_the_start),
        cmocka_unit_test(test_align_rule),
        cmocka_unit_test(test_size_rule),   cmocka_unit_test(test_age_rule),   cmocka_unit_test(test_memory_rule),
        cmocka_unit_test(test_drain_rule),  cmocka_unit_test(test_read_limit), cmocka_unit_test(test_weight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
