/* writer.c — a window's object bytes: JSONL lines, their zstd/gzip compression, and the
 * Parquet file (see writer.h). Deterministic by construction: fixed levels, one thread,
 * a gzip header with no time and OS 255, and a zstd frame whose header carries the content
 * size (so a reader can size its buffer) and whose end carries a checksum.
 *
 * A JSONL object's exact size is computed first (zstd is told it before the first byte, which
 * is what puts the size in the frame header), then its lines are streamed through the
 * compressor in slices, so a window never needs its uncompressed text in memory at once. */
#include "writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "core/base64.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "json/json.h"
#include "parquet/parquet.h"

#define S3_ZSTD_LEVEL 3
#define S3_GZIP_LEVEL 6
/* Slice fed to the compressor at a time: large enough to amortise the calls, small beside a
 * window. */
#define S3_FEED_BYTES (256u << 10)

/* ---- sorting ---------------------------------------------------------------------------- */

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

static int cmp_record(const void *pa, const void *pb)
{
    const s3_record *a = pa, *b = pb;
    int c = cmp_bytes(a->partition, a->partition_len, b->partition, b->partition_len);
    if (c)
        return c;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    /* (partition, offset) is unique in a log; the rest only makes the order total */
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    c = cmp_bytes(a->txn, a->txn_len, b->txn, b->txn_len);
    if (c)
        return c;
    return cmp_bytes(a->payload, a->payload_len, b->payload, b->payload_len);
}

void s3_records_sort(s3_record *recs, size_t n)
{
    if (n > 1)
        qsort(recs, n, sizeof *recs, cmp_record);
}

/* ---- JSONL ------------------------------------------------------------------------------ */

/* A sealed payload as JSON text: a string holding the base64 of the stored bytes. */
static void put_sealed(buf *out, const s3_record *r)
{
    buf_putc(out, '"');
    b64_encode(out, r->payload, r->payload_len);
    buf_putc(out, '"');
}

/* The ISO text of a stamp. The date and time of day are formatted once per second and kept
 * per thread (records of one window share a few seconds), the six fractional digits each time:
 * snprintf per record was a fifth of the time of a JSONL object. */
static void put_ts(buf *out, int64_t ts)
{
    static _Thread_local int64_t sec = INT64_MIN;
    static _Thread_local char head[32]; /* "YYYY-MM-DDTHH:MM:SS." */
    int64_t s = ts / 1000000, f = ts % 1000000;
    if (f < 0) {
        f += 1000000;
        s--;
    }
    if (s != sec) {
        format_iso_us(s * 1000000, head);
        head[20] = '\0';
        sec = s;
    }
    char frac[8];
    for (int i = 5; i >= 0; i--) {
        frac[i] = (char)('0' + f % 10);
        f /= 10;
    }
    frac[6] = 'Z';
    buf_append(out, head, 20);
    buf_append(out, frac, 7);
}

/* A JSON payload with raw line breaks as spaces; memchr finds them (most payloads have none). */
static void put_payload_text(buf *out, const char *p, size_t n)
{
    while (n) {
        const char *a = memchr(p, '\n', n), *b = memchr(p, '\r', n);
        const char *hit = !a ? b : !b ? a : a < b ? a : b;
        if (!hit) {
            buf_append(out, p, n);
            return;
        }
        buf_append(out, p, (size_t)(hit - p));
        buf_putc(out, ' ');
        n -= (size_t)(hit - p) + 1;
        p = hit + 1;
    }
}

int s3_jsonl_line(buf *out, const s3_record *r)
{
    buf_append(out, STRLIT("{\"partition\":"));
    jw_string(out, r->partition, r->partition_len);
    buf_append(out, STRLIT(",\"offset\":"));
    buf_put_i64(out, r->offset);
    buf_append(out, STRLIT(",\"transactionId\":"));
    jw_string(out, r->txn, r->txn_len);
    buf_append(out, STRLIT(",\"ts\":\""));
    put_ts(out, r->ts);
    buf_append(out, STRLIT("\",\"payload\":"));
    if (r->payload_kind == S3_PAYLOAD_SEALED) {
        put_sealed(out, r);
    } else if (r->payload_len == 0) {
        buf_append(out, STRLIT("null"));
    } else {
        /* raw line breaks only occur between JSON tokens (a string cannot hold one), so a
         * space in their place keeps the text valid and its meaning unchanged */
        put_payload_text(out, r->payload, r->payload_len);
    }
    buf_append(out, STRLIT("}\n"));
    return out->overflow ? -1 : 0;
}

/* The length of the string jw_string writes for s (kept in step with json.c: a mismatch makes
 * zstd refuse the object, which the unit tests would see). */
