/* fuzz_segz — codec 1 of the segment encoding (storage/record.h): chunks of our records and of
 * producer zstd frames.
 *
 * Input layout: byte 0 selects the mode.
 *   even: the rest, after a codec-1 byte and [count:u16le], is walked by seg_reader (and by
 *         segment_to_records and the zstd chunk pass) and must never read out of bounds or leak;
 *   odd:  the rest drives a generator of records and frames, which are encoded as a codec-1
 *         segment (the frames compressed as a producer would), read back and compared, passed
 *         chunk by chunk, and re-encoded as codec 0 with the same records. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/buf.h"
#include "core/uuid.h"
#include "storage/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_segz: check failed at line %d: %s\n", __LINE__, #c);                        \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

#define MAX_RECS 128

typedef struct want {
    char txn[40];
    size_t txn_len;
    const uint8_t *payload;
    size_t payload_len;
    int zf;          /* inside a zstd chunk */
    uint8_t id[16];
} want;

static void walk(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    uint32_t count = (uint32_t)data[0] | (uint32_t)data[1] << 8;
    size_t len = size - 2 + 1;
    uint8_t *seg = malloc(len);
    seg[0] = SEGMENT_CHUNKED;
    memcpy(seg + 1, data + 2, size - 2);
    seg_reader s;
    record_view v;
    CHECK(seg_reader_init(&s, seg, len, 7, count) == 0);
    if (count & 1)
        seg_reader_skip_below(&s, 7 + count / 2);
    int rc;
    uint32_t got = 0;
    seg_zchunk z;
    while (1) {
        if ((got & 3) == 1 && seg_reader_zchunk(&s, &z) == 1) {
            CHECK(z.base_offset == 7 + got && z.count >= 1 && z.z >= seg && z.z + z.zlen <= seg + len);
            seg_reader_pass(&s, &z);
            got += z.count;
            continue;
        }
        if ((rc = seg_reader_next(&s, &v)) != 1)
            break;
        /* with skip_below, whole zstd chunks below it are passed: offsets jump, never back */
        if (count & 1)
            CHECK(v.offset >= 7 + got && (v.offset == 7 + got || v.offset <= 7 + count / 2));
        else
            CHECK(v.offset == 7 + got);
        got = (uint32_t)(v.offset - 7) + 1;
        CHECK(got <= count);
        char txt[600];
        size_t tl = record_txn_text(&v, txt, sizeof txt);
        CHECK(tl <= sizeof txt);
        /* every byte of a view is readable (ASan) */
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < v.payload_len; i++)
            sink ^= (uint8_t)v.payload[i];
        for (size_t i = 0; v.producer && i < v.producer_len; i++)
            sink ^= (uint8_t)v.producer[i];
        (void)sink;
    }
    if (rc == 0)
        CHECK(got == count);
    CHECK(seg_reader_next(&s, &v) == rc);
    seg_reader_done(&s);
    buf out;
    buf_init(&out, 0);
    if (segment_to_records(seg, len, count, &out) == 0) {
        CHECK(seg_reader_init(&s, (const uint8_t *)out.data, out.len, 0, count) == 0);
        uint32_t n = 0;
        while (seg_reader_next(&s, &v) == 1)
            n++;
        CHECK(n == count);
        CHECK(seg_reader_next(&s, &v) == 0);
        seg_reader_done(&s);
    }
    buf_free(&out);
    free(seg);
}

static void put_frame(buf *raw, const uint8_t id[16], const char *txn, size_t tl, const uint8_t *pl, size_t pn)
{
    uint32_t blen = (uint32_t)(1 + 16 + 2 + tl + pn);
    uint8_t h[4] = {(uint8_t)blen, (uint8_t)(blen >> 8), (uint8_t)(blen >> 16), (uint8_t)(blen >> 24)};
    buf_append(raw, h, 4);
    buf_putc(raw, 0);
    buf_append(raw, id, 16);
    uint8_t t[2] = {(uint8_t)tl, (uint8_t)(tl >> 8)};
    buf_append(raw, t, 2);
    buf_append(raw, txn, tl);
    buf_append(raw, pl, pn);
}

