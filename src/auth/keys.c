/* keys.c — public keys: a PEM key (JWT_PUBLIC_KEY), JSON Web Keys, and the JWKS document the
 * refresher fetches. A key is held both ways its verifier wants it: as PEM text (libjwt's
 * RS256 takes a PEM) and as an OpenSSL EVP_PKEY (EdDSA is verified through EVP). */
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "core/util.h"
#include "json/json.h"

/* RFC 7518 §3.3: RS256 keys are at least 2048 bits; 16384 bounds the work of one check. */
#define RSA_MIN_BITS 2048
#define RSA_MAX_BITS 16384

void auth_key_clear(auth_key *k)
{
    free(k->kid);
    free(k->pem);
    EVP_PKEY_free(k->pkey);
    memset(k, 0, sizeof *k);
}

/* Fills kty and pem from an EVP_PKEY (taken over). 0, or -1 with err. */
static int key_adopt(EVP_PKEY *pk, auth_key *out, char *err, size_t errlen)
{
    int id = EVP_PKEY_get_base_id(pk);
    if (id == EVP_PKEY_RSA) {
        int bits = EVP_PKEY_get_bits(pk);
        if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) {
            snprintf(err, errlen, "an RSA key of %d bits; RS256 needs %d to %d", bits, RSA_MIN_BITS, RSA_MAX_BITS);
            EVP_PKEY_free(pk);
            return -1;
        }
        out->kty = AUTH_KTY_RSA;
    } else if (id == EVP_PKEY_ED25519) {
        out->kty = AUTH_KTY_OKP;
    } else {
        snprintf(err, errlen, "a key that is neither RSA nor Ed25519");
        EVP_PKEY_free(pk);
        return -1;
    }
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    long n = 0;
    if (!b || PEM_write_bio_PUBKEY(b, pk) != 1 || (n = BIO_get_mem_data(b, &data)) <= 0) {
        BIO_free(b);
        EVP_PKEY_free(pk);
        ERR_clear_error();
        snprintf(err, errlen, "the key cannot be written as PEM");
        return -1;
    }
    out->pem = xstrndup(data, (size_t)n);
    out->pkey = pk;
    BIO_free(b);
    return 0;
}

int auth_key_from_pem(const char *pem, size_t n, auth_key *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n > INT32_MAX) {
        snprintf(err, errlen, "too large");
        return -1;
    }
    BIO *b = BIO_new_mem_buf(pem, (int)n);
    EVP_PKEY *pk = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!pk) {
        ERR_clear_error();
        snprintf(err, errlen, "no -----BEGIN PUBLIC KEY----- block could be read");
        return -1;
    }
    return key_adopt(pk, out, err, errlen);
}

