/* fuzz_auth — the untrusted input of JWT authentication. The first byte picks what the rest is:
 *   0: an Authorization header value → auth_bearer, auth_token_parse, then the whole
 *      auth_verify (HS256 through libjwt, and auto mode with an Ed25519 key) as a request does;
 *   1: a claims object → auth_claims_check with issuer, audience, custom role and tenant claims;
 *   2: a JWKS document → auth_jwks_parse, then lookups by kid and type.
 * Checks: every refusal carries a message; an accepted token's parts are where the parser says;
 * accepted claims respect their limits; key sets hold usable, distinct keys within the cap. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_auth: check failed at line %d: %s\n", __LINE__, #c);                        \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static const char *const *g_env;
static const char *env_get(const char *name)
{
    for (size_t i = 0; g_env[i]; i += 2)
        if (strcmp(g_env[i], name) == 0)
            return g_env[i + 1];
    return NULL;
}

static auth_config g_hs, g_claims, g_auto;
static auth_key g_ed;
static int g_ready;

static void setup(void)
{
    char err[1024];
    qerr_detail det;
    g_env = (const char *const[]){"JWT_ENABLED", "true", "JWT_SECRET", "fuzz-secret-fuzz-secret-fuzz-secret", NULL};
    if (auth_config_load(&g_hs, env_get, &det) != QERR_OK)
        abort();
    g_env = (const char *const[]){"JWT_ENABLED", "true", "JWT_SECRET", "s", "JWT_ISSUER", "iss", "JWT_AUDIENCE", "aud",
                                  "JWT_ROLES_CLAIM", "r", "JWT_ROLES_ARRAY_CLAIM", "rs", "JWT_TENANT_CLAIM", "t",
                                  "JWT_CLOCK_SKEW", "0", NULL};
    if (auth_config_load(&g_claims, env_get, &det) != QERR_OK)
        abort();
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(b, k);
    char *pem;
    long n = BIO_get_mem_data(b, &pem);
    if (auth_key_from_pem(pem, (size_t)n, &g_ed, err, sizeof err) < 0)
        abort();
    g_env = (const char *const[]){"JWT_ENABLED", "true", "JWT_ALGORITHM", "auto", "JWT_SECRET", "s", NULL};
    if (auth_config_load(&g_auto, env_get, &det) != QERR_OK)
        abort();
    BIO_free(b);
    EVP_PKEY_free(k);
    g_ready = 1;
}

static void fuzz_header(const char *s)
{
    const char *tok;
    size_t len;
    if (auth_bearer(s, &tok, &len) < 0)
        return;
    CHECK(len > 0 && tok >= s && tok + len <= s + strlen(s));
    auth_token t;
    char err[300] = "";
    if (auth_token_parse(tok, len, &t, err, sizeof err) == 0) {
        CHECK(t.signing_len < len && tok[t.signing_len] == '.');
        CHECK(t.alg[0] != '\0' && strlen(t.alg) < sizeof t.alg);
        json_doc d;
        memset(&d, 0, sizeof d);
        CHECK(json_parse(&d, t.payload.data ? t.payload.data : "", t.payload.len, NULL) == 0 &&
              json_type_of(&d, 0) == JSON_OBJECT);
        json_doc_free(&d);
    } else {
        CHECK(err[0] != '\0');
    }
    auth_token_free(&t);
    const auth_config *cfgs[2] = {&g_hs, &g_auto};
    for (int i = 0; i < 2; i++) {
        auth_result res;
        enum auth_outcome o = auth_verify(cfgs[i], i ? &g_ed : NULL, NULL, tok, len, 1800000000, &res);
        CHECK(o == AUTH_OK || o == AUTH_DENIED);
        if (o == AUTH_OK) {
            CHECK(res.status == 200);
            auth_claims_free(&res.claims);
        } else {
            CHECK(res.status == 401 && res.msg[0] != '\0');
        }
    }
}

static void fuzz_claims(const char *s, size_t n)
{
    auth_claims c;
    char err[300] = "";
    if (auth_claims_check(&g_claims, s, n, 1800000000, &c, err, sizeof err) == 0) {
        CHECK(c.role >= AUTH_ROLE_NONE && c.role <= AUTH_ROLE_ADMIN);
        if (c.sub)
            CHECK(strlen(c.sub) > 0 && strlen(c.sub) <= AUTH_SUB_MAX_BYTES);
        auth_claims_free(&c);
    } else {
        CHECK(err[0] != '\0');
        CHECK(c.sub == NULL);
    }
}

static void fuzz_jwks(const char *s, size_t n)
{
    char err[300] = "";
    auth_keyset *ks = auth_jwks_parse(s, n, err, sizeof err);
    if (!ks) {
        CHECK(err[0] != '\0');
        return;
    }
    CHECK(ks->n >= 0 && ks->n <= AUTH_JWKS_MAX_KEYS);
    for (int i = 0; i < ks->n; i++) {
        const auth_key *k = &ks->keys[i];
        CHECK(k->kty == AUTH_KTY_RSA || k->kty == AUTH_KTY_OKP);
        CHECK(k->pem && strstr(k->pem, "-----BEGIN PUBLIC KEY-----") && k->pkey);
        for (int j = 0; j < i; j++)
            CHECK(!k->kid || !ks->keys[j].kid || strcmp(k->kid, ks->keys[j].kid) != 0);
        if (k->kid)
            CHECK(auth_keyset_find(ks, k->kid, k->kty) == k);
        const auth_key *first = auth_keyset_find(ks, NULL, k->kty);
        CHECK(first && first <= k);
    }
    auth_keyset_free(ks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ready)
        setup();
    if (size < 1)
        return 0;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    switch (data[0] % 3) {
    case 0:
        fuzz_header(s);
        break;
    case 1:
        fuzz_claims(s, size - 1);
        break;
    default:
        fuzz_jwks(s, size - 1);
        break;
    }
    free(s);
    return 0;
}
