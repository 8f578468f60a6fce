/* auth_config.c — the JWT_* environment: one table row per variable (parsed by the broker's
 * cfg_parse, so bad values stop the boot with the same one line), then the checks that span
 * variables (an algorithm needs its keys) and JWT_SKIP_PATHS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "core/util.h"

static const char *const alg_names[] = {"HS256", "RS256", "EdDSA", "auto", NULL};

#define OFF(f) offsetof(auth_config, f)
static const cfg_opt auth_rows[] = {
    {"JWT_ENABLED", NULL, CFG_BOOL, OFF(enabled), 0, 0, 1, NULL, NULL, 0,
     "It turns on JWT authentication of the HTTP API"},
    {"JWT_ALGORITHM", NULL, CFG_ENUM, OFF(algorithm), AUTH_ALG_HS256, 0, 0, NULL, alg_names, 0,
     "It is the signature algorithm tokens must use (auto: HS256, RS256 or EdDSA, as the token says)"},
    {"JWT_SECRET", NULL, CFG_STRING, OFF(secret), 0, 0, 0, NULL, NULL, 0, "It is the HS256 key tokens are signed with"},
    {"JWT_PUBLIC_KEY", NULL, CFG_STRING, OFF(public_key), 0, 0, 0, NULL, NULL, 0,
     "It is the PEM public key (RSA or Ed25519) RS256 and EdDSA tokens are checked with"},
    {"JWT_JWKS_URL", NULL, CFG_STRING, OFF(jwks_url), 0, 0, 0, NULL, NULL, 0,
     "It is where the JSON Web Key Set RS256 and EdDSA tokens are checked with is fetched"},
    {"JWT_ISSUER", NULL, CFG_STRING, OFF(issuer), 0, 0, 0, NULL, NULL, 0,
     "It is the iss claim every token must carry (unset: not checked)"},
    {"JWT_AUDIENCE", NULL, CFG_STRING, OFF(audience), 0, 0, 0, NULL, NULL, 0,
     "It is the aud claim every token must carry (unset: not checked)"},
    {"JWT_CLOCK_SKEW", NULL, CFG_INT, OFF(clock_skew_s), 30, 0, 86400, NULL, NULL, 0,
     "It is the leeway in seconds for the exp, nbf and iat claims"},
    {"JWT_SKIP_PATHS", NULL, CFG_STRING, OFF(skip_paths_raw), 0, 0, 0, "/health,/metrics/prometheus,/metrics,/", NULL,
     0, "It is the comma-separated paths answered without a token (an entry ending in / is a prefix)"},
    {"JWT_JWKS_REFRESH_INTERVAL", NULL, CFG_INT, OFF(jwks_refresh_s), 3600, 1, 604800, NULL, NULL, 0,
     "It is how often in seconds the JWKS is fetched again"},
    {"JWT_JWKS_TIMEOUT_MS", NULL, CFG_INT, OFF(jwks_timeout_ms), 5000, 100, 120000, NULL, NULL, 0,
     "It is how long in milliseconds one JWKS fetch may take"},
    {"JWT_ROLES_CLAIM", NULL, CFG_STRING, OFF(roles_claim), 0, 0, 0, "role", NULL, 0,
     "It is the claim holding the token's role as a string"},
    {"JWT_ROLES_ARRAY_CLAIM", NULL, CFG_STRING, OFF(roles_array_claim), 0, 0, 0, "roles", NULL, 0,
     "It is the claim holding the token's roles as an array of strings"},
    {"JWT_ROLE_ADMIN", NULL, CFG_STRING, OFF(role_admin), 0, 0, 0, "admin", NULL, 0,
     "It is the role name that grants admin access"},
    {"JWT_ROLE_READ_WRITE", NULL, CFG_STRING, OFF(role_read_write), 0, 0, 0, "read-write", NULL, 0,
     "It is the role name that grants read-write access"},
    {"JWT_ROLE_READ_ONLY", NULL, CFG_STRING, OFF(role_read_only), 0, 0, 0, "read-only", NULL, 0,
     "It is the role name that grants read-only access"},
    {"JWT_TENANT_CLAIM", NULL, CFG_STRING, OFF(tenant_claim), 0, 0, 0, "tenant", NULL, 0,
     "It is the claim holding the tenant (a UUID) a token's requests act for"},
};
#undef OFF

static const char *what_of(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(auth_rows); i++)
        if (strcmp(auth_rows[i].name, name) == 0)
            return auth_rows[i].what;
    return "";
}

/* PEM keys in one-line environment values are often written with literal "\n" sequences:
 * turned into newlines when the value has no real newline. */
