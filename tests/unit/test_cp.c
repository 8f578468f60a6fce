/* Unit tests for the embedded proxy's pure parts (cp/cpcfg.h): the two variables and their
 * boot lines (the token never in them), cluster names, statuses, the constant-time token
 * comparison, data-plane tokens, and the request-rate admission shared across nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp/cpcfg.h"

static const char *const *g_env;

static const char *env_get(const char *name)
{
    for (size_t i = 0; g_env && g_env[i]; i += 2)
        if (strcmp(g_env[i], name) == 0)
            return g_env[i + 1];
    return NULL;
}

/* 0, or -1 with the boot line in err: checks the qerr convention on the way */
static int load(const char *const *env, cp_config *c, char *err, size_t n)
{
    g_env = env;
    err[0] = '\0';
    qerr_detail d;
    qerr e = cp_config_load(c, env_get, 6632, &d);
    if (e == QERR_OK)
        return 0;
    assert_int_equal(e, QERR_BAD_INPUT);
    assert_null(d.code);
    snprintf(err, n, "%s", d.text);
    cp_config_free(c);
    assert_int_equal(cp_config_load(c, env_get, 6632, NULL), QERR_BAD_INPUT); /* without a detail: the same */
    return -1;
}

static void test_config(void **st)
{
    (void)st;
    cp_config c;
    char err[512];
    const char *const none[] = {NULL};
    assert_int_equal(load(none, &c, err, sizeof err), 0);
    assert_int_equal(c.enabled, 0);
    assert_int_equal(c.port, 6711);
    const char *const blank[] = {"QUEEN_PROXY_CP_TOKEN", "   ", NULL};
    assert_int_equal(load(blank, &c, err, sizeof err), 0);
    assert_int_equal(c.enabled, 0);
    const char *const ok[] = {"QUEEN_PROXY_CP_TOKEN", "0123456789abcdef", "QUEEN_PROXY_PORT", "7000", NULL};
    assert_int_equal(load(ok, &c, err, sizeof err), 0);
    assert_int_equal(c.enabled, 1);
    assert_int_equal(c.port, 7000);
    assert_string_equal(c.token, "0123456789abcdef");
    cp_config_free(&c);

    const char *const shortt[] = {"QUEEN_PROXY_CP_TOKEN", "secret-short", NULL};
    assert_int_equal(load(shortt, &c, err, sizeof err), -1);
    assert_string_equal(err, "ERROR boot: FATAL: queen: QUEEN_PROXY_CP_TOKEN=<12 characters, not shown> is outside "
                             "16..=1024 characters. It is the control-plane token that /api/cp/ requests carry in "
                             "x-queen-cp-token");
    const char *const spaced[] = {"QUEEN_PROXY_CP_TOKEN", "secret with spaces in it", NULL};
    assert_int_equal(load(spaced, &c, err, sizeof err), -1);
    assert_null(strstr(err, "secret"));
    assert_non_null(strstr(err, "may hold only printable ASCII"));
    const char *const port[] = {"QUEEN_PROXY_CP_TOKEN", "0123456789abcdef", "QUEEN_PROXY_PORT", "0", NULL};
    assert_int_equal(load(port, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "ERROR boot: FATAL: queen: QUEEN_PROXY_PORT=0 is outside 1..=65535. It is the port"));
    const char *const same[] = {"QUEEN_PROXY_CP_TOKEN", "0123456789abcdef", "QUEEN_PROXY_PORT", "6632", NULL};
    assert_int_equal(load(same, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "QUEEN_PROXY_PORT=6632 is the broker's own QUEEN_PORT"));
}

static void test_names_statuses(void **st)
{
    (void)st;
    assert_true(cp_name_valid("acme", 4));
    assert_true(cp_name_valid("a-1", 3));
    assert_true(cp_name_valid("9", 1));
    assert_false(cp_name_valid("", 0));
    assert_false(cp_name_valid("-a", 2));
    assert_false(cp_name_valid("Acme", 4));
    assert_false(cp_name_valid("a_b", 3));
    assert_false(cp_name_valid("a/b", 3));
    char longn[65];
    memset(longn, 'a', 64);
    longn[64] = 0;
    assert_true(cp_name_valid(longn, 63));
    assert_false(cp_name_valid(longn, 64));
    assert_int_equal(cp_status_parse("active", 6), CP_ACTIVE);
    assert_int_equal(cp_status_parse("push_blocked", 12), CP_PUSH_BLOCKED);
    assert_int_equal(cp_status_parse("suspended", 9), CP_SUSPENDED);
    assert_int_equal(cp_status_parse("Active", 6), -1);
    assert_int_equal(cp_status_parse("activ", 5), -1);
    assert_string_equal(cp_status_name(CP_PUSH_BLOCKED), "push_blocked");
    assert_string_equal(cp_status_name(7), "suspended");
}

static void test_tokens(void **st)
{
    (void)st;
    assert_true(cp_token_equal("0123456789abcdef", 16, "0123456789abcdef", 16));
    assert_false(cp_token_equal("0123456789abcdeX", 16, "0123456789abcdef", 16));
    assert_false(cp_token_equal("0123456789abcde", 15, "0123456789abcdef", 16));
    assert_false(cp_token_equal("", 0, "0123456789abcdef", 16));
    char a[CP_DP_TOKEN_LEN + 1], b[CP_DP_TOKEN_LEN + 1];
    assert_int_equal(cp_dp_token_new(a), 0);
    assert_int_equal(cp_dp_token_new(b), 0);
    assert_int_equal(strlen(a), CP_DP_TOKEN_LEN);
    assert_memory_equal(a, "qcp_", 4);
    assert_string_not_equal(a, b);
    for (size_t i = 4; i < CP_DP_TOKEN_LEN; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
}

static void test_rate(void **st)
{
    (void)st;
    cp_rate r;
    memset(&r, 0, sizeof r);
    int64_t retry = 0, t = 1000 * 1000000LL + 250000; /* 250 ms into a second */
    int ok = 0;
    for (int i = 0; i < 15; i++)
        ok += cp_rate_admit(&r, 10, t, &retry);
    assert_int_equal(ok, 10);
    assert_int_equal(retry, 750);
    /* the next second: a new budget, and the sync sees the ended second */
    t += 1000000;
    cp_rate_tick(&r, t);
    assert_int_equal(r.done_sec, 1000);
    assert_int_equal(r.done_count, 10);
    /* another node took 8 of 10: this one may take max(10 - 8, ceil(10/2)) = 5 */
    r.others = 8;
    r.other_nodes = 1;
    assert_int_equal(cp_rate_budget(&r, 10), 5);
    ok = 0;
    for (int i = 0; i < 10; i++)
        ok += cp_rate_admit(&r, 10, t, &retry);
    assert_int_equal(ok, 5);
    /* another node idle: all of it */
    r.others = 0;
    r.other_nodes = 0;
    assert_int_equal(cp_rate_budget(&r, 10), 10);
    /* three other nodes, 3 left: the even share ceil(10/4) = 3 */
    r.others = 7;
    r.other_nodes = 3;
    assert_int_equal(cp_rate_budget(&r, 10), 3);
    /* a gap of idle seconds reports 0 for the last one */
    t += 5 * 1000000LL;
    cp_rate_tick(&r, t);
    assert_int_equal(r.done_count, 0);
    /* no limit: always admitted */
    for (int i = 0; i < 100; i++)
        assert_int_equal(cp_rate_admit(&r, 0, t, &retry), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_names_statuses),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
