/* Unit tests for JWT authentication (auth/auth.h): the JWT_* boot lines, JWT_SKIP_PATHS, the
 * Authorization header, base64url, token structure, every claim check, role mapping, the
 * tenant claim, JWKS documents, and signature verification for HS256, RS256 and EdDSA with
 * static keys and key sets (tokens are signed here with OpenSSL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "auth/auth.h"
#include "core/buf.h"

/* ---- helpers ------------------------------------------------------------------------------- */

static const char *const *g_env;

static const char *env_get(const char *name)
{
    if (!g_env)
        return NULL;
    for (size_t i = 0; g_env[i]; i += 2)
        if (strcmp(g_env[i], name) == 0)
            return g_env[i + 1];
    return NULL;
}

#define ENV(...) (g_env = (const char *const[]){__VA_ARGS__, NULL})
#define FATAL "ERROR boot: FATAL: queen: "

static qerr_detail g_det;
#define g_err (g_det.text)

static void load_ok(auth_config *c)
{
    memset(&g_det, 0, sizeof g_det);
    if (auth_config_load(c, env_get, &g_det) != QERR_OK)
        fail_msg("auth_config_load failed: %s", g_err);
}

static void load_fails(const char *want)
{
    auth_config c;
    memset(&g_det, 0, sizeof g_det);
    assert_int_equal(auth_config_load(&c, env_get, &g_det), QERR_BAD_INPUT);
    assert_string_equal(g_err, want);
    auth_config_free(&c);
}

static void b64url(buf *out, const void *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const uint8_t *s = p;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        buf_putc(out, t[v >> 18 & 63]);
        buf_putc(out, t[v >> 12 & 63]);
        buf_putc(out, t[v >> 6 & 63]);
        buf_putc(out, t[v & 63]);
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        buf_putc(out, t[v >> 18 & 63]);
        buf_putc(out, t[v >> 12 & 63]);
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        buf_putc(out, t[v >> 18 & 63]);
        buf_putc(out, t[v >> 12 & 63]);
        buf_putc(out, t[v >> 6 & 63]);
    }
}

enum { SIGN_HS256, SIGN_RS256, SIGN_EDDSA, SIGN_NONE };

/* header.payload signed with the key (a secret for HS256, an EVP_PKEY otherwise); the caller
 * frees the string. */
static char *make_token(int how, const void *key, const char *header, const char *payload)
{
    buf t;
    buf_init(&t, 0);
    b64url(&t, header, strlen(header));
    buf_putc(&t, '.');
    b64url(&t, payload, strlen(payload));
    unsigned char sig[1024];
    size_t sl = 0;
    if (how == SIGN_HS256) {
        unsigned int l = 0;
        HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)t.data, t.len, sig, &l);
        sl = l;
    } else if (how != SIGN_NONE) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        sl = sizeof sig;
        assert_int_equal(EVP_DigestSignInit(ctx, NULL, how == SIGN_RS256 ? EVP_sha256() : NULL, NULL, (EVP_PKEY *)key), 1);
        assert_int_equal(EVP_DigestSign(ctx, sig, &sl, (const unsigned char *)t.data, t.len), 1);
        EVP_MD_CTX_free(ctx);
    }
    buf_putc(&t, '.');
    b64url(&t, sig, sl);
    return buf_steal(&t, NULL);
}

static char *pem_of(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(b, k);
    char *d;
    long n = BIO_get_mem_data(b, &d);
    char *s = strndup(d, (size_t)n);
    BIO_free(b);
    return s;
}

/* base64url of a BIGNUM parameter of an RSA key, or of the raw Ed25519 public key */
static char *jwk_param(EVP_PKEY *k, const char *name)
{
    unsigned char raw[1024];
    size_t n = sizeof raw;
    if (!name) {
        assert_int_equal(EVP_PKEY_get_raw_public_key(k, raw, &n), 1);
    } else {
        BIGNUM *bn = NULL;
        assert_int_equal(EVP_PKEY_get_bn_param(k, name, &bn), 1);
        n = (size_t)BN_bn2bin(bn, raw);
        BN_free(bn);
    }
    buf b;
    buf_init(&b, 0);
    b64url(&b, raw, n);
    return buf_steal(&b, NULL);
}

static EVP_PKEY *g_rsa, *g_rsa2, *g_ed;
static char *g_rsa_pem, *g_rsa2_pem, *g_ed_pem;

static int setup_keys(void **state)
{
    (void)state;
    g_rsa = EVP_RSA_gen(2048);
    g_rsa2 = EVP_RSA_gen(2048);
    g_ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (!g_rsa || !g_rsa2 || !g_ed)
        return -1;
    g_rsa_pem = pem_of(g_rsa);
    g_rsa2_pem = pem_of(g_rsa2);
    g_ed_pem = pem_of(g_ed);
    return 0;
}

static int teardown_keys(void **state)
{
    (void)state;
    EVP_PKEY_free(g_rsa);
    EVP_PKEY_free(g_rsa2);
    EVP_PKEY_free(g_ed);
    free(g_rsa_pem);
    free(g_rsa2_pem);
    free(g_ed_pem);
    return 0;
}

#define SECRET "0123456789abcdef0123456789abcdef"
#define NOW 1800000000
#define HS_HEADER "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

/* A config as the environment would give it (HS256 with SECRET unless the env says more). */
static void hs_config(auth_config *c)
{
    ENV("JWT_ENABLED", "true", "JWT_SECRET", SECRET);
    load_ok(c);
}

