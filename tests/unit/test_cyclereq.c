/* Unit tests for the stream cycle reader (streams/cyclereq.h): the fields and their defaults, the
 * three outcomes (accepted, refused 400 with its code and reason, failed as the earlier release
 * fails a cycle), state op versions, and the derived sink transactionIds: stable for a retry,
 * different per lease, per index, per flushed payload, and per salt (a later incarnation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/arena.h"
#include "json/json.h"
#include "streams/cyclereq.h"

typedef struct fx {
    json_doc d;
    arena ar;
    cycle_req c;
    cycle_err err;
} fx;

#define Q "\"query_id\":\"0190c2d4-0000-7000-8000-000000000001\""
#define P "\"partition_id\":\"0190c2d4-0000-7000-8000-000000000002\""
#define LEASE "0190c2d4-0000-7000-8000-0000000000aa"

static cycle_rc fx_read(fx *f, const char *src, const char *at)
{
    memset(f, 0, sizeof *f);
    arena_init(&f->ar);
    json_opts o = {.token_depth = 5};
    if (json_parse(&f->d, src, strlen(src), &o) != 0)
        fail_msg("json_parse(%s): %s", src, f->d.err);
    cycle_rc rc = cycle_read(&f->ar, &f->d, 0, at, &f->c, &f->err);
    if (rc != CYCLE_OK)
        assert_true(f->err.text[0] != 0);
    return rc;
}

static void fx_free(fx *f)
{
    json_doc_free(&f->d);
    arena_free(&f->ar);
}

static void expect(const char *src, const char *at, cycle_rc want, const char *code, const char *text)
{
    fx f;
    assert_int_equal(fx_read(&f, src, at), want);
    if (code)
        assert_string_equal(f.err.code, code);
    else
        assert_null(f.err.code);
    assert_string_equal(f.err.text, text);
    fx_free(&f);
}

static void test_fields_and_defaults(void **state)
{
    (void)state;
    fx f;
    assert_int_equal(fx_read(&f, "{" Q "," P "}", NULL), CYCLE_OK);
    assert_string_equal(f.c.group, "__QUEUE_MODE__");
    assert_int_equal(f.c.release, 1);
    assert_int_equal(f.c.has_ack, 0);
    assert_int_equal(f.c.nops, 0);
    assert_int_equal(f.c.nitems, 0);
    assert_int_equal(f.c.query.b[15], 1);
    assert_int_equal(f.c.part.b[15], 2);
    fx_free(&f);

    assert_int_equal(fx_read(&f,
                             "{" Q "," P ",\"consumer_group\":\"streams.q\",\"release_lease\":false,\"idx\":3,"
                             "\"state_ops\":[{\"type\":\"upsert\",\"key\":\"k\",\"value\":{\"a\":1}},"
                             "{\"type\":\"upsert\",\"key\":\"e\"},{\"type\":\"delete\",\"key\":\"d\",\"version\":17}],"
                             "\"push_items\":[{\"queue\":\"s\",\"payload\":{\"n\":1}},{\"queue\":\"s\",\"transactionId\":\"mine\"},"
                             "{\"queue\":\"s\"}],"
                             "\"ack\":{\"transactionId\":\"t9\",\"leaseId\":\"" LEASE "\",\"count\":2,\"error\":\"x\"}}",
                             NULL),
                     CYCLE_OK);
    assert_string_equal(f.c.group, "streams.q");
    assert_int_equal(f.c.release, 0);
    assert_int_equal(f.c.has_ack, 1);
    assert_string_equal(f.c.ack_txn, "t9");
    assert_string_equal(f.c.ack_status, "completed");
    assert_string_equal(f.c.ack_error, "x");
    assert_int_equal(f.c.has_lease, 1);
    assert_int_equal(f.c.lease.b[15], 0xaa);
    assert_int_equal(f.c.has_count, 1);
    assert_int_equal(f.c.count, 2);
    assert_int_equal(f.c.nops, 3);
    assert_int_equal(f.c.ops[0].del, 0);
    assert_int_equal(f.c.ops[0].value_len, 7);
    assert_memory_equal(f.c.ops[0].value, "{\"a\":1}", 7);
    assert_int_equal(f.c.ops[0].has_version, 0);
    assert_memory_equal(f.c.ops[1].value, "{}", 2); /* an upsert without a value stores {} */
    assert_int_equal(f.c.ops[2].del, 1);
    assert_null(f.c.ops[2].value);
    assert_int_equal(f.c.ops[2].has_version, 1);
    assert_int_equal(f.c.ops[2].version, 17);
    assert_int_equal(f.c.nitems, 3);
    /* derived ids for the items without one; the producer's own kept */
    assert_int_equal(f.c.derived[0], 1);
    assert_int_equal(f.c.derived[1], 0);
    assert_int_equal(f.c.derived[2], 1);
    assert_int_equal(f.c.items[0].txn_len, CYCLE_TXN_LEN);
    assert_memory_equal(f.c.items[0].txn, "sq:", 3);
    assert_int_equal(f.c.items[0].txn_producer, 1);
    assert_string_equal(f.c.items[1].txn, "mine");
    assert_memory_equal(f.c.items[2].payload, "{}", 2); /* a payload-less item stores {} */
    assert_string_not_equal(f.c.items[0].txn, f.c.items[2].txn);
    fx_free(&f);
}

