/* parquet.c — the Parquet writer (see parquet.h). Field numbers below are those of
 * parquet.thrift in the apache/parquet-format repository. */
#include "parquet.h"

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/util.h"
#include "thrift.h"

const pq_column PQ_QUEEN_RECORD[5] = {
    {"partition", PQ_STRING, 0},
    {"offset", PQ_INT64, 0},
    {"transaction_id", PQ_STRING, 0},
    {"ts", PQ_TIMESTAMP_US, 0},
    {"payload", PQ_STRING, 1},
};

/* parquet.thrift enums */
enum { T_INT64 = 2, T_BYTE_ARRAY = 6 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1 };
enum { CT_UTF8 = 0, CT_TIMESTAMP_MICROS = 10 };
enum { ENC_PLAIN = 0, ENC_RLE = 3 };
enum { PAGE_DATA = 0 };

typedef struct chunk_meta {
    int64_t offset;       /* of the first page, from the start of the file */
    int64_t uncompressed; /* pages incl. headers */
    int64_t compressed;
    int64_t values, nulls;
    int has_minmax;
    int64_t min, max;
    /* byte-array columns: the bounds as the footer carries them (stat_bounds) */
    uint8_t has_smin, has_smax, smin_exact, smax_exact;
    uint32_t sminlen, smaxlen;
    uint8_t smin[PQ_STAT_MAX_BYTES + 4], smax[PQ_STAT_MAX_BYTES + 4];
} chunk_meta;

typedef struct rg_meta {
    chunk_meta cols[PQ_MAX_COLUMNS];
    int64_t rows;
} rg_meta;

typedef struct col_state {
    pq_column c;
    char *name;
    buf values;        /* PLAIN values of the open page */
    uint8_t *defs;     /* definition levels of the open page (optional columns) */
    uint32_t ndefs, defs_cap;
    uint32_t page_values;
    buf chunk;         /* the row group's finished pages, header + data */
    chunk_meta m;      /* offset filled when the chunk is written out */
    buf smin, smax;    /* byte-array columns: the row group's exact least and greatest value */
    int has_s;
} col_state;

struct pq_writer {
    char *schema_name;
    col_state cols[PQ_MAX_COLUMNS];
    int ncols;
    enum pq_codec codec;
    int level;
    uint32_t rg_rows;
    uint32_t rows_in_rg;
    uint64_t rows;
    buf *out;
    size_t base; /* where the file starts in out */
    rg_meta *rgs;
    uint32_t nrgs, rgs_cap;
    char **kv;   /* key, value, key, value, ... */
    uint32_t nkv;
    buf page;    /* scratch: an uncompressed page body */
    buf zpage;   /* scratch: the compressed page */
    buf hdr;     /* scratch: a page header */
    ZSTD_CCtx *zctx;
    int failed;
};

pq_writer *pq_writer_new(const char *schema_name, const pq_column *cols, int ncols, enum pq_codec codec,
                         int zstd_level, uint32_t row_group_rows, buf *out)
{
    if (ncols < 1 || ncols > PQ_MAX_COLUMNS || row_group_rows == 0)
        return NULL;
    if (codec != PQ_CODEC_NONE && codec != PQ_CODEC_SNAPPY && codec != PQ_CODEC_ZSTD)
        return NULL;
    pq_writer *w = xcalloc(1, sizeof *w);
    w->schema_name = xstrdup(schema_name);
    w->ncols = ncols;
    w->codec = codec;
    w->level = zstd_level;
    w->rg_rows = row_group_rows;
    w->out = out;
    w->base = out->len;
    for (int i = 0; i < ncols; i++) {
        w->cols[i].c = cols[i];
        w->cols[i].name = xstrdup(cols[i].name);
        w->cols[i].c.name = w->cols[i].name;
        buf_init(&w->cols[i].values, 0);
        buf_init(&w->cols[i].chunk, 0);
        buf_init(&w->cols[i].smin, 0);
        buf_init(&w->cols[i].smax, 0);
    }
    buf_init(&w->page, 0);
    buf_init(&w->zpage, 0);
    buf_init(&w->hdr, 0);
    if (codec == PQ_CODEC_ZSTD)
        w->zctx = ZSTD_createCCtx();
    buf_append(out, "PAR1", 4);
    return w;
}

