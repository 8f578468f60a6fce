/* Unit tests for the object writer (sink/writer.h): the spec's JSONL lines byte for byte, the
 * sort order, payload rules (line breaks, null, sealed as base64), the zstd frame (content
 * size, level, checksum) and the gzip header, round trips through s3_decompress, the same
 * bytes for the same records in every format and codec, ceilings, refusals of corrupt input
 * and of codecs that do not fit a format, and the Parquet file's frame and footer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "core/buf.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "sink/writer.h"

#define TENANT "00000000-0000-0000-0000-000000000001"

static s3_record rec(const char *part, int64_t off, const char *txn, int64_t ts, const char *payload)
{
    s3_record r;
    memset(&r, 0, sizeof r);
    r.partition = part;
    r.partition_len = strlen(part);
    r.offset = off;
    r.txn = txn;
    r.txn_len = strlen(txn);
    r.ts = ts;
    r.payload = payload;
    r.payload_len = payload ? strlen(payload) : 0;
    r.payload_kind = S3_PAYLOAD_JSON;
    return r;
}

/* The spec's three records, in push order. */
static void spec_records(s3_record r[3])
{
    r[0] = rec("cust-1", 0, "01a1007b-855d-7001-8107-adfdabd3e51c", 1791009457501942LL,
               "{\"order\":1,\"status\":\"new\",\"total\":42.00}");
    r[1] = rec("cust-2", 0, "01a1007b-855d-7002-aa32-19bf977724d0", 1791009457501942LL,
               "{\"order\":2,\"status\":\"new\",\"total\":17.50}");
    r[2] = rec("cust-1", 1, "01a1007b-855d-7003-ab83-e480f30b0bb6", 1791009457501942LL,
               "{\"order\":1,\"status\":\"paid\",\"total\":42.00}");
}

static const char SPEC_LINES[] =
    "{\"partition\":\"cust-1\",\"offset\":0,\"transactionId\":\"01a1007b-855d-7001-8107-adfdabd3e51c\",\"ts\":\"2026-"
    "10-03T06:37:37.501942Z\",\"payload\":{\"order\":1,\"status\":\"new\",\"total\":42.00}}\n"
    "{\"partition\":\"cust-1\",\"offset\":1,\"transactionId\":\"01a1007b-855d-7003-ab83-e480f30b0bb6\",\"ts\":\"2026-"
    "10-03T06:37:37.501942Z\",\"payload\":{\"order\":1,\"status\":\"paid\",\"total\":42.00}}\n"
    "{\"partition\":\"cust-2\",\"offset\":0,\"transactionId\":\"01a1007b-855d-7002-aa32-19bf977724d0\",\"ts\":\"2026-"
    "10-03T06:37:37.501942Z\",\"payload\":{\"order\":2,\"status\":\"new\",\"total\":17.50}}\n";

static buf g_line;

static const char *line_of(const s3_record *r)
{
    buf_reset(&g_line);
    assert_int_equal(s3_jsonl_line(&g_line, r), 0);
    return buf_cstr(&g_line);
}

static void test_spec_lines(void **state)
{
    (void)state;
    s3_record r[3];
    spec_records(r);
    s3_records_sort(r, 3);
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(s3_jsonl_line(&b, &r[i]), 0);
    assert_string_equal(buf_cstr(&b), SPEC_LINES);
    /* the uncompressed object is the same text */
    buf o;
    buf_init(&o, 0);
    char err[128];
    assert_int_equal(s3_object_build(S3_FORMAT_JSONL, S3_COMP_NONE, r, 3, STRLIT("orders"), TENANT, &o, err,
                                     sizeof err),
                     0);
    assert_int_equal(o.len, strlen(SPEC_LINES));
    assert_memory_equal(o.data, SPEC_LINES, o.len);
    buf_free(&o);
    buf_free(&b);
}