static size_t json_string_len(const char *s, size_t n)
{
    size_t len = 2;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            len += 1;
        else if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f')
            len += 2;
        else
            len += 6;
    }
    return len;
}

static size_t digits_i64(int64_t v)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    size_t n = v < 0 ? 2 : 1;
    while (u >= 10) {
        u /= 10;
        n++;
    }
    return n;
}

/* The exact length of s3_jsonl_line's output, without writing it. */
static uint64_t jsonl_line_len(const s3_record *r)
{
    uint64_t n = sizeof("{\"partition\":,\"offset\":,\"transactionId\":,\"ts\":\"\",\"payload\":}\n") - 1;
    n += json_string_len(r->partition, r->partition_len) + digits_i64(r->offset) +
         json_string_len(r->txn, r->txn_len) + 27;
    if (r->payload_kind == S3_PAYLOAD_SEALED)
        n += 2 + (r->payload_len + 2) / 3 * 4;
    else if (r->payload_len == 0)
        n += 4;
    else
        n += r->payload_len; /* a line break becomes one space: the length stays */
    return n;
}

/* ---- compression ------------------------------------------------------------------------ */

typedef struct comp {
    enum s3_compression c;
    ZSTD_CCtx *z;
    z_stream gz;
    gz_header gzh; /* read by deflate when it writes the header: lives as long as the stream */
    int gz_open;
    buf *out;
} comp;

static int comp_begin(comp *s, enum s3_compression c, uint64_t total, buf *out)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    s->out = out;
    switch (c) {
    case S3_COMP_NONE: return 0;
    case S3_COMP_ZSTD:
        s->z = ZSTD_createCCtx();
        if (!s->z)
            return -1;
        if (ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, S3_ZSTD_LEVEL)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_contentSizeFlag, 1)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_checksumFlag, 1)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_nbWorkers, 0)) ||
            ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(s->z, total)))
            return -1;
        return 0;
    case S3_COMP_GZIP:
        /* windowBits 15 + 16: a gzip member; the header says nothing about this machine or now */
        if (deflateInit2(&s->gz, S3_GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return -1;
        s->gz_open = 1;
        s->gzh.time = 0;
        s->gzh.os = 255;
        if (deflateSetHeader(&s->gz, &s->gzh) != Z_OK)
            return -1;
        return 0;
    case S3_COMP_SNAPPY: break;
    }
    return -1;
}

/* Reserves up to want bytes of output room without passing out's ceiling; returns the room
 * (0: out is at its ceiling, and any further output byte overflows it). */
static size_t room_upto(buf *out, size_t want)
{
    if (out->overflow)
        return 0;
    if (want > out->max - out->len)
        want = out->max - out->len;
    if (want && buf_reserve(out, want) < 0)
        return 0;
    return want;
}

static int zstd_run(comp *s, const void *p, size_t n, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer in = {p, n, 0};
    for (;;) {
        size_t room = room_upto(s->out, ZSTD_CStreamOutSize());
        if (room == 0) {
            s->out->overflow = 1;
            return -1;
        }
        ZSTD_outBuffer o = {s->out->data + s->out->len, room, 0};
        size_t left = ZSTD_compressStream2(s->z, &o, &in, mode);
        if (ZSTD_isError(left))
            return -1;
        s->out->len += o.pos;
        if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return 0;
    }
}

static int gzip_run(comp *s, const void *p, size_t n, int flush)
{
    const uint8_t *src = p;
    for (;;) {
        size_t piece = n > (1u << 30) ? (1u << 30) : n;
        s->gz.next_in = (Bytef *)(uintptr_t)src;
        s->gz.avail_in = (uInt)piece;
        int f = flush && piece == n ? Z_FINISH : Z_NO_FLUSH;
        for (;;) {
            size_t want = deflateBound(&s->gz, s->gz.avail_in) + 64;
            size_t room = room_upto(s->out, want > (1u << 30) ? (1u << 30) : want);
            if (room == 0) {
                s->out->overflow = 1;
                return -1;
            }
            s->gz.next_out = (Bytef *)(s->out->data + s->out->len);
            s->gz.avail_out = (uInt)room;
            int rc = deflate(&s->gz, f);
            s->out->len += room - s->gz.avail_out;
            if (rc == Z_STREAM_END)
                return 0;
            if (rc != Z_OK && rc != Z_BUF_ERROR)
                return -1;
            if (f == Z_NO_FLUSH && s->gz.avail_in == 0)
                break;
        }
        src += piece;
        n -= piece;
        if (n == 0 && !flush)
            return 0;
    }
}

