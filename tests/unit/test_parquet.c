/* Unit tests for the Thrift compact writer/reader and the Parquet writer (src/parquet). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parquet/parquet.h"
#include "parquet/thrift.h"

static void test_zigzag(void **state)
{
    (void)state;
    const int64_t v[] = {0, -1, 1, -2, 2, INT64_MAX, INT64_MIN, 63, -64};
    const uint64_t z[] = {0, 1, 2, 3, 4, UINT64_MAX - 1, UINT64_MAX, 126, 127};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_int_equal(tc_zigzag(v[i]), z[i]);
        assert_int_equal(tc_unzigzag(z[i]), v[i]);
    }
}

/* Known encodings, worked out by hand from the compact protocol's definition. */
static void test_known_bytes(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    tc_writer t;
    tc_init(&t, &b);
    tc_struct_begin(&t);
    tc_field_i32(&t, 1, 1);       /* 0x15 0x02 */
    tc_field_string(&t, 3, "ab"); /* 0x28 0x02 'a' 'b' */
    tc_field_bool(&t, 4, 1);      /* 0x11 */
    tc_field_bool(&t, 5, 0);      /* 0x12 */
    tc_field_i64(&t, 40, -3);     /* long form: 0x06, zigzag(40)=80=0x50, zigzag(-3)=5 */
    tc_field_struct(&t, 41);      /* 0x1c, nested ids restart */
    tc_field_i16(&t, 2, 7);       /* 0x24 0x0e */
    tc_struct_end(&t);            /* 0x00 */
    tc_field_list(&t, 42, TC_I32, 2); /* 0x19 0x25 */
    tc_elem_i32(&t, 0);
    tc_elem_i32(&t, 3);
    tc_field_list(&t, 43, TC_BINARY, 15); /* long list header: 0x19 0xf8 0x0f */
    for (int i = 0; i < 15; i++)
        tc_elem_binary(&t, "", 0);
    tc_struct_end(&t);
    const uint8_t want[] = {0x15, 0x02, 0x28, 0x02, 'a', 'b', 0x11, 0x12, 0x06, 0x50, 0x05, 0x1c, 0x24, 0x0e, 0x00,
                            0x19, 0x25, 0x00, 0x06, 0x19, 0xf8, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            0x00};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    /* the reader walks it exactly */
    const uint8_t *p = (const uint8_t *)b.data;
    assert_int_equal(tc_skip(&p, p + b.len, TC_STRUCT, 0), 0);
    assert_ptr_equal(p, (const uint8_t *)b.data + b.len);
    /* and refuses every truncation */
    for (size_t n = 0; n < b.len; n++) {
        p = (const uint8_t *)b.data;
        assert_int_equal(tc_skip(&p, p + n, TC_STRUCT, 0), -1);
    }
    buf_free(&b);
}

static void test_reader_bounds(void **state)
{
    (void)state;
    /* nesting deeper than TC_MAX_DEPTH */
    uint8_t deep[64];
    for (size_t i = 0; i < sizeof deep; i++)
        deep[i] = 0x1c;
    const uint8_t *p = deep;
    assert_int_equal(tc_skip(&p, deep + sizeof deep, TC_STRUCT, 0), -1);
    /* a binary longer than the input */
    const uint8_t bin[] = {0x18, 0x7f, 'x'};
    p = bin;
    assert_int_equal(tc_skip(&p, bin + sizeof bin, TC_STRUCT, 0), -1);
    /* a list claiming more elements than bytes */
    const uint8_t lst[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f};
    p = lst;
    assert_int_equal(tc_skip(&p, lst + sizeof lst, TC_STRUCT, 0), -1);
    /* an unknown type */
    const uint8_t unk[] = {0x1d, 0x00};
    p = unk;
    assert_int_equal(tc_skip(&p, unk + sizeof unk, TC_STRUCT, 0), -1);
}

