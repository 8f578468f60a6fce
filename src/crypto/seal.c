/* seal.c — AES-256-GCM envelopes under the node's key (OpenSSL libcrypto).
 *
 * Envelope (docs/encryption.md):
 *   version:u8 (SEAL_VERSION) | fingerprint[4] | nonce[12] | ciphertext[n] | tag[16]
 * The version byte and the fingerprint are the GCM additional data, so neither can be changed
 * without the tag failing. The nonce is fresh from RAND_bytes for every seal: with a random
 * 96-bit nonce one key stays well inside GCM's bounds for 2^32 seals (NIST SP 800-38D), and a
 * broker node seals far fewer payloads than that before its key would be rotated.
 *
 * Thread-safe: each thread keeps its own cipher contexts, keyed once (the AES key schedule and
 * GHASH tables are then reused for every envelope under the same key), and its own pool of
 * nonce bytes drawn from RAND_bytes 340 nonces at a time (one RAND_bytes call per nonce cost
 * more than the encryption itself: about 1 µs against 0.3 µs for a 200-byte payload here). The
 * node key is written once at boot before any thread starts and only read later. */
#include "seal.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"

static seal_key g_node_key;
static int g_node_key_set;

static EVP_CIPHER *g_gcm;
static pthread_once_t g_gcm_once = PTHREAD_ONCE_INIT;

/* An explicit fetch once: OpenSSL 3 otherwise looks the implementation up (under a lock) in
 * every EVP_EncryptInit_ex. */
static void gcm_fetch(void)
{
    g_gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
}

static const EVP_CIPHER *gcm(void)
{
    pthread_once(&g_gcm_once, gcm_fetch);
    return g_gcm ? g_gcm : EVP_aes_256_gcm();
}

/* ---- per-thread state ---- */

#define NONCE_POOL_BYTES (340 * SEAL_NONCE_BYTES)

typedef struct seal_tls {
    EVP_CIPHER_CTX *enc, *dec; /* keyed with enc_key / dec_key when the *_ready flag is set */
    uint8_t enc_key[32], dec_key[32];
    int enc_ready, dec_ready;
    uint8_t pool[NONCE_POOL_BYTES];
    size_t pool_left;
    pid_t pid; /* a forked child draws its own nonces */
} seal_tls;

static pthread_key_t g_tls_key;
static pthread_once_t g_tls_once = PTHREAD_ONCE_INIT;
static int g_tls_ok;

static void tls_free(void *p)
{
    seal_tls *t = p;
    if (!t)
        return;
    EVP_CIPHER_CTX_free(t->enc);
    EVP_CIPHER_CTX_free(t->dec);
    OPENSSL_cleanse(t, sizeof *t);
    free(t);
}

static void tls_init(void)
{
    g_tls_ok = pthread_key_create(&g_tls_key, tls_free) == 0;
}

/* NULL only when the thread-specific key cannot be made (then nothing seals or opens). */
static seal_tls *tls(void)
{
    pthread_once(&g_tls_once, tls_init);
    if (!g_tls_ok)
        return NULL;
    seal_tls *t = pthread_getspecific(g_tls_key);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return NULL;
        if (pthread_setspecific(g_tls_key, t) != 0) {
            free(t);
            return NULL;
        }
    }
    return t;
}

/* A fresh random nonce: 12 bytes of the thread's pool, refilled from RAND_bytes. */
static int nonce_next(seal_tls *t, uint8_t *out)
{
    pid_t pid = getpid();
    if (t->pool_left < SEAL_NONCE_BYTES || t->pid != pid) {
        if (RAND_bytes(t->pool, sizeof t->pool) != 1)
            return -1;
        t->pool_left = sizeof t->pool;
        t->pid = pid;
    }
    memcpy(out, t->pool + sizeof t->pool - t->pool_left, SEAL_NONCE_BYTES);
    t->pool_left -= SEAL_NONCE_BYTES;
    return 0;
}

/* The thread's context for k, keyed (once per key). NULL on failure. */
static EVP_CIPHER_CTX *ctx_for(EVP_CIPHER_CTX **ctx, uint8_t *have, int *ready, const seal_key *k, int enc)
{
    if (!*ctx && !(*ctx = EVP_CIPHER_CTX_new()))
        return NULL;
    if (*ready && memcmp(have, k->key, 32) == 0)
        return *ctx;
    *ready = 0;
    int ok = enc ? EVP_EncryptInit_ex(*ctx, gcm(), NULL, k->key, NULL) : EVP_DecryptInit_ex(*ctx, gcm(), NULL, k->key, NULL);
    if (ok != 1)
        return NULL;
    memcpy(have, k->key, 32);
    *ready = 1;
    return *ctx;
}

