/* token.c — everything about a token that needs no key: the Authorization header, base64url,
 * the three parts and the header, the registered claims, roles and the tenant claim.
 * Messages are the 401 texts the client sees (the earlier release's where it had one). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "core/base64.h"
#include "core/util.h"
#include "core/uuid.h"
#include "json/json.h"

int auth_bearer(const char *h, const char **tok, size_t *len)
{
    size_t n = strlen(h);
    while (n && (*h == ' ' || *h == '\t')) {
        h++;
        n--;
    }
    /* the scheme alone ("Bearer", as proxies leave it once they trim the blank) carries no token */
    if (n == 6 && ascii_ieq(h, 6, "bearer"))
        return -1;
    if (n >= 7 && ascii_ieq(h, 7, "bearer ")) {
        h += 7;
        n -= 7;
    }
    while (n && (*h == ' ' || *h == '\t')) {
        h++;
        n--;
    }
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (!n)
        return -1;
    *tok = h;
    *len = n;
    return 0;
}

int auth_b64url_decode(const char *s, size_t n, buf *out)
{
    return b64_decode_buf(s, n, out, B64_URL_ONLY | B64_NO_PADDING) < 0 ? -1 : 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A JSON string member decoded into out (NUL-terminated, no NUL inside): 1 present, 0
 * absent, -1 not a string / too long / holds a NUL. */
static int str_member(const json_doc *d, int obj, const char *key, size_t max, buf *out)
{
    int t = json_get(d, obj, key);
    if (t < 0)
        return 0;
    if (json_type_of(d, t) != JSON_STRING || json_str_decoded_len(d, t) > max)
        return -1;
    buf_reset(out);
    json_str_decode(d, t, out);
    if (memchr(out->data ? out->data : "", '\0', out->len))
        return -1;
    buf_cstr(out);
    return 1;
}

/* Whether valid JSON text holds a string with an escaped NUL (\u0000). libjwt's JSON reader
 * refuses those, which would come back as a bare signature failure: refused here by name. */
static int has_escaped_nul(const char *p, size_t n)
{
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in) {
            in = p[i] == '"';
        } else if (p[i] == '"') {
            in = 0;
        } else if (p[i] == '\\') {
            if (i + 5 < n && p[i + 1] == 'u' && memcmp(p + i + 2, "0000", 4) == 0)
                return 1;
            i++;
        }
    }
    return 0;
}

void auth_token_free(auth_token *t)
{
    buf_free(&t->sig);
    buf_free(&t->payload);
}