/* Finds field `id` of the struct at *p (top level only), leaving *p at its value. */
static int find_field(const uint8_t **p, const uint8_t *end, int16_t want, enum tc_type *type)
{
    int16_t last = 0, id;
    for (;;) {
        if (tc_read_field(p, end, &last, &id, type) < 0 || *type == TC_STOP)
            return -1;
        if (id == want)
            return 0;
        if (tc_skip(p, end, *type, 1) < 0)
            return -1;
    }
}

static void write_rows(buf *out, enum pq_codec codec, uint32_t rg, int n, int null_in_required)
{
    pq_writer *w = pq_writer_new(PQ_QUEEN_RECORD_NAME, PQ_QUEEN_RECORD, 5, codec, 3, rg, out);
    assert_non_null(w);
    pq_writer_kv(w, "queen.queue", "orders");
    for (int i = 0; i < n; i++) {
        char payload[32];
        int pl = snprintf(payload, sizeof payload, "{\"n\":%d}", i);
        pq_value v[5] = {{"p", 1, 0, 0}, {NULL, 0, i, 0}, {"t", 1, 0, 0}, {NULL, 0, 1000 + i, 0},
                         {payload, (size_t)pl, 0, i % 3 == 0}};
        if (null_in_required && i == n - 1) {
            v[2].is_null = 1;
            assert_int_equal(pq_write_row(w, v), -1);
            pq_writer_free(w);
            return;
        }
        assert_int_equal(pq_write_row(w, v), 0);
    }
    assert_int_equal(pq_writer_finish(w), 0);
    assert_int_equal(pq_writer_rows(w), (uint64_t)n);
    pq_writer_free(w);
}

static void test_file_layout(void **state)
{
    (void)state;
    enum pq_codec codecs[] = {PQ_CODEC_NONE, PQ_CODEC_SNAPPY, PQ_CODEC_ZSTD};
    for (size_t c = 0; c < 3; c++) {
        buf out;
        buf_init(&out, 0);
        write_rows(&out, codecs[c], 7, 50, 0);
        assert_true(out.len > 12);
        assert_memory_equal(out.data, "PAR1", 4);
        assert_memory_equal(out.data + out.len - 4, "PAR1", 4);
        const uint8_t *e = (const uint8_t *)out.data + out.len - 8;
        uint32_t flen = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
        const uint8_t *f = e - flen, *p = f;
        assert_int_equal(tc_skip(&p, e, TC_STRUCT, 0), 0);
        assert_ptr_equal(p, e);
        /* num_rows (field 3) = 50; row groups (field 4): ceil(50 / 7) = 8 */
        enum tc_type t;
        p = f;
        assert_int_equal(find_field(&p, e, 3, &t), 0);
        assert_int_equal(t, TC_I64);
        uint64_t z;
        assert_int_equal(tc_read_varint(&p, e, &z), 0);
        assert_int_equal(tc_unzigzag(z), 50);
        p = f;
        assert_int_equal(find_field(&p, e, 4, &t), 0);
        assert_int_equal(t, TC_LIST);
        assert_int_equal(*p & 0x0f, TC_STRUCT);
        assert_int_equal(*p >> 4, 8);
        buf_free(&out);
    }
}