/* ---- the key ---- */

static void fingerprint(seal_key *k)
{
    static const char label[] = "queen-seal";
    uint8_t in[sizeof label - 1 + 32];
    memcpy(in, label, sizeof label - 1);
    memcpy(in + sizeof label - 1, k->key, 32);
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(in, sizeof in, md, &mdlen, EVP_sha256(), NULL);
    memcpy(k->fingerprint, md, 4);
    OPENSSL_cleanse(in, sizeof in);
    OPENSSL_cleanse(md, sizeof md);
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

qerr seal_key_parse(const char *text, seal_key *out, qerr_detail *err)
{
    if (!text)
        text = "";
    size_t n = strlen(text);
    while (n > 0 && is_space((unsigned char)*text)) {
        text++;
        n--;
    }
    while (n > 0 && is_space((unsigned char)text[n - 1]))
        n--;
    seal_key k;
    memset(&k, 0, sizeof k);
    if (n == 64) {
        int ok = 1;
        for (size_t i = 0; i < 32 && ok; i++) {
            int hi = hexval((unsigned char)text[2 * i]), lo = hexval((unsigned char)text[2 * i + 1]);
            if (hi < 0 || lo < 0)
                ok = 0;
            else
                k.key[i] = (uint8_t)(hi << 4 | lo);
        }
        if (ok)
            goto done;
        /* 64 characters of base64 are 48 bytes: not a key either way */
        qerr_set(err, QERR_BAD_INPUT, NULL,
                 "is not 64 hex digits or the base64 of 32 bytes: it has 64 characters, and not all of them are "
                 "hex digits");
        goto fail;
    }
    /* standard and URL-safe alphabets both decode */
    long got = b64_decode(text, n, k.key, sizeof k.key, B64_URL_TOO);
    if (got == 32)
        goto done;
    if (got >= 0)
        qerr_set(err, QERR_BAD_INPUT, NULL,
                 "is not 64 hex digits or the base64 of 32 bytes: it has %zu characters and decodes "
                 "as base64 to %ld bytes", n, got);
    else if (got == B64_BAD_CHAR)
        qerr_set(err, QERR_BAD_INPUT, NULL,
                 "is not 64 hex digits or the base64 of 32 bytes: it has %zu characters, not all "
                 "of them hex digits or base64", n);
    else
        qerr_set(err, QERR_BAD_INPUT, NULL,
                 "is not 64 hex digits or the base64 of 32 bytes: it has %zu characters, which "
                 "is not well-formed base64", n);
fail:
    OPENSSL_cleanse(&k, sizeof k);
    return QERR_BAD_INPUT;
done:
    fingerprint(&k);
    *out = k;
    OPENSSL_cleanse(&k, sizeof k);
    return QERR_OK;
}

void seal_set_node_key(const seal_key *k)
{
    if (k) {
        g_node_key = *k;
        g_node_key_set = 1;
    } else {
        OPENSSL_cleanse(&g_node_key, sizeof g_node_key);
        g_node_key_set = 0;
    }
}

const seal_key *seal_node_key(void)
{
    return g_node_key_set ? &g_node_key : NULL;
}

/* ---- sealing ---- */

int seal_seal(const seal_key *k, const void *plain, size_t n, buf *out)
{
    if (!k || n > (size_t)INT32_MAX - SEAL_OVERHEAD)
        return -1;
    if (buf_reserve(out, n + SEAL_OVERHEAD) < 0)
        return -1;
    uint8_t *e = (uint8_t *)out->data + out->len;
    e[0] = SEAL_VERSION;
    memcpy(e + 1, k->fingerprint, 4);
    uint8_t *nonce = e + SEAL_HEADER_BYTES - SEAL_NONCE_BYTES;
    seal_tls *t = tls();
    if (!t || nonce_next(t, nonce) < 0)
        return -1;
    EVP_CIPHER_CTX *c = ctx_for(&t->enc, t->enc_key, &t->enc_ready, k, 1);
    int ok = 0, len = 0, fin = 0;
    if (c && EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) == 1 && EVP_EncryptUpdate(c, NULL, &len, e, 5) == 1 &&
        EVP_EncryptUpdate(c, e + SEAL_HEADER_BYTES, &len, plain, (int)n) == 1 &&
        EVP_EncryptFinal_ex(c, e + SEAL_HEADER_BYTES + len, &fin) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG_BYTES, e + SEAL_HEADER_BYTES + n) == 1)
        ok = (size_t)len + (size_t)fin == n;
    if (!ok) {
        t->enc_ready = 0; /* key it again next time */
        return -1;
    }
    out->len += n + SEAL_OVERHEAD;
    return 0;
}

