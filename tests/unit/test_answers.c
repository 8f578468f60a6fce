/* Unit tests for the push and pop answer writers (api/answers.h): each answer is valid JSON
 * with the fields, names and order the clients read (docs/http-api.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/answers.h"
#include "json/json.h"

static void valid(const buf *b)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    if (json_parse(&d, b->data, b->len, NULL) != 0)
        fail_msg("not JSON (%s): %.*s", d.err, (int)b->len, b->data);
    json_doc_free(&d);
}

static void has(const buf *b, const char *want)
{
    if (!memmem(b->data, b->len, want, strlen(want)))
        fail_msg("%.*s\n  does not hold %s", (int)b->len, b->data, want);
}

static void test_push_answer(void **state)
{
    (void)state;
    push_item it[2];
    memset(it, 0, sizeof it);
    it[0].txn = "t\"1";
    it[0].txn_len = 3;
    it[0].queue = "orders";
    it[0].queue_len = 6;
    it[0].status = PUSH_QUEUED;
    it[0].partition_id = 1;
    it[0].offset = 2;
    it[0].partition_uuid[15] = 0xab;
    it[0].has_trace = 1;
    it[0].trace[0] = 0x01;
    it[1] = it[0];
    it[1].status = PUSH_DUPLICATE;
    it[1].has_trace = 0;
    push_req pr;
    memset(&pr, 0, sizeof pr);
    pr.items = it;
    pr.n = 2;
    buf b;
    buf_init(&b, 0);
    answer_push(&b, &pr);
    buf_putc(&b, '\0');
    b.len--;
    valid(&b);
    has(&b, "[{\"index\":0,\"transaction_id\":\"t\\\"1\",\"status\":\"queued\",\"message_id\":\"");
    has(&b, ",\"partition_id\":\"00000000-0000-0000-0000-0000000000ab\",\"trace_id\":\"01000000-0000-0000-0000-000000000000\",\"queueName\":\"orders\"}");
    /* a duplicate carries no partition_id nor trace_id */
    has(&b, "{\"index\":1,\"transaction_id\":\"t\\\"1\",\"status\":\"duplicate\",\"message_id\":\"");
    assert_null(strstr(strstr(b.data, "\"index\":1"), "partition_id"));
    /* the message id is (partition, offset): the same for both */
    char *m0 = strstr(b.data, "message_id"), *m1 = strstr(m0 + 1, "message_id");
    assert_memory_equal(m0, m1, 50);
    buf_reset(&b);
    pr.n = 0;
    answer_push(&b, &pr);
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.data, "[]", 2);
    buf_free(&b);
}

static void test_pop_message(void **state)
{
    (void)state;
    static const uint8_t pu[16] = {0xcd};
    static const uint8_t tr[16] = {[15] = 9};
    popped_partition p = {.index = 0, .id = 5, .uuid = pu, .name = "p-1", .name_len = 3};
    record_view v = {.offset = 7, .trace = tr, .producer = "svc", .producer_len = 3,
                     .payload = "{\"a\":1}", .payload_len = 7};
    uuid lease;
    memset(&lease, 0, sizeof lease);
    lease.b[0] = 0xee;
    buf b;
    buf_init(&b, 0);
    answer_pop_message(&b, &p, &v, 1700000000123456, "tx", 2, &lease, "g");
    valid(&b);
    has(&b, "\",\"transactionId\":\"tx\",\"traceId\":\"00000000-0000-0000-0000-000000000009\",\"data\":{\"a\":1},"
            "\"producerSub\":\"svc\",\"createdAt\":\"2023-11-14T22:13:20.123456Z\","
            "\"partitionId\":\"cd000000-0000-0000-0000-000000000000\",\"partition\":\"p-1\","
            "\"leaseId\":\"ee000000-0000-0000-0000-000000000000\",\"consumerGroup\":\"g\"}");
    assert_memory_equal(b.data, "{\"id\":\"", 7);
    assert_null(memmem(b.data, b.len, "\"queue\"", 7));
    /* autoAck: no lease; no trace, producer or payload; a namespace pop names the queue */
    buf_reset(&b);
    record_view e = {.offset = 8};
    p.queue = "q2";
    p.queue_len = 2;
    answer_pop_message(&b, &p, &e, 0, "tx", 2, NULL, "__QUEUE_MODE__");
    valid(&b);
    has(&b, "\"traceId\":null,\"data\":null,\"producerSub\":null,");
    has(&b, "\"leaseId\":\"\",\"consumerGroup\":\"__QUEUE_MODE__\",\"queue\":\"q2\"}");
    buf_free(&b);
}

