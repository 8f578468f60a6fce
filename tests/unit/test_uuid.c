/* Unit tests for UUIDv7 generation, UUID text form and the v8 message id (core/uuid.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/uuid.h"

static void test_v7_strictly_increasing(void **state)
{
    (void)state;
    enum { N = 100000 };
    uuid prev, cur;
    uuid_v7(&prev);
    for (int i = 0; i < N; i++) {
        uuid_v7(&cur);
        if (memcmp(prev.b, cur.b, 16) >= 0) {
            char a[UUID_STR_LEN + 1], b[UUID_STR_LEN + 1];
            uuid_format(&prev, a);
            uuid_format(&cur, b);
            fail_msg("uuid_v7 not increasing at %d: %s then %s", i, a, b);
        }
        assert_int_equal(cur.b[6] >> 4, 7);     /* version */
        assert_int_equal(cur.b[8] >> 6, 2);     /* variant 10 */
        prev = cur;
    }
    char s[UUID_STR_LEN + 1];
    uuid_format(&cur, s);
    assert_int_equal(s[14], '7');
    assert_true(s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b');
}

static void test_v7_timestamp_is_now(void **state)
{
    (void)state;
    uuid u;
    uuid_v7(&u);
    uint64_t ms = 0;
    for (int i = 0; i < 6; i++)
        ms = ms << 8 | u.b[i];
    /* after 2024-01-01 and before 2200; ids may borrow a few ms ahead */
    assert_true(ms > 1704067200000ULL);
    assert_true(ms < 7258118400000ULL);
}

static void test_format_parse_round_trip(void **state)
{
    (void)state;
    uuid u, v;
    for (int i = 0; i < 16; i++)
        u.b[i] = (uint8_t)(i * 17);
    char s[UUID_STR_LEN + 1];
    uuid_format(&u, s);
    assert_string_equal(s, "00112233-4455-6677-8899-aabbccddeeff");
    assert_int_equal(strlen(s), UUID_STR_LEN);
    assert_int_equal(uuid_parse(s, strlen(s), &v), 0);
    assert_memory_equal(u.b, v.b, 16);

    for (int k = 0; k < 1000; k++) {
        uuid_v7(&u);
        uuid_format(&u, s);
        memset(&v, 0, sizeof v);
        assert_int_equal(uuid_parse(s, UUID_STR_LEN, &v), 0);
        assert_memory_equal(u.b, v.b, 16);
    }

    /* upper and mixed case parse to the same bytes */
    assert_int_equal(uuid_parse("00112233-4455-6677-8899-AABBCCDDEEFF", UUID_STR_LEN, &v), 0);
    assert_memory_equal(v.b, "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff", 16);
    assert_int_equal(uuid_parse("00112233-4455-6677-8899-AaBbCcDdEeFf", UUID_STR_LEN, &v), 0);
    assert_memory_equal(v.b, "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff", 16);
    uuid_format(&v, s);
    assert_string_equal(s, "00112233-4455-6677-8899-aabbccddeeff"); /* formatted lower case */
}

static void test_parse_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "00112233-4455-6677-8899-aabbccddeef",    /* 35 */
        "00112233-4455-6677-8899-aabbccddeeff0",  /* 37 */
        "00112233445566778899aabbccddeeff",       /* no dashes */
        "00112233-4455-6677-8899aabbccddeeff-",   /* dash moved */
        "0011223-34455-6677-8899-aabbccddeeff",   /* dash moved */
        "00112233+4455-6677-8899-aabbccddeeff",   /* wrong separator */
        "00112233-4455-6677-8899_aabbccddeeff",
        "00112233-4455-6677-8899-aabbccddeefg",   /* non-hex */
        "g0112233-4455-6677-8899-aabbccddeeff",
        "00112233-4455-6677-8899-aabbccddee f",
        "00112233-4455-6677-8899-aabbccddee\xff" "f",
        "{0112233-4455-6677-8899-aabbccddeeff}",
        "00112233-4455-6677-8899--abbccddeeff",
        "------------------------------------",
    };
    uuid v;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (uuid_parse(bad[i], strlen(bad[i]), &v) == 0)
            fail_msg("accepted [%s]", bad[i]);
    }
    /* a valid uuid with the wrong length argument */
    const char *ok = "00112233-4455-6677-8899-aabbccddeeff";
    assert_int_equal(uuid_parse(ok, 35, &v), -1);
    assert_int_equal(uuid_parse(ok, 0, &v), -1);
    assert_int_equal(uuid_parse(ok, 36, &v), 0);
}

static void test_parse_exact_length_no_overread(void **state)
{
    (void)state;
    /* the 36 bytes live at the end of a heap block: ASan flags any read past them */
    char *p = malloc(UUID_STR_LEN);
    memcpy(p, "00112233-4455-6677-8899-aabbccddeeff", UUID_STR_LEN);
    uuid v;
    assert_int_equal(uuid_parse(p, UUID_STR_LEN, &v), 0);
    free(p);
}

