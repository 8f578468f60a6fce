/* Unit tests for the growable buffer and varints (core/buf.h), the string map (core/strmap.h)
 * and the arena (core/arena.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/strmap.h"

/* --- buf --- */

static void test_buf_basics(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    assert_string_equal(buf_cstr(&b), "");
    assert_int_equal(b.len, 0);
    assert_int_equal(buf_puts(&b, "hello"), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_append(&b, "world!!", 5), 0);
    assert_int_equal(buf_append(&b, NULL, 0), 0);
    assert_string_equal(buf_cstr(&b), "hello world");
    assert_int_equal(b.len, 11);
    assert_true(b.cap > b.len);
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    assert_int_equal(buf_put_u64(&b, 0), 0);
    buf_putc(&b, ' ');
    buf_put_u64(&b, UINT64_MAX);
    buf_putc(&b, ' ');
    buf_put_i64(&b, INT64_MIN);
    buf_putc(&b, ' ');
    buf_put_i64(&b, INT64_MAX);
    buf_putc(&b, ' ');
    buf_put_i64(&b, -1);
    buf_putc(&b, ' ');
    buf_put_i64(&b, 0);
    assert_string_equal(buf_cstr(&b),
                        "0 18446744073709551615 -9223372036854775808 9223372036854775807 -1 0");
    size_t n;
    char *s = buf_steal(&b, &n);
    assert_int_equal(n, strlen(s));
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    free(s);
    /* still usable after steal */
    buf_puts(&b, "again");
    assert_string_equal(buf_cstr(&b), "again");
    buf_free(&b);
    buf_free(&b); /* idempotent */
}

static void test_buf_ceiling(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 10);
    assert_int_equal(buf_append(&b, "12345678", 8), 0);
    assert_false(b.overflow);
    assert_int_equal(buf_append(&b, "abc", 3), -1);
    assert_true(b.overflow);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "12345678", 8); /* contents kept */
    /* the overflow is sticky: even an append that would fit is refused */
    assert_int_equal(buf_putc(&b, 'x'), -1);
    assert_int_equal(buf_puts(&b, ""), -1);
    assert_int_equal(buf_printf(&b, "%d", 1), -1);
    assert_int_equal(buf_put_u64(&b, 1), -1);
    assert_int_equal(buf_put_varint(&b, 1), -1);
    assert_int_equal(b.len, 8);
    assert_string_equal(buf_cstr(&b), "12345678");
    /* reset clears the flag; the ceiling is exact */
    buf_reset(&b);
    assert_false(b.overflow);
    assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_string_equal(buf_cstr(&b), "0123456789");
    assert_int_equal(buf_putc(&b, 'x'), -1);
    assert_true(b.overflow);
    assert_int_equal(b.len, 10);
    buf_reset(&b);
    assert_int_equal(buf_put_i64(&b, -123456789), 0);
    assert_int_equal(buf_put_i64(&b, -1), -1); /* '-' fits, the digit does not */
    assert_true(b.overflow);
    buf_free(&b);

    /* a huge reserve against an unlimited buffer does not wrap */
    buf_init(&b, 0);
    buf_puts(&b, "x");
    assert_int_equal(buf_reserve(&b, SIZE_MAX), -1);
    assert_true(b.overflow);
    assert_int_equal(b.len, 1);
    buf_free(&b);
}

static void test_buf_printf_growth(void **state)
{
    (void)state;
    char big[2000];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = (char)('a' + i % 26);
    big[sizeof big - 1] = '\0';
    buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_printf(&b, "[%s]", big), 0);
    assert_int_equal(b.len, strlen(big) + 2);
    assert_int_equal(b.data[0], '[');
    assert_memory_equal(b.data + 1, big, strlen(big));
    assert_int_equal(b.data[b.len - 1], ']');
    /* boundaries around the 256-byte scratch buffer, appended after existing content */
    for (size_t n = 250; n <= 262; n++) {
        buf_reset(&b);
        buf_puts(&b, "pre:");
        assert_int_equal(buf_printf(&b, "%.*s|%d", (int)n, big, 42), 0);
        char want[400];
        snprintf(want, sizeof want, "pre:%.*s|%d", (int)n, big, 42);
        assert_string_equal(buf_cstr(&b), want);
    }
    buf_free(&b);

    /* a long printf past the ceiling overflows without writing */
    buf_init(&b, 300);
    buf_puts(&b, "keep");
    assert_int_equal(buf_printf(&b, "%s", big), -1);
    assert_true(b.overflow);
    assert_string_equal(buf_cstr(&b), "keep");
    buf_reset(&b);
    assert_int_equal(buf_printf(&b, "%.296s", big), 0);
    assert_int_equal(b.len, 296);
    buf_free(&b);
}

