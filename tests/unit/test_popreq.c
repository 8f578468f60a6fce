/* Unit tests for the pop query reader (consume/popreq.h): defaults, the knobs, autopilot
 * sizing, subscription start, conflation, and each refusal with its text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consume/popreq.h"
#include "core/arena.h"

static const pop_defaults DEF = {.batch = 1, .timeout_ms = 30000, .subscription_mode = 0};

typedef struct got {
    arena ar;
    pop_request r;
    qerr e;
    qerr_detail err;
} got;

static void read_q(got *g, const char *query, const char *partition, const pop_defaults *def)
{
    memset(g, 0, sizeof *g);
    arena_init(&g->ar);
    char *q = arena_strndup(&g->ar, query, strlen(query));
    url_query uq;
    const char *bad = NULL;
    assert_int_equal(url_query_parse(&g->ar, q, strlen(q), &uq, &bad), URL_OK);
    g->r.args.queue = "q";
    g->r.args.partition = partition;
    g->e = pop_request_read(&uq, def ? def : &DEF, &g->r, &g->err);
}

static void refused(const char *query, const char *code, const char *text)
{
    got g;
    read_q(&g, query, NULL, NULL);
    assert_int_equal(g.e, QERR_BAD_INPUT);
    if (code)
        assert_string_equal(g.err.code, code);
    else
        assert_null(g.err.code);
    assert_string_equal(g.err.text, text);
    arena_free(&g.ar);
}

static void test_defaults(void **state)
{
    (void)state;
    got g;
    read_q(&g, "", NULL, NULL);
    assert_int_equal(g.e, QERR_OK);
    assert_string_equal(g.r.args.group, QUEUE_MODE_GROUP);
    assert_int_equal(g.r.has_group, 0);
    assert_int_equal(g.r.args.batch, 1);
    assert_int_equal(g.r.args.max_partitions, 1);
    assert_int_equal(g.r.timeout_ms, 30000);
    assert_int_equal(g.r.wait, 0);
    assert_int_equal(g.r.args.auto_ack, 0);
    assert_null(g.r.args.sub_mode);
    assert_int_equal(g.r.args.sub_from, 0);
    assert_int_equal(g.r.sizing.autopilot, 0);
    arena_free(&g.ar);
    /* the node's default subscription mode "new" applies when the pop names none */
    pop_defaults d = DEF;
    d.subscription_mode = 1;
    read_q(&g, "", NULL, &d);
    assert_string_equal(g.r.args.sub_mode, "new");
    arena_free(&g.ar);
}

static void test_knobs(void **state)
{
    (void)state;
    got g;
    read_q(&g, "consumerGroup=g1&batch=50&partitions=4&timeout=0&wait=YES&autoAck=1&subscriptionMode=new-only", NULL,
           NULL);
    assert_int_equal(g.e, QERR_OK);
    assert_string_equal(g.r.args.group, "g1");
    assert_int_equal(g.r.has_group, 1);
    assert_int_equal(g.r.args.batch, 50);
    assert_int_equal(g.r.args.max_partitions, 4);
    assert_int_equal(g.r.timeout_ms, 0);
    assert_int_equal(g.r.wait, 1);
    assert_int_equal(g.r.args.auto_ack, 1);
    assert_string_equal(g.r.args.sub_mode, "new");
    arena_free(&g.ar);
    /* a named partition is one partition, whatever partitions says */
    read_q(&g, "partitions=9", "p", NULL);
    assert_int_equal(g.r.args.max_partitions, 1);
    arena_free(&g.ar);
    /* subscriptionFrom: now, or a timestamp; other modes read from the beginning */
    read_q(&g, "subscriptionFrom=now&subscriptionMode=all", NULL, NULL);
    assert_string_equal(g.r.args.sub_mode, "new");
    arena_free(&g.ar);
    read_q(&g, "subscriptionFrom=2024-01-02T03:04:05Z&subscriptionMode=all", NULL, NULL);
    assert_null(g.r.args.sub_mode);
    assert_int_equal(g.r.args.sub_from, 1704164645000000);
    arena_free(&g.ar);
}

static void test_autopilot(void **state)
{
    (void)state;
    got g;
    read_q(&g, "autopilot=true", NULL, NULL);
    assert_int_equal(g.e, QERR_OK);
    assert_int_equal(g.r.sizing.autopilot, 1);
    assert_int_equal(g.r.sizing.batch_set, 0);
    /* autopilot sizes what the client left unset (consume/autopilot.h) */
    assert_true(g.r.args.batch > 1);
    assert_int_equal(g.r.args.batch, g.r.sizing.batch);
    assert_int_equal(g.r.args.max_partitions, g.r.sizing.partitions);
    arena_free(&g.ar);
    read_q(&g, "autopilot=true&batch=7", NULL, NULL);
    assert_int_equal(g.r.sizing.batch_set, 1);
    assert_int_equal(g.r.args.batch, 7);
    arena_free(&g.ar);
}

static void test_conflation(void **state)
{
    (void)state;
    got g;
    /* conflation is read into the args (the pop declares it) and the rest is read as usual */
    read_q(&g, "conflation=true&consumerGroup=g&subscriptionMode=new&autoAck=true", NULL, NULL);
    assert_int_equal(g.e, QERR_OK);
    assert_int_equal(g.r.conflation, 1);
    assert_int_equal(g.r.args.conflation, 1);
    assert_int_equal(g.r.args.auto_ack, 1);
    assert_string_equal(g.r.args.sub_mode, "new");
    arena_free(&g.ar);
    read_q(&g, "conflation=false&consumerGroup=g", NULL, NULL);
    assert_int_equal(g.e, QERR_OK);
    assert_int_equal(g.r.args.conflation, 0);
    arena_free(&g.ar);
    /* the subscription fields are no longer skipped: a bad one is refused */
    read_q(&g, "conflation=true&consumerGroup=g&subscriptionFrom=garbage", NULL, NULL);
    assert_int_equal(g.e, QERR_BAD_INPUT);
    arena_free(&g.ar);
}

static void test_refusals(void **state)
{
    (void)state;
    refused("autopilot=maybe", "invalid_request", "autopilot, conflation and frames must be true or false");
    refused("frames=2", "invalid_request", "autopilot, conflation and frames must be true or false");
    refused("batch=0", NULL, "batch must be an integer between 1 and 10000");
    refused("batch=10001", NULL, "batch must be an integer between 1 and 10000");
    refused("batch=5x", NULL, "batch must be an integer between 1 and 10000");
    refused("partitions=101", NULL, "partitions must be an integer between 1 and 100");
    refused("timeout=-1", NULL, "timeout must be an integer number of milliseconds between 0 and 3600000");
    refused("wait=sometimes", NULL, "wait and autoAck must be true or false");
    refused("autoAck=2", NULL, "wait and autoAck must be true or false");
    refused("subscriptionFrom=yesterday", NULL, "subscriptionFrom must be 'now' or an ISO-8601 timestamp");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),   cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_autopilot),  cmocka_unit_test(test_conflation),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
