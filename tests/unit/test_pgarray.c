/* Unit tests for the binary PostgreSQL array builder (db/pgarray.h), byte for byte against
 * the array_recv wire format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "db/pgarray.h"

/* header: ndim=1, has-null flag, element oid, dim length, lower bound 1 */
static void header_eq(const pgarray *a, uint32_t flags, uint32_t oid, uint32_t count)
{
    uint8_t want[20] = {
        0, 0, 0, 1,
        (uint8_t)(flags >> 24), (uint8_t)(flags >> 16), (uint8_t)(flags >> 8), (uint8_t)flags,
        (uint8_t)(oid >> 24), (uint8_t)(oid >> 16), (uint8_t)(oid >> 8), (uint8_t)oid,
        (uint8_t)(count >> 24), (uint8_t)(count >> 16), (uint8_t)(count >> 8), (uint8_t)count,
        0, 0, 0, 1,
    };
    assert_true(a->b.len >= 20);
    assert_memory_equal(a->b.data, want, 20);
}

static void test_empty(void **state)
{
    (void)state;
    pgarray a;
    pgarray_begin(&a, OID_INT4);
    pgarray_finish(&a);
    static const uint8_t want[] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(a.b.len, sizeof want);
    assert_memory_equal(a.b.data, want, sizeof want);
    assert_int_equal(a.count, 0);
    pgarray_free(&a);
}

static void test_int4(void **state)
{
    (void)state;
    pgarray a;
    pgarray_begin(&a, OID_INT4);
    pgarray_add_i32(&a, 1);
    pgarray_add_i32(&a, -1);
    pgarray_add_i32(&a, INT32_MIN);
    pgarray_add_i32(&a, 0x01020304);
    pgarray_finish(&a);
    static const uint8_t want[] = {
        0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 4, 0, 0, 0, 1,
        0, 0, 0, 4, 0x00, 0x00, 0x00, 0x01,
        0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff,
        0, 0, 0, 4, 0x80, 0x00, 0x00, 0x00,
        0, 0, 0, 4, 0x01, 0x02, 0x03, 0x04,
    };
    assert_int_equal(a.b.len, sizeof want);
    assert_memory_equal(a.b.data, want, sizeof want);
    assert_int_equal(a.count, 4);
    assert_int_equal(a.has_null, 0);
    pgarray_free(&a);
}

static void test_int8(void **state)
{
    (void)state;
    pgarray a;
    pgarray_begin(&a, OID_INT8);
    pgarray_add_i64(&a, 0x0102030405060708LL);
    pgarray_add_i64(&a, -2);
    pgarray_add_i64(&a, INT64_MAX);
    pgarray_finish(&a);
    static const uint8_t want[] = {
        0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 1,
        0, 0, 0, 8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
        0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
        0, 0, 0, 8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    assert_int_equal(a.b.len, sizeof want);
    assert_memory_equal(a.b.data, want, sizeof want);
    pgarray_free(&a);
}

static void test_text_and_null(void **state)
{
    (void)state;
    pgarray a;
    pgarray_begin(&a, OID_TEXT);
    pgarray_add(&a, "abc", 3);
    pgarray_add_null(&a);
    pgarray_add(&a, "", 0);
    pgarray_add(&a, "caf\xc3\xa9", 5);
    pgarray_finish(&a);
    static const uint8_t want[] = {
        0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 25, 0, 0, 0, 4, 0, 0, 0, 1,
        0, 0, 0, 3, 'a', 'b', 'c',
        0xff, 0xff, 0xff, 0xff,             /* NULL: length -1, no bytes */
        0, 0, 0, 0,                         /* empty string is not NULL */
        0, 0, 0, 5, 'c', 'a', 'f', 0xc3, 0xa9,
    };
    assert_int_equal(a.b.len, sizeof want);
    assert_memory_equal(a.b.data, want, sizeof want);
    assert_int_equal(a.count, 4);
    assert_int_equal(a.has_null, 1);
    header_eq(&a, 1, OID_TEXT, 4);
    pgarray_free(&a);
}

static void test_only_nulls_and_other_oids(void **state)
{
    (void)state;
    pgarray a;
    pgarray_begin(&a, OID_UUID);
    pgarray_add_null(&a);
    pgarray_finish(&a);
    header_eq(&a, 1, OID_UUID, 1);
    assert_int_equal(a.b.len, 24);
    assert_memory_equal(a.b.data + 20, "\xff\xff\xff\xff", 4);
    pgarray_free(&a);

    pgarray_begin(&a, OID_BYTEA);
    static const uint8_t bin[] = {0, 1, 2, 0xff, 0};
    pgarray_add(&a, bin, sizeof bin);
    pgarray_finish(&a);
    header_eq(&a, 0, OID_BYTEA, 1);
    assert_int_equal(a.b.len, 20 + 4 + 5);
    assert_memory_equal(a.b.data + 20, "\0\0\0\x05\0\x01\x02\xff\0", 9);
    pgarray_free(&a);
}

/* appending arrays: the elements of each in order, nulls carried, empty ones adding nothing,
 * and the result the same bytes as one array built element by element */
static void test_append_array(void **state)
{
    (void)state;
    pgarray x, y, e, out, one;
    pgarray_begin(&x, OID_TEXT);
    pgarray_add(&x, "ab", 2);
    pgarray_finish(&x);
    pgarray_begin(&e, OID_TEXT);
    pgarray_finish(&e);
    pgarray_begin(&y, OID_TEXT);
    pgarray_add_null(&y);
    pgarray_add(&y, "c", 1);
    pgarray_finish(&y);
    pgarray_begin(&out, OID_TEXT);
    pgarray_append_array(&out, &x);
    pgarray_append_array(&out, &e);
    pgarray_append_array(&out, &y);
    pgarray_finish(&out);
    pgarray_begin(&one, OID_TEXT);
    pgarray_add(&one, "ab", 2);
    pgarray_add_null(&one);
    pgarray_add(&one, "c", 1);
    pgarray_finish(&one);
    assert_int_equal(out.count, 3);
    assert_int_equal(out.has_null, 1);
    header_eq(&out, 1, OID_TEXT, 3);
    assert_int_equal(out.b.len, one.b.len);
    assert_memory_equal(out.b.data, one.b.data, one.b.len);
    pgarray_free(&x);
    pgarray_free(&y);
    pgarray_free(&e);
    pgarray_free(&out);
    pgarray_free(&one);
}

static void test_many_elements(void **state)
{
    (void)state;
    /* counts above 255 and 65535 land in every byte of the dimension */
    pgarray a;
    pgarray_begin(&a, OID_INT4);
    for (int32_t i = 0; i < 70000; i++)
        pgarray_add_i32(&a, i);
    pgarray_finish(&a);
    header_eq(&a, 0, OID_INT4, 70000);
    assert_int_equal(a.b.len, 20 + 70000 * 8);
    const uint8_t *p = (const uint8_t *)a.b.data + 20 + 69999 * 8;
    static const uint8_t last[] = {0, 0, 0, 4, 0x00, 0x01, 0x11, 0x6f};
    assert_memory_equal(p, last, 8);
    /* finish may be called again after more elements */
    pgarray_add_null(&a);
    pgarray_finish(&a);
    header_eq(&a, 1, OID_INT4, 70001);
    pgarray_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_append_array),
        cmocka_unit_test(test_int4),
        cmocka_unit_test(test_int8),
        cmocka_unit_test(test_text_and_null),
        cmocka_unit_test(test_only_nulls_and_other_oids),
        cmocka_unit_test(test_many_elements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