static void test_pop_envelope(void **state)
{
    (void)state;
    uuid lease;
    memset(&lease, 0, sizeof lease);
    pop_answer a = {"q", "p", "cd000000-0000-0000-0000-000000000000", &lease, "g", 2};
    buf b;
    buf_init(&b, 0);
    answer_pop_open(&b, &a, "{\"id\":1},{\"id\":2}", 17);
    answer_pop_autopilot(&b, 1, 4, 100, 0);
    buf_putc(&b, '}');
    valid(&b);
    has(&b, "{\"success\":true,\"queue\":\"q\",\"partition\":\"p\",\"partitionId\":\"cd000000-0000-0000-0000-000000000000\","
            "\"leaseId\":\"00000000-0000-0000-0000-000000000000\",\"consumerGroup\":\"g\",\"partitionsClaimed\":2,"
            "\"messages\":[{\"id\":1},{\"id\":2}],\"autopilot\":{\"partitions\":4,\"batch\":100,\"waitMs\":0}}");
    buf_reset(&b);
    a.lease = NULL;
    answer_pop_open(&b, &a, "", 0);
    answer_pop_autopilot(&b, 0, 4, 100, 0);
    buf_putc(&b, '}');
    valid(&b);
    has(&b, "\"leaseId\":\"\",");
    has(&b, "\"messages\":[]}");
    buf_free(&b);
}

static void test_ack_answer(void **state)
{
    (void)state;
    const char *txn[2] = {"t-1", "t\"2"};
    ack_row rows[3] = {
        {.index = 1, .success = 1, .queue = "orders", .partition = "p0", .lease_released = 1},
        {.index = 0, .success = 0, .error = "lease \"x\" expired"},
        {.index = 7, .success = 1, .queue = "q", .partition = "Default", .dlq = 1},
    };
    buf b;
    buf_init(&b, 0);
    answer_ack(&b, rows, 3, txn, 2);
    valid(&b);
    has(&b, "[{\"index\":1,\"transactionId\":\"t\\\"2\",\"success\":true,\"error\":null,\"queueName\":\"orders\","
            "\"partitionName\":\"p0\",\"leaseReleased\":true,\"dlq\":false},");
    has(&b, "{\"index\":0,\"transactionId\":\"t-1\",\"success\":false,\"error\":\"lease \\\"x\\\" expired\","
            "\"queueName\":null,\"partitionName\":null,\"leaseReleased\":false,\"dlq\":false},");
    /* an index the request did not have answers an empty transactionId, never reads past it */
    has(&b, "{\"index\":7,\"transactionId\":\"\",\"success\":true,\"error\":null,\"queueName\":\"q\","
            "\"partitionName\":\"Default\",\"leaseReleased\":false,\"dlq\":true}]");
    buf_reset(&b);
    answer_ack(&b, rows, 0, txn, 2);
    if (b.len != 2 || memcmp(b.data, "[]", 2) != 0)
        fail_msg("no rows: %.*s", (int)b.len, b.data);
    rows[0].index = -1;
    buf_reset(&b);
    answer_ack(&b, rows, 1, txn, 2);
    has(&b, "{\"index\":-1,\"transactionId\":\"\",");
    buf_free(&b);
}

static void test_lease_extend_answer(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    answer_lease_extend(&b, "00000000-0000-0000-0000-0000000000ab", NULL, 1700000000123456LL);
    valid(&b);
    has(&b, "[{\"index\":0,\"leaseId\":\"00000000-0000-0000-0000-0000000000ab\",\"success\":true,\"error\":null,"
            "\"expiresAt\":\"2023-11-14T22:13:20.123Z\"}]");
    buf_reset(&b);
    answer_lease_extend(&b, "00000000-0000-0000-0000-0000000000ab", "lease not found", 0);
    valid(&b);
    has(&b, "\"success\":false,\"error\":\"lease not found\",\"expiresAt\":null}]");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_answer),
        cmocka_unit_test(test_pop_message),
        cmocka_unit_test(test_pop_envelope),
        cmocka_unit_test(test_ack_answer),
        cmocka_unit_test(test_lease_extend_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