static void test_payload_rules(void **state)
{
    (void)state;
    s3_record r = rec("p", 7, "t", 0, "{\n  \"a\": [1,\r\n 2]\r}");
    assert_string_equal(line_of(&r), "{\"partition\":\"p\",\"offset\":7,\"transactionId\":\"t\",\"ts\":\"1970-01-01T00:"
                                     "00:00.000000Z\",\"payload\":{   \"a\": [1,   2] }}\n");
    /* strings keep their escapes: only raw line breaks change */
    r = rec("p", 0, "t", 0, "\"line\\nbreak \\r\"");
    assert_non_null(strstr(line_of(&r), "\"payload\":\"line\\nbreak \\r\"}\n"));
    /* empty is null */
    r = rec("p", 0, "t", 0, NULL);
    assert_non_null(strstr(line_of(&r), ",\"payload\":null}\n"));
    r = rec("p", 0, "t", 0, "");
    assert_non_null(strstr(line_of(&r), ",\"payload\":null}\n"));
    /* byte for byte otherwise: spacing and number spelling */
    r = rec("p", 0, "t", 0, "[ 1.0e+2 ,-0.00, \"caf\xc3\xa9\" ]");
    assert_non_null(strstr(line_of(&r), ",\"payload\":[ 1.0e+2 ,-0.00, \"caf\xc3\xa9\" ]}\n"));
    /* the names are escaped as JSON strings */
    r = rec("a\"b\\c\x01", 0, "t\tx", 0, "1");
    assert_string_equal(line_of(&r), "{\"partition\":\"a\\\"b\\\\c\\u0001\",\"offset\":0,\"transactionId\":\"t\\tx\","
                                     "\"ts\":\"1970-01-01T00:00:00.000000Z\",\"payload\":1}\n");
    r = rec("p", INT64_MAX, "t", 1791009457501942LL, "1");
    assert_non_null(strstr(line_of(&r), "\"offset\":9223372036854775807,"));
}

static void test_sealed_base64(void **state)
{
    (void)state;
    static const char *const vec[][2] = {{"", "\"\""},         {"f", "\"Zg==\""},         {"fo", "\"Zm8=\""},
                                         {"foo", "\"Zm9v\""},  {"foob", "\"Zm9vYg==\""},  {"fooba", "\"Zm9vYmE=\""},
                                         {"foobar", "\"Zm9vYmFy\""}};
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
        s3_record r = rec("p", 0, "t", 0, vec[i][0]);
        r.payload_kind = S3_PAYLOAD_SEALED;
        char want[64];
        snprintf(want, sizeof want, ",\"payload\":%s}\n", vec[i][1]);
        assert_non_null(strstr(line_of(&r), want));
    }
    /* binary bytes, line breaks included, stay in the string */
    static const char bin[] = {'\x00', '\xff', '\n', '\r', '\xfb'};
    s3_record r = rec("p", 0, "t", 0, NULL);
    r.payload = bin;
    r.payload_len = sizeof bin;
    r.payload_kind = S3_PAYLOAD_SEALED;
    assert_non_null(strstr(line_of(&r), ",\"payload\":\"AP8KDfs=\"}\n"));
}

static void test_sort(void **state)
{
    (void)state;
    s3_record r[7] = {
        rec("b", 0, "t", 0, "1"),  rec("a", 2, "t", 0, "1"),     rec("ab", 0, "t", 0, "1"),
        rec("a", 10, "t", 0, "1"), rec("\xc3\xa9", 0, "t", 0, "1"), rec("a", 1, "t", 0, "1"),
        rec("B", 5, "t", 0, "1"),
    };
    s3_records_sort(r, 7);
    const char *want_p[] = {"B", "a", "a", "a", "ab", "b", "\xc3\xa9"};
    int64_t want_o[] = {5, 1, 2, 10, 0, 0, 0};
    for (int i = 0; i < 7; i++) {
        assert_string_equal(r[i].partition, want_p[i]);
        assert_int_equal(r[i].offset, want_o[i]);
    }
    /* a name that is a prefix of another sorts first, even with a NUL after it */
    s3_record z[2] = {rec("a", 0, "t", 0, "1"), rec("a", 0, "t", 0, "1")};
    z[0].partition = "a\0";
    z[0].partition_len = 2;
    s3_records_sort(z, 2);
    assert_int_equal(z[0].partition_len, 1);
    s3_records_sort(z, 0);
    s3_records_sort(z, 1);
}