/* Runs the claims of a payload through the whole check with an HS256 token. */
static enum auth_outcome check_claims(const auth_config *c, const char *payload, auth_result *res)
{
    char *tok = make_token(SIGN_HS256, SECRET, HS_HEADER, payload);
    enum auth_outcome o = auth_verify(c, NULL, NULL, tok, strlen(tok), NOW, res);
    free(tok);
    return o;
}

/* ---- configuration ------------------------------------------------------------------------- */

static void test_config_defaults(void **state)
{
    (void)state;
    ENV("HOSTNAME", "x");
    auth_config c;
    load_ok(&c);
    assert_int_equal(c.enabled, 0);
    assert_int_equal(c.algorithm, AUTH_ALG_HS256);
    assert_int_equal(c.clock_skew_s, 30);
    assert_int_equal(c.jwks_refresh_s, 3600);
    assert_int_equal(c.jwks_timeout_ms, 5000);
    assert_string_equal(c.roles_claim, "role");
    assert_string_equal(c.roles_array_claim, "roles");
    assert_string_equal(c.role_admin, "admin");
    assert_string_equal(c.role_read_write, "read-write");
    assert_string_equal(c.role_read_only, "read-only");
    assert_string_equal(c.tenant_claim, "tenant");
    assert_null(c.secret);
    assert_int_equal(c.nskip, 4);
    assert_string_equal(c.skip_paths[0], "/health");
    assert_string_equal(c.skip_paths[1], "/metrics/prometheus");
    assert_string_equal(c.skip_paths[2], "/metrics");
    assert_string_equal(c.skip_paths[3], "/");
    auth_config_free(&c);
}

static void test_config_lines(void **state)
{
    (void)state;
    ENV("JWT_ENABLED", "maybe");
    load_fails(FATAL "JWT_ENABLED=maybe is not one of true, false. It turns on JWT authentication of the HTTP API");
    ENV("JWT_ALGORITHM", "ES256");
    load_fails(FATAL "JWT_ALGORITHM=ES256 is not one of HS256, RS256, EdDSA, auto. It is the signature algorithm "
                     "tokens must use (auto: HS256, RS256 or EdDSA, as the token says)");
    ENV("JWT_CLOCK_SKEW", "-1");
    load_fails(FATAL "JWT_CLOCK_SKEW=-1 is outside 0..=86400. It is the leeway in seconds for the exp, nbf and iat claims");
    ENV("JWT_JWKS_TIMEOUT_MS", "50");
    load_fails(FATAL "JWT_JWKS_TIMEOUT_MS=50 is outside 100..=120000. It is how long in milliseconds one JWKS fetch "
                     "may take");
    ENV("JWT_JWKS_REFRESH_INTERVAL", "0");
    load_fails(FATAL "JWT_JWKS_REFRESH_INTERVAL=0 is outside 1..=604800. It is how often in seconds the JWKS is "
                     "fetched again");
    ENV("JWT_ENABLED", "true");
    load_fails(FATAL "JWT_SECRET is not set. It is the HS256 key tokens are signed with; JWT_ENABLED=true with "
                     "JWT_ALGORITHM=HS256 needs it");
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "rs256");
    load_fails(FATAL "JWT_PUBLIC_KEY is not set. It is the PEM public key (RSA or Ed25519) RS256 and EdDSA tokens "
                     "are checked with; JWT_ENABLED=true with JWT_ALGORITHM=RS256 needs it or JWT_JWKS_URL");
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "AUTO");
    load_fails(FATAL "JWT_SECRET is not set. It is the HS256 key tokens are signed with; JWT_ENABLED=true with "
                     "JWT_ALGORITHM=auto needs it, JWT_PUBLIC_KEY or JWT_JWKS_URL");
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "RS256", "JWT_JWKS_URL", "ftp://idp/keys");
    load_fails(FATAL "JWT_JWKS_URL=ftp://idp/keys is not an http:// or https:// URL. It is where the JSON Web Key "
                     "Set RS256 and EdDSA tokens are checked with is fetched");
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "RS256", "JWT_PUBLIC_KEY", "not a key at all");
    load_fails(FATAL "JWT_PUBLIC_KEY=not a key at all is not a PEM public key (no -----BEGIN PUBLIC KEY----- block "
                     "could be read). It is the PEM public key (RSA or Ed25519) RS256 and EdDSA tokens are checked "
                     "with");
    ENV("JWT_SKIP_PATHS", "/health, metrics");
    load_fails(FATAL "JWT_SKIP_PATHS=/health, metrics has an entry that does not start with /: metrics. It is the "
                     "comma-separated paths answered without a token (an entry ending in / is a prefix)");
    /* off: the keys are not required */
    ENV("JWT_ALGORITHM", "RS256");
    auth_config c;
    load_ok(&c);
    auth_config_free(&c);
}

