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

typedef struct seal_key {
    uint8_t key[32];
    uint8_t fingerprint[4]; /* first bytes of SHA-256("queen-seal" || key) */
} seal_key;

enum seal_result {
    SEAL_OK = 0,
    SEAL_NO_KEY = -1,      /* this node has no QUEEN_ENCRYPTION_KEY */
    SEAL_WRONG_KEY = -2,   /* sealed under another key (fingerprint differs) */
    SEAL_CORRUPT = -3,     /* not an envelope, truncated, or the tag does not verify */
};

/* Parses QUEEN_ENCRYPTION_KEY's value: 64 hex digits, or base64 of exactly 32 bytes.
 * 0, or -1 with a sentence in err saying what the format is. */
int seal_key_parse(const char *text, seal_key *out, char *err, size_t errlen);

/* The node's key, set once at boot; NULL when none is configured. */
void seal_set_node_key(const seal_key *k);
const seal_key *seal_node_key(void);

/* Appends the envelope of plain to out. 0, or -1 (no key, or out past its ceiling). */
int seal_seal(const seal_key *k, const void *plain, size_t n, buf *out);
/* Appends the plaintext of an envelope to out. k may be NULL (SEAL_NO_KEY). */
enum seal_result seal_open(const seal_key *k, const void *sealed, size_t n, buf *out);
/* "no encryption key is configured on this node", "sealed under another key (fingerprint
 * 1a2b3c4d, this node's is 5e6f7a8b)", ... */
const char *seal_result_text(enum seal_result r);

#endif