static EVP_PKEY *rsa_from_ne(const buf *n, const buf *e)
{
    EVP_PKEY *pk = NULL;
    BIGNUM *bn = BN_bin2bn((const unsigned char *)n->data, (int)n->len, NULL);
    BIGNUM *be = BN_bin2bn((const unsigned char *)e->data, (int)e->len, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    if (!bn || !be || !bld || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) || !(params = OSSL_PARAM_BLD_to_param(bld)))
        goto out;
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (!ctx || EVP_PKEY_fromdata_init(ctx) <= 0 || EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pk = NULL;
out:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    ERR_clear_error();
    return pk;
}

/* A string member of a JWK into out (NUL-terminated): 1 present, 0 absent, -1 not a string
 * or longer than max. */
static int jwk_str(const json_doc *d, int obj, const char *key, size_t max, buf *out)
{
    int t = json_get(d, obj, key);
    if (t < 0)
        return 0;
    if (json_type_of(d, t) != JSON_STRING || json_str_decoded_len(d, t) > max)
        return -1;
    buf_reset(out);
    json_str_decode(d, t, out);
    buf_cstr(out);
    return 1;
}

/* One JWK into a key; 0 kept, 1 skipped (not a signing key we verify), -1 malformed. */
static int jwk_key(const json_doc *d, int obj, auth_key *k)
{
    memset(k, 0, sizeof *k);
    buf s, a, b;
    buf_init(&s, 0);
    buf_init(&a, 0);
    buf_init(&b, 0);
    int rc = -1;
    EVP_PKEY *pk = NULL;
    if (json_type_of(d, obj) != JSON_OBJECT || jwk_str(d, obj, "kty", 16, &s) <= 0)
        goto out;
    int kty = strcmp(s.data, "RSA") == 0 ? AUTH_KTY_RSA : strcmp(s.data, "OKP") == 0 ? AUTH_KTY_OKP : 0;
    rc = 1;
    if (!kty)
        goto out;
    int u = jwk_str(d, obj, "use", 16, &s);
    if (u < 0 || (u > 0 && strcmp(s.data, "sig") != 0))
        goto out;
    int al = jwk_str(d, obj, "alg", 16, &s);
    if (al < 0 || (al > 0 && strcmp(s.data, kty == AUTH_KTY_RSA ? "RS256" : "EdDSA") != 0))
        goto out;
    if (kty == AUTH_KTY_OKP && (jwk_str(d, obj, "crv", 16, &s) <= 0 || strcmp(s.data, "Ed25519") != 0))
        goto out;
    rc = -1;
    if (jwk_str(d, obj, "kid", AUTH_KID_MAX_BYTES, &s) < 0)
        goto out;
    char *kid = s.len ? xstrndup(s.data, s.len) : NULL;
    if (kty == AUTH_KTY_RSA) {
        if (jwk_str(d, obj, "n", 4096, &s) <= 0 || auth_b64url_decode(s.data, s.len, &a) < 0 ||
            jwk_str(d, obj, "e", 16, &s) <= 0 || auth_b64url_decode(s.data, s.len, &b) < 0 || a.len == 0 ||
            b.len == 0 || b.len > 8 || (pk = rsa_from_ne(&a, &b)) == NULL) {
            free(kid);
            goto out;
        }
    } else {
        if (jwk_str(d, obj, "x", 64, &s) <= 0 || auth_b64url_decode(s.data, s.len, &a) < 0 || a.len != 32 ||
            (pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, (const unsigned char *)a.data, 32)) == NULL) {
            ERR_clear_error();
            free(kid);
            goto out;
        }
    }
    char why[128];
    if (key_adopt(pk, k, why, sizeof why) < 0) {
        free(kid);
        goto out;
    }
    k->kid = kid;
    rc = 0;
out:
    buf_free(&s);
    buf_free(&a);
    buf_free(&b);
    return rc;
}

auth_keyset *auth_jwks_parse(const char *json, size_t n, char *err, size_t errlen)
{
    if (n > AUTH_JWKS_MAX_BYTES) {
        snprintf(err, errlen, "the JWKS is larger than %u bytes", AUTH_JWKS_MAX_BYTES);
        return NULL;
    }
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts o = {.max_tokens = 0, .token_depth = 3};
    if (json_parse(&d, json, n, &o) < 0) {
        snprintf(err, errlen, "the JWKS is not JSON: %s", d.err);
        json_doc_free(&d);
        return NULL;
    }
    int keys = json_get(&d, 0, "keys");
    if (json_type_of(&d, 0) != JSON_OBJECT || json_type_of(&d, keys) != JSON_ARRAY) {
        snprintf(err, errlen, "the JWKS has no \"keys\" array");
        json_doc_free(&d);
        return NULL;
    }
    auth_keyset *s = xcalloc(1, sizeof *s);
    uint32_t cnt = d.toks[keys].count;
    s->keys = xcalloc(cnt ? MIN(cnt, AUTH_JWKS_MAX_KEYS) : 1, sizeof *s->keys);
    int t = json_first(&d, keys);
    for (uint32_t i = 0; i < cnt && s->n < AUTH_JWKS_MAX_KEYS; i++, t = json_next(&d, t)) {
        auth_key k;
        if (jwk_key(&d, t, &k) != 0)
            continue; /* skipped or malformed: the other keys still count */
        int dup = 0;
        for (int j = 0; j < s->n && !dup; j++)
            dup = k.kid && s->keys[j].kid && strcmp(k.kid, s->keys[j].kid) == 0;
        if (dup) {
            auth_key_clear(&k);
            continue;
        }
        s->keys[s->n++] = k;
    }
    json_doc_free(&d);
    return s;
}

void auth_keyset_free(auth_keyset *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        auth_key_clear(&s->keys[i]);
    free(s->keys);
    free(s);
}

const auth_key *auth_keyset_find(const auth_keyset *s, const char *kid, int kty)
{
    if (!s)
        return NULL;
    for (int i = 0; i < s->n; i++) {
        const auth_key *k = &s->keys[i];
        if (k->kty != kty)
            continue;
        if (!kid || (k->kid && strcmp(k->kid, kid) == 0))
            return k;
    }
    return NULL;
}