/* n varied records, sorted. Strings live in static storage (the records borrow them). */
static s3_record *many(size_t n)
{
    static char parts[16][24], txns[64][48], pays[7][4200];
    for (int i = 0; i < 16; i++)
        snprintf(parts[i], sizeof parts[i], "cust-%02d", i);
    for (int i = 0; i < 64; i++)
        snprintf(txns[i], sizeof txns[i], "01a1007b-855d-7001-8107-%012d", i);
    snprintf(pays[0], sizeof pays[0], "{\"order\":1,\"total\":42.00}");
    snprintf(pays[1], sizeof pays[1], "%s", "");
    memset(pays[2], 'x', 4000);
    pays[2][0] = '"';
    pays[2][3999] = '"';
    pays[2][4000] = '\0';
    snprintf(pays[3], sizeof pays[3], "[1,\n2]");
    snprintf(pays[4], sizeof pays[4], "true");
    snprintf(pays[5], sizeof pays[5], "\"caf\xc3\xa9 \\u00e9\"");
    snprintf(pays[6], sizeof pays[6], "{\"nested\":{\"a\":[null,{}]}}");
    s3_record *r = xcalloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i] = rec(parts[i % 16], (int64_t)(i / 16), txns[i % 64], 1791009457501942LL + (int64_t)(i / 10),
                   pays[i % 7]);
        if (i % 97 == 0)
            r[i].payload_kind = S3_PAYLOAD_SEALED;
    }
    s3_records_sort(r, n);
    return r;
}

static void plain_text(const s3_record *r, size_t n, buf *out)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(s3_jsonl_line(out, &r[i]), 0);
}

static void test_compression_round_trip(void **state)
{
    (void)state;
    const size_t N = 3000; /* about 2 MB: several compressor slices and zstd blocks */
    s3_record *r = many(N);
    buf plain;
    buf_init(&plain, 0);
    plain_text(r, N, &plain);
    assert_true(plain.len > (1u << 20));
    enum s3_compression cs[] = {S3_COMP_ZSTD, S3_COMP_GZIP, S3_COMP_NONE};
    for (int i = 0; i < 3; i++) {
        buf o, back;
        buf_init(&o, 0);
        buf_init(&back, 0);
        char err[128] = "";
        assert_int_equal(s3_object_build(S3_FORMAT_JSONL, cs[i], r, N, STRLIT("orders"), TENANT, &o, err, sizeof err),
                         0);
        assert_int_equal(s3_decompress(cs[i], o.data, o.len, &back), 0);
        assert_int_equal(back.len, plain.len);
        assert_memory_equal(back.data, plain.data, plain.len);
        if (cs[i] != S3_COMP_NONE)
            assert_true(o.len < plain.len / 2);
        /* s3_compress of the same text decompresses to it too */
        buf c2;
        buf_init(&c2, 0);
        assert_int_equal(s3_compress(cs[i], plain.data, plain.len, &c2), 0);
        buf_reset(&back);
        assert_int_equal(s3_decompress(cs[i], c2.data, c2.len, &back), 0);
        assert_int_equal(back.len, plain.len);
        assert_memory_equal(back.data, plain.data, plain.len);
        buf_free(&c2);
        buf_free(&o);
        buf_free(&back);
    }
    buf_free(&plain);
    free(r);
}

/* Every byte in the names, every sealed length, extreme offsets and stamps: the size computed
 * before the zstd frame (its header carries it) must match the lines exactly, and each ts
 * must be the ISO text of timeutil.h whatever the per-second cache held before. */