static void test_config_key_types(void **state)
{
    (void)state;
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "EdDSA", "JWT_PUBLIC_KEY", g_rsa_pem);
    memset(&g_det, 0, sizeof g_det);
    auth_config c;
    assert_int_equal(auth_config_load(&c, env_get, &g_det), QERR_BAD_INPUT);
    assert_non_null(strstr(g_err, "is an RSA key, and JWT_ALGORITHM=EdDSA needs an Ed25519 key."));
    assert_non_null(strstr(g_err, FATAL "JWT_PUBLIC_KEY=-----BEGIN PUBLIC KEY----- "));
    auth_config_free(&c);
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "RS256", "JWT_PUBLIC_KEY", g_ed_pem);
    assert_int_equal(auth_config_load(&c, env_get, &g_det), QERR_BAD_INPUT);
    assert_non_null(strstr(g_err, "is an Ed25519 key, and JWT_ALGORITHM=RS256 needs an RSA key."));
    auth_config_free(&c);
    /* a PEM written on one line with literal \n sequences */
    buf one;
    buf_init(&one, 0);
    for (const char *p = g_rsa_pem; *p; p++)
        if (*p == '\n')
            buf_puts(&one, "\\n");
        else
            buf_putc(&one, *p);
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "RS256", "JWT_PUBLIC_KEY", buf_cstr(&one));
    load_ok(&c);
    assert_string_equal(c.public_key, g_rsa_pem);
    auth_config_free(&c);
    buf_free(&one);
    /* auto with a public key only is enough */
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "auto", "JWT_PUBLIC_KEY", g_ed_pem);
    load_ok(&c);
    auth_config_free(&c);
    /* a 1024-bit RSA key is refused */
    EVP_PKEY *small = EVP_RSA_gen(1024);
    char *pem = pem_of(small);
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "RS256", "JWT_PUBLIC_KEY", pem);
    assert_int_equal(auth_config_load(&c, env_get, &g_det), QERR_BAD_INPUT);
    assert_non_null(strstr(g_err, "(an RSA key of 1024 bits; RS256 needs 2048 to 16384)"));
    auth_config_free(&c);
    free(pem);
    EVP_PKEY_free(small);
}

static void test_skip_paths(void **state)
{
    (void)state;
    auth_config c;
    ENV("JWT_SKIP_PATHS", " /health , /assets/,/ ,, /metrics");
    load_ok(&c);
    assert_int_equal(c.nskip, 4);
    assert_true(auth_skip_path(&c, "/health"));
    assert_false(auth_skip_path(&c, "/health/x"));
    assert_true(auth_skip_path(&c, "/assets/"));
    assert_true(auth_skip_path(&c, "/assets/app.js"));
    assert_false(auth_skip_path(&c, "/assets"));
    assert_true(auth_skip_path(&c, "/"));
    /* "/" is exact only: it does not exempt everything */
    assert_false(auth_skip_path(&c, "/api/v1/push"));
    assert_true(auth_skip_path(&c, "/metrics"));
    assert_false(auth_skip_path(&c, "/metrics/prometheus"));
    auth_config_free(&c);
}

/* ---- header, base64url, structure ---------------------------------------------------------- */

static void expect_bearer(const char *h, const char *want)
{
    const char *t;
    size_t n;
    if (!want) {
        assert_int_equal(auth_bearer(h, &t, &n), -1);
        return;
    }
    assert_int_equal(auth_bearer(h, &t, &n), 0);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(t, want, n);
}

static void test_bearer(void **state)
{
    (void)state;
    expect_bearer("Bearer abc.def.ghi", "abc.def.ghi");
    expect_bearer("bearer abc", "abc");
    expect_bearer("BEARER   abc  ", "abc");
    expect_bearer("abc.def.ghi", "abc.def.ghi");
    expect_bearer("Bearer", NULL);
    expect_bearer("Bearerx", "Bearerx");
    expect_bearer("Bearer ", NULL);
    expect_bearer("bearer \t ", NULL);
    expect_bearer("   ", NULL);
    expect_bearer("", NULL);
}

static void expect_b64(const char *in, const char *want)
{
    buf b;
    buf_init(&b, 0);
    int rc = auth_b64url_decode(in, strlen(in), &b);
    if (!want) {
        assert_int_equal(rc, -1);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(b.len, strlen(want));
        assert_memory_equal(b.data ? b.data : "", want, b.len);
    }
    buf_free(&b);
}

static void test_b64url(void **state)
{
    (void)state;
    expect_b64("", "");
    expect_b64("YQ", "a");
    expect_b64("YWI", "ab");
    expect_b64("YWJj", "abc");
    expect_b64("-_8", "\xfb\xff");
    expect_b64("YQ==", NULL); /* no padding in JWTs */
    expect_b64("+/8", NULL);  /* standard alphabet */
    expect_b64("Y", NULL);    /* length 1 mod 4 */
    expect_b64("YR", NULL);   /* trailing bits set: a second spelling of "a" */
    expect_b64("Y Q", NULL);
}

static void expect_parse_error(const char *tok, const char *want)
{
    auth_token t;
    char err[300];
    assert_int_equal(auth_token_parse(tok, strlen(tok), &t, err, sizeof err), -1);
    assert_string_equal(err, want);
    auth_token_free(&t);
}

