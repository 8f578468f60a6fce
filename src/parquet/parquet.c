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
        rg->cols[i] = c->m;
        memset(&c->m, 0, sizeof c->m);
        buf_reset(&c->chunk);
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
            tc_field_struct(&t, 12); /* Statistics: min/max (deprecated and current) for integers */
            if (m->has_minmax) {
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