static void check_varint(uint64_t v, size_t want_len)
{
    buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_put_varint(&b, v), 0);
    assert_int_equal(b.len, want_len);
    assert_int_equal(varint_len(v), want_len);
    const uint8_t *p = (const uint8_t *)b.data;
    const uint8_t *end = p + b.len;
    uint64_t out = 0;
    assert_int_equal(varint_get(&p, end, &out), 0);
    assert_true(out == v);
    assert_ptr_equal(p, end);
    /* every strict prefix is truncated */
    for (size_t k = 0; k < b.len; k++) {
        const uint8_t *q = (const uint8_t *)b.data;
        uint64_t o2 = 12345;
        assert_int_equal(varint_get(&q, q + k, &o2), -1);
        assert_ptr_equal(q, (const uint8_t *)b.data); /* not advanced */
        assert_int_equal(o2, 12345);
    }
    buf_free(&b);
}

static void test_varint(void **state)
{
    (void)state;
    check_varint(0, 1);
    check_varint(1, 1);
    check_varint(127, 1);
    check_varint(128, 2);
    check_varint(16383, 2);
    check_varint(16384, 3);
    check_varint(UINT32_MAX, 5);
    check_varint((1ULL << 56) - 1, 8);
    check_varint(1ULL << 56, 9);
    check_varint((1ULL << 63) - 1, 9);
    check_varint(1ULL << 63, 10);
    check_varint(UINT64_MAX, 10);
    for (int s = 0; s < 64; s++) {
        check_varint(1ULL << s, (size_t)s / 7 + 1);
        check_varint((1ULL << s) - 1, s ? ((size_t)s + 6) / 7 : 1);
    }

    /* exact bytes */
    buf b;
    buf_init(&b, 0);
    buf_put_varint(&b, 128);
    assert_memory_equal(b.data, "\x80\x01", 2);
    buf_reset(&b);
    buf_put_varint(&b, 300);
    assert_memory_equal(b.data, "\xac\x02", 2);
    buf_reset(&b);
    buf_put_varint(&b, UINT64_MAX);
    assert_memory_equal(b.data, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    buf_reset(&b);
    buf_put_varint(&b, 1ULL << 63);
    assert_memory_equal(b.data, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 10);
    buf_free(&b);

    /* too long / above 64 bits */
    static const uint8_t over1[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    static const uint8_t over2[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00};
    static const uint8_t over3[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t over4[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f};
    const uint8_t *p;
    uint64_t out;
    p = over1;
    assert_int_equal(varint_get(&p, over1 + sizeof over1, &out), -1);
    p = over2;
    assert_int_equal(varint_get(&p, over2 + sizeof over2, &out), -1);
    p = over3;
    assert_int_equal(varint_get(&p, over3 + sizeof over3, &out), -1);
    p = over4;
    assert_int_equal(varint_get(&p, over4 + sizeof over4, &out), -1);
    /* empty input */
    p = over1;
    assert_int_equal(varint_get(&p, over1, &out), -1);
    /* consecutive varints */
    static const uint8_t seq[] = {0x05, 0x80, 0x01, 0x00};
    p = seq;
    assert_int_equal(varint_get(&p, seq + 4, &out), 0);
    assert_int_equal(out, 5);
    assert_int_equal(varint_get(&p, seq + 4, &out), 0);
    assert_int_equal(out, 128);
    assert_int_equal(varint_get(&p, seq + 4, &out), 0);
    assert_int_equal(out, 0);
    assert_ptr_equal(p, seq + 4);
}

/* --- strmap --- */

static void test_strmap_many_keys(void **state)
{
    (void)state;
    enum { N = 10000 };
    char (*keys)[16] = malloc(sizeof(char[16]) * N);
    size_t lens[N];
    strmap m;
    strmap_init(&m);
    assert_null(strmap_get(&m, "k", 1));
    for (uint32_t i = 0; i < N; i++) {
        lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "key-%u", i);
        int ins = -1;
        uint32_t *v = strmap_put(&m, keys[i], lens[i], i * 3, &ins);
        assert_non_null(v);
        assert_int_equal(ins, 1);
        assert_int_equal(*v, i * 3);
        assert_int_equal(m.count, i + 1);
        assert_true(m.count * 4 <= m.cap * 3);
        assert_int_equal(m.cap & (m.cap - 1), 0); /* power of two */
    }
    assert_true(m.cap >= N);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t *v = strmap_get(&m, keys[i], lens[i]);
        assert_non_null(v);
        assert_int_equal(*v, i * 3);
        *v += 1;
        /* putting again finds the existing entry */
        int ins = -1;
        uint32_t *w = strmap_put(&m, keys[i], lens[i], 999, &ins);
        assert_int_equal(ins, 0);
        assert_ptr_equal(v, w);
        assert_int_equal(*w, i * 3 + 1);
    }
    assert_int_equal(m.count, N);
    /* lookups with a different pointer but the same bytes */
    char probe[16];
    snprintf(probe, sizeof probe, "key-%u", 4321u);
    assert_int_equal(*strmap_get(&m, probe, strlen(probe)), 4321 * 3 + 1);
    assert_null(strmap_get(&m, "key-10000", 9));
    assert_null(strmap_get(&m, "key-1", 4)); /* prefix */
    assert_null(strmap_get(&m, "nope", 4));
    strmap_put(&m, keys[0], lens[0], 0, NULL); /* inserted may be NULL */

    strmap_clear(&m);
    assert_int_equal(m.count, 0);
    for (uint32_t i = 0; i < N; i += 97)
        assert_null(strmap_get(&m, keys[i], lens[i]));
    int ins;
    assert_int_equal(*strmap_put(&m, keys[5], lens[5], 55, &ins), 55);
    assert_int_equal(ins, 1);
    strmap_free(&m);
    assert_null(m.slots);
    assert_null(strmap_get(&m, keys[5], lens[5]));
    free(keys);
}

static void test_strmap_empty_and_binary_keys(void **state)
{
    (void)state;
    strmap m;
    strmap_init(&m);
    int ins;
    /* zero-length keys: "" and NULL are the same key */
    uint32_t *e = strmap_put(&m, "", 0, 7, &ins);
    assert_int_equal(ins, 1);
    assert_int_equal(*e, 7);
    assert_int_equal(*strmap_put(&m, NULL, 0, 8, &ins), 7);
    assert_int_equal(ins, 0);
    assert_int_equal(*strmap_get(&m, "", 0), 7);
    assert_int_equal(*strmap_get(&m, NULL, 0), 7);
    assert_int_equal(*strmap_get(&m, "abc", 0), 7);
    assert_int_equal(m.count, 1);

    strmap m2;
    strmap_init(&m2);
    assert_int_equal(*strmap_put(&m2, NULL, 0, 1, &ins), 1);
    assert_int_equal(ins, 1);
    assert_int_equal(*strmap_put(&m2, NULL, 0, 2, &ins), 1);
    assert_int_equal(ins, 0);
    assert_int_equal(*strmap_get(&m2, NULL, 0), 1);
    strmap_free(&m2);

    /* binary keys with NULs: distinct by every byte and by length */
    static const char k1[] = {'a', 0, 'b'};
    static const char k2[] = {'a', 0, 'c'};
    static const char k3[] = {'a', 0};
    static const char k4[] = {0};
    static const char k5[] = {0, 0};
    static const char k6[] = {'\xff', 0, '\x80', 0};
    const char *ks[] = {k1, k2, k3, "a", k4, k5, k6};
    size_t ls[] = {3, 3, 2, 1, 1, 2, 4};
    for (uint32_t i = 0; i < 7; i++) {
        assert_int_equal(*strmap_put(&m, ks[i], ls[i], 100 + i, &ins), 100 + i);
        assert_int_equal(ins, 1);
    }
    assert_int_equal(m.count, 8);
    for (uint32_t i = 0; i < 7; i++) {
        char copy[8];
        memcpy(copy, ks[i], ls[i]);
        assert_int_equal(*strmap_get(&m, copy, ls[i]), 100 + i);
    }
    assert_int_equal(*strmap_get(&m, "", 0), 7);
    strmap_free(&m);
}

static void test_strmap_colliding_probe(void **state)
{
    (void)state;
    /* many keys sharing long prefixes, inserted and looked up after several growths */
    enum { N = 3000 };
    char *blob = malloc((size_t)N * 64);
    strmap m;
    strmap_init(&m);
    for (uint32_t i = 0; i < N; i++) {
        char *k = blob + (size_t)i * 64;
        memset(k, 'x', 60);
        memcpy(k + 56, &i, sizeof i);
        strmap_put(&m, k, 60, i, NULL);
    }
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(*strmap_get(&m, blob + (size_t)i * 64, 60), i);
    strmap_free(&m);
    free(blob);
    assert_int_not_equal(hash_bytes("a", 1, 0), hash_bytes("b", 1, 0));
    assert_int_not_equal(hash_bytes("a", 1, 0), hash_bytes("a", 1, 1));
    assert_int_equal(hash_bytes("abc", 3, 5), hash_bytes("abc", 3, 5));
}

/* --- arena --- */

static void test_arena_small_and_big(void **state)
{
    (void)state;
    enum { N = 20000 };
    arena a;
    arena_init(&a);
    unsigned char **ptrs = malloc(sizeof *ptrs * N);
    size_t *sizes = malloc(sizeof *sizes * N);
    size_t expect_total = 0;
    for (size_t i = 0; i < N; i++) {
        size_t n;
        if (i % 1000 == 999)
            n = 8193 + i * 7; /* big: above half a chunk */
        else if (i % 1000 == 500)
            n = 100000;
        else
            n = 1 + (i * 31) % 200;
        unsigned char *p = arena_alloc(&a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, (int)(i & 0xff), n);
        ptrs[i] = p;
        sizes[i] = n;
        expect_total += (n + 15) & ~(size_t)15;
        assert_int_equal(a.total, expect_total);
    }
    /* nothing overlapped: every block still holds its own pattern */
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < sizes[i]; k++)
            if (ptrs[i][k] != (unsigned char)(i & 0xff))
                fail_msg("arena block %zu byte %zu overwritten", i, k);
    arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.total, 0);
    free(ptrs);
    free(sizes);
}

