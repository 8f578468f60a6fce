/* fuzz_s3xml — the S3 client's XML reader (src/s3/s3xml.c) and its key encoding.
 *
 * Byte 0 selects the mode.
 *   even: the rest, copied to an exact-size heap block, is read as an S3 answer with every
 *         call the client makes (root, Error/Code, Error/Message, UploadId, ETag). The calls
 *         must agree: one walk decides well-formedness, so either all of them say malformed
 *         or none does, and s3xml_error says "error" exactly when the root is Error. Text
 *         found is escaped again (as the Complete body escapes ETags) and must read back the
 *         same bytes.
 *   odd:  the rest is a key: s3_encode_path's output uses only A-Za-z0-9-._~/ and %XX with
 *         uppercase hex, and decodes back to the key. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "s3/s3.h"
#include "s3/s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_s3xml: check failed at line %d: %s\n", __LINE__, #c);                       \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static const char *PATHS[] = {"Error/Code", "Error/Message", "InitiateMultipartUploadResult/UploadId",
                              "CompleteMultipartUploadResult/ETag", "a/b"};

static void escape(buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': buf_puts(out, "&amp;"); break;
        case '<': buf_puts(out, "&lt;"); break;
        case '>': buf_puts(out, "&gt;"); break;
        default: buf_putc(out, s[i]);
        }
    }
}

static void xml_mode(const char *x, size_t n)
{
    buf root;
    buf_init(&root, 0);
    int r = s3xml_root(x, n, &root);
    CHECK(r >= -1 && r <= 1);
    for (size_t i = 0; i < sizeof PATHS / sizeof PATHS[0]; i++) {
        buf t;
        buf_init(&t, 0);
        int f = s3xml_text(x, n, PATHS[i], &t);
        CHECK(f >= -1 && f <= 1);
        CHECK((f == -1) == (r == -1));
        if (f == 0)
            CHECK(t.len == 0);
        if (f == 1) {
            /* round trip through the escaping the client writes */
            buf doc, back;
            buf_init(&doc, 0);
            buf_init(&back, 0);
            buf_puts(&doc, "<a><b>");
            escape(&doc, t.data ? t.data : "", t.len);
            buf_puts(&doc, "</b></a>");
            CHECK(s3xml_text(doc.data, doc.len, "a/b", &back) == 1);
            CHECK(back.len == t.len && (t.len == 0 || memcmp(back.data, t.data, t.len) == 0));
            buf_free(&doc);
            buf_free(&back);
        }
        buf_free(&t);
    }
    char code[128], msg[384];
    int e = s3xml_error(x, n, code, sizeof code, msg, sizeof msg);
    CHECK(e >= -1 && e <= 1);
    CHECK((e == -1) == (r == -1));
    CHECK((e == 1) == (r == 1 && root.len == 5 && memcmp(root.data, "Error", 5) == 0));
    CHECK(strlen(code) < sizeof code && strlen(msg) < sizeof msg);
    buf_free(&root);
}

static int hexv(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void key_mode(const char *k, size_t n)
{
    buf e;
    buf_init(&e, 0);
    s3_encode_path(&e, k, n);
    buf d;
    buf_init(&d, 0);
    for (size_t i = 0; i < e.len; i++) {
        unsigned char c = (unsigned char)e.data[i];
        if (c == '%') {
            CHECK(i + 2 < e.len);
            int h = hexv(e.data[i + 1]), l = hexv(e.data[i + 2]);
            CHECK(h >= 0 && l >= 0);
            buf_putc(&d, (char)(h * 16 + l));
            i += 2;
        } else {
            CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                  c == '.' || c == '_' || c == '~' || c == '/');
            buf_putc(&d, (char)c);
        }
    }
    CHECK(d.len == n && (n == 0 || memcmp(d.data, k, n) == 0));
    buf_free(&e);
    buf_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    char *copy = malloc(n ? n : 1);
    memcpy(copy, data + 1, n);
    if ((data[0] & 1) == 0)
        xml_mode(copy, n);
    else
        key_mode(copy, n);
    free(copy);
    return 0;
}