static void test_token_structure(void **state)
{
    (void)state;
    char *ok = make_token(SIGN_HS256, SECRET, "{\"alg\":\"HS256\",\"typ\":\"jwt\",\"kid\":\"k1\"}", "{\"a\":1}");
    auth_token t;
    char err[300];
    assert_int_equal(auth_token_parse(ok, strlen(ok), &t, err, sizeof err), 0);
    assert_string_equal(t.alg, "HS256");
    assert_true(t.has_kid);
    assert_string_equal(t.kid, "k1");
    assert_int_equal(t.sig.len, 32);
    assert_int_equal(t.signing_len, (size_t)(strrchr(ok, '.') - ok));
    assert_int_equal(t.payload.len, 7);
    auth_token_free(&t);
    free(ok);

    expect_parse_error("abc", "Token decode error: a JWT has three base64url parts separated by dots");
    expect_parse_error("a.b", "Token decode error: a JWT has three base64url parts separated by dots");
    expect_parse_error("a.b.c.d", "Token decode error: a JWT has three base64url parts separated by dots");
    expect_parse_error("!!.e30.", "Token decode error: the header is not base64url");
    expect_parse_error(".e30.", "Token decode error: the header is not base64url");
    expect_parse_error("e30.!!.", "Token decode error: the payload is not base64url");
    expect_parse_error("e30.e30.a=", "Token decode error: the signature is not base64url");
    /* bm90IGpzb24 = "not json" */
    expect_parse_error("bm90IGpzb24.e30.", "Token decode error: the header is not a JSON object");
    /* e30 = {} */
    expect_parse_error("e30.e30.", "Token decode error: the header has no alg string");
    char *x = make_token(SIGN_NONE, NULL, "{\"alg\":5}", "{}");
    expect_parse_error(x, "Token decode error: the header has no alg string");
    free(x);
    x = make_token(SIGN_NONE, NULL, "{\"alg\":\"HS256\",\"kid\":7}", "{}");
    expect_parse_error(x, "Token decode error: the header's kid must be a string of at most 255 bytes");
    free(x);
    x = make_token(SIGN_NONE, NULL, "{\"alg\":\"HS256\",\"typ\":\"at+jwt\"}", "{}");
    expect_parse_error(x, "Token decode error: the header's typ must be JWT (it is at+jwt)");
    free(x);
    x = make_token(SIGN_NONE, NULL, HS_HEADER, "[1,2]");
    expect_parse_error(x, "Token decode error: the payload is not a JSON object");
    free(x);
    x = make_token(SIGN_NONE, NULL, HS_HEADER, "{\"a\":");
    expect_parse_error(x, "Token decode error: the payload is not a JSON object");
    free(x);
    char *big = malloc(AUTH_TOKEN_MAX_BYTES + 2);
    memset(big, 'a', AUTH_TOKEN_MAX_BYTES + 1);
    big[AUTH_TOKEN_MAX_BYTES + 1] = '\0';
    expect_parse_error(big, "Token decode error: the token is longer than 16384 bytes");
    free(big);
}

/* ---- claims --------------------------------------------------------------------------------- */

static void expect_claims_error(const auth_config *c, const char *payload, const char *want)
{
    auth_result res;
    assert_int_equal(check_claims(c, payload, &res), AUTH_DENIED);
    assert_int_equal(res.status, 401);
    assert_string_equal(res.msg, want);
}

static void test_time_claims(void **state)
{
    (void)state;
    auth_config c;
    hs_config(&c);
    auth_result res;
    char p[256];
    /* expired, but within the 30 s skew: accepted; past it: refused */
    snprintf(p, sizeof p, "{\"exp\":%d,\"role\":\"admin\"}", NOW - 30);
    assert_int_equal(check_claims(&c, p, &res), AUTH_OK);
    auth_claims_free(&res.claims);
    snprintf(p, sizeof p, "{\"exp\":%d}", NOW - 31);
    expect_claims_error(&c, p, "Token has expired");
    snprintf(p, sizeof p, "{\"exp\":%d.5}", NOW - 31);
    expect_claims_error(&c, p, "Token has expired");
    snprintf(p, sizeof p, "{\"nbf\":%d}", NOW + 31);
    expect_claims_error(&c, p, "Token is not yet valid");
    snprintf(p, sizeof p, "{\"nbf\":%d}", NOW + 30);
    assert_int_equal(check_claims(&c, p, &res), AUTH_OK);
    auth_claims_free(&res.claims);
    snprintf(p, sizeof p, "{\"iat\":%d}", NOW + 31);
    expect_claims_error(&c, p, "Token was issued in the future");
    expect_claims_error(&c, "{\"exp\":\"tomorrow\"}",
                        "Token decode error: exp, nbf and iat must be numbers (seconds since the epoch)");
    /* no exp at all: accepted (as the earlier release did), and valid for as long as cached */
    assert_int_equal(check_claims(&c, "{}", &res), AUTH_OK);
    assert_true(res.claims.valid_until_s == INT64_MAX);
    auth_claims_free(&res.claims);
    snprintf(p, sizeof p, "{\"exp\":%d.9}", NOW + 100);
    assert_int_equal(check_claims(&c, p, &res), AUTH_OK);
    assert_int_equal(res.claims.valid_until_s, NOW + 130);
    auth_claims_free(&res.claims);
    auth_config_free(&c);
    /* no skew */
    ENV("JWT_ENABLED", "true", "JWT_SECRET", SECRET, "JWT_CLOCK_SKEW", "0");
    load_ok(&c);
    snprintf(p, sizeof p, "{\"exp\":%d}", NOW - 1);
    expect_claims_error(&c, p, "Token has expired");
    snprintf(p, sizeof p, "{\"exp\":%d}", NOW);
    assert_int_equal(check_claims(&c, p, &res), AUTH_OK);
    auth_claims_free(&res.claims);
    auth_config_free(&c);
}

