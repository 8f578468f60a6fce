/* fuzz_record — the segment record codec.
 *
 * Input layout: byte 0 selects the mode.
 *   even: the rest is [count:u16le][segment bytes...]; seg_reader walks it and must never read
 *         out of bounds (the segment is copied to an exact-size heap block); every record it
 *         accepts is re-encoded and must decode to the same content.
 *   odd:  the rest drives a generator of record_in values which are encoded, sized, decoded
 *         and compared. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/uuid.h"
#include "storage/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_record: check failed at line %d: %s\n", __LINE__, #c);                      \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

#define MAX_RECS 256

typedef struct owned_rec {
    record_in in;
    char txn[128];
    uint8_t trace[16];
} owned_rec;

/* Encodes recs into a segment, checks sizes, decodes, compares. */
static void round_trip(const owned_rec *recs, size_t n, uint64_t base)
{
    buf b;
    buf_init(&b, 0);
    segment_begin(&b);
    for (size_t i = 0; i < n; i++) {
        size_t before = b.len;
        CHECK(record_encode(&b, &recs[i].in) == 0);
        CHECK(b.len - before == record_encoded_size(&recs[i].in));
    }
    /* exact-size copy so ASan sees any over-read */
    uint8_t *seg = malloc(b.len);
    memcpy(seg, b.data, b.len);
    seg_reader s;
    CHECK(seg_reader_init(&s, seg, b.len, base, (uint32_t)n) == 0);
    record_view v;
    for (size_t i = 0; i < n; i++) {
        const record_in *r = &recs[i].in;
        CHECK(seg_reader_next(&s, &v) == 1);
        CHECK(v.offset == base + i);
        char txt[128];
        size_t tl = record_txn_text(&v, txt, sizeof txt);
        CHECK(tl == r->txn_len && (tl == 0 || memcmp(txt, r->txn, tl) == 0));
        CHECK(!!(v.flags & REC_TXN_UUID) == txn_is_lower_uuid(r->txn, r->txn_len));
        CHECK(!!(v.flags & REC_TXN_PRODUCER) == !!r->txn_producer);
        CHECK(!!(v.flags & REC_ENCRYPTED) == !!r->encrypted);
        CHECK(!!v.trace == !!r->trace);
        if (r->trace)
            CHECK(memcmp(v.trace, r->trace, 16) == 0);
        CHECK(!!v.producer == !!r->producer);
        if (r->producer)
            CHECK(v.producer_len == r->producer_len &&
                  (r->producer_len == 0 || memcmp(v.producer, r->producer, r->producer_len) == 0));
        CHECK(v.payload_len == r->payload_len);
        if (r->payload_len)
            CHECK(memcmp(v.payload, r->payload, r->payload_len) == 0);
    }
    CHECK(seg_reader_next(&s, &v) == 0);
    /* one record too many claimed: corrupt, not a crash */
    if (n < UINT32_MAX) {
        CHECK(seg_reader_init(&s, seg, b.len, base, (uint32_t)n + 1) == 0);
        for (size_t i = 0; i < n; i++)
            CHECK(seg_reader_next(&s, &v) == 1);
        CHECK(seg_reader_next(&s, &v) == -1);
    }
    /* every truncation of a non-empty segment is detected */
    if (n > 0) {
        size_t cut = b.len - 1 - (size_t)(base % (b.len - 1));
        uint8_t *t = malloc(cut);
        memcpy(t, seg, cut);
        CHECK(seg_reader_init(&s, t, cut, base, (uint32_t)n) == 0);
        int rc;
        size_t got = 0;
        while ((rc = seg_reader_next(&s, &v)) == 1)
            got++;
        CHECK(rc == -1 && got < n);
        free(t);
    }
    free(seg);
    buf_free(&b);
}

