/* Unit tests for sealing at rest (crypto/seal.h): round trips, the envelope's layout against an
 * independent AES-GCM implementation, every way an open fails, and parsing the key's text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "core/buf.h"
#include "crypto/seal.h"

static const char KEY_HEX[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
/* base64 of the same 32 bytes */
static const char KEY_B64[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
static const char OTHER_HEX[] = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

static seal_key key_of(const char *text)
{
    seal_key k;
    qerr_detail err;
    memset(&err, 0, sizeof err);
    if (seal_key_parse(text, &k, &err) != QERR_OK)
        fail_msg("seal_key_parse(%s): %s", text, err.text);
    return k;
}

static void test_round_trip(void **state)
{
    (void)state;
    seal_key k = key_of(KEY_HEX);
    static const char plain[] = "{\"total\":42.00}";
    buf s, o;
    buf_init(&s, 0);
    buf_init(&o, 0);
    buf_puts(&s, "prefix"); /* seal appends */
    assert_int_equal(seal_seal(&k, plain, sizeof plain - 1, &s), 0);
    assert_int_equal(s.len, 6 + sizeof plain - 1 + SEAL_OVERHEAD);
    const uint8_t *e = (const uint8_t *)s.data + 6;
    assert_int_equal(e[0], SEAL_VERSION);
    assert_memory_equal(e + 1, k.fingerprint, 4);
    /* the plaintext is nowhere in the envelope */
    assert_null(memmem(e, s.len - 6, "42.00", 5));
    assert_null(memmem(e, s.len - 6, "total", 5));
    buf_puts(&o, "x");
    assert_int_equal(seal_open(&k, e, s.len - 6, &o), SEAL_OK);
    assert_int_equal(o.len, 1 + sizeof plain - 1);
    assert_memory_equal(o.data + 1, plain, sizeof plain - 1);

    /* a fresh nonce every time: sealing the same text twice gives two envelopes */
    buf t;
    buf_init(&t, 0);
    assert_int_equal(seal_seal(&k, plain, sizeof plain - 1, &t), 0);
    assert_int_equal(t.len, s.len - 6);
    assert_memory_not_equal(t.data + 5, e + 5, SEAL_NONCE_BYTES);

    /* the empty plaintext seals too (33 bytes of envelope) */
    buf_reset(&t);
    buf_reset(&o);
    assert_int_equal(seal_seal(&k, "", 0, &t), 0);
    assert_int_equal(t.len, SEAL_OVERHEAD);
    assert_int_equal(seal_open(&k, t.data, t.len, &o), SEAL_OK);
    assert_int_equal(o.len, 0);

    /* a large payload */
    size_t big = 1 << 20;
    char *p = malloc(big);
    for (size_t i = 0; i < big; i++)
        p[i] = (char)(i * 7);
    buf_reset(&t);
    buf_reset(&o);
    assert_int_equal(seal_seal(&k, p, big, &t), 0);
    assert_int_equal(seal_open(&k, t.data, t.len, &o), SEAL_OK);
    assert_int_equal(o.len, big);
    assert_memory_equal(o.data, p, big);
    free(p);
    buf_free(&s);
    buf_free(&t);
    buf_free(&o);
}

/* Made with Python's cryptography (AESGCM) for key 00..1f, nonce a0..ab, additional data
 * = the version byte and the fingerprint: the envelope is plain AES-256-GCM. */
static void test_known_answer(void **state)
{
    (void)state;
    static const uint8_t env[] = "\x01\xcb\x7d\x77\x11\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\x9d\x3a\x08"
                                 "\x42\x31\xaa\x6e\x9d\x58\x51\xb5\xfd\x37\x4a\xbd\x97\x36\x2e\x39\x61\xcf\xbb\x07"
                                 "\xb1\xa2\x31\xd8\x20\x13\x24\x13";
    seal_key k = key_of(KEY_HEX);
    char fp[9];
    seal_fingerprint_hex(&k, fp);
    assert_string_equal(fp, "cb7d7711");
    buf o;
    buf_init(&o, 0);
    assert_int_equal(seal_open(&k, env, sizeof env - 1, &o), SEAL_OK);
    assert_int_equal(o.len, 15);
    assert_memory_equal(o.data, "{\"total\":42.00}", 15);
    buf_free(&o);
}

static void test_wrong_key_no_key(void **state)
{
    (void)state;
    seal_key k = key_of(KEY_HEX), other = key_of(OTHER_HEX);
    assert_memory_not_equal(k.fingerprint, other.fingerprint, 4);
    buf s, o;
    buf_init(&s, 0);
    buf_init(&o, 0);
    assert_int_equal(seal_seal(&k, "{\"a\":1}", 7, &s), 0);
    assert_int_equal(seal_open(&other, s.data, s.len, &o), SEAL_WRONG_KEY);
    assert_int_equal(o.len, 0);
    assert_int_equal(seal_open(NULL, s.data, s.len, &o), SEAL_NO_KEY);
    assert_int_equal(o.len, 0);

    char msg[200];
    seal_describe(&other, s.data, s.len, SEAL_WRONG_KEY, msg, sizeof msg);
    char want[200], a[9], b[9];
    seal_fingerprint_hex(&k, a);
    seal_fingerprint_hex(&other, b);
    snprintf(want, sizeof want, "sealed under another key (fingerprint %s, this node's is %s)", a, b);
    assert_string_equal(msg, want);
    seal_describe(NULL, s.data, s.len, SEAL_NO_KEY, msg, sizeof msg);
    assert_string_equal(msg, "sealed, and this node has no QUEEN_ENCRYPTION_KEY to open it");
    /* truncated to the buffer, still a C string */
    assert_int_equal(seal_describe(&other, s.data, s.len, SEAL_WRONG_KEY, msg, 10), 9);
    assert_int_equal(strlen(msg), 9);

    /* sealing needs a key */
    buf_reset(&s);
    assert_int_equal(seal_seal(NULL, "x", 1, &s), -1);
    assert_int_equal(s.len, 0);
    assert_string_equal(seal_result_code(SEAL_WRONG_KEY), "wrong_key");
    assert_string_equal(seal_result_code(SEAL_NO_KEY), "no_key");
    assert_string_equal(seal_result_code(SEAL_CORRUPT), "corrupt");
    assert_string_equal(seal_result_text(SEAL_NO_KEY), "no encryption key is configured on this node");
    buf_free(&s);
    buf_free(&o);
}

/* Every single byte of an envelope matters: flipping any bit fails the open, and nothing of
 * the unverified plaintext is appended. */
static void test_tampered(void **state)
{
    (void)state;
    seal_key k = key_of(KEY_HEX);
    static const char plain[] = "{\"order\":7,\"total\":42.00}";
    buf s, o;
    buf_init(&s, 0);
    buf_init(&o, 0);
    assert_int_equal(seal_seal(&k, plain, sizeof plain - 1, &s), 0);
    for (size_t i = 0; i < s.len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            s.data[i] ^= (char)(1 << bit);
            buf_reset(&o);
            enum seal_result r = seal_open(&k, s.data, s.len, &o);
            if (i >= 1 && i < 5)
                assert_int_equal(r, SEAL_WRONG_KEY); /* the fingerprint */
            else
                assert_int_equal(r, SEAL_CORRUPT);
            assert_int_equal(o.len, 0);
            s.data[i] ^= (char)(1 << bit);
        }
    }
    buf_reset(&o);
    assert_int_equal(seal_open(&k, s.data, s.len, &o), SEAL_OK);
    buf_free(&s);
    buf_free(&o);
}