int auth_token_parse(const char *tok, size_t len, auth_token *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    buf_init(&t->sig, 0);
    buf_init(&t->payload, 0);
    if (len > AUTH_TOKEN_MAX_BYTES)
        return fail(err, errlen, "Token decode error: the token is longer than %d bytes", AUTH_TOKEN_MAX_BYTES);
    const char *d1 = memchr(tok, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
        return fail(err, errlen, "Token decode error: a JWT has three base64url parts separated by dots");
    buf head;
    buf_init(&head, 0);
    json_doc hd;
    memset(&hd, 0, sizeof hd);
    int rc = -1;
    if (auth_b64url_decode(tok, (size_t)(d1 - tok), &head) < 0 || head.len == 0) {
        fail(err, errlen, "Token decode error: the header is not base64url");
        goto out;
    }
    if (auth_b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &t->payload) < 0) {
        fail(err, errlen, "Token decode error: the payload is not base64url");
        goto out;
    }
    if (auth_b64url_decode(d2 + 1, len - (size_t)(d2 + 1 - tok), &t->sig) < 0) {
        fail(err, errlen, "Token decode error: the signature is not base64url");
        goto out;
    }
    json_opts o = {.max_tokens = 256, .token_depth = 1};
    if (json_parse(&hd, head.data, head.len, &o) < 0 || json_type_of(&hd, 0) != JSON_OBJECT) {
        fail(err, errlen, "Token decode error: the header is not a JSON object");
        goto out;
    }
    buf s;
    buf_init(&s, 0);
    int a = str_member(&hd, 0, "alg", sizeof t->alg - 1, &s);
    if (a > 0)
        memcpy(t->alg, s.data, s.len + 1);
    int k = a < 0 ? 0 : str_member(&hd, 0, "kid", AUTH_KID_MAX_BYTES, &s);
    if (k > 0) {
        memcpy(t->kid, s.data, s.len + 1);
        t->has_kid = 1;
    }
    int ty = str_member(&hd, 0, "typ", 64, &s);
    /* libjwt 1.10 refuses any typ but "JWT" (case-insensitive); say so instead of a bare
     * signature failure */
    int typ_ok = ty == 0 || (ty > 0 && ascii_ieq(s.data, s.len, "JWT"));
    char typ[80];
    snprintf(typ, sizeof typ, "%s", ty > 0 ? s.data : "");
    buf_free(&s);
    if (a <= 0) {
        fail(err, errlen, "Token decode error: the header has no alg string");
        goto out;
    }
    if (k < 0) {
        fail(err, errlen, "Token decode error: the header's kid must be a string of at most %d bytes",
             AUTH_KID_MAX_BYTES);
        goto out;
    }
    if (!typ_ok) {
        fail(err, errlen, "Token decode error: the header's typ must be JWT%s%s%s", ty > 0 ? " (it is " : "", typ,
             ty > 0 ? ")" : "");
        goto out;
    }
    json_doc pd;
    memset(&pd, 0, sizeof pd);
    json_opts po = {.max_tokens = 0, .token_depth = 1};
    if (json_parse(&pd, t->payload.data ? t->payload.data : "", t->payload.len, &po) < 0 ||
        json_type_of(&pd, 0) != JSON_OBJECT) {
        json_doc_free(&pd);
        fail(err, errlen, "Token decode error: the payload is not a JSON object");
        goto out;
    }
    json_doc_free(&pd);
    if (has_escaped_nul(head.data, head.len) || has_escaped_nul(t->payload.data, t->payload.len)) {
        fail(err, errlen, "Token decode error: a string holds a NUL character (\\u0000)");
        goto out;
    }
    t->signing_len = (size_t)(d2 - tok);
    rc = 0;
out:
    json_doc_free(&hd);
    buf_free(&head);
    return rc;
}

enum auth_role auth_role_of(const auth_config *c, const char *name, size_t n)
{
    if (c->role_admin && strlen(c->role_admin) == n && memcmp(name, c->role_admin, n) == 0)
        return AUTH_ROLE_ADMIN;
    if (c->role_read_write && strlen(c->role_read_write) == n && memcmp(name, c->role_read_write, n) == 0)
        return AUTH_ROLE_READ_WRITE;
    if (c->role_read_only && strlen(c->role_read_only) == n && memcmp(name, c->role_read_only, n) == 0)
        return AUTH_ROLE_READ_ONLY;
    return AUTH_ROLE_NONE;
}

/* A NumericDate claim (seconds, possibly fractional): 1 present, 0 absent, -1 not a number. */
static int time_claim(const json_doc *d, const char *key, double *out)
{
    int t = json_get(d, 0, key);
    if (t < 0 || json_type_of(d, t) == JSON_NULL)
        return 0;
    if (json_type_of(d, t) != JSON_NUMBER || json_double(d, t, out) < 0 || !isfinite(*out))
        return -1;
    return 1;
}

static enum auth_role role_of_value(const auth_config *c, const json_doc *d, int t)
{
    const char *p;
    size_t n;
    if (json_type_of(d, t) != JSON_STRING)
        return AUTH_ROLE_NONE;
    if (json_str_span(d, t, &p, &n) == 0)
        return auth_role_of(c, p, n);
    buf b;
    buf_init(&b, 0);
    json_str_decode(d, t, &b);
    enum auth_role r = auth_role_of(c, b.data ? b.data : "", b.len);
    buf_free(&b);
    return r;
}

void auth_claims_free(auth_claims *c)
{
    free(c->sub);
    memset(c, 0, sizeof *c);
}