static void walk_arbitrary(const uint8_t *data, size_t size)
{
    if (size < 3)
        return;
    uint32_t count = (uint32_t)data[0] | (uint32_t)data[1] << 8;
    uint64_t base = (uint64_t)data[0] * 0x9e3779b97f4a7c15ULL;
    size_t len = size - 2;
    uint8_t *seg = malloc(len);
    memcpy(seg, data + 2, len);
    seg_reader s;
    /* codec 1 (producer zstd frames) has its own target, fuzz_segz: its views point into what
     * the reader inflated, not into seg */
    if (seg[0] == SEGMENT_CHUNKED) {
        free(seg);
        return;
    }
    if (seg_reader_init(&s, seg, len, base, count) < 0) {
        CHECK(seg[0] != SEGMENT_VERSION);
        free(seg);
        return;
    }
    static owned_rec recs[MAX_RECS];
    size_t n = 0;
    record_view v;
    int rc;
    uint32_t got = 0;
    while ((rc = seg_reader_next(&s, &v)) == 1) {
        CHECK(v.offset == base + got);
        got++;
        CHECK(got <= count);
        CHECK((v.flags & ~REC_KNOWN_FLAGS) == 0);
        const uint8_t *lo = seg, *hi = seg + len;
        CHECK(v.txn >= lo && v.txn + v.txn_len <= hi);
        if (v.flags & REC_TXN_UUID)
            CHECK(v.txn_len == 16);
        if (v.trace)
            CHECK((v.flags & REC_TRACE) && v.trace >= lo && v.trace + 16 <= hi);
        else
            CHECK(!(v.flags & REC_TRACE));
        if (v.producer)
            CHECK((v.flags & REC_PRODUCER) && (const uint8_t *)v.producer >= lo &&
                  (const uint8_t *)v.producer + v.producer_len <= hi);
        else
            CHECK(!(v.flags & REC_PRODUCER));
        CHECK((const uint8_t *)v.payload >= lo && (const uint8_t *)v.payload + v.payload_len <= hi);
        char txt[64];
        size_t tl = record_txn_text(&v, txt, sizeof txt);
        CHECK(tl <= sizeof txt);
        if (v.flags & REC_TXN_UUID)
            CHECK(tl == UUID_STR_LEN && txn_is_lower_uuid(txt, tl));
        /* keep it for the re-encode round trip (text txns longer than our copy are skipped) */
        if (n < MAX_RECS && ((v.flags & REC_TXN_UUID) || v.txn_len <= sizeof recs[n].txn)) {
            owned_rec *o = &recs[n];
            memset(&o->in, 0, sizeof o->in);
            o->in.txn_len = record_txn_text(&v, o->txn, sizeof o->txn);
            o->in.txn = o->txn;
            o->in.txn_producer = !!(v.flags & REC_TXN_PRODUCER);
            o->in.encrypted = !!(v.flags & REC_ENCRYPTED);
            if (v.trace) {
                memcpy(o->trace, v.trace, 16);
                o->in.trace = o->trace;
            }
            o->in.producer = v.producer;
            o->in.producer_len = v.producer_len;
            o->in.payload = v.payload;
            o->in.payload_len = v.payload_len;
            n++;
        }
    }
    if (rc == 0)
        CHECK(got == count && s.p == s.end);
    else
        CHECK(rc == -1);
    /* a second call after the end or an error does not move on */
    if (rc == 0)
        CHECK(seg_reader_next(&s, &v) == 0);
    round_trip(recs, n, base);
    free(seg);
}

/* Takes up to want bytes from the input. */
static const uint8_t *take(const uint8_t **p, const uint8_t *end, size_t want, size_t *got)
{
    size_t avail = (size_t)(end - *p);
    *got = want < avail ? want : avail;
    const uint8_t *r = *p;
    *p += *got;
    return r;
}

static void generate(const uint8_t *data, size_t size)
{
    static owned_rec recs[MAX_RECS];
    const uint8_t *p = data, *end = data + size;
    size_t n = 0;
    uint64_t base = size ? (uint64_t)data[0] << 56 : 0;
    while (p < end && n < MAX_RECS) {
        uint8_t ctl = *p++;
        owned_rec *o = &recs[n];
        memset(&o->in, 0, sizeof o->in);
        size_t got;
        /* txn: a generated UUID (lower or upper case) or raw bytes */
        if ((ctl & 3) == 1 || (ctl & 3) == 2) {
            uuid u;
            const uint8_t *b = take(&p, end, 16, &got);
            memset(u.b, 0, 16);
            memcpy(u.b, b, got);
            uuid_format(&u, o->txn);
            if ((ctl & 3) == 2)
                for (size_t i = 0; i < UUID_STR_LEN; i++)
                    if (o->txn[i] >= 'a' && o->txn[i] <= 'f')
                        o->txn[i] = (char)(o->txn[i] - 32);
            o->in.txn_len = UUID_STR_LEN;
        } else {
            size_t want = p < end ? *p++ % sizeof o->txn : 0;
            const uint8_t *b = take(&p, end, want, &got);
            memcpy(o->txn, b, got);
            o->in.txn_len = got;
        }
        o->in.txn = o->txn;
        if (ctl & 4) {
            const uint8_t *b = take(&p, end, 16, &got);
            memset(o->trace, 0xa5, 16);
            memcpy(o->trace, b, got);
            o->in.trace = o->trace;
        }
        if (ctl & 8) {
            size_t want = p < end ? *p++ : 0;
            o->in.producer = (const char *)take(&p, end, want, &o->in.producer_len);
        }
        o->in.txn_producer = !!(ctl & 16);
        o->in.encrypted = !!(ctl & 32);
        size_t want = p < end ? *p++ : 0;
        if (ctl & 64)
            want *= 64; /* big payloads: multi-byte length varints */
        const uint8_t *pl = take(&p, end, want, &o->in.payload_len);
        o->in.payload = o->in.payload_len || !(ctl & 128) ? (const char *)pl : NULL;
        n++;
    }
    round_trip(recs, n, base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        generate(data + 1, size - 1);
    else
        walk_arbitrary(data + 1, size - 1);
    return 0;
}