static void test_sizes_and_stamps(void **state)
{
    (void)state;
    static char names[256][4];
    s3_record r[300];
    size_t n = 0;
    for (int c = 0; c < 256; c++) {
        names[c][0] = 'p';
        names[c][1] = (char)c;
        names[c][2] = '"';
        r[n] = rec("x", 0, "t\\\"", 0, NULL);
        r[n].partition = names[c];
        r[n].partition_len = 3;
        r[n].txn = names[255 - c];
        r[n].txn_len = 3;
        r[n].offset = c == 0 ? INT64_MIN : c == 1 ? INT64_MAX : (int64_t)c * 977 - 50000;
        r[n].ts = (c % 3 == 0 ? -1 : 1) * (int64_t)c * 1234567891LL + c;
        r[n].payload = "[1,\r\n2]";
        r[n].payload_len = (size_t)(c % 8);
        r[n].payload_kind = c % 5 == 0 ? S3_PAYLOAD_SEALED : S3_PAYLOAD_JSON;
        n++;
    }
    s3_records_sort(r, n);
    buf plain, o, back;
    buf_init(&plain, 0);
    buf_init(&o, 0);
    buf_init(&back, 0);
    plain_text(r, n, &plain);
    char err[128];
    assert_int_equal(s3_object_build(S3_FORMAT_JSONL, S3_COMP_ZSTD, r, n, STRLIT("q"), TENANT, &o, err, sizeof err), 0);
    assert_int_equal(ZSTD_getFrameContentSize(o.data, o.len), plain.len);
    assert_int_equal(s3_decompress(S3_COMP_ZSTD, o.data, o.len, &back), 0);
    assert_int_equal(back.len, plain.len);
    assert_memory_equal(back.data, plain.data, plain.len);
    /* the stamps, across second, day and epoch edges, in and out of the cache */
    int64_t stamps[] = {0, -1, 999999, 1000000, -1000000, -1000001, 1791009457501942LL, 1791009457999999LL,
                        1791009458000000LL, 1791009457501942LL, 1790985599999999LL, 1790985600000000LL,
                        253402300799999999LL, -62135596800000000LL};
    for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
        s3_record x = rec("p", 0, "t", stamps[i], "1");
        char want[32], pat[48];
        format_iso_us(stamps[i], want);
        snprintf(pat, sizeof pat, ",\"ts\":\"%s\",", want);
        if (!strstr(line_of(&x), pat))
            fail_msg("ts %lld: want %s in %s", (long long)stamps[i], want, line_of(&x));
    }
    buf_free(&plain);
    buf_free(&o);
    buf_free(&back);
}

static void test_zstd_frame(void **state)
{
    (void)state;
    s3_record r[3];
    spec_records(r);
    s3_records_sort(r, 3);
    buf o;
    buf_init(&o, 0);
    char err[128];
    assert_int_equal(s3_object_build(S3_FORMAT_JSONL, S3_COMP_ZSTD, r, 3, STRLIT("orders"), TENANT, &o, err,
                                     sizeof err),
                     0);
    /* one frame, with the content size in its header, and a checksum */
    assert_int_equal(ZSTD_getFrameContentSize(o.data, o.len), strlen(SPEC_LINES));
    assert_int_equal(ZSTD_findFrameCompressedSize(o.data, o.len), o.len);
    const uint8_t *p = (const uint8_t *)o.data;
    assert_int_equal(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24, 0xFD2FB528u); /* a frame, not a skippable one */
    assert_int_equal(p[4] & 0x04, 0x04); /* Content_Checksum_flag */
    buf back;
    buf_init(&back, 0);
    assert_int_equal(s3_decompress(S3_COMP_ZSTD, o.data, o.len, &back), 0);
    assert_int_equal(back.len, strlen(SPEC_LINES));
    assert_memory_equal(back.data, SPEC_LINES, back.len);
    /* an empty window still is a valid (empty) frame with size 0 */
    buf e;
    buf_init(&e, 0);
    assert_int_equal(s3_object_build(S3_FORMAT_JSONL, S3_COMP_ZSTD, r, 0, STRLIT("orders"), TENANT, &e, err,
                                     sizeof err),
                     0);
    assert_int_equal(ZSTD_getFrameContentSize(e.data, e.len), 0);
    buf_reset(&back);
    assert_int_equal(s3_decompress(S3_COMP_ZSTD, e.data, e.len, &back), 0);
    assert_int_equal(back.len, 0);
    buf_free(&e);
    buf_free(&back);
    buf_free(&o);
}