void pq_writer_kv(pq_writer *w, const char *key, const char *value)
{
    w->kv = xrealloc(w->kv, (w->nkv + 1) * 2 * sizeof *w->kv);
    w->kv[w->nkv * 2] = xstrdup(key);
    w->kv[w->nkv * 2 + 1] = xstrdup(value);
    w->nkv++;
}

uint64_t pq_writer_rows(const pq_writer *w)
{
    return w->rows;
}

void pq_writer_free(pq_writer *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->ncols; i++) {
        free(w->cols[i].name);
        buf_free(&w->cols[i].values);
        buf_free(&w->cols[i].chunk);
        buf_free(&w->cols[i].smin);
        buf_free(&w->cols[i].smax);
        free(w->cols[i].defs);
    }
    for (uint32_t i = 0; i < w->nkv * 2; i++)
        free(w->kv[i]);
    free(w->kv);
    free(w->rgs);
    free(w->schema_name);
    buf_free(&w->page);
    buf_free(&w->zpage);
    buf_free(&w->hdr);
    if (w->zctx)
        ZSTD_freeCCtx(w->zctx);
    free(w);
}

static void put_le32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_append(b, x, 4);
}

static void put_le64(buf *b, int64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)((uint64_t)v >> (8 * i));
    buf_append(b, x, 8);
}

/* Definition levels of bit width 1 in the RLE/bit-packed hybrid, as RLE runs only, with the
 * 4-byte length prefix of a v1 data page. */
static void put_def_levels(buf *b, const uint8_t *defs, uint32_t n)
{
    size_t at = b->len;
    put_le32(b, 0);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i + 1;
        while (j < n && defs[j] == defs[i])
            j++;
        buf_put_varint(b, (uint64_t)(j - i) << 1);
        buf_putc(b, (char)defs[i]);
        i = j;
    }
    uint32_t len = (uint32_t)(b->len - at - 4);
    if (!b->overflow) {
        uint8_t *p = (uint8_t *)b->data + at;
        p[0] = (uint8_t)len;
        p[1] = (uint8_t)(len >> 8);
        p[2] = (uint8_t)(len >> 16);
        p[3] = (uint8_t)(len >> 24);
    }
}

static int compress_page(pq_writer *w, const buf *in, const char **data, size_t *len)
{
    switch (w->codec) {
    case PQ_CODEC_NONE:
        *data = in->data;
        *len = in->len;
        return 0;
    case PQ_CODEC_SNAPPY: {
        size_t cap = snappy_max_compressed_length(in->len);
        buf_reset(&w->zpage);
        if (buf_reserve(&w->zpage, cap) < 0)
            return -1;
        size_t n = cap;
        if (snappy_compress(in->data ? in->data : "", in->len, w->zpage.data, &n) != SNAPPY_OK)
            return -1;
        w->zpage.len = n;
        *data = w->zpage.data;
        *len = n;
        return 0;
    }
    case PQ_CODEC_ZSTD: {
        size_t cap = ZSTD_compressBound(in->len);
        buf_reset(&w->zpage);
        if (!w->zctx || buf_reserve(&w->zpage, cap) < 0)
            return -1;
        size_t n = ZSTD_compressCCtx(w->zctx, w->zpage.data, cap, in->data ? in->data : "", in->len, w->level);
        if (ZSTD_isError(n))
            return -1;
        w->zpage.len = n;
        *data = w->zpage.data;
        *len = n;
        return 0;
    }
    }
    return -1;
}