static void test_truncated(void **state)
{
    (void)state;
    seal_key k = key_of(KEY_HEX);
    buf s, o;
    buf_init(&s, 0);
    buf_init(&o, 0);
    assert_int_equal(seal_seal(&k, "{\"a\":[1,2,3]}", 13, &s), 0);
    for (size_t n = 0; n < s.len; n++) {
        buf_reset(&o);
        assert_int_equal(seal_open(&k, s.data, n, &o), SEAL_CORRUPT);
        assert_int_equal(o.len, 0);
    }
    /* a trailing byte is as bad as a missing one */
    buf_putc(&s, 0);
    assert_int_equal(seal_open(&k, s.data, s.len, &o), SEAL_CORRUPT);
    /* plaintext bytes that happen to be long enough are not an envelope */
    static const char json[] = "{\"this is\":\"not an envelope at all\"}";
    assert_int_equal(seal_open(&k, json, sizeof json - 1, &o), SEAL_CORRUPT);
    assert_false(seal_is_envelope(json, sizeof json - 1));
    assert_int_equal(seal_open(&k, NULL, 0, &o), SEAL_CORRUPT);
    assert_int_equal(o.len, 0);
    buf_free(&s);
    buf_free(&o);
}

/* A buffer at its ceiling: seal refuses, open says corrupt, neither writes. */
static void test_ceiling(void **state)
{
    (void)state;
    seal_key k = key_of(KEY_HEX);
    buf s, o;
    buf_init(&s, 40);
    assert_int_equal(seal_seal(&k, "0123456789", 10, &s), -1);
    assert_int_equal(s.len, 0);
    buf_init(&s, 0);
    assert_int_equal(seal_seal(&k, "0123456789", 10, &s), 0);
    buf_init(&o, 5);
    assert_int_equal(seal_open(&k, s.data, s.len, &o), SEAL_CORRUPT);
    assert_int_equal(o.len, 0);
    buf_free(&s);
    buf_free(&o);
}