static int comp_feed(comp *s, const void *p, size_t n)
{
    switch (s->c) {
    case S3_COMP_NONE: return buf_append(s->out, p, n);
    case S3_COMP_ZSTD: return n ? zstd_run(s, p, n, ZSTD_e_continue) : 0;
    case S3_COMP_GZIP: return n ? gzip_run(s, p, n, 0) : 0;
    case S3_COMP_SNAPPY: break;
    }
    return -1;
}

static int comp_end(comp *s)
{
    switch (s->c) {
    case S3_COMP_NONE: return s->out->overflow ? -1 : 0;
    case S3_COMP_ZSTD: return zstd_run(s, NULL, 0, ZSTD_e_end);
    case S3_COMP_GZIP: return gzip_run(s, NULL, 0, 1);
    case S3_COMP_SNAPPY: break;
    }
    return -1;
}

static void comp_free(comp *s)
{
    if (s->z)
        ZSTD_freeCCtx(s->z);
    if (s->gz_open)
        deflateEnd(&s->gz);
    s->z = NULL;
    s->gz_open = 0;
}

int s3_compress(enum s3_compression c, const void *in, size_t n, buf *out)
{
    comp s;
    size_t mark = out->len;
    int rc = -1;
    if (comp_begin(&s, c, n, out) == 0 && comp_feed(&s, in, n) == 0 && comp_end(&s) == 0 && !out->overflow)
        rc = 0;
    comp_free(&s);
    if (rc < 0 && !out->overflow)
        out->len = mark;
    return rc;
}

/* Output room for a decompressor: at out's ceiling, a one-byte scratch that must stay empty
 * (a byte landing there is a byte past the ceiling). */
typedef struct dstroom {
    uint8_t scratch[1];
    int at_ceiling;
} dstroom;

static uint8_t *dst_room(buf *out, dstroom *d, size_t *room)
{
    *room = room_upto(out, 1u << 16);
    d->at_ceiling = *room == 0;
    if (d->at_ceiling) {
        *room = 1;
        return d->scratch;
    }
    return (uint8_t *)out->data + out->len;
}

/* Counts n produced bytes; -1 when they went past the ceiling. */
static int dst_took(buf *out, dstroom *d, size_t n)
{
    if (d->at_ceiling && n) {
        out->overflow = 1;
        return -1;
    }
    if (!d->at_ceiling)
        out->len += n;
    return 0;
}

static int zstd_decompress(const void *in, size_t n, buf *out)
{
    ZSTD_DCtx *z = ZSTD_createDCtx();
    if (!z)
        return -1;
    ZSTD_inBuffer src = {in, n, 0};
    int rc = -1;
    size_t last = 1;
    dstroom d;
    /* until the input is used up and the last frame is complete and flushed */
    while (src.pos < src.size || last != 0) {
        size_t room;
        uint8_t *p = dst_room(out, &d, &room);
        ZSTD_outBuffer o = {p, room, 0};
        size_t before = src.pos;
        last = ZSTD_decompressStream(z, &o, &src);
        if (ZSTD_isError(last) || dst_took(out, &d, o.pos) < 0)
            goto out;
        if (o.pos == 0 && src.pos == before && last != 0)
            goto out; /* no progress: truncated */
    }
    rc = n > 0 ? 0 : -1; /* an empty input is not a frame */
out:
    ZSTD_freeDCtx(z);
    return rc;
}

static int gzip_decompress(const void *in, size_t n, buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return -1;
    int rc = -1;
    const uint8_t *src = in;
    size_t left = n;
    dstroom d;
    for (;;) {
        size_t piece = left > (1u << 30) ? (1u << 30) : left;
        z.next_in = (Bytef *)(uintptr_t)src;
        z.avail_in = (uInt)piece;
        size_t room;
        z.next_out = dst_room(out, &d, &room);
        z.avail_out = (uInt)room;
        int r = inflate(&z, Z_NO_FLUSH);
        if (dst_took(out, &d, room - z.avail_out) < 0)
            goto out;
        size_t used = piece - z.avail_in;
        src += used;
        left -= used;
        if (r == Z_STREAM_END) {
            rc = left == 0 ? 0 : -1; /* bytes after the member are not ours */
            goto out;
        }
        if (r == Z_BUF_ERROR && z.avail_out != 0)
            goto out; /* no input left to finish the member: truncated */
        if (r != Z_OK && r != Z_BUF_ERROR)
            goto out;
    }
out:
    inflateEnd(&z);
    return rc;
}

int s3_decompress(enum s3_compression c, const void *in, size_t n, buf *out)
{
    size_t mark = out->len;
    int rc = -1;
    switch (c) {
    case S3_COMP_NONE: rc = buf_append(out, in, n); break;
    case S3_COMP_ZSTD: rc = zstd_decompress(in, n, out); break;
    case S3_COMP_GZIP: rc = gzip_decompress(in, n, out); break;
    case S3_COMP_SNAPPY: rc = -1; break;
    }
    if (out->overflow)
        rc = -1;
    else if (rc < 0)
        out->len = mark;
    return rc;
}