static void test_deterministic_and_refusals(void **state)
{
    (void)state;
    buf a, b, c;
    buf_init(&a, 0);
    buf_init(&b, 0);
    buf_init(&c, 0);
    write_rows(&a, PQ_CODEC_ZSTD, 10, 100, 0);
    write_rows(&b, PQ_CODEC_ZSTD, 10, 100, 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    write_rows(&c, PQ_CODEC_ZSTD, 10, 5, 1); /* a null in a required column is refused */
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
    buf out;
    buf_init(&out, 0);
    assert_null(pq_writer_new("x", PQ_QUEEN_RECORD, 0, PQ_CODEC_ZSTD, 3, 10, &out));
    assert_null(pq_writer_new("x", PQ_QUEEN_RECORD, 5, (enum pq_codec)2, 3, 10, &out));
    assert_null(pq_writer_new("x", PQ_QUEEN_RECORD, 5, PQ_CODEC_ZSTD, 3, 0, &out));
    /* a ceiling on the output: the writer fails instead of writing a broken file */
    buf small;
    buf_init(&small, 64);
    pq_writer *w = pq_writer_new(PQ_QUEEN_RECORD_NAME, PQ_QUEEN_RECORD, 5, PQ_CODEC_NONE, 0, 1, &small);
    pq_value v[5] = {{"p", 1, 0, 0}, {NULL, 0, 1, 0}, {"t", 1, 0, 0}, {NULL, 0, 2, 0}, {"0123456789012345678901234567890123456789", 40, 0, 0}};
    int rc = pq_write_row(w, v);
    if (rc == 0)
        rc = pq_writer_finish(w);
    assert_int_equal(rc, -1);
    pq_writer_free(w);
    buf_free(&small);
    buf_free(&out);
}

/* ---- statistics ---- */

typedef struct stats {
    int has_max, has_min, has_dmax, has_dmin, has_nulls, has_max_exact, has_min_exact;
    uint8_t max[128], min[128];
    size_t maxlen, minlen;
    int64_t nulls;
    int max_exact, min_exact;
} stats;

/* Reads the Statistics of column col in row group rg from the file in out. */
static void stats_of(const buf *out, uint32_t rg, uint32_t col, stats *st)
{
    memset(st, 0, sizeof *st);
    const uint8_t *e = (const uint8_t *)out->data + out->len - 8;
    uint32_t flen = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
    const uint8_t *p = e - flen;
    enum tc_type t;
    uint64_t n;
    assert_int_equal(find_field(&p, e, 4, &t), 0); /* row_groups */
    assert_int_equal(t, TC_LIST);
    n = *p >> 4;
    if (*p++ >> 4 == 15)
        assert_int_equal(tc_read_varint(&p, e, &n), 0);
    assert_true(rg < n);
    for (uint32_t i = 0; i < rg; i++)
        assert_int_equal(tc_skip(&p, e, TC_STRUCT, 1), 0);
    assert_int_equal(find_field(&p, e, 1, &t), 0); /* RowGroup.columns */
    n = *p >> 4;
    if (*p++ >> 4 == 15)
        assert_int_equal(tc_read_varint(&p, e, &n), 0);
    assert_true(col < n);
    for (uint32_t i = 0; i < col; i++)
        assert_int_equal(tc_skip(&p, e, TC_STRUCT, 1), 0);
    assert_int_equal(find_field(&p, e, 3, &t), 0);  /* ColumnChunk.meta_data */
    assert_int_equal(find_field(&p, e, 12, &t), 0); /* ColumnMetaData.statistics */
    assert_int_equal(t, TC_STRUCT);
    int16_t last = 0, id;
    for (;;) {
        assert_int_equal(tc_read_field(&p, e, &last, &id, &t), 0);
        if (t == TC_STOP)
            break;
        uint64_t v;
        if (t == TC_BINARY) {
            assert_int_equal(tc_read_varint(&p, e, &v), 0);
            assert_true(v <= 128 && v <= (uint64_t)(e - p));
            if (id == 5 || id == 6) {
                memcpy(id == 5 ? st->max : st->min, p, (size_t)v);
                *(id == 5 ? &st->maxlen : &st->minlen) = (size_t)v;
                *(id == 5 ? &st->has_max : &st->has_min) = 1;
            } else if (id == 1) {
                st->has_dmax = 1;
            } else if (id == 2) {
                st->has_dmin = 1;
            }
            p += v;
        } else if (t == TC_I64 && id == 3) {
            assert_int_equal(tc_read_varint(&p, e, &v), 0);
            st->nulls = tc_unzigzag(v);
            st->has_nulls = 1;
        } else if ((t == TC_TRUE || t == TC_FALSE) && (id == 7 || id == 8)) {
            *(id == 7 ? &st->max_exact : &st->min_exact) = t == TC_TRUE;
            *(id == 7 ? &st->has_max_exact : &st->has_min_exact) = 1;
        } else {
            fail_msg("unexpected Statistics field %d of type %d", id, t);
        }
    }
}

static void assert_bytes(const uint8_t *got, size_t gotlen, const char *want, size_t wantlen)
{
    assert_int_equal(gotlen, wantlen);
    assert_memory_equal(got, want, wantlen);
}

/* min_value/max_value for byte arrays (unsigned order, exact below PQ_STAT_MAX_BYTES, compact
 * UTF-8 bounds above it), null_count everywhere, integers with both generations of fields. */
static void test_statistics(void **state)
{
    (void)state;
    static const pq_column cols[3] = {{"s", PQ_STRING, 0}, {"o", PQ_STRING, 1}, {"i", PQ_INT64, 0}};
    char a63[64], y70[71], x100[101];
    memset(a63, 'a', 63);
    memset(y70, 'y', 70);
    memset(x100, 'x', 100);
    /* row group 0: short strings, exact; the optional column has one null */
    /* row group 1: long values, compact bounds */
    /* row group 2: the optional column all null */
    /* row group 3: character boundaries and characters that cannot be incremented */
    char ub[80], uc[80], ud[80], ue[80];
    memcpy(ub, a63, 63); memcpy(ub + 63, "\xc3\xa9zzz", 5);                       /* 68: 'é' across the cut */
    memcpy(uc, a63, 60); memcpy(uc + 60, "\xf4\x8f\xbf\xbf" "bbbb", 8);             /* 68: U+10FFFF just below it */
    memcpy(ud, a63, 61); memcpy(ud + 61, "\xed\x9f\xbf" "qqqq", 7);                  /* 68: U+D7FF just below it */
    memset(ue, 0xff, 70);                                                          /* not UTF-8 at all */
    struct {
        const char *s;
        size_t sn;
        const char *o;
        size_t on;
        int64_t i;
    } rows[] = {
        {"b", 1, "{}", 2, 5}, {"\xc3\xbc", 2, NULL, 0, -7}, {"a", 1, "[1]", 3, 9}, {"ab", 2, "\"z\"", 3, 0},
        {y70, 70, x100, 100, 1}, {x100, 100, y70, 70, 2}, {"c", 1, "c", 1, 3}, {"c", 1, "c", 1, 3},
        {"p", 1, NULL, 0, 1}, {"p", 1, NULL, 0, 1}, {"p", 1, NULL, 0, 1}, {"p", 1, NULL, 0, 1},
        {ub, 68, uc, 68, 1}, {uc, 68, ud, 68, 1}, {"a", 1, ue, 70, 1}, {"a", 1, "a", 1, 1},
    };
    buf out;
    buf_init(&out, 0);
    pq_writer *w = pq_writer_new("t", cols, 3, PQ_CODEC_NONE, 0, 4, &out);
    assert_non_null(w);
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        pq_value v[3] = {{rows[r].s, rows[r].sn, 0, 0}, {rows[r].o, rows[r].on, 0, rows[r].o == NULL}, {NULL, 0, rows[r].i, 0}};
        assert_int_equal(pq_write_row(w, v), 0);
    }
    assert_int_equal(pq_writer_finish(w), 0);
    pq_writer_free(w);
    stats st;
    /* 0: exact, unsigned order ("\xc3\xbc" sorts above ASCII), no deprecated fields for strings */
    stats_of(&out, 0, 0, &st);
    assert_bytes(st.min, st.minlen, "a", 1);
    assert_bytes(st.max, st.maxlen, "\xc3\xbc", 2);
    assert_true(st.has_min_exact && st.min_exact && st.has_max_exact && st.max_exact);
    assert_false(st.has_dmin || st.has_dmax);
    assert_true(st.has_nulls);
    assert_int_equal(st.nulls, 0);
    stats_of(&out, 0, 1, &st);
    assert_bytes(st.min, st.minlen, "\"z\"", 3);
    assert_bytes(st.max, st.maxlen, "{}", 2);
    assert_int_equal(st.nulls, 1);
    stats_of(&out, 0, 2, &st);
    int64_t mn = -7, mx = 9;
    uint8_t le[8];
    for (int k = 0; k < 8; k++)
        le[k] = (uint8_t)((uint64_t)mn >> (8 * k));
    assert_bytes(st.min, st.minlen, (const char *)le, 8);
    for (int k = 0; k < 8; k++)
        le[k] = (uint8_t)((uint64_t)mx >> (8 * k));
    assert_bytes(st.max, st.maxlen, (const char *)le, 8);
    assert_true(st.has_dmin && st.has_dmax && st.min_exact && st.max_exact);
    /* 1: a long least value is cut (a prefix), a long greatest value is cut and incremented */
    stats_of(&out, 1, 0, &st);
    assert_bytes(st.min, st.minlen, "c", 1);
    assert_int_equal(st.maxlen, 64);
    assert_memory_equal(st.max, y70, 63);
    assert_int_equal(st.max[63], 'z');
    assert_true(st.has_max_exact && !st.max_exact && st.min_exact);
    stats_of(&out, 1, 1, &st);
    assert_bytes(st.min, st.minlen, "c", 1);
    assert_int_equal(st.maxlen, 64);
    assert_memory_equal(st.max, y70, 63);
    assert_int_equal(st.max[63], 'z');
    /* 2: all null: no bounds, the null count */
    stats_of(&out, 2, 1, &st);
    assert_false(st.has_min || st.has_max);
    assert_int_equal(st.nulls, 4);
    /* 3: cuts on character boundaries; increments that step over U+10FFFF and the surrogates */
    stats_of(&out, 3, 0, &st);
    assert_bytes(st.min, st.minlen, "a", 1);
    /* the greatest is uc ("a"*60 U+10FFFF ...): U+10FFFF cannot grow, so "a"*59 "b" */
    assert_int_equal(st.maxlen, 60);
    assert_memory_equal(st.max, a63, 59);
    assert_int_equal(st.max[59], 'b');
    stats_of(&out, 3, 1, &st);
    /* least "a"; greatest the 0xff bytes: no byte can grow, so no max_value at all */
    assert_bytes(st.min, st.minlen, "a", 1);
    assert_false(st.has_max);
    assert_false(st.has_max_exact);
    buf_free(&out);
    /* the least value cut before a character that crosses the limit, and U+D7FF -> U+E000 */
    buf_init(&out, 0);
    w = pq_writer_new("t", cols, 3, PQ_CODEC_NONE, 0, 10, &out);
    pq_value v1[3] = {{ub, 68, 0, 0}, {ud, 68, 0, 0}, {NULL, 0, 1, 0}};
    assert_int_equal(pq_write_row(w, v1), 0);
    assert_int_equal(pq_writer_finish(w), 0);
    pq_writer_free(w);
    stats_of(&out, 0, 0, &st);
    assert_int_equal(st.minlen, 63); /* 'é' would end at byte 65: cut before it */
    assert_memory_equal(st.min, a63, 63);
    assert_false(st.min_exact);
    assert_int_equal(st.maxlen, 63); /* the same prefix, its last 'a' incremented */
    assert_memory_equal(st.max, a63, 62);
    assert_int_equal(st.max[62], 'b');
    stats_of(&out, 0, 1, &st);
    assert_int_equal(st.maxlen, 64);
    assert_memory_equal(st.max, a63, 61);
    assert_memory_equal(st.max + 61, "\xee\x80\x80", 3);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zigzag),
        cmocka_unit_test(test_known_bytes),
        cmocka_unit_test(test_reader_bounds),
        cmocka_unit_test(test_file_layout),
        cmocka_unit_test(test_deterministic_and_refusals),
        cmocka_unit_test(test_statistics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