int seal_is_envelope(const void *sealed, size_t n)
{
    return n >= SEAL_OVERHEAD && ((const uint8_t *)sealed)[0] == SEAL_VERSION;
}

enum seal_result seal_open(const seal_key *k, const void *sealed, size_t n, buf *out)
{
    const uint8_t *e = sealed;
    if (!seal_is_envelope(sealed, n))
        return SEAL_CORRUPT;
    if (!k)
        return SEAL_NO_KEY;
    if (memcmp(e + 1, k->fingerprint, 4) != 0)
        return SEAL_WRONG_KEY;
    size_t clen = n - SEAL_OVERHEAD;
    if (clen > (size_t)INT32_MAX || buf_reserve(out, clen) < 0)
        return SEAL_CORRUPT;
    uint8_t *dst = (uint8_t *)out->data + out->len;
    uint8_t tag[SEAL_TAG_BYTES];
    memcpy(tag, e + n - SEAL_TAG_BYTES, SEAL_TAG_BYTES);
    seal_tls *t = tls();
    EVP_CIPHER_CTX *c = t ? ctx_for(&t->dec, t->dec_key, &t->dec_ready, k, 0) : NULL;
    int ok = 0, len = 0, fin = 0;
    if (c && EVP_DecryptInit_ex(c, NULL, NULL, NULL, e + SEAL_HEADER_BYTES - SEAL_NONCE_BYTES) == 1 &&
        EVP_DecryptUpdate(c, NULL, &len, e, 5) == 1 &&
        EVP_DecryptUpdate(c, dst, &len, e + SEAL_HEADER_BYTES, (int)clen) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG_BYTES, tag) == 1 &&
        EVP_DecryptFinal_ex(c, dst + len, &fin) == 1)
        ok = (size_t)len + (size_t)fin == clen;
    if (!ok) {
        /* nothing of an unverified plaintext may be read: wipe what was decrypted */
        OPENSSL_cleanse(dst, clen);
        return SEAL_CORRUPT;
    }
    out->len += clen;
    return SEAL_OK;
}

const char *seal_result_text(enum seal_result r)
{
    switch (r) {
    case SEAL_OK:
        return "ok";
    case SEAL_NO_KEY:
        return "no encryption key is configured on this node";
    case SEAL_WRONG_KEY:
        return "sealed under another key";
    case SEAL_CORRUPT:
        return "the sealed value is corrupt (not an envelope, truncated, or its tag does not verify)";
    }
    return "unknown seal result";
}

const char *seal_result_code(enum seal_result r)
{
    switch (r) {
    case SEAL_OK:
        return "ok";
    case SEAL_NO_KEY:
        return "no_key";
    case SEAL_WRONG_KEY:
        return "wrong_key";
    case SEAL_CORRUPT:
        return "corrupt";
    }
    return "unknown";
}

size_t seal_describe(const seal_key *k, const void *sealed, size_t n, enum seal_result r, char *out, size_t cap)
{
    const uint8_t *e = sealed;
    int w;
    switch (r) {
    case SEAL_NO_KEY:
        w = snprintf(out, cap, "sealed, and this node has no QUEEN_ENCRYPTION_KEY to open it");
        break;
    case SEAL_WRONG_KEY:
        if (k && seal_is_envelope(sealed, n))
            w = snprintf(out, cap, "sealed under another key (fingerprint %02x%02x%02x%02x, this node's is "
                                   "%02x%02x%02x%02x)", e[1], e[2], e[3], e[4], k->fingerprint[0],
                         k->fingerprint[1], k->fingerprint[2], k->fingerprint[3]);
        else
            w = snprintf(out, cap, "%s", seal_result_text(r));
        break;
    default:
        w = snprintf(out, cap, "%s", seal_result_text(r));
        break;
    }
    if (w < 0)
        return 0;
    return (size_t)w < cap ? (size_t)w : cap ? cap - 1 : 0;
}

void seal_fingerprint_hex(const seal_key *k, char out[9])
{
    snprintf(out, 9, "%02x%02x%02x%02x", k->fingerprint[0], k->fingerprint[1], k->fingerprint[2], k->fingerprint[3]);
}