static void check_message_id(uint64_t pid, uint64_t off)
{
    uuid u;
    uuid_message_id(pid, off, &u);
    assert_int_equal(u.b[6] >> 4, 8); /* version 8 */
    assert_int_equal(u.b[8] >> 6, 2); /* variant 10 */
    char s[UUID_STR_LEN + 1];
    uuid_format(&u, s);
    assert_int_equal(s[14], '8');
    assert_true(s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b');
    uuid v;
    assert_int_equal(uuid_parse(s, UUID_STR_LEN, &v), 0);
    uint64_t p2 = 0, o2 = 0;
    assert_int_equal(uuid_message_id_decode(&v, &p2, &o2), 0);
    if (p2 != pid || o2 != off)
        fail_msg("message id %s: (%llu, %llu) decoded as (%llu, %llu)", s, (unsigned long long)pid,
                 (unsigned long long)off, (unsigned long long)p2, (unsigned long long)o2);
}

static void test_message_id_round_trip(void **state)
{
    (void)state;
    static const uint64_t pids[] = {0, 1, 2, 255, 65535, 1ULL << 32, (1ULL << 47), (1ULL << 48) - 2,
                                    (1ULL << 48) - 1};
    static const uint64_t offs[] = {0,
                                    1,
                                    2,
                                    1ULL << 40,
                                    (1ULL << 62) - 1,
                                    1ULL << 62,
                                    (1ULL << 62) + 1,
                                    (1ULL << 63) - 1,
                                    1ULL << 63,
                                    UINT64_MAX};
    for (size_t i = 0; i < sizeof pids / sizeof pids[0]; i++)
        for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++)
            check_message_id(pids[i], offs[k]);
}

static void test_message_id_layout(void **state)
{
    (void)state;
    uuid u;
    char s[UUID_STR_LEN + 1];
    uuid_message_id(0, 0, &u);
    uuid_format(&u, s);
    assert_string_equal(s, "00000000-0000-8000-8000-000000000000");
    uuid_message_id((1ULL << 48) - 1, (1ULL << 63) - 1, &u);
    uuid_format(&u, s);
    assert_string_equal(s, "ffffffff-ffff-8001-bfff-ffffffffffff");
    uuid_message_id(0x123456789abcULL, 42, &u);
    uuid_format(&u, s);
    assert_string_equal(s, "12345678-9abc-8000-8000-00000000002a");
    /* ids of one partition sort by offset */
    uuid a, b;
    uuid_message_id(7, 1000, &a);
    uuid_message_id(7, 1001, &b);
    assert_true(memcmp(a.b, b.b, 16) < 0);
    uuid_message_id(7, (1ULL << 62) - 1, &a);
    uuid_message_id(7, 1ULL << 62, &b);
    assert_true(memcmp(a.b, b.b, 16) < 0);
}

static void test_message_id_decode_rejects(void **state)
{
    (void)state;
    uuid u;
    uint64_t p, o;
    uuid_v7(&u);
    assert_int_equal(uuid_message_id_decode(&u, &p, &o), -1);
    /* version 4 */
    assert_int_equal(uuid_parse("00112233-4455-4677-8899-aabbccddeeff", UUID_STR_LEN, &u), 0);
    assert_int_equal(uuid_message_id_decode(&u, &p, &o), -1);
    /* version 8 but variant 11 or 0x */
    assert_int_equal(uuid_parse("00112233-4455-8677-c899-aabbccddeeff", UUID_STR_LEN, &u), 0);
    assert_int_equal(uuid_message_id_decode(&u, &p, &o), -1);
    assert_int_equal(uuid_parse("00112233-4455-8677-0899-aabbccddeeff", UUID_STR_LEN, &u), 0);
    assert_int_equal(uuid_message_id_decode(&u, &p, &o), -1);
    /* the nil uuid */
    memset(&u, 0, sizeof u);
    assert_int_equal(uuid_message_id_decode(&u, &p, &o), -1);
    /* a well-formed one decodes */
    assert_int_equal(uuid_parse("00000000-0001-8000-8000-000000000005", UUID_STR_LEN, &u), 0);
    assert_int_equal(uuid_message_id_decode(&u, &p, &o), 0);
    assert_int_equal(p, 1);
    assert_int_equal(o, 5);
}

static void test_rand_u64_varies(void **state)
{
    (void)state;
    uint64_t a = rand_u64(), b = rand_u64(), c = rand_u64();
    assert_false(a == b && b == c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v7_strictly_increasing),
        cmocka_unit_test(test_v7_timestamp_is_now),
        cmocka_unit_test(test_format_parse_round_trip),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_parse_exact_length_no_overread),
        cmocka_unit_test(test_message_id_round_trip),
        cmocka_unit_test(test_message_id_layout),
        cmocka_unit_test(test_message_id_decode_rejects),
        cmocka_unit_test(test_rand_u64_varies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
