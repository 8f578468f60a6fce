/* verify.c — one token against the keys at hand: structure, algorithm, signature, claims, in
 * that order, so nothing about the claims is told for a token that is not ours. HS256 and RS256
 * signatures are checked by libjwt, with the token's algorithm checked against the configured
 * one first (libjwt verifies with whatever the header names: an RS256 public key handed to it
 * for an "HS256" token would serve as an HMAC secret anyone can read). EdDSA is checked by
 * OpenSSL, libjwt 1.10 having none. */
#include <jwt.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "core/util.h"

static int ed25519_ok(const auth_key *k, const char *msg, size_t n, const buf *sig)
{
    if (sig->len != 64 || !k->pkey)
        return 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
             EVP_DigestVerify(ctx, (const unsigned char *)sig->data, sig->len, (const unsigned char *)msg, n) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* libjwt wants a NUL-terminated token and a key; it re-parses the token and checks the
 * signature with the header's algorithm (already checked to be the expected one). */
static int libjwt_ok(const char *tok, size_t len, const unsigned char *key, size_t key_len)
{
    char *z = xstrndup(tok, len);
    jwt_t *j = NULL;
    int rc = jwt_decode(&j, z, key, (int)key_len);
    jwt_free(j);
    free(z);
    return rc == 0;
}

static enum auth_outcome deny(auth_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static enum auth_outcome deny(auth_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    res->status = 401;
    vsnprintf(res->msg, sizeof res->msg, fmt, ap);
    va_end(ap);
    return AUTH_DENIED;
}

enum auth_outcome auth_verify(const auth_config *c, const auth_key *static_key, const auth_keyset *jwks,
                              const char *tok, size_t len, int64_t now_s, auth_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = 401;
    auth_token t;
    enum auth_outcome out = AUTH_DENIED;
    if (auth_token_parse(tok, len, &t, res->msg, sizeof res->msg) < 0)
        goto done;
    static const char *const want[] = {"HS256", "RS256", "EdDSA"};
    int alg = strcmp(t.alg, "HS256") == 0 ? AUTH_ALG_HS256 : strcmp(t.alg, "RS256") == 0 ? AUTH_ALG_RS256
              : strcmp(t.alg, "EdDSA") == 0 ? AUTH_ALG_EDDSA : -1;
    if (c->algorithm == AUTH_ALG_AUTO && alg < 0) {
        out = deny(res, "Unsupported algorithm: %s", t.alg);
        goto done;
    }
    if (c->algorithm != AUTH_ALG_AUTO && alg != c->algorithm) {
        out = deny(res, "Token uses %s, expected %s", t.alg, want[c->algorithm]);
        goto done;
    }
    int ok = 0;
    if (alg == AUTH_ALG_HS256) {
        if (!c->secret) {
            out = deny(res, "Token uses HS256, and this server has no JWT_SECRET");
            goto done;
        }
        ok = libjwt_ok(tok, len, (const unsigned char *)c->secret, strlen(c->secret));
    } else {
        int kty = alg == AUTH_ALG_RS256 ? AUTH_KTY_RSA : AUTH_KTY_OKP;
        const auth_key *k = NULL;
        if (static_key) {
            if (static_key->kty != kty) {
                out = deny(res, "Token uses %s, and JWT_PUBLIC_KEY is %s key", t.alg,
                           static_key->kty == AUTH_KTY_RSA ? "an RSA" : "an Ed25519");
                goto done;
            }
            k = static_key;
        } else if (!c->jwks_url) {
            out = deny(res, "Token uses %s, and this server has neither JWT_PUBLIC_KEY nor JWT_JWKS_URL", t.alg);
            goto done;
        } else {
            k = auth_keyset_find(jwks, t.has_kid ? t.kid : NULL, kty);
            if (!k) {
                res->status = 401;
                snprintf(res->msg, sizeof res->msg, "Unknown key ID: %s", t.has_kid ? t.kid : "(none)");
                out = AUTH_UNKNOWN_KID;
                goto done;
            }
        }
        if (alg == AUTH_ALG_RS256)
            ok = libjwt_ok(tok, len, (const unsigned char *)k->pem, strlen(k->pem));
        else
            ok = ed25519_ok(k, tok, t.signing_len, &t.sig);
    }
    if (!ok) {
        out = deny(res, "Invalid token signature");
        goto done;
    }
    if (auth_claims_check(c, t.payload.data ? t.payload.data : "", t.payload.len, now_s, &res->claims, res->msg,
                          sizeof res->msg) < 0)
        goto done;
    res->status = 200;
    res->msg[0] = '\0';
    out = AUTH_OK;
done:
    auth_token_free(&t);
    return out;
}