static void unescape_newlines(char *s)
{
    if (!s || strchr(s, '\n'))
        return;
    char *o = s;
    for (const char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            *o++ = '\n';
            p++;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

/* At most 40 bytes of a value, on one line, for the boot message. */
static void shown(const char *v, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = v; *p && n + 1 < cap && n < 40; p++)
        out[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
    out[n] = '\0';
    if (strlen(v) > n && n + 4 < cap)
        strcat(out, "...");
}

static char *trim_dup(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return n ? xstrndup(s, n) : NULL;
}

static int parse_skip_paths(auth_config *c, char *err, size_t errlen)
{
    const char *s = c->skip_paths_raw;
    if (!s)
        return 0;
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    c->skip_paths = xcalloc(cap, sizeof *c->skip_paths);
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        char *e = trim_dup(s, n);
        if (e) {
            if (e[0] != '/') {
                snprintf(err, errlen,
                         "ERROR boot: FATAL: queen: JWT_SKIP_PATHS=%s has an entry that does not start with /: %s. %s",
                         c->skip_paths_raw, e, what_of("JWT_SKIP_PATHS"));
                free(e);
                return -1;
            }
            c->skip_paths[c->nskip++] = e;
        }
        if (!comma)
            break;
        s = comma + 1;
    }
    return 0;
}

static int starts_with_ci(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return strlen(s) >= n && ascii_ieq(s, n, prefix);
}

/* The keys the algorithm needs, and a static key that is what it says. */
static int check_keys(auth_config *c, char *err, size_t errlen)
{
    const char *alg = alg_names[c->algorithm];
    int wants_secret = c->algorithm == AUTH_ALG_HS256;
    int wants_public = c->algorithm == AUTH_ALG_RS256 || c->algorithm == AUTH_ALG_EDDSA;
    if (wants_secret && !c->secret) {
        snprintf(err, errlen, "ERROR boot: FATAL: queen: JWT_SECRET is not set. %s; JWT_ENABLED=true with "
                 "JWT_ALGORITHM=%s needs it", what_of("JWT_SECRET"), alg);
        return -1;
    }
    if (wants_public && !c->public_key && !c->jwks_url) {
        snprintf(err, errlen, "ERROR boot: FATAL: queen: JWT_PUBLIC_KEY is not set. %s; JWT_ENABLED=true with "
                 "JWT_ALGORITHM=%s needs it or JWT_JWKS_URL", what_of("JWT_PUBLIC_KEY"), alg);
        return -1;
    }
    if (c->algorithm == AUTH_ALG_AUTO && !c->secret && !c->public_key && !c->jwks_url) {
        snprintf(err, errlen, "ERROR boot: FATAL: queen: JWT_SECRET is not set. %s; JWT_ENABLED=true with "
                 "JWT_ALGORITHM=auto needs it, JWT_PUBLIC_KEY or JWT_JWKS_URL", what_of("JWT_SECRET"));
        return -1;
    }
    if (c->jwks_url && !starts_with_ci(c->jwks_url, "http://") && !starts_with_ci(c->jwks_url, "https://")) {
        snprintf(err, errlen, "ERROR boot: FATAL: queen: JWT_JWKS_URL=%s is not an http:// or https:// URL. %s",
                 c->jwks_url, what_of("JWT_JWKS_URL"));
        return -1;
    }
    if (c->public_key) {
        char why[200], v[64];
        auth_key k;
        shown(c->public_key, v, sizeof v);
        if (auth_key_from_pem(c->public_key, strlen(c->public_key), &k, why, sizeof why) < 0) {
            snprintf(err, errlen, "ERROR boot: FATAL: queen: JWT_PUBLIC_KEY=%s is not a PEM public key (%s). %s", v,
                     why, what_of("JWT_PUBLIC_KEY"));
            return -1;
        }
        int kty = k.kty;
        auth_key_clear(&k);
        if ((c->algorithm == AUTH_ALG_RS256 && kty != AUTH_KTY_RSA) ||
            (c->algorithm == AUTH_ALG_EDDSA && kty != AUTH_KTY_OKP)) {
            snprintf(err, errlen, "ERROR boot: FATAL: queen: JWT_PUBLIC_KEY=%s is an %s key, and JWT_ALGORITHM=%s "
                     "needs an %s key. %s", v, kty == AUTH_KTY_RSA ? "RSA" : "Ed25519", alg,
                     c->algorithm == AUTH_ALG_RS256 ? "RSA" : "Ed25519", what_of("JWT_PUBLIC_KEY"));
            return -1;
        }
    }
    return 0;
}

/* After cfg_parse: the checks that span rows. */
static int load(auth_config *c, char *err, size_t errlen)
{
    unescape_newlines(c->public_key);
    if (parse_skip_paths(c, err, errlen) < 0)
        return -1;
    if (c->enabled && check_keys(c, err, errlen) < 0)
        return -1;
    return 0;
}

qerr auth_config_load(auth_config *c, config_getenv_fn get, qerr_detail *err)
{
    qerr_detail scratch;
    qerr_detail *d = err ? err : &scratch;
    memset(c, 0, sizeof *c);
    qerr e = cfg_parse(auth_rows, ARRAY_LEN(auth_rows), c, "queen", get, d);
    if (e != QERR_OK)
        return e;
    return load(c, d->text, sizeof d->text) < 0 ? qerr_mark(d, QERR_BAD_INPUT, NULL) : QERR_OK;
}

void auth_config_free(auth_config *c)
{
    char **strs[] = {&c->secret, &c->public_key, &c->jwks_url, &c->issuer, &c->audience, &c->skip_paths_raw,
                     &c->roles_claim, &c->roles_array_claim, &c->role_admin, &c->role_read_write,
                     &c->role_read_only, &c->tenant_claim};
    for (size_t i = 0; i < ARRAY_LEN(strs); i++)
        free(*strs[i]);
    for (size_t i = 0; i < c->nskip; i++)
        free(c->skip_paths[i]);
    free(c->skip_paths);
    memset(c, 0, sizeof *c);
}

int auth_skip_path(const auth_config *c, const char *path)
{
    for (size_t i = 0; i < c->nskip; i++) {
        const char *e = c->skip_paths[i];
        size_t n = strlen(e);
        if (strcmp(path, e) == 0)
            return 1;
        if (n > 1 && e[n - 1] == '/' && strncmp(path, e, n) == 0)
            return 1;
    }
    return 0;
}