static int flush_page(pq_writer *w, col_state *c)
{
    if (c->page_values == 0)
        return 0;
    buf_reset(&w->page);
    if (c->c.optional)
        put_def_levels(&w->page, c->defs, c->ndefs);
    buf_append(&w->page, c->values.data, c->values.len);
    if (w->page.overflow || w->page.len > INT32_MAX)
        return -1;
    const char *data;
    size_t clen;
    if (compress_page(w, &w->page, &data, &clen) < 0 || clen > INT32_MAX)
        return -1;
    buf_reset(&w->hdr);
    tc_writer t;
    tc_init(&t, &w->hdr);
    tc_struct_begin(&t);
    tc_field_i32(&t, 1, PAGE_DATA);
    tc_field_i32(&t, 2, (int32_t)w->page.len);
    tc_field_i32(&t, 3, (int32_t)clen);
    tc_field_struct(&t, 5); /* DataPageHeader */
    tc_field_i32(&t, 1, (int32_t)c->page_values);
    tc_field_i32(&t, 2, ENC_PLAIN);
    tc_field_i32(&t, 3, ENC_RLE);
    tc_field_i32(&t, 4, ENC_RLE);
    tc_struct_end(&t);
    tc_struct_end(&t);
    buf_append(&c->chunk, w->hdr.data, w->hdr.len);
    buf_append(&c->chunk, data, clen);
    if (c->chunk.overflow || w->hdr.overflow)
        return -1;
    c->m.uncompressed += (int64_t)(w->hdr.len + w->page.len);
    c->m.compressed += (int64_t)(w->hdr.len + clen);
    buf_reset(&c->values);
    c->ndefs = 0;
    c->page_values = 0;
    return 0;
}

/* Byte arrays compare as unsigned bytes, then by length (TypeDefinedOrder for BYTE_ARRAY and
 * STRING, parquet.thrift's ColumnOrder). */
static int bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    if (r)
        return r;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static int is_cont(uint8_t c)
{
    return (c & 0xc0) == 0x80;
}

/* The longest prefix of v of at most max bytes that ends on a UTF-8 character boundary (for
 * bytes that are not UTF-8, at most 3 bytes shorter than max). */
static size_t utf8_cut(const uint8_t *v, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t cut = max;
    for (int k = 0; k < 3 && cut > 0 && is_cont(v[cut]); k++)
        cut--;
    return is_cont(v[cut]) ? max : cut;
}

/* Decodes the last character of p[0..n): its code point and where it starts, or -1 when the
 * bytes there are not one well-formed character. */
static int utf8_last(const uint8_t *p, size_t n, uint32_t *cp, size_t *at)
{
    size_t i = n - 1;
    int k = 0;
    while (i > 0 && is_cont(p[i]) && k < 3) {
        i--;
        k++;
    }
    uint8_t c = p[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || i + len != n)
        return -1;
    uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1fu) : len == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t j = i + 1; j < n; j++)
        v = v << 6 | (p[j] & 0x3fu);
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return -1;
    *cp = v;
    *at = i;
    return 0;
}