static void test_gzip_header(void **state)
{
    (void)state;
    s3_record r[3];
    spec_records(r);
    s3_records_sort(r, 3);
    buf o;
    buf_init(&o, 0);
    char err[128];
    assert_int_equal(s3_object_build(S3_FORMAT_JSONL, S3_COMP_GZIP, r, 3, STRLIT("orders"), TENANT, &o, err,
                                     sizeof err),
                     0);
    const uint8_t *p = (const uint8_t *)o.data;
    assert_true(o.len > 18);
    assert_int_equal(p[0], 0x1f);
    assert_int_equal(p[1], 0x8b);
    assert_int_equal(p[2], 8);    /* deflate */
    assert_int_equal(p[3], 0);    /* no name, comment, extra or header crc */
    assert_int_equal(p[4] | p[5] | p[6] | p[7], 0); /* mtime 0 */
    assert_int_equal(p[9], 255);  /* OS unknown */
    /* the trailer holds the input size */
    size_t n = strlen(SPEC_LINES);
    assert_int_equal(p[o.len - 4] | p[o.len - 3] << 8 | p[o.len - 2] << 16 | (uint32_t)p[o.len - 1] << 24, n);
    buf_free(&o);
}

static void test_same_bytes(void **state)
{
    (void)state;
    const size_t N = 2500;
    struct {
        enum s3_format f;
        enum s3_compression c;
    } kinds[] = {{S3_FORMAT_JSONL, S3_COMP_ZSTD},
                 {S3_FORMAT_JSONL, S3_COMP_GZIP},
                 {S3_FORMAT_JSONL, S3_COMP_NONE},
                 {S3_FORMAT_PARQUET, S3_COMP_ZSTD},
                 {S3_FORMAT_PARQUET, S3_COMP_SNAPPY}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        buf a, b;
        buf_init(&a, 0);
        buf_init(&b, 0);
        char err[128];
        s3_record *r1 = many(N);
        assert_int_equal(s3_object_build(kinds[k].f, kinds[k].c, r1, N, STRLIT("orders"), TENANT, &a, err, sizeof err),
                         0);
        /* a rebuild from records given in another order, with fresh memory */
        s3_record *r2 = many(N);
        for (size_t i = 0; i < N / 2; i++) {
            s3_record t = r2[i];
            r2[i] = r2[N - 1 - i];
            r2[N - 1 - i] = t;
        }
        s3_records_sort(r2, N);
        assert_int_equal(s3_object_build(kinds[k].f, kinds[k].c, r2, N, STRLIT("orders"), TENANT, &b, err, sizeof err),
                         0);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        /* one record more changes the bytes */
        buf c;
        buf_init(&c, 0);
        assert_int_equal(
            s3_object_build(kinds[k].f, kinds[k].c, r2, N - 1, STRLIT("orders"), TENANT, &c, err, sizeof err), 0);
        assert_true(c.len != a.len || memcmp(c.data, a.data, a.len) != 0);
        buf_free(&a);
        buf_free(&b);
        buf_free(&c);
        free(r1);
        free(r2);
    }
}