static void test_key_parse(void **state)
{
    (void)state;
    seal_key a = key_of(KEY_HEX), b = key_of(KEY_B64);
    for (int i = 0; i < 32; i++)
        assert_int_equal(a.key[i], i);
    assert_memory_equal(a.key, b.key, 32);
    assert_memory_equal(a.fingerprint, b.fingerprint, 4);
    /* upper-case hex, unpadded and URL-safe base64, surrounding blanks (a file's newline) */
    seal_key c = key_of("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F");
    assert_memory_equal(a.key, c.key, 32);
    c = key_of("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
    assert_memory_equal(a.key, c.key, 32);
    c = key_of("  " "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" "\n");
    assert_memory_equal(a.key, c.key, 32);
    c = key_of("+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/8=");
    seal_key d = key_of("-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_8=");
    assert_memory_equal(c.key, d.key, 32);
    assert_int_equal(c.key[0], 0xfb);

    struct {
        const char *text, *err;
    } bad[] = {
        {"", "is not 64 hex digits or the base64 of 32 bytes: it has 0 characters and decodes as base64 to 0 bytes"},
        {"abc", "is not 64 hex digits or the base64 of 32 bytes: it has 3 characters and decodes as base64 to 2 bytes"},
        /* 63 and 65 hex digits */
        {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1",
         "is not 64 hex digits or the base64 of 32 bytes: it has 63 characters, which is not well-formed base64"},
        {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0",
         "is not 64 hex digits or the base64 of 32 bytes: it has 65 characters, which is not well-formed base64"},
        /* 64 characters, one not hex */
        {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g",
         "is not 64 hex digits or the base64 of 32 bytes: it has 64 characters, and not all of them are hex digits"},
        /* base64 of 31 and 33 bytes */
        {"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==",
         "is not 64 hex digits or the base64 of 32 bytes: it has 44 characters and decodes as base64 to 31 bytes"},
        {"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g",
         "is not 64 hex digits or the base64 of 32 bytes: it has 44 characters and decodes as base64 to 33 bytes"},
        /* a character of neither alphabet, padding in the middle, non-zero trailing bits */
        {"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh*=",
         "is not 64 hex digits or the base64 of 32 bytes: it has 44 characters, not all of them hex digits or base64"},
        {"AAECAwQFBgcICQoLDA0O=xAREhMUFRYXGBkaGxwdHh8=",
         "is not 64 hex digits or the base64 of 32 bytes: it has 44 characters, not all of them hex digits or base64"},
        {"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",
         "is not 64 hex digits or the base64 of 32 bytes: it has 44 characters, which is not well-formed base64"},
        {"my secret passphrase",
         "is not 64 hex digits or the base64 of 32 bytes: it has 20 characters, not all of them hex digits or base64"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        seal_key k;
        qerr_detail err;
        memset(&err, 0, sizeof err);
        memset(&k, 0x5a, sizeof k);
        assert_int_equal(seal_key_parse(bad[i].text, &k, &err), QERR_BAD_INPUT);
        assert_string_equal(err.text, bad[i].err);
        /* the error never quotes the text */
        if (strlen(bad[i].text) >= 4)
            assert_null(strstr(err.text, bad[i].text));
        /* out is untouched */
        for (size_t j = 0; j < sizeof k.key; j++)
            assert_int_equal(k.key[j], 0x5a);
    }
    /* NULL reads as empty */
    seal_key k;
    qerr_detail err;
    assert_int_equal(seal_key_parse(NULL, &k, &err), QERR_BAD_INPUT);
}

static void test_node_key(void **state)
{
    (void)state;
    assert_null(seal_node_key());
    seal_key k = key_of(KEY_HEX);
    seal_set_node_key(&k);
    const seal_key *n = seal_node_key();
    assert_non_null(n);
    assert_memory_equal(n->key, k.key, 32);
    /* a copy: the caller's struct may go */
    memset(&k, 0, sizeof k);
    assert_int_equal(seal_node_key()->key[1], 1);
    seal_set_node_key(NULL);
    assert_null(seal_node_key());
}

static int cmp_nonce(const void *a, const void *b)
{
    return memcmp(a, b, SEAL_NONCE_BYTES);
}

/* Nonces come from a per-thread pool refilled from RAND_bytes: across several refills none
 * repeats, and none is all zeros (a pool that was never filled). */
static void test_nonces_unique(void **state)
{
    (void)state;
    seal_key k = key_of(KEY_HEX);
    enum { N = 5000 };
    uint8_t *seen = malloc((size_t)N * SEAL_NONCE_BYTES);
    static const uint8_t zero[SEAL_NONCE_BYTES];
    buf s;
    buf_init(&s, 0);
    for (int i = 0; i < N; i++) {
        buf_reset(&s);
        assert_int_equal(seal_seal(&k, "{}", 2, &s), 0);
        memcpy(seen + (size_t)i * SEAL_NONCE_BYTES, s.data + 5, SEAL_NONCE_BYTES);
        assert_memory_not_equal(s.data + 5, zero, SEAL_NONCE_BYTES);
    }
    qsort(seen, N, SEAL_NONCE_BYTES, cmp_nonce);
    for (int i = 1; i < N; i++)
        assert_memory_not_equal(seen + (size_t)(i - 1) * SEAL_NONCE_BYTES, seen + (size_t)i * SEAL_NONCE_BYTES,
                                SEAL_NONCE_BYTES);
    free(seen);
    buf_free(&s);
}

/* Threads seal and open at once, each under two keys in turn (so their cached contexts are
 * keyed again and again); every envelope opens under its own key only. */
static void *worker(void *arg)
{
    long id = (long)arg;
    seal_key a = key_of(KEY_HEX), b = key_of(OTHER_HEX);
    buf s, o;
    buf_init(&s, 0);
    buf_init(&o, 0);
    char plain[64];
    long bad = 0;
    for (int i = 0; i < 3000; i++) {
        const seal_key *k = (i + id) % 3 ? &a : &b, *other = k == &a ? &b : &a;
        int n = snprintf(plain, sizeof plain, "{\"thread\":%ld,\"i\":%d}", id, i);
        buf_reset(&s);
        buf_reset(&o);
        if (seal_seal(k, plain, (size_t)n, &s) != 0 || seal_open(k, s.data, s.len, &o) != SEAL_OK ||
            o.len != (size_t)n || memcmp(o.data, plain, (size_t)n) != 0 ||
            seal_open(other, s.data, s.len, &o) != SEAL_WRONG_KEY)
            bad++;
    }
    buf_free(&s);
    buf_free(&o);
    return (void *)bad;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < 4; i++) {
        void *bad;
        assert_int_equal(pthread_join(t[i], &bad), 0);
        assert_int_equal((long)bad, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_known_answer),
        cmocka_unit_test(test_wrong_key_no_key),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_ceiling),
        cmocka_unit_test(test_key_parse),
        cmocka_unit_test(test_node_key),
        cmocka_unit_test(test_nonces_unique),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
