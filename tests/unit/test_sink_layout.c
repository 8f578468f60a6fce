/* Unit tests for the sink's keys (sink/layout.h): the spec's example keys byte for byte,
 * percent-encoding of every byte outside A-Z a-z 0-9 . _ -, dt=/hour= in UTC from the
 * window's start at the day and hour edges, the alignments, the padding of k, the
 * per-partition form, the KV keys and the checkpoint number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "core/util.h"
#include "sink/layout.h"

#define TENANT "00000000-0000-0000-0000-000000000001"
#define T_START 1791007200000000LL /* 2026-10-03T06:00:00Z */
#define T_END 1791009458377855LL   /* 2026-10-03T06:37:38.377855Z */
#define MIDNIGHT 1790985600000000LL /* 2026-10-03T00:00:00Z */

static buf g_b;

static const char *escaped(const char *s, size_t n)
{
    buf_reset(&g_b);
    s3_name_escape(&g_b, s, n);
    return buf_cstr(&g_b);
}

static void test_escape(void **state)
{
    (void)state;
    assert_string_equal(escaped(STRLIT("orders")), "orders");
    assert_string_equal(escaped(STRLIT("AZaz09._-")), "AZaz09._-");
    assert_string_equal(escaped(STRLIT("a/b")), "a%2Fb");
    assert_string_equal(escaped(STRLIT("../..")), "..%2F..");
    assert_string_equal(escaped(STRLIT("100%")), "100%25");
    assert_string_equal(escaped(STRLIT("a b=c~d+e:f")), "a%20b%3Dc%7Ed%2Be%3Af");
    assert_string_equal(escaped(STRLIT("caf\xc3\xa9")), "caf%C3%A9");
    assert_string_equal(escaped(STRLIT("\x7f\xff")), "%7F%FF");
    assert_string_equal(escaped("a\0b", 3), "a%00b");
    assert_string_equal(escaped("", 0), "");
    /* every byte: plain ones stay, the rest become %XX with uppercase hex */
    for (int c = 0; c < 256; c++) {
        char in = (char)c;
        const char *out = escaped(&in, 1);
        int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
        if (plain) {
            assert_int_equal(strlen(out), 1);
            assert_int_equal((unsigned char)out[0], c);
        } else {
            char want[4];
            snprintf(want, sizeof want, "%%%02X", c);
            assert_string_equal(out, want);
        }
    }
}

static void test_ext(void **state)
{
    (void)state;
    assert_string_equal(s3_object_ext(S3_FORMAT_JSONL, S3_COMP_ZSTD), "jsonl.zst");
    assert_string_equal(s3_object_ext(S3_FORMAT_JSONL, S3_COMP_GZIP), "jsonl.gz");
    assert_string_equal(s3_object_ext(S3_FORMAT_JSONL, S3_COMP_NONE), "jsonl");
    assert_null(s3_object_ext(S3_FORMAT_JSONL, S3_COMP_SNAPPY));
    assert_string_equal(s3_object_ext(S3_FORMAT_PARQUET, S3_COMP_ZSTD), "parquet");
    assert_string_equal(s3_object_ext(S3_FORMAT_PARQUET, S3_COMP_SNAPPY), "parquet");
}

static void test_spec_keys(void **state)
{
    (void)state;
    buf_reset(&g_b);
    s3_key_data(&g_b, "queen", TENANT, STRLIT("orders"), 1, T_START, T_END, S3_ALIGN_HOUR, "jsonl.zst");
    assert_string_equal(buf_cstr(&g_b), "queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/"
                                        "hour=06/w-0000000001-1791007200000000-1791009458377855.jsonl.zst");
    buf_reset(&g_b);
    s3_key_manifest(&g_b, "queen", TENANT, STRLIT("orders"), 1);
    assert_string_equal(buf_cstr(&g_b),
                        "queen/_queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/windows/0000000001.json");
    buf_reset(&g_b);
    s3_key_checkpoint(&g_b, "queen", TENANT, STRLIT("orders"), 20);
    assert_string_equal(buf_cstr(&g_b), "queen/_queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/"
                                        "checkpoint/0000000020.json.zst");
    buf_reset(&g_b);
    s3_key_window_dir(&g_b, "queen", TENANT, STRLIT("orders"), T_START, S3_ALIGN_HOUR);
    assert_string_equal(buf_cstr(&g_b),
                        "queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/hour=06");
}

static const char *dir_of(int64_t t, enum s3_align a)
{
    buf_reset(&g_b);
    s3_key_window_dir(&g_b, "p", "t", STRLIT("q"), t, a);
    return buf_cstr(&g_b);
}

