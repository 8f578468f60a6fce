/* Unit tests for base64 (core/base64.h): RFC 4648's vectors both ways, the alphabets, padding
 * and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/base64.h"

static const char *const VECTORS[][2] = {
    {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void test_rfc_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof VECTORS / sizeof VECTORS[0]; i++) {
        buf b;
        buf_init(&b, 0);
        b64_encode(&b, VECTORS[i][0], strlen(VECTORS[i][0]));
        assert_int_equal(b.len, strlen(VECTORS[i][1]));
        if (b.len)
            assert_memory_equal(b.data, VECTORS[i][1], b.len);
        buf_free(&b);
        uint8_t out[16];
        const char *t = VECTORS[i][1];
        long n = b64_decode(t, strlen(t), out, sizeof out, B64_NEED_PADDING);
        assert_int_equal(n, (long)strlen(VECTORS[i][0]));
        assert_memory_equal(out, VECTORS[i][0], (size_t)n);
        /* padding is optional unless asked for */
        size_t bare = strcspn(t, "=");
        assert_int_equal(b64_decode(t, bare, out, sizeof out, 0), n);
        if (bare != strlen(t))
            assert_int_equal(b64_decode(t, bare, out, sizeof out, B64_NEED_PADDING), B64_BAD_FORM);
    }
}

static void test_all_bytes_round_trip(void **state)
{
    (void)state;
    uint8_t all[256], back[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    for (size_t n = 0; n <= 256; n += 1 + n / 3) {
        buf b;
        buf_init(&b, 0);
        b64_encode(&b, all, n);
        assert_int_equal(b.len, (n + 2) / 3 * 4);
        assert_int_equal(b64_decode(b.data, b.len, back, sizeof back, B64_NEED_PADDING), (long)n);
        assert_memory_equal(back, all, n);
        buf_free(&b);
    }
}

static void test_alphabets(void **state)
{
    (void)state;
    uint8_t out[8];
    /* 0xfb 0xff = "+/8=" standard, "-_8=" URL-safe */
    assert_int_equal(b64_decode("+/8=", 4, out, sizeof out, 0), 2);
    assert_int_equal(out[0], 0xfb);
    assert_int_equal(out[1], 0xff);
    assert_int_equal(b64_decode("-_8=", 4, out, sizeof out, 0), B64_BAD_CHAR);
    assert_int_equal(b64_decode("-_8=", 4, out, sizeof out, B64_URL_TOO), 2);
    assert_int_equal(b64_decode("+_8", 3, out, sizeof out, B64_URL_TOO), 2); /* mixed */
    assert_int_equal(b64_decode("-_8", 3, out, sizeof out, B64_URL_ONLY), 2);
    assert_int_equal(b64_decode("+/8", 3, out, sizeof out, B64_URL_ONLY), B64_BAD_CHAR);
    assert_int_equal(b64_decode("-_8=", 4, out, sizeof out, B64_URL_ONLY | B64_NO_PADDING), B64_BAD_CHAR);
}

static void test_decode_buf(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "x:");
    assert_int_equal(b64_decode_buf("Zm9vYmFy", 8, &b, 0), 0);
    assert_string_equal(buf_cstr(&b), "x:foobar");
    /* a refusal leaves the buffer as it was */
    assert_int_equal(b64_decode_buf("Zm9v!", 5, &b, 0), B64_BAD_FORM);
    assert_int_equal(b64_decode_buf("Zm9!", 4, &b, 0), B64_BAD_CHAR);
    assert_string_equal(buf_cstr(&b), "x:foobar");
    buf_free(&b);
    /* a buffer with a maximum refuses what would pass it */
    buf_init(&b, 4);
    assert_int_equal(b64_decode_buf("Zm9vYmFy", 8, &b, 0), -3);
    buf_free(&b);
}

static void test_refusals(void **state)
{
    (void)state;
    uint8_t out[8];
    assert_int_equal(b64_decode("Zg=", 3, out, sizeof out, 0), B64_BAD_CHAR);   /* padding that does not fill */
    assert_int_equal(b64_decode("Z===", 4, out, sizeof out, 0), B64_BAD_CHAR);  /* three '=' */
    assert_int_equal(b64_decode("Zm9vY", 5, out, sizeof out, 0), B64_BAD_FORM); /* no text has that length */
    assert_int_equal(b64_decode("Zh==", 4, out, sizeof out, 0), B64_BAD_FORM);  /* trailing bits set */
    assert_int_equal(b64_decode("Zm 9", 4, out, sizeof out, 0), B64_BAD_CHAR);  /* no blanks */
    assert_int_equal(b64_decode("Zm=v", 4, out, sizeof out, 0), B64_BAD_CHAR);  /* '=' inside */
    assert_int_equal(b64_decode("Zm9\n", 4, out, sizeof out, 0), B64_BAD_CHAR);
    /* a result past cap is counted, not stored */
    assert_int_equal(b64_decode("Zm9vYmFy", 8, out, 2, 0), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_vectors),
        cmocka_unit_test(test_all_bytes_round_trip),
        cmocka_unit_test(test_alphabets),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_decode_buf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
