/* cpcfg.h — the embedded proxy's pure parts (docs/control-plane.md): its two variables, cluster
 * names and statuses, the control-plane token comparison, data-plane token hashing, and the
 * request-rate admission shared across nodes. No libuv, no libpq: unit-tested offline. */
#ifndef QUEEN_CP_CPCFG_H
#define QUEEN_CP_CPCFG_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define CP_TOKEN_MIN 16
#define CP_TOKEN_MAX 1024
#define CP_NAME_MAX 63
/* data-plane tokens the proxy issues: "qcp_" + 64 hex digits (32 random bytes) */
#define CP_DP_TOKEN_PREFIX "qcp_"
#define CP_DP_TOKEN_LEN (4 + 64)

typedef struct cp_config {
    int enabled;       /* QUEEN_PROXY_CP_TOKEN is set */
    int64_t port;      /* QUEEN_PROXY_PORT */
    char *token;       /* QUEEN_PROXY_CP_TOKEN (never logged) */
} cp_config;

/* Reads QUEEN_PROXY_PORT and QUEEN_PROXY_CP_TOKEN. broker_port: QUEEN_PORT, which the proxy
 * may not share. QERR_OK, or QERR_BAD_INPUT with the one boot line as err's text (err may be
 * NULL; the token's value is never in it). */
qerr cp_config_load(cp_config *c, config_getenv_fn get, int64_t broker_port, qerr_detail *err);
void cp_config_free(cp_config *c);

/* 1..63 characters of a-z 0-9 '-', starting with a letter or digit. */
int cp_name_valid(const char *s, size_t n);

enum cp_status { CP_ACTIVE = 0, CP_PUSH_BLOCKED = 1, CP_SUSPENDED = 2 };
/* -1 when s is none of active, push_blocked, suspended */
int cp_status_parse(const char *s, size_t n);
const char *cp_status_name(int st);

/* Constant-time comparison of a presented control-plane token with the configured one: both
 * are hashed (SHA-256) and the digests compared with CRYPTO_memcmp, so neither the content
 * nor the length leaks through timing. 1 equal, 0 not. */
int cp_token_equal(const char *given, size_t glen, const char *want, size_t wlen);
void cp_sha256(const void *p, size_t n, uint8_t out[32]);
/* A new data-plane token (CP_DP_TOKEN_LEN characters + NUL) from the kernel's random. -1 when
 * getrandom failed. */
int cp_dp_token_new(char out[CP_DP_TOKEN_LEN + 1]);

/* One cluster's request rate on one node. Time is cut into wall-clock seconds. A node admits a
 * request while its count in the current second is below its budget: the limit minus what the
 * other nodes counted in their last reported second, but never less than an even share
 * (limit / (other nodes + 1), rounded up), so a node that joins the traffic is not starved by
 * one that had it all. The other nodes' figures come from the once-a-second sync. */
typedef struct cp_rate {
    int64_t sec;         /* the second `count` is for */
    int64_t count;       /* requests admitted in `sec` */
    int64_t done_sec;    /* the last complete second and its count, for the next sync */
    int64_t done_count;
    int64_t others;      /* the other nodes' count, from the last sync */
    int32_t other_nodes; /* how many other nodes had traffic */
} cp_rate;

int64_t cp_rate_budget(const cp_rate *r, int64_t limit);
/* 1 admitted (counted), 0 refused: *retry_after_ms is then the time to the next second. */
int cp_rate_admit(cp_rate *r, int64_t limit, int64_t now_us, int64_t *retry_after_ms);
/* Moves the clock forward without a request (so the sync reports a second that ended). */
void cp_rate_tick(cp_rate *r, int64_t now_us);

#endif
