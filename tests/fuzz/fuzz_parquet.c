/* fuzz_parquet — the Thrift compact reader and the Parquet writer.
 *
 * Byte 0 selects the mode.
 *   even: the rest is copied to an exact-size heap block and walked as one Thrift struct with
 *         tc_skip; it must never read out of bounds, recurse without bound, or loop.
 *   odd:  the rest drives rows of the queen_record schema (lengths, nulls, offsets, a small row
 *         group size); the writer must produce a file whose magic, footer length and footer
 *         (walked with tc_skip, ending exactly at the length) are consistent, and writing the
 *         same rows again must give the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "parquet/parquet.h"
#include "parquet/thrift.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_parquet: check failed at line %d: %s\n", __LINE__, #c);                     \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static void write_file(const uint8_t *d, size_t n, buf *out)
{
    enum pq_codec codecs[3] = {PQ_CODEC_NONE, PQ_CODEC_SNAPPY, PQ_CODEC_ZSTD};
    enum pq_codec codec = codecs[n ? d[0] % 3 : 0];
    uint32_t rg = n > 1 ? (uint32_t)(d[1] % 7) + 1 : 1;
    pq_writer *w = pq_writer_new(PQ_QUEEN_RECORD_NAME, PQ_QUEEN_RECORD, 5, codec, 1, rg, out);
    CHECK(w);
    pq_writer_kv(w, "queen.queue", "q");
    size_t i = 2;
    while (i + 3 <= n) {
        uint8_t a = d[i], b = d[i + 1], c = d[i + 2];
        i += 3;
        /* payloads up to 252 bytes, past PQ_STAT_MAX_BYTES, so the compact statistics bounds
         * (cuts on UTF-8 boundaries, increments) run on arbitrary bytes too */
        size_t plen = a % 17, tlen = b % 9, paylen = (size_t)(c % 64) * ((size_t)(a >> 6) + 1);
        if (i + plen + tlen + paylen > n)
            break;
        pq_value v[5];
        memset(v, 0, sizeof v);
        v[0].s = (const char *)d + i;
        v[0].n = plen;
        v[1].i = (int64_t)a * 1000 - (int64_t)b * 7;
        v[2].s = (const char *)d + i + plen;
        v[2].n = tlen;
        v[3].i = (int64_t)c << 40;
        v[4].s = (const char *)d + i + plen + tlen;
        v[4].n = paylen;
        v[4].is_null = (c & 3) == 0;
        i += plen + tlen + paylen;
        CHECK(pq_write_row(w, v) == 0);
    }
    CHECK(pq_writer_finish(w) == 0);
    pq_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if ((data[0] & 1) == 0) {
        size_t n = size - 1;
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, data + 1, n);
        const uint8_t *p = copy;
        if (tc_skip(&p, copy + n, TC_STRUCT, 0) == 0)
            CHECK(p <= copy + n);
        free(copy);
        return 0;
    }
    buf a, b;
    buf_init(&a, 0);
    buf_init(&b, 0);
    write_file(data + 1, size - 1, &a);
    write_file(data + 1, size - 1, &b);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    CHECK(a.len >= 12 && memcmp(a.data, "PAR1", 4) == 0 && memcmp(a.data + a.len - 4, "PAR1", 4) == 0);
    const uint8_t *e = (const uint8_t *)a.data + a.len - 8;
    uint32_t flen = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
    CHECK(flen <= a.len - 12);
    const uint8_t *f = e - flen;
    CHECK(tc_skip(&f, e, TC_STRUCT, 0) == 0 && f == e);
    buf_free(&a);
    buf_free(&b);
    return 0;
}