int auth_claims_check(const auth_config *c, const char *json, size_t n, int64_t now_s, auth_claims *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts o = {.max_tokens = 0, .token_depth = 2};
    if (json_parse(&d, json, n, &o) < 0 || json_type_of(&d, 0) != JSON_OBJECT) {
        json_doc_free(&d);
        return fail(err, errlen, "Token decode error: the payload is not a JSON object");
    }
    int rc = -1;
    buf s;
    buf_init(&s, 0);
    double exp = 0, nbf = 0, iat = 0, now = (double)now_s, skew = (double)c->clock_skew_s;
    int has_exp = time_claim(&d, "exp", &exp), has_nbf = time_claim(&d, "nbf", &nbf),
        has_iat = time_claim(&d, "iat", &iat);
    if (has_exp < 0 || has_nbf < 0 || has_iat < 0) {
        fail(err, errlen, "Token decode error: exp, nbf and iat must be numbers (seconds since the epoch)");
        goto out;
    }
    if (has_exp && now > exp + skew) {
        fail(err, errlen, "Token has expired");
        goto out;
    }
    out->valid_until_s = has_exp ? (exp + skew >= 9.2e18 ? INT64_MAX : (int64_t)floor(exp + skew)) : INT64_MAX;
    if (has_nbf && now + skew < nbf) {
        fail(err, errlen, "Token is not yet valid");
        goto out;
    }
    if (has_iat && now + skew < iat) {
        fail(err, errlen, "Token was issued in the future");
        goto out;
    }
    if (c->issuer) {
        if (str_member(&d, 0, "iss", 4096, &s) <= 0 || strcmp(s.data, c->issuer) != 0) {
            fail(err, errlen, "Invalid token issuer");
            goto out;
        }
    }
    if (c->audience) {
        /* aud is a string or an array of strings; one of them must be ours */
        int t = json_get(&d, 0, "aud"), ok = 0;
        if (json_type_of(&d, t) == JSON_STRING) {
            ok = json_str_eq(&d, t, c->audience);
        } else if (json_type_of(&d, t) == JSON_ARRAY) {
            int e = json_first(&d, t);
            for (uint32_t i = 0; i < d.toks[t].count && !ok; i++, e = json_next(&d, e))
                ok = json_type_of(&d, e) == JSON_STRING && json_str_eq(&d, e, c->audience);
        }
        if (!ok) {
            fail(err, errlen, "Invalid token audience");
            goto out;
        }
    }
    int r = str_member(&d, 0, "sub", AUTH_SUB_MAX_BYTES, &s);
    if (r < 0) {
        fail(err, errlen, "Token decode error: sub must be a string of at most %d bytes without NUL characters",
             AUTH_SUB_MAX_BYTES);
        goto out;
    }
    if (r > 0 && s.len > 0)
        out->sub = xstrndup(s.data, s.len);
    /* the role: the string claim and every string of the array claim; the highest wins */
    int t = json_get(&d, 0, c->roles_claim);
    if (t >= 0) {
        enum auth_role x = role_of_value(c, &d, t);
        if (x > out->role)
            out->role = x;
    }
    t = json_get(&d, 0, c->roles_array_claim);
    if (json_type_of(&d, t) == JSON_ARRAY) {
        int e = json_first(&d, t);
        for (uint32_t i = 0; i < d.toks[t].count; i++, e = json_next(&d, e)) {
            enum auth_role x = role_of_value(c, &d, e);
            if (x > out->role)
                out->role = x;
        }
    }
    /* the tenant: absent or null → the default tenant; anything else must be a UUID */
    t = json_get(&d, 0, c->tenant_claim);
    if (t >= 0 && json_type_of(&d, t) != JSON_NULL) {
        uuid u;
        buf_reset(&s);
        if (json_type_of(&d, t) == JSON_STRING)
            json_str_decode(&d, t, &s);
        if (json_type_of(&d, t) != JSON_STRING || uuid_parse(s.data ? s.data : "", s.len, &u) < 0) {
            fail(err, errlen, "Invalid token tenant: the %s claim must be a tenant id (a UUID)", c->tenant_claim);
            goto out;
        }
        memcpy(out->tenant, u.b, 16);
        out->has_tenant = 1;
    }
    rc = 0;
out:
    if (rc < 0)
        auth_claims_free(out);
    buf_free(&s);
    json_doc_free(&d);
    return rc;
}