static void test_parquet_file(void **state)
{
    (void)state;
    s3_record r[4];
    spec_records(r);
    r[3] = rec("cust-3", 0, "t", 1791009457501943LL, NULL);
    s3_records_sort(r, 4);
    buf o;
    buf_init(&o, 0);
    char err[128];
    assert_int_equal(s3_object_build(S3_FORMAT_PARQUET, S3_COMP_SNAPPY, r, 4, "ordersXX", 6, TENANT, &o, err,
                                     sizeof err),
                     0);
    assert_true(o.len > 8);
    assert_memory_equal(o.data, "PAR1", 4);
    assert_memory_equal(o.data + o.len - 4, "PAR1", 4);
    /* the footer names the queue (by its length) and the tenant */
    uint32_t flen = (uint8_t)o.data[o.len - 8] | (uint8_t)o.data[o.len - 7] << 8 | (uint8_t)o.data[o.len - 6] << 16 |
                    (uint32_t)(uint8_t)o.data[o.len - 5] << 24;
    assert_true(flen < o.len);
    const char *foot = o.data + o.len - 8 - flen;
    assert_non_null(memmem(foot, flen, "queen.queue", 11));
    assert_non_null(memmem(foot, flen, "orders", 6));
    assert_null(memmem(foot, flen, "ordersXX", 8));
    assert_non_null(memmem(foot, flen, "queen.tenant", 12));
    assert_non_null(memmem(foot, flen, TENANT, strlen(TENANT)));
    assert_non_null(memmem(foot, flen, "queen_record", 12));
    assert_non_null(memmem(foot, flen, "transaction_id", 14));
    buf_free(&o);
}

static void test_refusals_and_ceilings(void **state)
{
    (void)state;
    s3_record r[3];
    spec_records(r);
    s3_records_sort(r, 3);
    buf o;
    buf_init(&o, 0);
    char err[128] = "";
    assert_int_equal(s3_object_build(S3_FORMAT_JSONL, S3_COMP_SNAPPY, r, 3, STRLIT("q"), TENANT, &o, err, sizeof err),
                     -1);
    assert_string_equal(err, "a JSONL object is zstd, gzip or none, not snappy");
    assert_int_equal(s3_object_build(S3_FORMAT_PARQUET, S3_COMP_GZIP, r, 3, STRLIT("q"), TENANT, &o, err, sizeof err),
                     -1);
    assert_string_equal(err, "a Parquet object is zstd or snappy, not gzip");
    assert_int_equal(s3_object_build(S3_FORMAT_PARQUET, S3_COMP_NONE, r, 3, STRLIT("q"), TENANT, &o, err, sizeof err),
                     -1);
    assert_int_equal(s3_compress(S3_COMP_SNAPPY, "x", 1, &o), -1);
    assert_int_equal(s3_decompress(S3_COMP_SNAPPY, "x", 1, &o), -1);
    buf_free(&o);
    /* a ceiling below the object: refused, for every format and codec */
    struct {
        enum s3_format f;
        enum s3_compression c;
    } kinds[] = {{S3_FORMAT_JSONL, S3_COMP_ZSTD},
                 {S3_FORMAT_JSONL, S3_COMP_GZIP},
                 {S3_FORMAT_JSONL, S3_COMP_NONE},
                 {S3_FORMAT_PARQUET, S3_COMP_ZSTD},
                 {S3_FORMAT_PARQUET, S3_COMP_SNAPPY}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        buf full;
        buf_init(&full, 0);
        assert_int_equal(s3_object_build(kinds[k].f, kinds[k].c, r, 3, STRLIT("q"), TENANT, &full, err, sizeof err), 0);
        buf small;
        buf_init(&small, full.len - 1);
        err[0] = '\0';
        assert_int_equal(s3_object_build(kinds[k].f, kinds[k].c, r, 3, STRLIT("q"), TENANT, &small, err, sizeof err),
                         -1);
        assert_true(small.overflow);
        assert_true(err[0] != '\0');
        buf_free(&small);
        /* exactly the size fits */
        buf exact;
        buf_init(&exact, full.len);
        assert_int_equal(s3_object_build(kinds[k].f, kinds[k].c, r, 3, STRLIT("q"), TENANT, &exact, err, sizeof err),
                         0);
        assert_int_equal(exact.len, full.len);
        assert_memory_equal(exact.data, full.data, full.len);
        buf_free(&exact);
        buf_free(&full);
    }
    buf line;
    buf_init(&line, 10);
    assert_int_equal(s3_jsonl_line(&line, &r[0]), -1);
    buf_free(&line);
}

