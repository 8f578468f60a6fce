/* cpcfg.c — see cpcfg.h. */
#include "cpcfg.h"

#include <openssl/crypto.h>
#include <stdarg.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/util.h"

#define OFF(f) offsetof(cp_config, f)
static const cfg_opt cp_rows[] = {
    {"QUEEN_PROXY_PORT", NULL, CFG_INT, OFF(port), 6711, 1, 65535, NULL, NULL, 0,
     "It is the port of the embedded proxy: the control plane (/api/cp/) and the clusters' data plane"},
};

static const char TOKEN_WHAT[] = "It is the control-plane token that /api/cp/ requests carry in x-queen-cp-token";

static qerr refuse(qerr_detail *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static qerr refuse(qerr_detail *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qerr e = qerr_setv(d, QERR_BAD_INPUT, NULL, NULL, fmt, ap);
    va_end(ap);
    return e;
}

qerr cp_config_load(cp_config *c, config_getenv_fn get, int64_t broker_port, qerr_detail *err)
{
    memset(c, 0, sizeof *c);
    const char *t = get("QUEEN_PROXY_CP_TOKEN");
    if (!t || !*t)
        return cfg_parse(cp_rows, 1, c, "queen", get, err);
    size_t n = strlen(t);
    int blank = 1;
    for (size_t i = 0; i < n; i++)
        if (t[i] != ' ' && t[i] != '\t' && t[i] != '\n' && t[i] != '\r')
            blank = 0;
    if (blank)
        return cfg_parse(cp_rows, 1, c, "queen", get, err); /* a blank value counts as unset */
    if (n < CP_TOKEN_MIN || n > CP_TOKEN_MAX) {
        return refuse(err, "ERROR boot: FATAL: queen: QUEEN_PROXY_CP_TOKEN=<%zu characters, not shown> is outside "
                      "%d..=%d characters. %s", n, CP_TOKEN_MIN, CP_TOKEN_MAX, TOKEN_WHAT);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)t[i];
        if (ch <= 0x20 || ch >= 0x7f) {
            return refuse(err, "ERROR boot: FATAL: queen: QUEEN_PROXY_CP_TOKEN=<%zu characters, not shown> may "
                          "hold only printable ASCII without spaces. %s", n, TOKEN_WHAT);
        }
    }
    qerr e = cfg_parse(cp_rows, 1, c, "queen", get, err);
    if (e != QERR_OK)
        return e;
    if (c->port == broker_port)
        return refuse(err, "ERROR boot: FATAL: queen: QUEEN_PROXY_PORT=%lld is the broker's own QUEEN_PORT. %s",
                      (long long)c->port, cp_rows[0].what);
    c->enabled = 1;
    c->token = xstrdup(t);
    return QERR_OK;
}

void cp_config_free(cp_config *c)
{
    if (c->token) {
        OPENSSL_cleanse(c->token, strlen(c->token));
        free(c->token);
    }
    c->token = NULL;
}

int cp_name_valid(const char *s, size_t n)
{
    if (n < 1 || n > CP_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && !(ch == '-' && i > 0))
            return 0;
    }
    return 1;
}

static const char *const STATUS_NAMES[] = {"active", "push_blocked", "suspended"};

int cp_status_parse(const char *s, size_t n)
{
    for (int i = 0; i < 3; i++)
        if (strlen(STATUS_NAMES[i]) == n && memcmp(s, STATUS_NAMES[i], n) == 0)
            return i;
    return -1;
}

const char *cp_status_name(int st)
{
    return st >= 0 && st <= 2 ? STATUS_NAMES[st] : "suspended";
}

void cp_sha256(const void *p, size_t n, uint8_t out[32])
{
    SHA256(p, n, out);
}

int cp_token_equal(const char *given, size_t glen, const char *want, size_t wlen)
{
    uint8_t a[32], b[32];
    cp_sha256(given, glen, a);
    cp_sha256(want, wlen, b);
    return CRYPTO_memcmp(a, b, 32) == 0;
}

int cp_dp_token_new(char out[CP_DP_TOKEN_LEN + 1])
{
    uint8_t r[32];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t k = getrandom(r + got, sizeof r - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    static const char hex[] = "0123456789abcdef";
    memcpy(out, CP_DP_TOKEN_PREFIX, 4);
    for (int i = 0; i < 32; i++) {
        out[4 + 2 * i] = hex[r[i] >> 4];
        out[5 + 2 * i] = hex[r[i] & 15];
    }
    out[CP_DP_TOKEN_LEN] = '\0';
    OPENSSL_cleanse(r, sizeof r);
    return 0;
}

int64_t cp_rate_budget(const cp_rate *r, int64_t limit)
{
    int64_t left = limit - r->others;
    int64_t share = (limit + r->other_nodes) / ((int64_t)r->other_nodes + 1); /* ceil(limit / nodes) */
    return left > share ? left : share;
}

void cp_rate_tick(cp_rate *r, int64_t now_us)
{
    int64_t sec = now_us / 1000000;
    if (sec == r->sec)
        return;
    if (sec > r->sec) {
        /* the second that just ended (a gap of idle seconds reports 0 for the last one) */
        r->done_sec = sec - 1;
        r->done_count = sec == r->sec + 1 ? r->count : 0;
    }
    r->sec = sec;
    r->count = 0;
}

int cp_rate_admit(cp_rate *r, int64_t limit, int64_t now_us, int64_t *retry_after_ms)
{
    cp_rate_tick(r, now_us);
    if (limit <= 0 || r->count < cp_rate_budget(r, limit)) {
        r->count++;
        return 1;
    }
    int64_t left_us = (r->sec + 1) * 1000000 - now_us;
    *retry_after_ms = (left_us + 999) / 1000;
    if (*retry_after_ms < 1)
        *retry_after_ms = 1;
    return 0;
}