/* ---- whole objects ---------------------------------------------------------------------- */

static int jsonl_object(enum s3_compression c, const s3_record *recs, size_t n, buf *out, char *err, size_t errlen)
{
    buf slice;
    buf_init(&slice, 0);
    comp s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    uint64_t total = 0;
    if (c != S3_COMP_NONE) /* the size first: zstd writes it into the frame header */
        for (size_t i = 0; i < n; i++)
            total += jsonl_line_len(&recs[i]);
    if (comp_begin(&s, c, total, out) < 0) {
        snprintf(err, errlen, "cannot start the %s compressor", s3_compression_name(c));
        goto out;
    }
    buf *dst = c == S3_COMP_NONE ? out : &slice;
    for (size_t i = 0; i < n; i++) {
        if (s3_jsonl_line(dst, &recs[i]) < 0) {
            snprintf(err, errlen, "the object passed its size limit");
            goto out;
        }
        if (dst == &slice && (slice.len >= S3_FEED_BYTES || i + 1 == n)) {
            if (comp_feed(&s, slice.data, slice.len) < 0)
                goto fail;
            buf_reset(&slice);
        }
    }
    if (comp_end(&s) < 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    snprintf(err, errlen, out->overflow ? "the object passed its size limit" : "the %s compressor failed",
             s3_compression_name(c));
out:
    comp_free(&s);
    buf_free(&slice);
    return rc;
}

static int parquet_object(enum s3_compression c, const s3_record *recs, size_t n, const char *queue, size_t qlen,
                          const char *tenant, buf *out, char *err, size_t errlen)
{
    enum pq_codec codec = c == S3_COMP_SNAPPY ? PQ_CODEC_SNAPPY : PQ_CODEC_ZSTD;
    pq_writer *w = pq_writer_new(PQ_QUEEN_RECORD_NAME, PQ_QUEEN_RECORD, 5, codec, S3_ZSTD_LEVEL,
                                 PQ_QUEEN_ROW_GROUP_ROWS, out);
    if (!w) {
        snprintf(err, errlen, "cannot start the Parquet writer");
        return -1;
    }
    char *q = xstrndup(queue, qlen);
    pq_writer_kv(w, "queen.queue", q);
    pq_writer_kv(w, "queen.tenant", tenant);
    free(q);
    buf sealed;
    buf_init(&sealed, 0);
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        const s3_record *r = &recs[i];
        pq_value v[5];
        memset(v, 0, sizeof v);
        v[0].s = r->partition;
        v[0].n = r->partition_len;
        v[1].i = r->offset;
        v[2].s = r->txn;
        v[2].n = r->txn_len;
        v[3].i = r->ts;
        if (r->payload_kind == S3_PAYLOAD_SEALED) {
            buf_reset(&sealed);
            put_sealed(&sealed, r);
            v[4].s = sealed.data;
            v[4].n = sealed.len;
        } else if (r->payload_len == 0) {
            v[4].is_null = 1;
        } else {
            v[4].s = r->payload; /* the stored text, byte for byte: no line to keep */
            v[4].n = r->payload_len;
        }
        if (!v[0].s)
            v[0].s = "";
        if (!v[2].s)
            v[2].s = "";
        if (pq_write_row(w, v) < 0)
            goto fail;
    }
    if (pq_writer_finish(w) < 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    snprintf(err, errlen, out->overflow ? "the object passed its size limit" : "the Parquet writer failed");
out:
    buf_free(&sealed);
    pq_writer_free(w);
    return rc;
}

int s3_object_build(enum s3_format f, enum s3_compression c, const s3_record *recs, size_t n, const char *queue,
                    size_t qlen, const char *tenant, buf *out, char *err, size_t errlen)
{
    if (f == S3_FORMAT_PARQUET) {
        if (c != S3_COMP_ZSTD && c != S3_COMP_SNAPPY) {
            snprintf(err, errlen, "a Parquet object is zstd or snappy, not %s", s3_compression_name(c));
            return -1;
        }
        return parquet_object(c, recs, n, queue, qlen, tenant, out, err, errlen);
    }
    if (c == S3_COMP_SNAPPY) {
        snprintf(err, errlen, "a JSONL object is zstd, gzip or none, not snappy");
        return -1;
    }
    return jsonl_object(c, recs, n, out, err, errlen);
}

void s3_writer_name(enum s3_format f, enum s3_compression c, buf *out)
{
    buf_printf(out, "queen-s3/%s %s+%s", S3_WRITER_VERSION, s3_format_name(f), s3_compression_name(c));
}