static void test_refusals(void **state)
{
    (void)state;
    expect("[1]", NULL, CYCLE_BAD, NULL, "a cycle must be a JSON object");
    expect("{" Q "," P ",\"kv\":[]}", NULL, CYCLE_BAD, "bad_request",
           "a stream cycle carries no kv array: a cycle is the one actor that blocks on an advisory lock, and the lock "
           "order puts queen.kv and queen.log_timers outside it, so a cycle that touched them would hold the two "
           "outermost spaces while blocking on an advisory lock. Use state_ops for state atomic with the cycle; emit "
           "onto a queue and schedule the timer (or the KV write) in that queue's consumer");
    fx f;
    assert_int_equal(fx_read(&f, "{\"timers\":null}", NULL), CYCLE_BAD);
    assert_string_equal(f.err.reason, "cycle_timers_unsupported");
    fx_free(&f);
    expect("{" Q "," P ",\"extra\":1}", NULL, CYCLE_BAD, "unknown_field", "Unknown field: extra");
    expect("{" Q "," P ",\"extra\":1}", "[2]", CYCLE_BAD, "unknown_field", "Unknown field in [2]: extra");
    expect("{" Q "}", NULL, CYCLE_BAD, NULL, "partition_id is required");
    expect("{" P "}", "[1]", CYCLE_BAD, NULL, "[1]: query_id is required");
    expect("{\"query_id\":\"nope\"," P "}", NULL, CYCLE_BAD, "invalid_uuid", "query_id must be a UUID");
    expect("{" Q ",\"partition_id\":\"0\"}", NULL, CYCLE_BAD, "invalid_uuid", "partition_id must be a UUID");
    expect("{" Q ",\"partition_id\":\"42\"}", NULL, CYCLE_OK, NULL, ""); /* a framed pop's u64 id */
    expect("{" Q "," P ",\"consumer_group\":7}", NULL, CYCLE_BAD, NULL,
           "consumer_group must be a string without NUL characters");
    expect("{" Q "," P ",\"release_lease\":1}", NULL, CYCLE_BAD, NULL, "release_lease must be a boolean");
    expect("{" Q "," P ",\"ack\":[]}", NULL, CYCLE_BAD, NULL, "ack must be an object or null");
    expect("{" Q "," P ",\"ack\":{\"transactionId\":\"t\",\"lease\":1}}", NULL, CYCLE_BAD, "unknown_field",
           "Unknown field in ack: lease");
    expect("{" Q "," P ",\"ack\":{\"transactionId\":\"t\",\"leaseId\":\"x\"}}", "[0]", CYCLE_BAD, "invalid_uuid",
           "[0]: ack.leaseId must be a UUID");
    expect("{" Q "," P ",\"ack\":{\"transactionId\":\"t\",\"count\":-1}}", NULL, CYCLE_BAD, NULL,
           "ack.count must be a non-negative integer (source records)");
    expect("{" Q "," P ",\"state_ops\":{}}", NULL, CYCLE_BAD, NULL, "state_ops must be an array");
    expect("{" Q "," P ",\"state_ops\":[1]}", NULL, CYCLE_BAD, NULL, "state_ops[0] must be an object");
    expect("{" Q "," P ",\"state_ops\":[{\"type\":\"upsert\"}]}", NULL, CYCLE_BAD, NULL,
           "state_ops[0].key is required (a string without NUL characters)");
    expect("{" Q "," P ",\"state_ops\":[{\"type\":\"upsert\",\"key\":\"k\",\"version\":-2}]}", NULL, CYCLE_BAD, NULL,
           "state_ops[0].version must be a non-negative integer (the row version state/get answered)");
    expect("{" Q "," P ",\"state_ops\":[{\"type\":\"upsert\",\"key\":\"k\",\"when\":1}]}", NULL, CYCLE_BAD,
           "unknown_field", "Unknown field in state_ops[0]: when");
    expect("{" Q "," P ",\"push_items\":{}}", NULL, CYCLE_BAD, NULL, "push_items must be an array");
    expect("{" Q "," P ",\"push_items\":[{}]}", NULL, CYCLE_BAD, NULL, "Queue must be a string");
    /* a state key longer than the primary key's B-tree entry allows */
    char big[STATE_KEY_MAX_BYTES + 200];
    int n = snprintf(big, sizeof big, "{" Q "," P ",\"state_ops\":[{\"type\":\"delete\",\"key\":\"");
    memset(big + n, 'k', STATE_KEY_MAX_BYTES + 1);
    snprintf(big + n + STATE_KEY_MAX_BYTES + 1, sizeof big - (size_t)n - STATE_KEY_MAX_BYTES - 1, "\"}]}");
    expect(big, NULL, CYCLE_BAD, NULL, "state_ops[0].key is 2049 bytes, more than 2048");
}

