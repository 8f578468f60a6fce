/* seal.h — sealing at rest: AES-256-GCM under the node's QUEEN_ENCRYPTION_KEY (OpenSSL).
 *
 * Used for the payloads of queues with encryptionEnabled (the record flag REC_ENCRYPTED marks
 * a sealed payload in a segment) and for secrets the broker stores (a tenant's S3 secret key).
 * A sealed value is an envelope: a version byte, a key fingerprint (so a node holding a
 * different key says so instead of failing obscurely), a fresh 96-bit nonce, the ciphertext
 * and the 128-bit tag. Only the envelope format and the key are needed to open it; every node
 * given the same key opens what any node sealed.
 *
 * Thread-safe: the key is set once at boot (seal_set_node_key) and only read afterwards. */
#ifndef QUEEN_CRYPTO_SEAL_H
#define QUEEN_CRYPTO_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/qerr.h"

typedef struct seal_key {
    uint8_t key[32];
    uint8_t fingerprint[4]; /* first bytes of SHA-256("queen-seal" || key) */
} seal_key;

/* The envelope: version (1) | fingerprint (4) | nonce (12) | ciphertext | tag (16). */
#define SEAL_VERSION 0x01u
#define SEAL_NONCE_BYTES 12
#define SEAL_TAG_BYTES 16
#define SEAL_HEADER_BYTES (1 + 4 + SEAL_NONCE_BYTES)
#define SEAL_OVERHEAD (SEAL_HEADER_BYTES + SEAL_TAG_BYTES)

enum seal_result {
    SEAL_OK = 0,
    SEAL_NO_KEY = -1,      /* this node has no QUEEN_ENCRYPTION_KEY */
    SEAL_WRONG_KEY = -2,   /* sealed under another key (fingerprint differs) */
    SEAL_CORRUPT = -3,     /* not an envelope, truncated, or the tag does not verify */
};

/* Parses QUEEN_ENCRYPTION_KEY's value: 64 hex digits, or base64 of exactly 32 bytes.
 * QERR_OK, or QERR_BAD_INPUT with a sentence saying what the format is (never the text). */
qerr seal_key_parse(const char *text, seal_key *out, qerr_detail *err);

/* The node's key, set once at boot; NULL when none is configured. */
void seal_set_node_key(const seal_key *k);
const seal_key *seal_node_key(void);

/* Appends the envelope of plain to out. 0, or -1 (no key, or out past its ceiling). */
int seal_seal(const seal_key *k, const void *plain, size_t n, buf *out);
/* Appends the plaintext of an envelope to out. k may be NULL (SEAL_NO_KEY). On any failure
 * out keeps its length: nothing unverified is ever appended. */
enum seal_result seal_open(const seal_key *k, const void *sealed, size_t n, buf *out);
/* "no encryption key is configured on this node", "sealed under another key (fingerprint
 * 1a2b3c4d, this node's is 5e6f7a8b)", ... */
const char *seal_result_text(enum seal_result r);

/* Additions (docs/encryption.md). */
/* Whether the bytes have an envelope's version byte and at least its overhead in length. */
int seal_is_envelope(const void *sealed, size_t n);
/* A short machine name of a result: "ok", "no_key", "wrong_key", "corrupt". */
const char *seal_result_code(enum seal_result r);
/* The sentence a reader shows for a failed open, with both fingerprints for SEAL_WRONG_KEY
 * (k is the key that was tried, may be NULL). Returns its length (truncated to cap - 1). */
size_t seal_describe(const seal_key *k, const void *sealed, size_t n, enum seal_result r, char *out, size_t cap);
/* The fingerprint as 8 lowercase hex digits (safe to log: it does not reveal the key). */
void seal_fingerprint_hex(const seal_key *k, char out[9]);

#endif