static size_t utf8_put(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t)(0xf0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* The footer bounds of a byte-array column chunk from its exact least and greatest values:
 * each as it is when it fits PQ_STAT_MAX_BYTES (exact); a longer least value cut to a prefix
 * on a character boundary (a lower bound, still UTF-8); a longer greatest value cut the same
 * way with its last character incremented (an upper bound: UTF-8 orders as its code points),
 * dropping trailing characters that cannot be incremented, and no max_value at all when none
 * is left. parquet.thrift allows such compact bounds and flags them with is_*_value_exact. */
static void stat_bounds(chunk_meta *m, const buf *mn, const buf *mx)
{
    const uint8_t *a = (const uint8_t *)mn->data, *b = (const uint8_t *)mx->data;
    size_t cut = utf8_cut(a, mn->len, PQ_STAT_MAX_BYTES);
    memcpy(m->smin, a, cut);
    m->sminlen = (uint32_t)cut;
    m->has_smin = 1;
    m->smin_exact = cut == mn->len;
    if (mx->len <= PQ_STAT_MAX_BYTES) {
        memcpy(m->smax, b, mx->len);
        m->smaxlen = (uint32_t)mx->len;
        m->has_smax = 1;
        m->smax_exact = 1;
        return;
    }
    size_t n = utf8_cut(b, mx->len, PQ_STAT_MAX_BYTES);
    memcpy(m->smax, b, n);
    while (n > 0) {
        uint32_t cp;
        size_t at;
        if (utf8_last(m->smax, n, &cp, &at) < 0) {
            /* not UTF-8: the last byte incremented, as a plain byte array */
            if (m->smax[n - 1] != 0xff) {
                m->smax[n - 1]++;
                break;
            }
            n--;
            continue;
        }
        if (cp == 0x10ffff) {
            n = at;
            continue;
        }
        cp = cp + 1 == 0xd800 ? 0xe000 : cp + 1;
        n = at + utf8_put(m->smax + at, cp);
        break;
    }
    m->has_smax = n > 0;
    m->smaxlen = (uint32_t)n;
    m->smax_exact = 0;
}

static int flush_row_group(pq_writer *w)
{
    if (w->rows_in_rg == 0)
        return 0;
    if (w->nrgs == w->rgs_cap) {
        w->rgs_cap = w->rgs_cap ? w->rgs_cap * 2 : 4;
        w->rgs = xrealloc(w->rgs, w->rgs_cap * sizeof *w->rgs);
    }
    rg_meta *rg = &w->rgs[w->nrgs];
    memset(rg, 0, sizeof *rg);
    rg->rows = w->rows_in_rg;
    for (int i = 0; i < w->ncols; i++) {
        col_state *c = &w->cols[i];
        if (flush_page(w, c) < 0)
            return -1;
        c->m.offset = (int64_t)(w->out->len - w->base);
        buf_append(w->out, c->chunk.data, c->chunk.len);
        if (c->has_s)
            stat_bounds(&c->m, &c->smin, &c->smax);
        rg->cols[i] = c->m;
        memset(&c->m, 0, sizeof c->m);
        buf_reset(&c->chunk);
        buf_reset(&c->smin);
        buf_reset(&c->smax);
        c->has_s = 0;
    }
    if (w->out->overflow)
        return -1;
    w->nrgs++;
    w->rows_in_rg = 0;
    return 0;
}

int pq_write_row(pq_writer *w, const pq_value *vals)
{
    if (w->failed)
        return -1;
    for (int i = 0; i < w->ncols; i++) {
        col_state *c = &w->cols[i];
        const pq_value *v = &vals[i];
        if (v->is_null && !c->c.optional) {
            w->failed = 1;
            return -1;
        }
        if (c->c.optional) {
            if (c->ndefs == c->defs_cap) {
                c->defs_cap = c->defs_cap ? c->defs_cap * 2 : 1024;
                c->defs = xrealloc(c->defs, c->defs_cap);
            }
            c->defs[c->ndefs++] = v->is_null ? 0 : 1;
        }
        c->page_values++;
        c->m.values++;
        if (v->is_null) {
            c->m.nulls++;
        } else if (c->c.kind == PQ_STRING) {
            if (v->n > INT32_MAX - 8) {
                w->failed = 1;
                return -1;
            }
            put_le32(&c->values, (uint32_t)v->n);
            buf_append(&c->values, v->s, v->n);
            /* the exact extremes, copied only when one changes */
            if (!c->has_s || bytes_cmp(v->s, v->n, c->smin.data, c->smin.len) < 0) {
                buf_reset(&c->smin);
                buf_append(&c->smin, v->s, v->n);
            }
            if (!c->has_s || bytes_cmp(v->s, v->n, c->smax.data, c->smax.len) > 0) {
                buf_reset(&c->smax);
                buf_append(&c->smax, v->s, v->n);
            }
            c->has_s = 1;
            if (c->smin.overflow || c->smax.overflow) {
                w->failed = 1;
                return -1;
            }
        } else {
            put_le64(&c->values, v->i);
            if (!c->m.has_minmax || v->i < c->m.min)
                c->m.min = v->i;
            if (!c->m.has_minmax || v->i > c->m.max)
                c->m.max = v->i;
            c->m.has_minmax = 1;
        }
        if (c->values.overflow || (c->values.len >= PQ_PAGE_BYTES && flush_page(w, c) < 0)) {
            w->failed = 1;
            return -1;
        }
    }
    w->rows++;
    if (++w->rows_in_rg == w->rg_rows && flush_row_group(w) < 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

static void write_schema_element(tc_writer *t, const pq_column *c)
{
    tc_elem_struct_begin(t);
    tc_field_i32(t, 1, c->kind == PQ_STRING ? T_BYTE_ARRAY : T_INT64);
    tc_field_i32(t, 3, c->optional ? REP_OPTIONAL : REP_REQUIRED);
    tc_field_string(t, 4, c->name);
    if (c->kind == PQ_STRING) {
        tc_field_i32(t, 6, CT_UTF8);
        tc_field_struct(t, 10); /* LogicalType */
        tc_field_struct(t, 1);  /* STRING */
        tc_struct_end(t);
        tc_struct_end(t);
    } else if (c->kind == PQ_TIMESTAMP_US) {
        tc_field_i32(t, 6, CT_TIMESTAMP_MICROS);
        tc_field_struct(t, 10); /* LogicalType */
        tc_field_struct(t, 8);  /* TIMESTAMP */
        tc_field_bool(t, 1, 1); /* isAdjustedToUTC */
        tc_field_struct(t, 2);  /* unit */
        tc_field_struct(t, 2);  /* MICROS */
        tc_struct_end(t);
        tc_struct_end(t);
        tc_struct_end(t);
        tc_struct_end(t);
    }
    tc_struct_end(t);
}

int pq_writer_finish(pq_writer *w)
{
    if (w->failed || flush_row_group(w) < 0) {
        w->failed = 1;
        return -1;
    }
    buf footer;
    buf_init(&footer, 0);
    tc_writer t;
    tc_init(&t, &footer);
    tc_struct_begin(&t);
    tc_field_i32(&t, 1, 1); /* version */
    tc_field_list(&t, 2, TC_STRUCT, (uint32_t)w->ncols + 1);
    tc_elem_struct_begin(&t); /* the root */
    tc_field_string(&t, 4, w->schema_name);
    tc_field_i32(&t, 5, w->ncols);
    tc_struct_end(&t);
    for (int i = 0; i < w->ncols; i++)
        write_schema_element(&t, &w->cols[i].c);
    tc_field_i64(&t, 3, (int64_t)w->rows);
    tc_field_list(&t, 4, TC_STRUCT, w->nrgs);
    for (uint32_t r = 0; r < w->nrgs; r++) {
        const rg_meta *rg = &w->rgs[r];
        tc_elem_struct_begin(&t); /* RowGroup */
        tc_field_list(&t, 1, TC_STRUCT, (uint32_t)w->ncols);
        int64_t unc = 0, comp = 0;
        for (int i = 0; i < w->ncols; i++) {
            const chunk_meta *m = &rg->cols[i];
            const pq_column *c = &w->cols[i].c;
            tc_elem_struct_begin(&t); /* ColumnChunk */
            tc_field_i64(&t, 2, 0);   /* file_offset: deprecated, 0 */
            tc_field_struct(&t, 3);   /* ColumnMetaData */
            tc_field_i32(&t, 1, c->kind == PQ_STRING ? T_BYTE_ARRAY : T_INT64);
            tc_field_list(&t, 2, TC_I32, 2);
            tc_elem_i32(&t, ENC_PLAIN);
            tc_elem_i32(&t, ENC_RLE);
            tc_field_list(&t, 3, TC_BINARY, 1);
            tc_elem_binary(&t, c->name, strlen(c->name));
            tc_field_i32(&t, 4, (int32_t)w->codec);
            tc_field_i64(&t, 5, m->values);
            tc_field_i64(&t, 6, m->uncompressed);
            tc_field_i64(&t, 7, m->compressed);
            tc_field_i64(&t, 9, m->offset);
            tc_field_struct(&t, 12); /* Statistics */
            if (m->has_minmax) {
                /* integers: signed order, so the deprecated min/max say the same as the current */
                uint8_t mx[8], mn[8];
                for (int k = 0; k < 8; k++) {
                    mx[k] = (uint8_t)((uint64_t)m->max >> (8 * k));
                    mn[k] = (uint8_t)((uint64_t)m->min >> (8 * k));
                }
                tc_field_binary(&t, 1, mx, 8);
                tc_field_binary(&t, 2, mn, 8);
                tc_field_i64(&t, 3, m->nulls);
                tc_field_binary(&t, 5, mx, 8);
                tc_field_binary(&t, 6, mn, 8);
                tc_field_bool(&t, 7, 1);
                tc_field_bool(&t, 8, 1);
            } else if (m->has_smin) {
                /* byte arrays: unsigned order (TYPE_ORDER below), so only min_value/max_value;
                 * the deprecated fields are signed and stay unset */
                tc_field_i64(&t, 3, m->nulls);
                if (m->has_smax)
                    tc_field_binary(&t, 5, m->smax, m->smaxlen);
                tc_field_binary(&t, 6, m->smin, m->sminlen);
                if (m->has_smax)
                    tc_field_bool(&t, 7, m->smax_exact);
                tc_field_bool(&t, 8, m->smin_exact);
            } else {
                tc_field_i64(&t, 3, m->nulls);
            }
            tc_struct_end(&t);
            tc_struct_end(&t);
            tc_struct_end(&t);
            unc += m->uncompressed;
            comp += m->compressed;
        }
        tc_field_i64(&t, 2, unc);
        tc_field_i64(&t, 3, rg->rows);
        tc_field_i64(&t, 5, rg->cols[0].offset);
        tc_field_i64(&t, 6, comp);
        tc_field_i16(&t, 7, (int16_t)(r & 0x7fff)); /* ordinal */
        tc_struct_end(&t);
    }
    if (w->nkv) {
        tc_field_list(&t, 5, TC_STRUCT, w->nkv);
        for (uint32_t i = 0; i < w->nkv; i++) {
            tc_elem_struct_begin(&t);
            tc_field_string(&t, 1, w->kv[i * 2]);
            tc_field_string(&t, 2, w->kv[i * 2 + 1]);
            tc_struct_end(&t);
        }
    }
    tc_field_string(&t, 6, PQ_CREATED_BY);
    tc_field_list(&t, 7, TC_STRUCT, (uint32_t)w->ncols);
    for (int i = 0; i < w->ncols; i++) {
        tc_elem_struct_begin(&t); /* ColumnOrder */
        tc_field_struct(&t, 1);   /* TYPE_ORDER */
        tc_struct_end(&t);
        tc_struct_end(&t);
    }
    tc_struct_end(&t);
    int rc = footer.overflow || footer.len > UINT32_MAX ? -1 : 0;
    if (rc == 0) {
        buf_append(w->out, footer.data, footer.len);
        put_le32(w->out, (uint32_t)footer.len);
        buf_append(w->out, "PAR1", 4);
        if (w->out->overflow)
            rc = -1;
    }
    buf_free(&footer);
    if (rc < 0)
        w->failed = 1;
    return rc;
}