static void test_issuer_audience(void **state)
{
    (void)state;
    auth_config c;
    ENV("JWT_ENABLED", "true", "JWT_SECRET", SECRET, "JWT_ISSUER", "https://idp", "JWT_AUDIENCE", "queen");
    load_ok(&c);
    auth_result res;
    assert_int_equal(check_claims(&c, "{\"iss\":\"https://idp\",\"aud\":\"queen\"}", &res), AUTH_OK);
    auth_claims_free(&res.claims);
    assert_int_equal(check_claims(&c, "{\"iss\":\"https://idp\",\"aud\":[\"x\",\"queen\"]}", &res), AUTH_OK);
    auth_claims_free(&res.claims);
    expect_claims_error(&c, "{\"iss\":\"https://other\",\"aud\":\"queen\"}", "Invalid token issuer");
    expect_claims_error(&c, "{\"aud\":\"queen\"}", "Invalid token issuer");
    expect_claims_error(&c, "{\"iss\":5,\"aud\":\"queen\"}", "Invalid token issuer");
    expect_claims_error(&c, "{\"iss\":\"https://idp\",\"aud\":\"other\"}", "Invalid token audience");
    expect_claims_error(&c, "{\"iss\":\"https://idp\",\"aud\":[\"x\",1]}", "Invalid token audience");
    expect_claims_error(&c, "{\"iss\":\"https://idp\"}", "Invalid token audience");
    auth_config_free(&c);
    /* not configured: not checked */
    hs_config(&c);
    assert_int_equal(check_claims(&c, "{\"iss\":7,\"aud\":{}}", &res), AUTH_OK);
    auth_claims_free(&res.claims);
    auth_config_free(&c);
}

static enum auth_role role_for(const auth_config *c, const char *payload)
{
    auth_result res;
    assert_int_equal(check_claims(c, payload, &res), AUTH_OK);
    enum auth_role r = res.claims.role;
    auth_claims_free(&res.claims);
    return r;
}

static void test_roles(void **state)
{
    (void)state;
    auth_config c;
    hs_config(&c);
    assert_int_equal(role_for(&c, "{}"), AUTH_ROLE_NONE);
    assert_int_equal(role_for(&c, "{\"role\":\"read-only\"}"), AUTH_ROLE_READ_ONLY);
    assert_int_equal(role_for(&c, "{\"role\":\"read-write\"}"), AUTH_ROLE_READ_WRITE);
    assert_int_equal(role_for(&c, "{\"role\":\"admin\"}"), AUTH_ROLE_ADMIN);
    assert_int_equal(role_for(&c, "{\"role\":\"Admin\"}"), AUTH_ROLE_NONE);
    assert_int_equal(role_for(&c, "{\"role\":[\"admin\"]}"), AUTH_ROLE_NONE);
    assert_int_equal(role_for(&c, "{\"roles\":[\"x\",\"read-only\"]}"), AUTH_ROLE_READ_ONLY);
    assert_int_equal(role_for(&c, "{\"roles\":[\"read-only\",\"admin\",\"read-write\"]}"), AUTH_ROLE_ADMIN);
    assert_int_equal(role_for(&c, "{\"roles\":\"admin\"}"), AUTH_ROLE_NONE);
    /* the highest of both claims */
    assert_int_equal(role_for(&c, "{\"role\":\"read-only\",\"roles\":[\"read-write\"]}"), AUTH_ROLE_READ_WRITE);
    assert_int_equal(role_for(&c, "{\"role\":\"admin\",\"roles\":[\"read-only\"]}"), AUTH_ROLE_ADMIN);
    assert_int_equal(role_for(&c, "{\"role\":\"ad\\u006din\"}"), AUTH_ROLE_ADMIN);
    assert_int_equal(auth_role_of(&c, "admin", 5), AUTH_ROLE_ADMIN);
    assert_int_equal(auth_role_of(&c, "admi", 4), AUTH_ROLE_NONE);
    auth_config_free(&c);
    ENV("JWT_ENABLED", "true", "JWT_SECRET", SECRET, "JWT_ROLES_CLAIM", "queen_role", "JWT_ROLES_ARRAY_CLAIM",
        "groups", "JWT_ROLE_ADMIN", "ops", "JWT_ROLE_READ_WRITE", "app", "JWT_ROLE_READ_ONLY", "viewer");
    load_ok(&c);
    assert_int_equal(role_for(&c, "{\"role\":\"admin\"}"), AUTH_ROLE_NONE);
    assert_int_equal(role_for(&c, "{\"queen_role\":\"viewer\"}"), AUTH_ROLE_READ_ONLY);
    assert_int_equal(role_for(&c, "{\"groups\":[\"app\"]}"), AUTH_ROLE_READ_WRITE);
    assert_int_equal(role_for(&c, "{\"groups\":[\"ops\"],\"queen_role\":\"viewer\"}"), AUTH_ROLE_ADMIN);
    auth_config_free(&c);
}

