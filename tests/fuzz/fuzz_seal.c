/* fuzz_seal — opening envelopes and parsing QUEEN_ENCRYPTION_KEY (crypto/seal.h), and what
 * readers make of a sealed record (storage/payload.h).
 *
 * Input layout: byte 0 selects the mode.
 *   0 mod 3: the rest is an envelope; seal_open with the fixed key, another key and no key must
 *            never read out of bounds (an exact-size heap copy) and, on failure, must leave the
 *            output as it was. A record flagged sealed with those bytes as its payload gives
 *            either the plaintext or null with a payloadError in JSON.
 *   1 mod 3: the rest is a plaintext; sealed under the fixed key it opens to the same bytes,
 *            does not open under another key or none, and any single flipped byte (chosen by
 *            the first plaintext byte) fails it.
 *   2 mod 3: the rest is the text of QUEEN_ENCRYPTION_KEY; seal_key_parse never crashes, a key
 *            it accepts has the fingerprint the key implies and parses the same from its hex,
 *            and a refusal is one sentence giving the length, never the text. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "crypto/seal.h"
#include "storage/payload.h"
#include "storage/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_seal: check failed at line %d: %s\n", __LINE__, #c);                        \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static seal_key g_k1, g_k2;
static int g_init;

static void init(void)
{
    if (g_init)
        return;
    qerr_detail err;
    CHECK(seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &g_k1, &err) == QERR_OK);
    CHECK(seal_key_parse("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100", &g_k2, &err) == QERR_OK);
    g_init = 1;
}

static void open_envelope(const uint8_t *in, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, in, n);
    const seal_key *keys[3] = {&g_k1, &g_k2, NULL};
    for (int i = 0; i < 3; i++) {
        buf out;
        buf_init(&out, 0);
        buf_puts(&out, "x");
        enum seal_result r = seal_open(keys[i], copy, n, &out);
        if (r == SEAL_OK) {
            CHECK(keys[i] != NULL);
            CHECK(n >= SEAL_OVERHEAD && out.len == 1 + n - SEAL_OVERHEAD);
        } else {
            CHECK(r == SEAL_NO_KEY || r == SEAL_WRONG_KEY || r == SEAL_CORRUPT);
            CHECK(out.len == 1);
            if (!keys[i])
                CHECK(r != SEAL_WRONG_KEY);
            char msg[200];
            size_t ml = seal_describe(keys[i], copy, n, r, msg, sizeof msg);
            CHECK(ml > 0 && ml == strlen(msg));
        }
        buf_free(&out);
    }
    /* as the payload of a sealed record, read by a node holding k1 */
    record_view v;
    memset(&v, 0, sizeof v);
    v.flags = REC_ENCRYPTED;
    v.payload = (const char *)copy;
    v.payload_len = n;
    seal_set_node_key(&g_k1);
    buf tmp, json;
    buf_init(&tmp, 0);
    buf_init(&json, 0);
    const char *p;
    size_t pl;
    enum seal_result why;
    int rc = record_payload_open(&v, &tmp, &p, &pl, &why);
    int jr = record_payload_json(&json, &v);
    if (n == 0) {
        CHECK(rc == 0 && pl == 0 && jr == 0 && strcmp(buf_cstr(&json), "null") == 0);
    } else if (rc == 0) {
        CHECK(jr == 0 && why == SEAL_OK);
    } else {
        CHECK(jr == -1 && why != SEAL_OK && p == v.payload && pl == n);
        CHECK(strncmp(buf_cstr(&json), "null,\"payloadError\":\"", 21) == 0);
    }
    seal_set_node_key(NULL);
    buf_free(&tmp);
    buf_free(&json);
    free(copy);
}

static void round_trip(const uint8_t *in, size_t n)
{
    buf s, o;
    buf_init(&s, 0);
    buf_init(&o, 0);
    CHECK(seal_seal(&g_k1, in, n, &s) == 0);
    CHECK(s.len == n + SEAL_OVERHEAD);
    CHECK(seal_open(&g_k1, s.data, s.len, &o) == SEAL_OK);
    CHECK(o.len == n && (n == 0 || memcmp(o.data, in, n) == 0));
    buf_reset(&o);
    CHECK(seal_open(&g_k2, s.data, s.len, &o) == SEAL_WRONG_KEY && o.len == 0);
    CHECK(seal_open(NULL, s.data, s.len, &o) == SEAL_NO_KEY && o.len == 0);
    size_t at = n ? in[0] % s.len : 0;
    s.data[at] ^= (char)(1u << (n > 1 ? in[1] % 8 : 0));
    enum seal_result r = seal_open(&g_k1, s.data, s.len, &o);
    CHECK(r == (at >= 1 && at < 5 ? SEAL_WRONG_KEY : SEAL_CORRUPT) && o.len == 0);
    buf_free(&s);
    buf_free(&o);
}

static void parse_key(const uint8_t *in, size_t n)
{
    char *text = malloc(n + 1);
    memcpy(text, in, n);
    text[n] = '\0'; /* getenv gives a C string: an embedded NUL ends it */
    seal_key k;
    qerr_detail err;
    memset(&err, 0, sizeof err);
    if (seal_key_parse(text, &k, &err) == QERR_OK) {
        char hex[65];
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", k.key[i]);
        seal_key again;
        CHECK(seal_key_parse(hex, &again, &err) == QERR_OK);
        CHECK(memcmp(again.key, k.key, 32) == 0 && memcmp(again.fingerprint, k.fingerprint, 4) == 0);
    } else {
        /* the length of the text without surrounding blanks, and nothing of the text itself */
        size_t len = strlen(text), b = 0;
        while (b < len && (text[b] == ' ' || text[b] == '\t' || text[b] == '\n' || text[b] == '\r'))
            b++;
        while (len > b && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\n' ||
                           text[len - 1] == '\r'))
            len--;
        char want[100];
        snprintf(want, sizeof want, "is not 64 hex digits or the base64 of 32 bytes: it has %zu characters", len - b);
        CHECK(strncmp(err.text, want, strlen(want)) == 0);
        const char *rest = err.text + strlen(want);
        CHECK(strcmp(rest, ", and not all of them are hex digits") == 0 ||
              strcmp(rest, ", not all of them hex digits or base64") == 0 ||
              strcmp(rest, ", which is not well-formed base64") == 0 ||
              strncmp(rest, " and decodes as base64 to ", 26) == 0);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        open_envelope(data + 1, size - 1);
        break;
    case 1:
        round_trip(data + 1, size - 1);
        break;
    default:
        parse_key(data + 1, size - 1);
        break;
    }
    return 0;
}