static void test_arena_big_keeps_head_space(void **state)
{
    (void)state;
    arena a;
    arena_init(&a);
    char *s1 = arena_alloc(&a, 16);
    char *big = arena_alloc(&a, 50000);
    memset(big, 'B', 50000);
    char *s2 = arena_alloc(&a, 16);
    /* the small allocation after a big one continues in the same chunk */
    assert_ptr_equal(s2, s1 + 16);
    char *s3 = arena_strndup(&a, "hello world", 5);
    assert_string_equal(s3, "hello");
    assert_int_equal((uintptr_t)s3 % 16, 0);
    char *e = arena_strndup(&a, "", 0);
    assert_string_equal(e, "");
    for (size_t i = 0; i < 50000; i++)
        assert_int_equal(big[i], 'B');
    arena_free(&a);

    /* a big allocation into an empty arena, then small ones */
    arena_init(&a);
    char *b2 = arena_alloc(&a, 1 << 20);
    memset(b2, 1, 1 << 20);
    for (int i = 0; i < 2000; i++) {
        char *p = arena_alloc(&a, 24);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, 2, 24);
    }
    for (size_t i = 0; i < (1 << 20); i++)
        assert_int_equal(b2[i], 1);
    arena_free(&a);
    arena_free(&a); /* idempotent */
}

static void test_arena_exact_chunk_fill(void **state)
{
    (void)state;
    arena a;
    arena_init(&a);
    /* fill a 16 KiB chunk exactly with half-chunk blocks, then spill into a new one */
    char *p1 = arena_alloc(&a, 8192);
    char *p2 = arena_alloc(&a, 8192);
    assert_ptr_equal(p2, p1 + 8192);
    char *p3 = arena_alloc(&a, 1);
    assert_true(p3 < p1 || p3 >= p1 + 16384);
    memset(p1, 0, 8192);
    memset(p2, 0, 8192);
    *p3 = 1;
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_basics),
        cmocka_unit_test(test_buf_ceiling),
        cmocka_unit_test(test_buf_printf_growth),
        cmocka_unit_test(test_varint),
        cmocka_unit_test(test_strmap_many_keys),
        cmocka_unit_test(test_strmap_empty_and_binary_keys),
        cmocka_unit_test(test_strmap_colliding_probe),
        cmocka_unit_test(test_arena_small_and_big),
        cmocka_unit_test(test_arena_big_keeps_head_space),
        cmocka_unit_test(test_arena_exact_chunk_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