static void test_subject_and_tenant(void **state)
{
    (void)state;
    auth_config c;
    hs_config(&c);
    auth_result res;
    assert_int_equal(check_claims(&c, "{\"sub\":\"svc-\\u00e9\",\"tenant\":\"AAAAAAAA-0000-4000-8000-00000000000B\"}",
                                  &res),
                     AUTH_OK);
    assert_string_equal(res.claims.sub, "svc-\xc3\xa9");
    assert_true(res.claims.has_tenant);
    const uint8_t want[16] = {0xaa, 0xaa, 0xaa, 0xaa, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x0b};
    assert_memory_equal(res.claims.tenant, want, 16);
    auth_claims_free(&res.claims);
    /* no sub, no tenant */
    assert_int_equal(check_claims(&c, "{\"tenant\":null,\"sub\":\"\"}", &res), AUTH_OK);
    assert_null(res.claims.sub);
    assert_false(res.claims.has_tenant);
    auth_claims_free(&res.claims);
    expect_claims_error(&c, "{\"tenant\":\"acme\"}",
                        "Invalid token tenant: the tenant claim must be a tenant id (a UUID)");
    expect_claims_error(&c, "{\"tenant\":42}", "Invalid token tenant: the tenant claim must be a tenant id (a UUID)");
    expect_claims_error(&c, "{\"sub\":7}",
                        "Token decode error: sub must be a string of at most 1024 bytes without NUL characters");
    expect_claims_error(&c, "{\"sub\":\"a\\u0000b\"}", "Token decode error: a string holds a NUL character (\\u0000)");
    expect_claims_error(&c, "{\"x\":[\"\\u0000\"]}", "Token decode error: a string holds a NUL character (\\u0000)");
    /* an escaped backslash before u0000 is no NUL */
    assert_int_equal(check_claims(&c, "{\"x\":\"\\\\u0000\"}", &res), AUTH_OK);
    auth_claims_free(&res.claims);
    char big[1200];
    snprintf(big, sizeof big, "{\"sub\":\"%01025d\"}", 0);
    expect_claims_error(&c, big,
                        "Token decode error: sub must be a string of at most 1024 bytes without NUL characters");
    snprintf(big, sizeof big, "{\"sub\":\"%01024d\"}", 0);
    assert_int_equal(check_claims(&c, big, &res), AUTH_OK);
    assert_int_equal(strlen(res.claims.sub), 1024);
    auth_claims_free(&res.claims);
    auth_config_free(&c);
    /* a custom claim name */
    ENV("JWT_ENABLED", "true", "JWT_SECRET", SECRET, "JWT_TENANT_CLAIM", "https://queen/tenant");
    load_ok(&c);
    assert_int_equal(check_claims(&c, "{\"tenant\":\"acme\",\"https://queen/tenant\":"
                                      "\"00000000-0000-0000-0000-0000000000ff\"}", &res),
                     AUTH_OK);
    assert_true(res.claims.has_tenant);
    assert_int_equal(res.claims.tenant[15], 0xff);
    auth_claims_free(&res.claims);
    auth_config_free(&c);
}

/* ---- signatures ---------------------------------------------------------------------------- */

static enum auth_outcome verify_tok(const auth_config *c, const auth_key *sk, const auth_keyset *ks, const char *tok,
                                    auth_result *res)
{
    enum auth_outcome o = auth_verify(c, sk, ks, tok, strlen(tok), NOW, res);
    if (o == AUTH_OK)
        auth_claims_free(&res->claims);
    return o;
}

