/* fuzz_admin — decoding a dead letter's record copy (admin_record_decode) and the text
 * parsers of the admin routes (status names, server transactionId times).
 *
 * The input is taken as one encoded record. It must never be read out of bounds (it is copied
 * to an exact-size heap block); when it decodes, every field must lie inside the decoder's
 * scratch copy, and re-encoding the view must decode to the same content. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "core/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_admin: check failed at line %d: %s\n", __LINE__, #c);                       \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static int inside(const void *p, size_t n, const buf *b)
{
    const char *c = p;
    return c >= b->data && c + n <= b->data + b->len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);

    /* the text parsers see the same bytes as a NUL-terminated string */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    enum rec_status st;
    if (admin_status_parse(text, &st) == 0)
        CHECK(strcmp(admin_status_name(st), text) == 0);
    int64_t t = admin_uuid_v7_time_us(text, size);
    CHECK(t >= 0 && t % 1000 == 0);
    free(text);

    buf scratch, again, scratch2;
    buf_init(&scratch, 0);
    buf_init(&again, 0);
    buf_init(&scratch2, 0);
    record_view v;
    if (admin_record_decode(copy, size, 42, &scratch, &v) == 0) {
        CHECK(v.offset == 42);
        CHECK(inside(v.txn, v.txn_len, &scratch));
        CHECK(inside(v.payload, v.payload_len, &scratch));
        if (v.producer)
            CHECK(inside(v.producer, v.producer_len, &scratch));
        if (v.trace)
            CHECK(inside(v.trace, 16, &scratch));
        /* re-encode what was read; it decodes to the same thing */
        char txn[512];
        record_in r;
        memset(&r, 0, sizeof r);
        r.txn_len = record_txn_text(&v, txn, sizeof txn);
        if (r.txn_len == v.txn_len || (v.flags & REC_TXN_UUID)) {
            r.txn = txn;
            r.txn_producer = !!(v.flags & REC_TXN_PRODUCER);
            r.encrypted = !!(v.flags & REC_ENCRYPTED);
            r.trace = v.trace;
            r.producer = v.producer;
            r.producer_len = v.producer_len;
            r.payload = v.payload;
            r.payload_len = v.payload_len;
            CHECK(record_encode(&again, &r) == 0);
            record_view w;
            CHECK(admin_record_decode((const uint8_t *)again.data, again.len, 42, &scratch2, &w) == 0);
            char txn2[512];
            size_t tl2 = record_txn_text(&w, txn2, sizeof txn2);
            CHECK(tl2 == r.txn_len && memcmp(txn, txn2, tl2) == 0);
            CHECK(w.payload_len == v.payload_len && memcmp(w.payload, v.payload, v.payload_len) == 0);
            CHECK(w.producer_len == v.producer_len);
            CHECK(!!w.trace == !!v.trace);
            buf json;
            buf_init(&json, 0);
            admin_payload_json(&json, &w);
            CHECK(json.len > 0);
            buf_free(&json);
        }
    }
    buf_free(&scratch);
    buf_free(&again);
    buf_free(&scratch2);
    free(copy);
    return 0;
}