static void test_decompress_refusals(void **state)
{
    (void)state;
    static const char text[] = "hello hello hello hello hello hello\n";
    enum s3_compression cs[] = {S3_COMP_ZSTD, S3_COMP_GZIP};
    for (int i = 0; i < 2; i++) {
        buf c, back;
        buf_init(&c, 0);
        buf_init(&back, 0);
        assert_int_equal(s3_compress(cs[i], text, strlen(text), &c), 0);
        /* truncated */
        for (size_t cut = 0; cut < c.len; cut++) {
            buf_reset(&back);
            assert_int_equal(s3_decompress(cs[i], c.data, cut, &back), -1);
            assert_int_equal(back.len, 0);
        }
        /* a flipped byte anywhere: refused, or (a header byte that does not matter, such as the
         * gzip mtime) the right text; never wrong text (the checksum or the CRC sees it) */
        for (size_t at = 0; at < c.len; at++) {
            char *bad = xmalloc(c.len);
            memcpy(bad, c.data, c.len);
            bad[at] ^= 0x5a;
            buf_reset(&back);
            int rc = s3_decompress(cs[i], bad, c.len, &back);
            if (rc == 0 && (back.len != strlen(text) || memcmp(back.data, text, back.len) != 0))
                fail_msg("codec %d: a flip at %zu gave wrong text without an error", (int)cs[i], at);
            free(bad);
        }
        /* trailing bytes */
        char *more = xmalloc(c.len + 3);
        memcpy(more, c.data, c.len);
        memcpy(more + c.len, "xyz", 3);
        buf_reset(&back);
        assert_int_equal(s3_decompress(cs[i], more, c.len + 3, &back), -1);
        free(more);
        /* the output ceiling: one byte short fails, the exact size passes */
        buf lim;
        buf_init(&lim, strlen(text) - 1);
        assert_int_equal(s3_decompress(cs[i], c.data, c.len, &lim), -1);
        assert_true(lim.overflow);
        buf_free(&lim);
        buf_init(&lim, strlen(text));
        assert_int_equal(s3_decompress(cs[i], c.data, c.len, &lim), 0);
        assert_int_equal(lim.len, strlen(text));
        buf_free(&lim);
        buf_free(&c);
        buf_free(&back);
    }
    buf back;
    buf_init(&back, 0);
    assert_int_equal(s3_decompress(S3_COMP_ZSTD, "not zstd at all", 15, &back), -1);
    assert_int_equal(s3_decompress(S3_COMP_GZIP, "not gzip at all", 15, &back), -1);
    assert_int_equal(s3_decompress(S3_COMP_NONE, "as is", 5, &back), 0);
    assert_int_equal(back.len, 5);
    buf_free(&back);
}

static void test_writer_name(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    s3_writer_name(S3_FORMAT_JSONL, S3_COMP_ZSTD, &b);
    assert_string_equal(buf_cstr(&b), "queen-s3/2.0.0 jsonl+zstd");
    buf_reset(&b);
    s3_writer_name(S3_FORMAT_PARQUET, S3_COMP_SNAPPY, &b);
    assert_string_equal(buf_cstr(&b), "queen-s3/2.0.0 parquet+snappy");
    buf_free(&b);
}

static int setup(void **state)
{
    (void)state;
    buf_init(&g_line, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    buf_free(&g_line);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_lines),
        cmocka_unit_test(test_payload_rules),
        cmocka_unit_test(test_sealed_base64),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_compression_round_trip),
        cmocka_unit_test(test_sizes_and_stamps),
        cmocka_unit_test(test_zstd_frame),
        cmocka_unit_test(test_gzip_header),
        cmocka_unit_test(test_same_bytes),
        cmocka_unit_test(test_parquet_file),
        cmocka_unit_test(test_refusals_and_ceilings),
        cmocka_unit_test(test_decompress_refusals),
        cmocka_unit_test(test_writer_name),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