static void generate(const uint8_t *data, size_t size)
{
    static want w[MAX_RECS];
    const uint8_t *p = data, *end = data + size;
    buf seg, recs, raw, z;
    buf_init(&seg, 0);
    buf_init(&recs, 0);
    buf_init(&raw, 0);
    buf_init(&z, 0);
    segment_begin_chunked(&seg);
    size_t n = 0;
    const char *producer = size > 3 && (data[0] & 1) ? "svc" : NULL;
    while (p < end && n < MAX_RECS) {
        uint8_t ctl = *p++;
        int zf = ctl & 1;
        uint32_t k = 1 + ((ctl >> 1) & 7);
        uint32_t c = 0;
        buf_reset(&recs);
        buf_reset(&raw);
        for (; c < k && n < MAX_RECS && p < end; c++, n++) {
            want *x = &w[n];
            memset(x, 0, sizeof *x);
            x->zf = zf;
            size_t tl = *p++ % 40;
            if (tl > (size_t)(end - p))
                tl = (size_t)(end - p);
            if (zf && tl == 0) {
                memcpy(x->id, "\x01\x8f\x00\x00\x00\x00\x70\x00\x80\x00\x00\x00\x00\x00\x00\x00", 16);
                x->id[15] = (uint8_t)n;
                uuid u;
                memcpy(u.b, x->id, 16);
                uuid_format(&u, x->txn);
                x->txn_len = UUID_STR_LEN;
            } else {
                memcpy(x->txn, p, tl);
                x->txn_len = tl;
            }
            p += tl;
            size_t pn = p < end ? *p++ : 0;
            if (pn > (size_t)(end - p))
                pn = (size_t)(end - p);
            x->payload = p;
            x->payload_len = pn;
            p += pn;
            if (zf && pn == 0) { /* a pushed frame's payload is one JSON text: never empty */
                x->payload = (const uint8_t *)"0";
                x->payload_len = pn = 1;
            }
            if (zf) {
                put_frame(&raw, x->id, tl ? x->txn : "", tl, x->payload, pn);
            } else {
                record_in r = {.txn = x->txn, .txn_len = x->txn_len, .payload = (const char *)x->payload,
                               .payload_len = pn};
                CHECK(record_encode(&recs, &r) == 0);
            }
        }
        if (c == 0)
            break;
        if (zf) {
            size_t cap = ZSTD_compressBound(raw.len);
            buf_reserve(&z, cap);
            size_t zn = ZSTD_compress(z.data, cap, raw.data, raw.len, 1);
            CHECK(!ZSTD_isError(zn));
            segment_chunk_zframes(&seg, c, producer, producer ? 3 : 0, z.data, zn, (ctl >> 4) & 1);
        } else {
            segment_chunk_records(&seg, c, recs.data, recs.len);
        }
    }
    uint8_t *copy = malloc(seg.len);
    memcpy(copy, seg.data, seg.len);
    for (int pass = 0; pass < 2; pass++) {
        seg_reader s;
        record_view v;
        CHECK(seg_reader_init(&s, copy, seg.len, 1000, (uint32_t)n) == 0);
        size_t i = 0;
        seg_zchunk zc;
        while (i < n) {
            if (pass == 1 && seg_reader_zchunk(&s, &zc) == 1) {
                CHECK(zc.base_offset == 1000 + i && w[i].zf);
                seg_reader_pass(&s, &zc);
                i += zc.count;
                continue;
            }
            CHECK(seg_reader_next(&s, &v) == 1);
            CHECK(v.offset == 1000 + i);
            char txt[64];
            size_t tl = record_txn_text(&v, txt, sizeof txt);
            CHECK(tl == w[i].txn_len && memcmp(txt, w[i].txn, tl) == 0);
            CHECK(v.payload_len == w[i].payload_len);
            if (v.payload_len)
                CHECK(memcmp(v.payload, w[i].payload, v.payload_len) == 0);
            CHECK(!!(v.flags & REC_PRODUCER) == (w[i].zf && producer));
            i++;
        }
        CHECK(seg_reader_next(&s, &v) == 0);
        seg_reader_done(&s);
    }
    buf out;
    buf_init(&out, 0);
    CHECK(segment_to_records(copy, seg.len, (uint32_t)n, &out) == 0);
    seg_reader s;
    record_view v;
    CHECK(seg_reader_init(&s, (const uint8_t *)out.data, out.len, 0, (uint32_t)n) == 0);
    for (size_t i = 0; i < n; i++) {
        CHECK(seg_reader_next(&s, &v) == 1);
        char txt[64];
        size_t tl = record_txn_text(&v, txt, sizeof txt);
        CHECK(tl == w[i].txn_len && memcmp(txt, w[i].txn, tl) == 0);
        CHECK(v.payload_len == w[i].payload_len);
    }
    CHECK(seg_reader_next(&s, &v) == 0);
    buf_free(&out);
    free(copy);
    buf_free(&seg);
    buf_free(&recs);
    buf_free(&raw);
    buf_free(&z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        generate(data + 1, size - 1);
    else
        walk(data + 1, size - 1);
    return 0;
}
