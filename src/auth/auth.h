/* auth.h — optional JWT authentication: the JWT_* environment, token parsing and claim checks,
 * signature verification, the JWKS key set and its refresher, roles and the tenant claim.
 * The design (what is checked in which order, the error texts, the JWKS refresh, the tenant
 * claim) is in docs/auth.md; the access level of every route in docs/http-api.md.
 *
 * Three layers share this header:
 *  - pure logic, no I/O (auth_config.c, token.c): the environment table, the Authorization
 *    header, token splitting and base64url, claim checks, role mapping, JWT_SKIP_PATHS, and
 *    JWKS documents (jwks.c). Unit-tested and fuzzed offline;
 *  - signature verification (verify.c): HS256 and RS256 through libjwt, EdDSA (Ed25519) through
 *    OpenSSL's EVP, because libjwt 1.10 has no EdDSA;
 *  - the node's authenticator (auth_node.c): the keys in use, the JWKS fetched with libcurl on
 *    a thread of its own (never on the loop) and handed to the loop through a uv_async, and the
 *    requests that wait for a key set.
 * Only auth_node.c touches libuv and libcurl; the types named below are forward declarations. */
#ifndef QUEEN_AUTH_AUTH_H
#define QUEEN_AUTH_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/buf.h"

struct uv_loop_s; /* uv_loop_t */

/* A token longer than this is refused before any parsing: real tokens are a few hundred
 * bytes, a JWKS-backed one with many claims a few kilobytes. */
#define AUTH_TOKEN_MAX_BYTES 16384
/* The subject is stamped on every pushed record (the producer identity): bounded. */
#define AUTH_SUB_MAX_BYTES 1024
/* A key id longer than this names no key we hold. */
#define AUTH_KID_MAX_BYTES 255
/* A JWKS document larger than this is refused (a real one holds a handful of keys). */
#define AUTH_JWKS_MAX_BYTES (1u << 20)
#define AUTH_JWKS_MAX_KEYS 64
/* An unknown key id fetches the JWKS again, but at most once per this many milliseconds: a
 * stream of tokens with made-up key ids must not become a stream of fetches. */
#define AUTH_JWKS_MISS_COOLDOWN_MS 1000
/* Tokens that passed are remembered (the exact bytes → the claims), so a client that sends one
 * token with every request pays the signature check once: libjwt parses the PEM key on every
 * RS256 check, which costs hundreds of microseconds on the loop. An entry serves at most this
 * long (a key removed from the JWKS stops counting within it) and never past exp. */
#define AUTH_CACHE_SLOTS 1024
#define AUTH_CACHE_TTL_S 60

enum auth_alg { AUTH_ALG_HS256 = 0, AUTH_ALG_RS256 = 1, AUTH_ALG_EDDSA = 2, AUTH_ALG_AUTO = 3 };
enum auth_role { AUTH_ROLE_NONE = 0, AUTH_ROLE_READ_ONLY, AUTH_ROLE_READ_WRITE, AUTH_ROLE_ADMIN };

/* The JWT_* environment (docs/auth.md, README). Strings are owned. */
typedef struct auth_config {
    int64_t enabled;
    int algorithm; /* enum auth_alg */
    char *secret;
    char *public_key; /* PEM, with literal "\n" sequences turned into newlines */
    char *jwks_url;
    char *issuer, *audience;
    int64_t clock_skew_s;
    char *skip_paths_raw;
    int64_t jwks_refresh_s;
    int64_t jwks_timeout_ms;
    char *roles_claim, *roles_array_claim;
    char *role_admin, *role_read_write, *role_read_only;
    char *tenant_claim;
    /* derived */
    char **skip_paths; /* trimmed entries of JWT_SKIP_PATHS */
    size_t nskip;
} auth_config;

/* Reads and checks the JWT_* variables. A bad value returns QERR_BAD_INPUT with the detail's
 * text the one boot line (ERROR boot: FATAL: ...). With JWT_ENABLED off only the values themselves
 * are checked, not whether the algorithm has its keys. */
qerr auth_config_load(auth_config *c, config_getenv_fn get, qerr_detail *err);
void auth_config_free(auth_config *c);
/* Whether JWT_SKIP_PATHS exempts this path: an exact match, or a prefix match for an entry
 * longer than "/" that ends in '/' (so "/" alone exempts only the root). */
int auth_skip_path(const auth_config *c, const char *path);

/* The token of an Authorization header value: after a "Bearer " prefix (any case), else the
 * whole value; surrounding blanks trimmed. Returns 0, or -1 when nothing is left (an empty
 * value, or "Bearer" alone). */
int auth_bearer(const char *header, const char **tok, size_t *len);

/* Strict base64url (RFC 4648 §5, no padding, no blanks). Appends to out; -1 on a bad input. */
int auth_b64url_decode(const char *s, size_t n, buf *out);