static void test_dt_hour(void **state)
{
    (void)state;
    assert_string_equal(dir_of(MIDNIGHT, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2026-10-03/hour=00");
    assert_string_equal(dir_of(MIDNIGHT - 1, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2026-10-02/hour=23");
    assert_string_equal(dir_of(MIDNIGHT + 3600000000LL - 1, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2026-10-03/hour=00");
    assert_string_equal(dir_of(MIDNIGHT + 3600000000LL, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2026-10-03/hour=01");
    assert_string_equal(dir_of(MIDNIGHT + 23 * 3600000000LL, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2026-10-03/hour=23");
    /* day drops hour=, none keeps both */
    assert_string_equal(dir_of(T_START, S3_ALIGN_DAY), "p/tenant=t/queue=q/dt=2026-10-03");
    assert_string_equal(dir_of(T_START + 1234, S3_ALIGN_NONE), "p/tenant=t/queue=q/dt=2026-10-03/hour=06");
    assert_string_equal(dir_of(0, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=1970-01-01/hour=00");
    /* a leap day and a year end */
    assert_string_equal(dir_of(951782400000000LL, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2000-02-29/hour=00");
    assert_string_equal(dir_of(1735689599999999LL, S3_ALIGN_HOUR), "p/tenant=t/queue=q/dt=2024-12-31/hour=23");
    /* no prefix (never from the configuration, but no leading slash either) */
    buf_reset(&g_b);
    s3_key_window_dir(&g_b, "", "t", STRLIT("q"), 0, S3_ALIGN_DAY);
    assert_string_equal(buf_cstr(&g_b), "tenant=t/queue=q/dt=1970-01-01");
}

static void test_k_padding_and_names(void **state)
{
    (void)state;
    buf_reset(&g_b);
    s3_key_data(&g_b, "lake/queen", TENANT, STRLIT("a/b c"), 0, 5, 6, S3_ALIGN_DAY, "jsonl");
    assert_string_equal(buf_cstr(&g_b),
                        "lake/queen/tenant=00000000-0000-0000-0000-000000000001/queue=a%2Fb%20c/dt=1970-01-01/"
                        "w-0000000000-5-6.jsonl");
    buf_reset(&g_b);
    s3_key_manifest(&g_b, "queen", TENANT, STRLIT("q"), 12345678901ULL);
    assert_non_null(strstr(buf_cstr(&g_b), "/windows/12345678901.json"));
    buf_reset(&g_b);
    s3_key_manifest(&g_b, "queen", TENANT, STRLIT("q"), 9999999999ULL);
    assert_non_null(strstr(buf_cstr(&g_b), "/windows/9999999999.json"));
    /* a name cannot climb out of its prefix: the slashes are exactly the layout's */
    buf_reset(&g_b);
    s3_key_data(&g_b, "queen", "../x", STRLIT("../../etc"), 3, T_START, T_END, S3_ALIGN_HOUR, "parquet");
    assert_string_equal(buf_cstr(&g_b), "queen/tenant=..%2Fx/queue=..%2F..%2Fetc/dt=2026-10-03/hour=06/"
                                        "w-0000000003-1791007200000000-1791009458377855.parquet");
    /* the queue length is honoured (not NUL-terminated input) */
    buf_reset(&g_b);
    s3_key_manifest(&g_b, "queen", TENANT, "ordersXYZ", 6, 1);
    assert_non_null(strstr(buf_cstr(&g_b), "/queue=orders/windows/"));
}

static void test_per_partition(void **state)
{
    (void)state;
    buf_reset(&g_b);
    s3_key_data_partition(&g_b, "queen", TENANT, STRLIT("orders"), 1, T_START, T_END, S3_ALIGN_HOUR,
                          STRLIT("cust/1"), 0, 41, "jsonl.gz");
    assert_string_equal(buf_cstr(&g_b), "queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/"
                                        "hour=06/w-0000000001-1791007200000000-1791009458377855-p-cust%2F1-0-41.jsonl.gz");
    buf_reset(&g_b);
    s3_key_data_partition(&g_b, "q", "t", STRLIT("o"), 7, MIDNIGHT, MIDNIGHT + 10, S3_ALIGN_DAY, "", 0, 5, 5,
                          "parquet");
    assert_string_equal(buf_cstr(&g_b), "q/tenant=t/queue=o/dt=2026-10-03/w-0000000007-1790985600000000-"
                                        "1790985600000010-p--5-5.parquet");
}

static void test_kv_keys(void **state)
{
    (void)state;
    static const char *const what[] = {"lease", "intent", "committed"};
    for (int i = 0; i < 3; i++) {
        buf_reset(&g_b);
        s3_kv_key(&g_b, "default", STRLIT("orders"), what[i]);
        char want[64];
        snprintf(want, sizeof want, "s3:default:orders:%s", what[i]);
        assert_string_equal(buf_cstr(&g_b), want);
    }
    buf_reset(&g_b);
    s3_kv_key(&g_b, "lake.2", STRLIT("a:b/c"), "intent");
    assert_string_equal(buf_cstr(&g_b), "s3:lake.2:a%3Ab%2Fc:intent");
    buf_reset(&g_b);
    s3_kv_presence_key(&g_b, "default", "10.0.0.1:6632");
    assert_string_equal(buf_cstr(&g_b), "s3:default:node=10.0.0.1%3A6632");
    buf_reset(&g_b);
    s3_kv_presence_prefix(&g_b, "default");
    assert_string_equal(buf_cstr(&g_b), "s3:default:node=");
    assert_string_equal(S3_KV_NAMESPACE, "queen-s3");
}

static void test_checkpoint_k(void **state)
{
    (void)state;
    assert_int_equal(s3_checkpoint_k(0, 20), 0);
    assert_int_equal(s3_checkpoint_k(1, 20), 0);
    assert_int_equal(s3_checkpoint_k(19, 20), 0);
    assert_int_equal(s3_checkpoint_k(20, 20), 20);
    assert_int_equal(s3_checkpoint_k(39, 20), 20);
    assert_int_equal(s3_checkpoint_k(41, 20), 40);
    assert_int_equal(s3_checkpoint_k(5, 1), 5);
    assert_int_equal(s3_checkpoint_k(99999, 100000), 0);
    assert_int_equal(s3_checkpoint_k(7, 0), 0);
}

static int setup(void **state)
{
    (void)state;
    buf_init(&g_b, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    buf_free(&g_b);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),           cmocka_unit_test(test_ext),
        cmocka_unit_test(test_spec_keys),        cmocka_unit_test(test_dt_hour),
        cmocka_unit_test(test_k_padding_and_names), cmocka_unit_test(test_per_partition),
        cmocka_unit_test(test_kv_keys),          cmocka_unit_test(test_checkpoint_k),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