static void test_hs256(void **state)
{
    (void)state;
    auth_config c;
    hs_config(&c);
    auth_result res;
    char *t = make_token(SIGN_HS256, SECRET, HS_HEADER, "{\"sub\":\"a\"}");
    assert_int_equal(verify_tok(&c, NULL, NULL, t, &res), AUTH_OK);
    free(t);
    t = make_token(SIGN_HS256, "another secret", HS_HEADER, "{\"sub\":\"a\"}");
    assert_int_equal(verify_tok(&c, NULL, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    free(t);
    /* a changed payload under the old signature */
    t = make_token(SIGN_HS256, SECRET, HS_HEADER, "{\"sub\":\"a\",\"role\":\"read-only\"}");
    char *forged = make_token(SIGN_NONE, NULL, HS_HEADER, "{\"sub\":\"a\",\"role\":\"admin\"}");
    buf f;
    buf_init(&f, 0);
    buf_append(&f, forged, (size_t)(strrchr(forged, '.') - forged));
    buf_puts(&f, strrchr(t, '.'));
    assert_int_equal(verify_tok(&c, NULL, NULL, buf_cstr(&f), &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    buf_free(&f);
    free(forged);
    free(t);
    /* alg none and other algorithms are refused before any signature work */
    t = make_token(SIGN_NONE, NULL, "{\"alg\":\"none\"}", "{\"role\":\"admin\"}");
    assert_int_equal(verify_tok(&c, NULL, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Token uses none, expected HS256");
    free(t);
    t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\"}", "{}");
    assert_int_equal(verify_tok(&c, NULL, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Token uses RS256, expected HS256");
    free(t);
    /* the signature is checked before the claims */
    t = make_token(SIGN_HS256, "wrong", HS_HEADER, "{\"exp\":1}");
    assert_int_equal(verify_tok(&c, NULL, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    free(t);
    auth_config_free(&c);
}

static void test_rs256_and_alg_confusion(void **state)
{
    (void)state;
    auth_config c;
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "RS256", "JWT_PUBLIC_KEY", g_rsa_pem);
    load_ok(&c);
    auth_key k;
    char why[200];
    assert_int_equal(auth_key_from_pem(c.public_key, strlen(c.public_key), &k, why, sizeof why), 0);
    assert_int_equal(k.kty, AUTH_KTY_RSA);
    auth_result res;
    char *t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", "{\"sub\":\"r\"}");
    assert_int_equal(auth_verify(&c, &k, NULL, t, strlen(t), NOW, &res), AUTH_OK);
    assert_string_equal(res.claims.sub, "r");
    auth_claims_free(&res.claims);
    free(t);
    t = make_token(SIGN_RS256, g_rsa2, "{\"alg\":\"RS256\"}", "{}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    free(t);
    /* the classic confusion: an HS256 token whose HMAC key is the (public) PEM text */
    t = make_token(SIGN_HS256, g_rsa_pem, HS_HEADER, "{\"role\":\"admin\"}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Token uses HS256, expected RS256");
    free(t);
    auth_config_free(&c);
    /* the same in auto mode: HS256 tokens need JWT_SECRET, the PEM is never one */
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "auto", "JWT_PUBLIC_KEY", g_rsa_pem);
    load_ok(&c);
    t = make_token(SIGN_HS256, g_rsa_pem, HS_HEADER, "{\"role\":\"admin\"}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Token uses HS256, and this server has no JWT_SECRET");
    free(t);
    t = make_token(SIGN_EDDSA, g_ed, "{\"alg\":\"EdDSA\"}", "{}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Token uses EdDSA, and JWT_PUBLIC_KEY is an RSA key");
    free(t);
    t = make_token(SIGN_NONE, NULL, "{\"alg\":\"ES256\"}", "{}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Unsupported algorithm: ES256");
    free(t);
    t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\"}", "{}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_OK);
    free(t);
    auth_key_clear(&k);
    auth_config_free(&c);
}

static void test_eddsa(void **state)
{
    (void)state;
    auth_config c;
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "EdDSA", "JWT_PUBLIC_KEY", g_ed_pem);
    load_ok(&c);
    auth_key k;
    char why[200];
    assert_int_equal(auth_key_from_pem(g_ed_pem, strlen(g_ed_pem), &k, why, sizeof why), 0);
    assert_int_equal(k.kty, AUTH_KTY_OKP);
    auth_result res;
    char *t = make_token(SIGN_EDDSA, g_ed, "{\"alg\":\"EdDSA\",\"typ\":\"JWT\"}", "{\"sub\":\"e\",\"role\":\"admin\"}");
    assert_int_equal(auth_verify(&c, &k, NULL, t, strlen(t), NOW, &res), AUTH_OK);
    assert_int_equal(res.claims.role, AUTH_ROLE_ADMIN);
    auth_claims_free(&res.claims);
    /* one flipped signature character */
    char *last = t + strlen(t) - 3;
    *last = *last == 'A' ? 'B' : 'A';
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    free(t);
    /* a signature of 63 bytes */
    t = make_token(SIGN_EDDSA, g_ed, "{\"alg\":\"EdDSA\"}", "{}");
    buf sh;
    buf_init(&sh, 0);
    buf_append(&sh, t, (size_t)(strrchr(t, '.') - t) + 1);
    uint8_t zeros[63] = {0};
    b64url(&sh, zeros, sizeof zeros);
    assert_int_equal(verify_tok(&c, &k, NULL, buf_cstr(&sh), &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    buf_free(&sh);
    free(t);
    t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\"}", "{}");
    assert_int_equal(verify_tok(&c, &k, NULL, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Token uses RS256, expected EdDSA");
    free(t);
    auth_key_clear(&k);
    auth_config_free(&c);
}

/* ---- JWKS ---------------------------------------------------------------------------------- */

static char *jwks_doc(void)
{
    char *n = jwk_param(g_rsa, OSSL_PKEY_PARAM_RSA_N), *e = jwk_param(g_rsa, OSSL_PKEY_PARAM_RSA_E);
    char *n2 = jwk_param(g_rsa2, OSSL_PKEY_PARAM_RSA_N);
    char *x = jwk_param(g_ed, NULL);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"keys\":["
               "{\"kty\":\"EC\",\"kid\":\"ec\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"},"
               "{\"kty\":\"RSA\",\"kid\":\"enc\",\"use\":\"enc\",\"n\":\"%s\",\"e\":\"%s\"},"
               "{\"kty\":\"RSA\",\"kid\":\"rs512\",\"alg\":\"RS512\",\"n\":\"%s\",\"e\":\"%s\"},"
               "{\"kty\":\"RSA\",\"kid\":\"broken\",\"n\":\"!!\",\"e\":\"%s\"},"
               "{\"kty\":\"OKP\",\"kid\":\"x25519\",\"crv\":\"X25519\",\"x\":\"%s\"},"
               "\"not an object\","
               "{\"kty\":\"RSA\",\"kid\":\"r1\",\"alg\":\"RS256\",\"use\":\"sig\",\"n\":\"%s\",\"e\":\"%s\"},"
               "{\"kty\":\"RSA\",\"kid\":\"r1\",\"n\":\"%s\",\"e\":\"%s\"},"
               "{\"kty\":\"RSA\",\"kid\":\"r2\",\"n\":\"%s\",\"e\":\"%s\"},"
               "{\"kty\":\"OKP\",\"kid\":\"ed\",\"crv\":\"Ed25519\",\"alg\":\"EdDSA\",\"x\":\"%s\"}"
               "],\"extra\":true}",
               n, e, n, e, e, x, n, e, n2, e, n2, e, x);
    free(n);
    free(e);
    free(n2);
    free(x);
    return buf_steal(&b, NULL);
}

static void test_jwks_parse(void **state)
{
    (void)state;
    char *doc = jwks_doc();
    char err[300];
    auth_keyset *s = auth_jwks_parse(doc, strlen(doc), err, sizeof err);
    assert_non_null(s);
    /* r1 (the first of the two), r2, ed */
    assert_int_equal(s->n, 3);
    assert_string_equal(s->keys[0].kid, "r1");
    assert_string_equal(s->keys[1].kid, "r2");
    assert_string_equal(s->keys[2].kid, "ed");
    assert_int_equal(s->keys[2].kty, AUTH_KTY_OKP);
    assert_ptr_equal(auth_keyset_find(s, "r2", AUTH_KTY_RSA), &s->keys[1]);
    assert_null(auth_keyset_find(s, "r2", AUTH_KTY_OKP));
    assert_null(auth_keyset_find(s, "enc", AUTH_KTY_RSA));
    assert_ptr_equal(auth_keyset_find(s, NULL, AUTH_KTY_RSA), &s->keys[0]);
    assert_ptr_equal(auth_keyset_find(s, NULL, AUTH_KTY_OKP), &s->keys[2]);
    /* the first r1 is g_rsa's: its tokens verify; r2 is g_rsa2's */
    auth_config c;
    ENV("JWT_ENABLED", "true", "JWT_ALGORITHM", "auto", "JWT_JWKS_URL", "http://127.0.0.1:1/jwks");
    load_ok(&c);
    auth_result res;
    char *t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", "{}");
    assert_int_equal(verify_tok(&c, NULL, s, t, &res), AUTH_OK);
    free(t);
    t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\",\"kid\":\"r2\"}", "{}");
    assert_int_equal(verify_tok(&c, NULL, s, t, &res), AUTH_DENIED);
    assert_string_equal(res.msg, "Invalid token signature");
    free(t);
    t = make_token(SIGN_RS256, g_rsa2, "{\"alg\":\"RS256\",\"kid\":\"r2\"}", "{}");
    assert_int_equal(verify_tok(&c, NULL, s, t, &res), AUTH_OK);
    free(t);
    t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\"}", "{}");
    assert_int_equal(verify_tok(&c, NULL, s, t, &res), AUTH_OK);
    free(t);
    t = make_token(SIGN_EDDSA, g_ed, "{\"alg\":\"EdDSA\",\"kid\":\"ed\"}", "{\"role\":\"read-only\"}");
    assert_int_equal(verify_tok(&c, NULL, s, t, &res), AUTH_OK);
    free(t);
    t = make_token(SIGN_RS256, g_rsa, "{\"alg\":\"RS256\",\"kid\":\"rotated\"}", "{}");
    assert_int_equal(verify_tok(&c, NULL, s, t, &res), AUTH_UNKNOWN_KID);
    assert_string_equal(res.msg, "Unknown key ID: rotated");
    /* before the first fetch there is no set: every key is unknown */
    assert_int_equal(verify_tok(&c, NULL, NULL, t, &res), AUTH_UNKNOWN_KID);
    free(t);
    auth_config_free(&c);
    auth_keyset_free(s);
    free(doc);

    assert_null(auth_jwks_parse("[]", 2, err, sizeof err));
    assert_string_equal(err, "the JWKS has no \"keys\" array");
    assert_null(auth_jwks_parse("{\"keys\":{}}", 11, err, sizeof err));
    assert_null(auth_jwks_parse("{\"keys\":[", 9, err, sizeof err));
    assert_non_null(strstr(err, "the JWKS is not JSON: "));
    s = auth_jwks_parse("{\"keys\":[]}", 11, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->n, 0);
    auth_keyset_free(s);
}

static void test_jwks_limits(void **state)
{
    (void)state;
    char *x = jwk_param(g_ed, NULL);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"keys\":[");
    for (int i = 0; i < AUTH_JWKS_MAX_KEYS + 10; i++)
        buf_printf(&b, "%s{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"k%d\",\"x\":\"%s\"}", i ? "," : "", i, x);
    buf_puts(&b, "]}");
    char err[300];
    auth_keyset *s = auth_jwks_parse(b.data, b.len, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->n, AUTH_JWKS_MAX_KEYS);
    auth_keyset_free(s);
    /* a short Ed25519 key is skipped */
    buf_reset(&b);
    buf_puts(&b, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}]}");
    s = auth_jwks_parse(b.data, b.len, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->n, 0);
    auth_keyset_free(s);
    buf_free(&b);
    free(x);
    char *big = calloc(1, AUTH_JWKS_MAX_BYTES + 2);
    memset(big, ' ', AUTH_JWKS_MAX_BYTES + 1);
    assert_null(auth_jwks_parse(big, AUTH_JWKS_MAX_BYTES + 1, err, sizeof err));
    assert_string_equal(err, "the JWKS is larger than 1048576 bytes");
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_lines),
        cmocka_unit_test(test_config_key_types),
        cmocka_unit_test(test_skip_paths),
        cmocka_unit_test(test_bearer),
        cmocka_unit_test(test_b64url),
        cmocka_unit_test(test_token_structure),
        cmocka_unit_test(test_time_claims),
        cmocka_unit_test(test_issuer_audience),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_subject_and_tenant),
        cmocka_unit_test(test_hs256),
        cmocka_unit_test(test_rs256_and_alg_confusion),
        cmocka_unit_test(test_eddsa),
        cmocka_unit_test(test_jwks_parse),
        cmocka_unit_test(test_jwks_limits),
    };
    return cmocka_run_group_tests(tests, setup_keys, teardown_keys);
}
