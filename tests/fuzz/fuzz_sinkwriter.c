/* fuzz_sinkwriter — the object writer and its decompressors (sink/writer.h) on arbitrary input.
 *
 * The input is read three ways:
 *  - as compressed bytes: s3_decompress (zstd, gzip) under a 1 MiB ceiling must refuse or
 *    return at most that much, never crash (this is how a checkpoint is read back);
 *  - as plain bytes: s3_compress then s3_decompress gives them back, and compressing twice
 *    gives the same bytes;
 *  - as a record: "<partition>\x1f<payload>" with a valid UTF-8 partition and a payload that is
 *    valid JSON: its JSONL line is one JSON object ending in '\n', with no other line break,
 *    whose payload is the stored text with raw line breaks as spaces, and whose size the zstd
 *    object announces exactly; the Parquet objects build. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "json/json.h"
#include "sink/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_sinkwriter: check failed at line %d: %s\n", __LINE__, #c);                 \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static void decompressors(const uint8_t *data, size_t size)
{
    enum s3_compression cs[] = {S3_COMP_ZSTD, S3_COMP_GZIP};
    for (int i = 0; i < 2; i++) {
        buf out;
        buf_init(&out, 1u << 20);
        int rc = s3_decompress(cs[i], data, size, &out);
        CHECK(rc == 0 || rc == -1);
        CHECK(out.len <= (1u << 20));
        buf_free(&out);
    }
}

static void round_trip(const uint8_t *data, size_t size)
{
    enum s3_compression cs[] = {S3_COMP_ZSTD, S3_COMP_GZIP, S3_COMP_NONE};
    for (int i = 0; i < 3; i++) {
        buf a, b, back;
        buf_init(&a, 0);
        buf_init(&b, 0);
        buf_init(&back, 0);
        CHECK(s3_compress(cs[i], data, size, &a) == 0);
        CHECK(s3_compress(cs[i], data, size, &b) == 0);
        CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        CHECK(s3_decompress(cs[i], a.data, a.len, &back) == 0);
        CHECK(back.len == size && (size == 0 || memcmp(back.data, data, size) == 0));
        buf_free(&a);
        buf_free(&b);
        buf_free(&back);
    }
}

static int valid_json(const char *p, size_t n)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    int ok = json_parse(&d, p, n, NULL) == 0;
    json_doc_free(&d);
    return ok;
}

static void record(const uint8_t *data, size_t size)
{
    const uint8_t *sep = memchr(data, 0x1f, size);
    if (!sep)
        return;
    const char *part = (const char *)data, *pay = (const char *)sep + 1;
    size_t plen = (size_t)(sep - data), paylen = size - plen - 1;
    if (utf8_valid((const uint8_t *)part, plen) < 0 || (paylen && !valid_json(pay, paylen)))
        return;
    /* a stored payload is the span of a JSON value: no whitespace around it */
    static const char ws[] = " \t\r\n";
    if (paylen && (memchr(ws, pay[0], 4) || memchr(ws, pay[paylen - 1], 4)))
        return;
    s3_record r;
    memset(&r, 0, sizeof r);
    r.partition = part;
    r.partition_len = plen;
    r.offset = (int64_t)size * 7919;
    r.txn = part;
    r.txn_len = plen;
    r.ts = (int64_t)size * 1000003 - 5000000;
    r.payload = pay;
    r.payload_len = paylen;
    for (int kind = 0; kind < 2; kind++) {
        r.payload_kind = kind ? S3_PAYLOAD_SEALED : S3_PAYLOAD_JSON;
        buf line;
        buf_init(&line, 0);
        CHECK(s3_jsonl_line(&line, &r) == 0);
        CHECK(line.len > 0 && line.data[line.len - 1] == '\n');
        CHECK(memchr(line.data, '\n', line.len - 1) == NULL && memchr(line.data, '\r', line.len) == NULL);
        json_doc d;
        memset(&d, 0, sizeof d);
        CHECK(json_parse(&d, line.data, line.len - 1, NULL) == 0);
        CHECK(json_type_of(&d, 0) == JSON_OBJECT && d.toks[0].count == 5);
        int tp = json_get(&d, 0, "payload");
        CHECK(tp >= 0);
        size_t n;
        const char *raw = json_raw(&d, tp, &n);
        if (kind == 0 && paylen == 0) {
            CHECK(json_type_of(&d, tp) == JSON_NULL);
        } else if (kind == 0) {
            CHECK(n == paylen);
            for (size_t i = 0; i < n; i++)
                CHECK(raw[i] == ((pay[i] == '\n' || pay[i] == '\r') ? ' ' : pay[i]));
        } else {
            CHECK(json_type_of(&d, tp) == JSON_STRING && n == 2 + (paylen + 2) / 3 * 4);
        }
        buf dp;
        buf_init(&dp, 0);
        CHECK(json_str_decode(&d, json_get(&d, 0, "partition"), &dp) == 0);
        CHECK(dp.len == plen && (plen == 0 || memcmp(dp.data, part, plen) == 0));
        buf_free(&dp);
        json_doc_free(&d);
        /* the zstd object's announced size is the line's */
        buf o, back;
        buf_init(&o, 0);
        buf_init(&back, 0);
        char err[128];
        CHECK(s3_object_build(S3_FORMAT_JSONL, S3_COMP_ZSTD, &r, 1, "q", 1, "t", &o, err, sizeof err) == 0);
        CHECK(s3_decompress(S3_COMP_ZSTD, o.data, o.len, &back) == 0);
        CHECK(back.len == line.len && memcmp(back.data, line.data, line.len) == 0);
        buf_reset(&o);
        CHECK(s3_object_build(S3_FORMAT_PARQUET, kind ? S3_COMP_SNAPPY : S3_COMP_ZSTD, &r, 1, "q", 1, "t", &o, err,
                              sizeof err) == 0);
        CHECK(o.len > 8 && memcmp(o.data, "PAR1", 4) == 0);
        buf_free(&o);
        buf_free(&back);
        buf_free(&line);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decompressors(data, size);
    round_trip(data, size);
    record(data, size);
    return 0;
}