static void test_failures(void **state)
{
    (void)state;
    /* what the earlier release answered 200 success:false for */
    expect("{" Q "," P ",\"ack\":{\"leaseId\":\"" LEASE "\"}}", NULL, CYCLE_FAILED, NULL,
           "ack.transactionId is required");
    expect("{" Q "," P ",\"ack\":{\"transactionId\":\"t\",\"status\":\"maybe\"}}", NULL, CYCLE_FAILED, NULL,
           "Unknown ack.status: maybe");
    expect("{" Q "," P ",\"state_ops\":[{\"type\":\"merge\",\"key\":\"k\"}]}", NULL, CYCLE_FAILED, NULL,
           "Unknown state_op type: merge");
    expect("{" Q "," P ",\"state_ops\":[{\"key\":\"k\"}]}", NULL, CYCLE_FAILED, NULL, "Unknown state_op type: null");
    /* the failure comes before later 400s, as it did */
    fx f;
    assert_int_equal(fx_read(&f, "{" Q "," P ",\"state_ops\":[{\"type\":\"x\",\"key\":\"k\"}],\"push_items\":7}", NULL),
                     CYCLE_FAILED);
    assert_int_equal(f.c.part.b[15], 2); /* the ids, for the failure's answer */
    fx_free(&f);
}

/* the derived id of item 0 of src */
static void id_of(const char *src, char out[CYCLE_TXN_LEN + 1])
{
    fx f;
    assert_int_equal(fx_read(&f, src, NULL), CYCLE_OK);
    assert_true(f.c.nitems >= 1);
    memcpy(out, f.c.items[0].txn, CYCLE_TXN_LEN + 1);
    fx_free(&f);
}

#define FLUSH(payload)                                                                                             \
    "{" Q "," P ",\"ack\":null,\"state_ops\":[{\"type\":\"delete\",\"key\":\"w1\"}],"                              \
    "\"push_items\":[{\"queue\":\"s\",\"payload\":" payload "}]}"
#define CYCLE(lease)                                                                                               \
    "{" Q "," P ",\"ack\":{\"transactionId\":\"t9\",\"leaseId\":\"" lease "\",\"count\":2},"                      \
    "\"push_items\":[{\"queue\":\"s\",\"payload\":{\"n\":1}}]}"

static void test_derived_ids(void **state)
{
    (void)state;
    char a[CYCLE_TXN_LEN + 1], b[CYCLE_TXN_LEN + 1];
    /* a retried flush or a second runner's: the same ids */
    id_of(FLUSH("{\"count\":2}"), a);
    id_of(FLUSH("{\"count\":2}"), b);
    assert_string_equal(a, b);
    /* another result for the window: another id */
    id_of(FLUSH("{\"count\":3}"), b);
    assert_string_not_equal(a, b);
    /* a cycle: the lease decides, not the payload */
    id_of(CYCLE(LEASE), a);
    id_of(CYCLE(LEASE), b);
    assert_string_equal(a, b);
    id_of(CYCLE("0190c2d4-0000-7000-8000-0000000000bb"), b);
    assert_string_not_equal(a, b);
    /* a salt (a later incarnation of the flushed windows) changes every derived id and only those */
    fx f;
    assert_int_equal(fx_read(&f,
                             "{" Q "," P ",\"state_ops\":[{\"type\":\"delete\",\"key\":\"w1\"}],\"push_items\":"
                             "[{\"queue\":\"s\",\"payload\":1},{\"queue\":\"s\",\"transactionId\":\"own\"}]}",
                             NULL),
                     CYCLE_OK);
    char before[CYCLE_TXN_LEN + 1];
    memcpy(before, f.c.items[0].txn, sizeof before);
    f.c.items[0].status = 2;
    cycle_rederive(&f.ar, &f.c, "1:123,", 6);
    assert_string_not_equal(before, f.c.items[0].txn);
    assert_int_equal(f.c.items[0].status, 0);
    assert_string_equal(f.c.items[1].txn, "own");
    char again[CYCLE_TXN_LEN + 1];
    memcpy(again, f.c.items[0].txn, sizeof again);
    cycle_rederive(&f.ar, &f.c, "1:123,", 6);
    assert_string_equal(again, f.c.items[0].txn); /* two runners salting alike agree */
    cycle_rederive(&f.ar, &f.c, "1:124,", 6);
    assert_string_not_equal(again, f.c.items[0].txn);
    fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_and_defaults),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_derived_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