/* A token split and decoded, before any signature check. */
typedef struct auth_token {
    char alg[16];
    char kid[AUTH_KID_MAX_BYTES + 1];
    int has_kid;
    size_t signing_len; /* "header.payload": the first signing_len bytes of the token */
    buf sig;            /* the signature bytes */
    buf payload;        /* the payload's JSON text, checked to be an object */
} auth_token;

/* Splits header.payload.signature, decodes the parts and checks the header (alg, typ, kid).
 * On failure writes the 401 message ("Token decode error: ...") and returns -1. The token is
 * freed with auth_token_free either way. */
int auth_token_parse(const char *tok, size_t len, auth_token *t, char *err, size_t errlen);
void auth_token_free(auth_token *t);

typedef struct auth_claims {
    char *sub; /* owned; NULL when the token has none */
    enum auth_role role;
    uint8_t tenant[16];
    int has_tenant;
    int64_t valid_until_s; /* exp + JWT_CLOCK_SKEW, rounded down; INT64_MAX without exp */
} auth_claims;

/* Checks the payload's registered claims (exp and nbf with JWT_CLOCK_SKEW of leeway, iat not
 * in the future, iss and aud when configured) and reads sub, the role claims and the tenant
 * claim. On failure writes the 401 message and returns -1. */
int auth_claims_check(const auth_config *c, const char *json, size_t n, int64_t now_s, auth_claims *out, char *err,
                      size_t errlen);
void auth_claims_free(auth_claims *c);
/* The highest level a role name grants (configured names, exact match), NONE for others. */
enum auth_role auth_role_of(const auth_config *c, const char *name, size_t n);

/* ---- keys ---------------------------------------------------------------------------------- */

enum auth_kty { AUTH_KTY_RSA = 1, AUTH_KTY_OKP = 2 };

typedef struct auth_key {
    char *kid;   /* owned; NULL for the static key */
    int kty;     /* enum auth_kty */
    char *pem;   /* owned: the public key as PEM (what libjwt takes for RS256) */
    void *pkey;  /* owned EVP_PKEY (what OpenSSL takes for EdDSA) */
} auth_key;

typedef struct auth_keyset {
    auth_key *keys;
    int n;
} auth_keyset;

/* A PEM public key (RSA or Ed25519). 0, or -1 with a reason in err. */
int auth_key_from_pem(const char *pem, size_t n, auth_key *out, char *err, size_t errlen);
void auth_key_clear(auth_key *k);
/* A JWKS document: RSA (n, e) and OKP Ed25519 (x) keys are kept; keys of other types, curves
 * or uses ("use": "enc"), and keys whose "alg" names another algorithm, are skipped. Returns
 * a set (possibly empty), or NULL with a reason in err when the document is not a JWKS. */
auth_keyset *auth_jwks_parse(const char *json, size_t n, char *err, size_t errlen);
void auth_keyset_free(auth_keyset *s);
/* The key for a token: by kid when the token names one, else the first key of the type. */
const auth_key *auth_keyset_find(const auth_keyset *s, const char *kid, int kty);

/* ---- verification -------------------------------------------------------------------------- */

enum auth_outcome {
    AUTH_OK = 0,
    AUTH_DENIED,      /* *status and msg say why (401, or 500 for a configuration gap) */
    AUTH_UNKNOWN_KID, /* signed with a key the JWKS set does not hold (yet): fetch it again */
};

typedef struct auth_result {
    int status;
    char msg[300];
    auth_claims claims; /* AUTH_OK only; freed by the caller with auth_claims_free */
} auth_result;

/* The whole check of one token against the keys at hand: structure, algorithm, signature,
 * claims. `static_key` is JWT_PUBLIC_KEY (NULL when unset), `jwks` the current set (NULL
 * before the first fetch). */
enum auth_outcome auth_verify(const auth_config *c, const auth_key *static_key, const auth_keyset *jwks,
                              const char *tok, size_t len, int64_t now_s, auth_result *res);

/* ---- the node's authenticator -------------------------------------------------------------- */

typedef struct auth auth;

/* Called once per auth_check, on the loop thread: status 200 with the claims (borrowed for
 * the call), or the status and message to answer. */
typedef void (*auth_done_fn)(void *arg, int status, const char *msg, const auth_claims *claims);

/* Starts the authenticator for an enabled config (NULL with err on a key that cannot be
 * loaded: QERR_BAD_INPUT, or QERR_INTERNAL when libcurl or the refresher thread cannot start).
 * With JWT_JWKS_URL the first fetch starts at once, off the loop. */
auth *auth_new(struct uv_loop_s *loop, const auth_config *c, qerr_detail *err);
/* Verifies a token; `done` runs before this returns when the keys are at hand, or once the
 * JWKS fetch it waits for ends (at most JWT_JWKS_TIMEOUT_MS later). */
void auth_check(auth *a, const char *tok, size_t len, auth_done_fn done, void *arg);
const auth_config *auth_cfg(const auth *a);
/* Shutdown: waiting checks answer 503, the refresher stops; auth_free joins it. */
void auth_stop(auth *a);
void auth_free(auth *a);
void auth_render_metrics(auth *a, buf *b);

#endif
