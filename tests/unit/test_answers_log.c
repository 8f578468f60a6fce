/* Unit tests for the answer writers of the message, dead-letter, trace and status routes
 * (admin/answers_messages.h, admin/answers_traces.h, storage/logread.h status_queues_json) and
 * for the log-read decoders by column name (fetch_decode, changed_decode). The rows are built
 * in memory (support/pgres.h) with the columns of the statement's or function's list, so each
 * test reads the rows the way the route reads them; the answers are compared with the exact
 * JSON the routes send (field names and order are the contract: docs/http-api.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin/answers_messages.h"
#include "admin/answers_traces.h"
#include "core/uuid.h"
#include "json/json.h"
#include "storage/logread.h"
#include "support/pgres.h"

/* 2023-11-14T22:13:20.123456Z */
#define TS 1700000000123456LL
#define TS_US "\"2023-11-14T22:13:20.123456Z\""
#define TS_MS "\"2023-11-14T22:13:20.123Z\""
#define TS_PLUS_MIN_MS "\"2023-11-14T22:14:20.123Z\""

static const uint8_t PU[16] = {[15] = 0xab};
#define PU_TEXT "00000000-0000-0000-0000-0000000000ab"
static const uint8_t TRACE[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
#define TRACE_TEXT "01020304-0506-0708-090a-0b0c0d0e0f10"

/* The message id of (partition id, offset), as text */
static const char *mid(uint64_t pid, uint64_t off)
{
    static char s[4][37];
    static int k;
    char *o = s[k++ % 4];
    uuid u;
    uuid_message_id(pid, off, &u);
    uuid_format(&u, o);
    return o;
}

/* The answer must be exactly `want` (and JSON). */
static void same(buf *b, const char *want)
{
    if (b->len != strlen(want) || memcmp(b->data, want, b->len) != 0)
        fail_msg("answered\n  %.*s\nwant\n  %s", (int)b->len, b->data ? b->data : "", want);
    json_doc d;
    memset(&d, 0, sizeof d);
    if (json_parse(&d, b->data, b->len, NULL) != 0)
        fail_msg("not JSON: %.*s", (int)b->len, b->data);
    json_doc_free(&d);
}

static void has(const buf *b, const char *want)
{
    if (!memmem(b->data, b->len, want, strlen(want)))
        fail_msg("%.*s\n  does not hold %s", (int)b->len, b->data, want);
}

/* ---- records ----------------------------------------------------------------------------- */

static void rec_in(record_in *r, const char *txn, const char *payload)
{
    memset(r, 0, sizeof *r);
    r->txn = txn;
    r->txn_len = strlen(txn);
    r->txn_producer = 1;
    r->payload = payload;
    r->payload_len = payload ? strlen(payload) : 0;
}

/* A segment of records txn "t-<i>", payload {"n":<i>}, i = 0 .. n-1 */
static void segment_of(buf *seg, int n)
{
    static char txns[16][16], payloads[16][24];
    buf_reset(seg);
    segment_begin(seg);
    for (int i = 0; i < n; i++) {
        snprintf(txns[i], sizeof txns[i], "t-%d", i);
        snprintf(payloads[i], sizeof payloads[i], "{\"n\":%d}", i);
        record_in r;
        rec_in(&r, txns[i], payloads[i]);
        assert_int_equal(record_encode(seg, &r), 0);
    }
}

/* One record as a dead letter keeps it (the record without the segment's version byte) */
static void dead_copy(buf *out, const record_in *r)
{
    buf seg;
    buf_init(&seg, 0);
    segment_begin(&seg);
    assert_int_equal(record_encode(&seg, r), 0);
    buf_reset(out);
    buf_append(out, seg.data + 1, seg.len - 1);
    buf_free(&seg);
}

/* ---- GET /api/v1/messages ---------------------------------------------------------------- */

/* queen.list_messages_v1's rows for partition 7 of "orders": offsets 0..3 in one segment;
 * queue mode done below 1 with a live lease up to 2, a consumer group at 2, offset 3 dead */
static PGresult *list_rows(const buf *seg, int corrupt)
{
    PGresult *x = PGRES_NEW(LIST_MESSAGES_V1_COLUMNS, 1);
    pgres_i32(x, 0, LM_KIND, LM_ROW_PARTITION);
    pgres_i64(x, 0, LM_PID, 7);
    pgres_uuid(x, 0, LM_PUUID, PU);
    pgres_text(x, 0, LM_PNAME, "Default");
    pgres_text(x, 0, LM_QNAME, "orders");
    pgres_text(x, 0, LM_NS, "billing");
    pgres_text(x, 0, LM_TASK, "");
    pgres_i64(x, 0, LM_PRIO, 5);
    pgres_i64(x, 0, LM_PART_START, 0);
    pgres_i64(x, 0, LM_PART_DONE, 1);
    pgres_i64(x, 0, LM_PART_LIVE_END, 2);
    pgres_i64(x, 0, LM_PART_LEASE_EXP, TS + 60000000);
    pgres_i64(x, 0, LM_PART_HAS_QM, 1);
    pgres_i32(x, 1, LM_KIND, LM_ROW_DEAD);
    pgres_i64(x, 1, LM_PID, 7);
    pgres_i64(x, 1, LM_DEAD_OFFSET, 3);
    pgres_i32(x, 2, LM_KIND, LM_ROW_CURSOR);
    pgres_i64(x, 2, LM_PID, 7);
    pgres_i64(x, 2, LM_CURSOR_NEXT, 2);
    pgres_i32(x, 3, LM_KIND, LM_ROW_SEGMENT);
    pgres_i64(x, 3, LM_PID, 7);
    pgres_i64(x, 3, LM_SEG_BASE, 0);
    pgres_i64(x, 3, LM_SEG_LAST, 3);
    pgres_i64(x, 3, LM_SEG_TS, TS);
    pgres_i64(x, 3, LM_SEG_BEFORE, 0);
    pgres_i64(x, 3, LM_SEG_COUNT, 4);
    if (corrupt)
        pgres_bytes(x, 3, LM_SEG_DATA, "\x01\xff\xff", 3);
    else
        pgres_bytes(x, 3, LM_SEG_DATA, seg->data, seg->len);
    return x;
}

#define LISTED(off, status, consumed, lease)                                                                   \
    "{\"id\":\"%s\",\"transactionId\":\"t-" #off "\",\"partitionId\":\"" PU_TEXT "\",\"queuePath\":\"orders/Default\","  \
    "\"queue\":\"orders\",\"partition\":\"Default\",\"namespace\":\"billing\",\"task\":\"\",\"offset\":" #off       \
    ",\"status\":\"" status "\",\"queueStatus\":\"" status "\",\"busStatus\":{\"consumedBy\":" #consumed          \
    ",\"totalGroups\":1},\"traceId\":null,\"producerSub\":null,\"queuePriority\":5,\"createdAt\":" TS_US           \
    ",\"leaseExpiresAt\":" lease "}"

static void test_messages_list(void **state)
{
    (void)state;
    buf seg, b, want;
    buf_init(&seg, 0);
    buf_init(&b, 0);
    buf_init(&want, 0);
    segment_of(&seg, 4);
    PGresult *x = list_rows(&seg, 0);

    /* the whole page, newest first, each record's status by the one rule */
    messages_page pg = {.limit = 10, .offset = 0};
    assert_int_equal(answer_messages_list(&b, x, &pg), 0);
    buf_printf(&want,
               "{\"messages\":[" LISTED(3, "dead_letter", 0, "null") "," LISTED(2, "pending", 0, "null") "," LISTED(
                   1, "processing", 1, TS_PLUS_MIN_MS) "," LISTED(0, "completed", 1, "null") "],"
                                                            "\"mode\":{\"hasQueueMode\":true,\"busGroupsCount\":1,"
                                                            "\"type\":\"hybrid\"},\"pagination\":{\"limit\":10,"
                                                            "\"offset\":0,\"hasMore\":false}}",
               mid(7, 3), mid(7, 2), mid(7, 1), mid(7, 0));
    same(&b, buf_cstr(&want));

    /* a page in the middle: one more record follows */
    buf_reset(&b);
    buf_reset(&want);
    pg = (messages_page){.limit = 2, .offset = 1};
    assert_int_equal(answer_messages_list(&b, x, &pg), 0);
    buf_printf(&want,
               "{\"messages\":[" LISTED(2, "pending", 0, "null") "," LISTED(1, "processing", 1, TS_PLUS_MIN_MS) "],"
               "\"mode\":{\"hasQueueMode\":true,\"busGroupsCount\":1,\"type\":\"hybrid\"},"
               "\"pagination\":{\"limit\":2,\"offset\":1,\"hasMore\":true}}",
               mid(7, 2), mid(7, 1));
    same(&b, buf_cstr(&want));

    /* a status filter */
    buf_reset(&b);
    buf_reset(&want);
    pg = (messages_page){.limit = 10, .offset = 0, .has_status = 1, .status = REC_COMPLETED};
    assert_int_equal(answer_messages_list(&b, x, &pg), 0);
    buf_printf(&want,
               "{\"messages\":[" LISTED(0, "completed", 1, "null") "],"
               "\"mode\":{\"hasQueueMode\":true,\"busGroupsCount\":1,\"type\":\"hybrid\"},"
               "\"pagination\":{\"limit\":10,\"offset\":0,\"hasMore\":false}}",
               mid(7, 0));
    same(&b, buf_cstr(&want));
    PQclear(x);

    /* nothing matched: no rows at all */
    buf_reset(&b);
    x = PGRES_NEW(LIST_MESSAGES_V1_COLUMNS, 1);
    pg = (messages_page){.limit = 200, .offset = 0};
    assert_int_equal(answer_messages_list(&b, x, &pg), 0);
    same(&b, "{\"messages\":[],\"mode\":{\"hasQueueMode\":false,\"busGroupsCount\":0,\"type\":\"none\"},"
             "\"pagination\":{\"limit\":200,\"offset\":0,\"hasMore\":false}}");
    PQclear(x);

    /* a segment that does not decode */
    buf_reset(&b);
    x = list_rows(&seg, 1);
    pg = (messages_page){.limit = 10, .offset = 0};
    assert_int_equal(answer_messages_list(&b, x, &pg), -1);
    PQclear(x);
    buf_free(&seg);
    buf_free(&b);
    buf_free(&want);
}

/* ---- GET /api/v1/messages/:partitionId/:transactionId ------------------------------------ */

static PGresult *partition_row(void)
{
    PGresult *pi = PGRES_NEW(ADMIN_MESSAGE_PARTITION_COLUMNS, 1);
    pgres_i64(pi, 0, MSG_PART_ID, 7);
    pgres_uuid(pi, 0, MSG_PART_UUID, PU);
    pgres_text(pi, 0, MSG_PART_NAME, "Default");
    pgres_i64(pi, 0, MSG_PART_START, 0);
    pgres_i64(pi, 0, MSG_PART_NEXT, 4);
    pgres_text(pi, 0, MSG_PART_QUEUE, "orders");
    pgres_text(pi, 0, MSG_PART_NS, "");
    pgres_text(pi, 0, MSG_PART_TASK, "");
    pgres_text(pi, 0, MSG_PART_OPTIONS, "{\"leaseTime\":300,\"retryLimit\":3,\"retryDelay\":1000,\"ttl\":0,"
                                        "\"priority\":0,\"other\":true}");
    return pi;
}

static void test_message_one(void **state)
{
    (void)state;
    buf seg, b, want, rec;
    buf_init(&seg, 0);
    buf_init(&b, 0);
    buf_init(&want, 0);
    buf_init(&rec, 0);
    segment_of(&seg, 4);
    PGresult *pi = partition_row();
    /* the segment message_find_v1 found, with the offset the message id names */
    PGresult *f = PGRES_NEW(MESSAGE_FIND_V1_COLUMNS, 1);
    pgres_i64(f, 0, FIND_TARGET, 2);
    pgres_i64(f, 0, FIND_BASE, 0);
    pgres_i64(f, 0, FIND_LAST, 3);
    pgres_i64(f, 0, FIND_TS, TS);
    pgres_i32(f, 0, FIND_COUNT, 4);
    pgres_bytes(f, 0, FIND_DATA, seg.data, seg.len);
    /* queue mode at 1 with a live lease of [1, 3); a consumer group at 3 */
    PGresult *cur = PGRES_NEW(ADMIN_MESSAGE_CURSORS_COLUMNS, 1);
    pgres_text(cur, 0, MSG_CUR_GROUP, "__QUEUE_MODE__");
    pgres_i64(cur, 0, MSG_CUR_NEXT, 1);
    pgres_i64(cur, 0, MSG_CUR_LEASE_START, 1);
    pgres_i64(cur, 0, MSG_CUR_LEASE_END, 3);
    pgres_i64(cur, 0, MSG_CUR_LEASE_EXP, TS + 60000000);
    pgres_i32(cur, 0, MSG_CUR_RETRY, 1);
    pgres_bool(cur, 0, MSG_CUR_LEASED, 1);
    pgres_text(cur, 1, MSG_CUR_GROUP, "g");
    pgres_i64(cur, 1, MSG_CUR_NEXT, 3);
    pgres_i32(cur, 1, MSG_CUR_RETRY, 0);
    pgres_bool(cur, 1, MSG_CUR_LEASED, 0);
    PGresult *dl = PGRES_NEW(ADMIN_MESSAGE_DEAD_COLUMNS, 1);

    msg_lookup l;
    msg_lookup_init(&l, mid(7, 2), 36);
    assert_true(l.is_msg_id);
    assert_int_equal(answer_message(&b, &l, pi, f, cur, dl), 0);
    buf_printf(&want,
               "{\"id\":\"%s\",\"transactionId\":\"t-2\",\"partitionId\":\"" PU_TEXT "\",\"queuePath\":\"orders/Default\","
               "\"queue\":\"orders\",\"partition\":\"Default\",\"namespace\":\"\",\"task\":\"\",\"offset\":2,"
               "\"status\":\"processing\",\"payload\":{\"n\":2},\"isEncrypted\":false,\"traceId\":null,"
               "\"producerSub\":null,\"createdAt\":" TS_US ",\"errorMessage\":null,\"retryCount\":1,"
               "\"leaseExpiresAt\":" TS_PLUS_MIN_MS ",\"queueConfig\":{\"leaseTime\":300,\"retryLimit\":3,"
               "\"retryDelay\":1000,\"ttl\":0,\"priority\":0},\"mode\":{\"hasQueueMode\":true,\"busGroupsCount\":1,"
               "\"consumedByGroups\":1,\"type\":\"hybrid\"},\"consumerGroups\":[{\"name\":\"__QUEUE_MODE__\","
               "\"consumed\":false,\"nextOffset\":1,\"leaseExpiresAt\":" TS_PLUS_MIN_MS "},{\"name\":\"g\","
               "\"consumed\":true,\"nextOffset\":3,\"leaseExpiresAt\":null}],\"deadLetters\":[]}",
               mid(7, 2));
    same(&b, buf_cstr(&want));
    assert_int_equal(l.found_row, 0);
    msg_lookup_free(&l);

    /* by transactionId, gone from the log: its dead letter's copy answers, with the dead letter */
    PQclear(f);
    f = PGRES_NEW(MESSAGE_FIND_V1_COLUMNS, 1);
    record_in r;
    rec_in(&r, "order-9", "{\"n\":9}");
    r.trace = TRACE;
    r.producer = "alice";
    r.producer_len = 5;
    dead_copy(&rec, &r);
    pgres_i64(dl, 0, MSG_DEAD_ID, 12);
    pgres_text(dl, 0, MSG_DEAD_GROUP, "g");
    pgres_i64(dl, 0, MSG_DEAD_OFF, 2);
    pgres_text(dl, 0, MSG_DEAD_ERROR, "bad \"input\"");
    pgres_i32(dl, 0, MSG_DEAD_RETRY, 4);
    pgres_i64(dl, 0, MSG_DEAD_FAILED_US, TS);
    pgres_bytes(dl, 0, MSG_DEAD_RECORD, rec.data, rec.len);
    pgres_text(dl, 0, MSG_DEAD_TXN, "order-9");
    pgres_i64(dl, 0, MSG_DEAD_TS, TS);
    buf_reset(&b);
    buf_reset(&want);
    msg_lookup_init(&l, "order-9", 7);
    assert_false(l.is_msg_id);
    assert_int_equal(msg_lookup_dead_row(&l, 7, dl), 0);
    assert_int_equal(answer_message(&b, &l, pi, f, cur, dl), 0);
    buf_printf(&want,
               "{\"id\":\"%s\",\"transactionId\":\"order-9\",\"partitionId\":\"" PU_TEXT "\",\"queuePath\":"
               "\"orders/Default\",\"queue\":\"orders\",\"partition\":\"Default\",\"namespace\":\"\",\"task\":\"\","
               "\"offset\":2,\"status\":\"dead_letter\",\"payload\":{\"n\":9},\"isEncrypted\":false,\"traceId\":\"" TRACE_TEXT
               "\",\"producerSub\":\"alice\",\"createdAt\":" TS_US ",\"errorMessage\":\"bad \\\"input\\\"\","
               "\"retryCount\":4,\"leaseExpiresAt\":null,\"queueConfig\":{\"leaseTime\":300,\"retryLimit\":3,"
               "\"retryDelay\":1000,\"ttl\":0,\"priority\":0},\"mode\":{\"hasQueueMode\":true,\"busGroupsCount\":1,"
               "\"consumedByGroups\":1,\"type\":\"hybrid\"},\"consumerGroups\":[{\"name\":\"__QUEUE_MODE__\","
               "\"consumed\":false,\"nextOffset\":1,\"leaseExpiresAt\":" TS_PLUS_MIN_MS "},{\"name\":\"g\","
               "\"consumed\":true,\"nextOffset\":3,\"leaseExpiresAt\":null}],\"deadLetters\":[{\"dlqId\":12,"
               "\"consumerGroup\":\"g\",\"errorMessage\":\"bad \\\"input\\\"\",\"retryCount\":4,\"failedAt\":" TS_MS
               "}]}",
               mid(7, 2));
    same(&b, buf_cstr(&want));
    msg_lookup_free(&l);

    /* a transactionId nothing holds: not found, nothing written */
    buf_reset(&b);
    msg_lookup_init(&l, "nope", 4);
    assert_int_equal(msg_lookup_dead_row(&l, 7, dl), -1);
    assert_int_equal(answer_message(&b, &l, pi, f, cur, dl), 1);
    assert_int_equal(b.len, 0);
    msg_lookup_free(&l);

    /* a segment that does not decode */
    PQclear(f);
    f = PGRES_NEW(MESSAGE_FIND_V1_COLUMNS, 1);
    pgres_null(f, 0, FIND_TARGET);
    pgres_i64(f, 0, FIND_BASE, 0);
    pgres_i32(f, 0, FIND_COUNT, 4);
    pgres_bytes(f, 0, FIND_DATA, "\x07", 1);
    msg_lookup_init(&l, "t-1", 3);
    assert_int_equal(answer_message(&b, &l, pi, f, cur, dl), -1);
    msg_lookup_free(&l);

    PQclear(pi);
    PQclear(f);
    PQclear(cur);
    PQclear(dl);
    buf_free(&seg);
    buf_free(&b);
    buf_free(&want);
    buf_free(&rec);
}

static void test_message_deleted(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    answer_message_deleted(&b, PU_TEXT, "t\"1", 1);
    same(&b, "{\"success\":true,\"partitionId\":\"" PU_TEXT "\",\"transactionId\":\"t\\\"1\","
             "\"message\":\"Message deleted successfully\"}");
    buf_reset(&b);
    answer_message_deleted(&b, PU_TEXT, "t-2", 0);
    same(&b, "{\"success\":false,\"partitionId\":\"" PU_TEXT "\",\"transactionId\":\"t-2\","
             "\"message\":\"Message not found\"}");
    buf_free(&b);
}

/* ---- dead letters ------------------------------------------------------------------------ */

static void test_dlq_list(void **state)
{
    (void)state;
    buf b, want, rec;
    buf_init(&b, 0);
    buf_init(&want, 0);
    buf_init(&rec, 0);
    record_in r;
    rec_in(&r, "t-3", "{\"a\":1}");
    r.trace = TRACE;
    r.producer = "alice";
    r.producer_len = 5;
    dead_copy(&rec, &r);
    PGresult *x = PGRES_NEW(ADMIN_DLQ_LIST_COLUMNS, 1);
    for (int i = 0; i < 2; i++) {
        pgres_i64(x, i, DLQ_TOTAL, 3);
        pgres_bool(x, i, DLQ_QUEUE_KNOWN, 1);
        pgres_text(x, i, DLQ_QUEUE, "orders");
        pgres_text(x, i, DLQ_PARTITION, "Default");
        pgres_uuid(x, i, DLQ_PUUID, PU);
        pgres_i64(x, i, DLQ_PID, 7);
        pgres_i64(x, i, DLQ_TS, TS);
    }
    pgres_i64(x, 0, DLQ_ID, 11);
    pgres_text(x, 0, DLQ_GROUP, "__QUEUE_MODE__");
    pgres_i64(x, 0, DLQ_OFF, 3);
    pgres_text(x, 0, DLQ_TXN, "t-3");
    pgres_text(x, 0, DLQ_ERROR, "boom");
    pgres_i32(x, 0, DLQ_RETRY, 2);
    pgres_bytes(x, 0, DLQ_RECORD, rec.data, rec.len);
    pgres_i64(x, 0, DLQ_FAILED_US, TS + 1000);
    pgres_i64(x, 1, DLQ_ID, 10);
    pgres_text(x, 1, DLQ_GROUP, "g");
    pgres_i64(x, 1, DLQ_OFF, 1);
    pgres_text(x, 1, DLQ_TXN, "t-1");
    pgres_i32(x, 1, DLQ_RETRY, 0);
    pgres_i64(x, 1, DLQ_FAILED_US, TS);
    pgres_i64(x, 1, DLQ_REQUEUED_US, TS + 2000);
    assert_int_equal(answer_dlq_list(&b, x, 2, 0), 0);
    buf_printf(&want,
               "{\"messages\":[{\"id\":\"%s\",\"dlqId\":11,\"transactionId\":\"t-3\",\"partitionId\":\"" PU_TEXT "\","
               "\"queue\":\"orders\",\"partition\":\"Default\",\"offset\":3,\"consumerGroup\":\"__QUEUE_MODE__\","
               "\"errorMessage\":\"boom\",\"retryCount\":2,\"data\":{\"a\":1},\"traceId\":\"" TRACE_TEXT "\","
               "\"producerSub\":\"alice\",\"isEncrypted\":false,\"createdAt\":" TS_US ",\"failedAt\":"
               "\"2023-11-14T22:13:20.124Z\",\"requeuedAt\":null},"
               "{\"id\":\"%s\",\"dlqId\":10,\"transactionId\":\"t-1\",\"partitionId\":\"" PU_TEXT "\","
               "\"queue\":\"orders\",\"partition\":\"Default\",\"offset\":1,\"consumerGroup\":\"g\","
               "\"errorMessage\":null,\"retryCount\":0,\"data\":null,\"traceId\":null,\"producerSub\":null,"
               "\"isEncrypted\":false,\"createdAt\":" TS_US ",\"failedAt\":" TS_MS ",\"requeuedAt\":"
               "\"2023-11-14T22:13:20.125Z\"}],"
               "\"total\":3,\"pagination\":{\"limit\":2,\"offset\":0,\"total\":3,\"hasMore\":true}}",
               mid(7, 3), mid(7, 1));
    same(&b, buf_cstr(&want));
    PQclear(x);

    /* an empty page: one row with the total only */
    buf_reset(&b);
    x = PGRES_NEW(ADMIN_DLQ_LIST_COLUMNS, 1);
    pgres_i64(x, 0, DLQ_TOTAL, 3);
    pgres_bool(x, 0, DLQ_QUEUE_KNOWN, 1);
    assert_int_equal(answer_dlq_list(&b, x, 100, 3), 0);
    same(&b, "{\"messages\":[],\"total\":3,\"pagination\":{\"limit\":100,\"offset\":3,\"total\":3,\"hasMore\":false}}");
    PQclear(x);

    /* the queue asked for does not exist: nothing written (the route answers 404) */
    buf_reset(&b);
    x = PGRES_NEW(ADMIN_DLQ_LIST_COLUMNS, 1);
    pgres_i64(x, 0, DLQ_TOTAL, 0);
    pgres_bool(x, 0, DLQ_QUEUE_KNOWN, 0);
    assert_int_equal(answer_dlq_list(&b, x, 100, 0), 1);
    assert_int_equal(b.len, 0);
    PQclear(x);
    buf_free(&b);
    buf_free(&want);
    buf_free(&rec);
}

static void test_dlq_requeued_deleted(void **state)
{
    (void)state;
    push_item it;
    memset(&it, 0, sizeof it);
    it.queue = "orders";
    it.queue_len = 6;
    it.partition = "Default";
    it.partition_len = 7;
    it.partition_id = 7;
    it.offset = 9;
    memcpy(it.partition_uuid, PU, 16);
    it.txn = "t-3";
    it.txn_len = 3;
    it.status = PUSH_QUEUED;
    it.ts = TS;
    buf b, want;
    buf_init(&b, 0);
    buf_init(&want, 0);
    answer_dlq_requeued(&b, 11, &it);
    buf_printf(&want,
               "{\"requeued\":true,\"dlqId\":11,\"queue\":\"orders\",\"partition\":\"Default\",\"partitionId\":\"" PU_TEXT
               "\",\"messageId\":\"%s\",\"offset\":9,\"transactionId\":\"t-3\",\"status\":\"queued\",\"createdAt\":" TS_US
               "}",
               mid(7, 9));
    same(&b, buf_cstr(&want));
    buf_reset(&b);
    it.status = PUSH_DUPLICATE;
    answer_dlq_requeued(&b, 11, &it);
    has(&b, ",\"status\":\"duplicate\",");
    buf_reset(&b);
    answer_dlq_deleted(&b, 11);
    same(&b, "{\"deleted\":true,\"dlqId\":11}");
    buf_free(&b);
    buf_free(&want);
}

/* ---- traces ------------------------------------------------------------------------------ */

static const uint8_t T1[16] = {[0] = 0x01, [15] = 0x01}, T2[16] = {[0] = 0x01, [15] = 0x02};
#define T1_TEXT "01000000-0000-0000-0000-000000000001"
#define T2_TEXT "01000000-0000-0000-0000-000000000002"

static void test_trace_insert_rows(void **state)
{
    (void)state;
    PGresult *x = PGRES_NEW(TRACE_INSERT_COLUMNS, 1);
    pgres_uuid(x, 0, TRACE_INS_ID, T2);
    pgres_bool(x, 0, TRACE_INS_INSERTED, 0);
    pgres_uuid(x, 0, TRACE_INS_PUUID, PU);
    pgres_uuid(x, 1, TRACE_INS_ID, T1);
    pgres_bool(x, 1, TRACE_INS_INSERTED, 1);
    pgres_uuid(x, 1, TRACE_INS_PUUID, PU);
    uuid id;
    uint8_t pu[16];
    int inserted;
    memcpy(id.b, T1, 16);
    assert_int_equal(trace_insert_row(x, &id, &inserted, pu), 1);
    assert_true(inserted);
    assert_memory_equal(pu, PU, 16);
    memcpy(id.b, T2, 16);
    assert_int_equal(trace_insert_row(x, &id, &inserted, pu), 0);
    assert_false(inserted);
    id.b[3] = 9; /* no row: the partition is not the tenant's */
    assert_int_equal(trace_insert_row(x, &id, &inserted, pu), -1);
    PQclear(x);
    buf b;
    buf_init(&b, 0);
    memcpy(id.b, T1, 16);
    answer_trace_added(&b, &id);
    same(&b, "{\"success\":true,\"traceId\":\"" T1_TEXT "\"}");
    buf_free(&b);
}

static void test_traces(void **state)
{
    (void)state;
    buf b, rec;
    buf_init(&b, 0);
    buf_init(&rec, 0);

    /* of one record: data and names are JSON text, handed back as they are */
    PGresult *x = PGRES_NEW(TRACE_BY_RECORD_COLUMNS, 1);
    pgres_uuid(x, 0, TRACE_REC_ID, T1);
    pgres_text(x, 0, TRACE_REC_EVENT, "info");
    pgres_text(x, 0, TRACE_REC_DATA, "{\"step\": 1}");
    pgres_text(x, 0, TRACE_REC_GROUP, "__QUEUE_MODE__");
    pgres_text(x, 0, TRACE_REC_WORKER, "node-1");
    pgres_i64(x, 0, TRACE_REC_CREATED_US, TS);
    pgres_text(x, 0, TRACE_REC_NAMES, "[\"a\",\"b\"]");
    pgres_uuid(x, 1, TRACE_REC_ID, T2);
    pgres_text(x, 1, TRACE_REC_EVENT, "error");
    pgres_text(x, 1, TRACE_REC_DATA, "\"x\"");
    pgres_text(x, 1, TRACE_REC_GROUP, "g");
    pgres_i64(x, 1, TRACE_REC_CREATED_US, TS);
    pgres_text(x, 1, TRACE_REC_NAMES, "[]");
    answer_traces_of_record(&b, x);
    same(&b, "{\"traces\":[{\"id\":\"" T1_TEXT "\",\"event_type\":\"info\",\"data\":{\"step\": 1},"
             "\"consumer_group\":\"__QUEUE_MODE__\",\"worker_id\":\"node-1\",\"created_at\":" TS_MS
             ",\"trace_names\":[\"a\",\"b\"]},{\"id\":\"" T2_TEXT "\",\"event_type\":\"error\",\"data\":\"x\","
             "\"consumer_group\":\"g\",\"worker_id\":null,\"created_at\":" TS_MS ",\"trace_names\":[]}]}");
    PQclear(x);
    buf_reset(&b);
    x = PGRES_NEW(TRACE_BY_RECORD_COLUMNS, 1);
    answer_traces_of_record(&b, x);
    same(&b, "{\"traces\":[]}");
    PQclear(x);

    /* by name, with the record's payload while it is in the log */
    record_in r;
    rec_in(&r, "t-5", "{\"n\":5}");
    dead_copy(&rec, &r);
    x = PGRES_NEW(TRACE_BY_NAME_COLUMNS, 1);
    for (int i = 0; i < 2; i++) {
        pgres_uuid(x, i, TRACE_NAME_ID, i ? T1 : T2);
        pgres_text(x, i, TRACE_NAME_TXN, "t-5");
        pgres_uuid(x, i, TRACE_NAME_PUUID, PU);
        pgres_text(x, i, TRACE_NAME_EVENT, "info");
        pgres_text(x, i, TRACE_NAME_DATA, "{}");
        pgres_text(x, i, TRACE_NAME_GROUP, "g");
        pgres_text(x, i, TRACE_NAME_WORKER, "w");
        pgres_i64(x, i, TRACE_NAME_CREATED_US, TS);
        pgres_text(x, i, TRACE_NAME_QUEUE, "orders");
        pgres_text(x, i, TRACE_NAME_PARTITION, "Default");
        pgres_text(x, i, TRACE_NAME_NAMES, "[\"flow\"]");
    }
    pgres_i64(x, 0, TRACE_NAME_OFF, 5);
    pgres_bytes(x, 0, TRACE_NAME_RECORD, rec.data, rec.len);
    PGresult *n = PGRES_NEW(TRACE_BY_NAME_COUNT_COLUMNS, 1);
    pgres_i64(n, 0, TRACE_NAME_TOTAL, 7);
    buf_reset(&b);
    answer_traces_by_name(&b, x, n, 2, 4);
#define BY_NAME(id, payload)                                                                                   \
    "{\"id\":\"" id "\",\"transaction_id\":\"t-5\",\"partition_id\":\"" PU_TEXT "\",\"event_type\":\"info\","      \
    "\"data\":{},\"consumer_group\":\"g\",\"worker_id\":\"w\",\"created_at\":" TS_MS ",\"queue_name\":\"orders\"," \
    "\"partition_name\":\"Default\",\"message_payload\":" payload ",\"trace_names\":[\"flow\"]}"
    same(&b, "{\"traces\":[" BY_NAME(T2_TEXT, "{\"n\":5}") "," BY_NAME(T1_TEXT, "null") "],\"total\":7,"
                                                                                           "\"pagination\":{\"limit\":2,"
                                                                                           "\"offset\":4}}");
    PQclear(x);
    PQclear(n);

    /* the names */
    x = PGRES_NEW(TRACE_NAMES_COLUMNS, 1);
    pgres_text(x, 0, TRACE_NAMES_NAME, "flow");
    pgres_i64(x, 0, TRACE_NAMES_TRACES, 3);
    pgres_i64(x, 0, TRACE_NAMES_MESSAGES, 2);
    pgres_i64(x, 0, TRACE_NAMES_LAST_US, TS);
    n = PGRES_NEW(TRACE_NAMES_COUNT_COLUMNS, 1);
    pgres_i64(n, 0, TRACE_NAMES_TOTAL, 1);
    buf_reset(&b);
    answer_trace_names(&b, x, n, 50, 0);
    same(&b, "{\"trace_names\":[{\"trace_name\":\"flow\",\"trace_count\":3,\"message_count\":2,\"last_seen\":" TS_MS
             "}],\"total\":1,\"pagination\":{\"limit\":50,\"offset\":0}}");
    PQclear(x);
    PQclear(n);
    buf_free(&b);
    buf_free(&rec);
}

/* ---- GET /status: the queues (a text-format statement) ----------------------------------- */

static void test_status_queues(void **state)
{
    (void)state;
    PGresult *x = PGRES_NEW(STATUS_QUEUES_COLUMNS, 0);
    pgres_text(x, 0, STATUS_Q_TENANT, "00000000-0000-0000-0000-000000000000");
    pgres_text(x, 0, STATUS_Q_NAME, "orders");
    pgres_text(x, 0, STATUS_Q_SAFE_TIME, "1700000000000000");
    pgres_text(x, 0, STATUS_Q_PARTITIONS, "2");
    pgres_text(x, 0, STATUS_Q_RECORDS, "40");
    pgres_text(x, 0, STATUS_Q_LAST_TS, "1699999999000000");
    pgres_text(x, 0, STATUS_Q_NAMESPACE, "billing");
    pgres_text(x, 0, STATUS_Q_TASK, "");
    pgres_text(x, 0, STATUS_Q_CONFIGURED, "t");
    pgres_text(x, 1, STATUS_Q_TENANT, "00000000-0000-0000-0000-000000000000");
    pgres_text(x, 1, STATUS_Q_NAME, "new");
    pgres_text(x, 1, STATUS_Q_SAFE_TIME, "0");
    pgres_text(x, 1, STATUS_Q_PARTITIONS, "0");
    pgres_text(x, 1, STATUS_Q_RECORDS, "0");
    pgres_text(x, 1, STATUS_Q_LAST_TS, "0");
    pgres_text(x, 1, STATUS_Q_NAMESPACE, "");
    pgres_text(x, 1, STATUS_Q_TASK, "");
    pgres_text(x, 1, STATUS_Q_CONFIGURED, "f");
    buf b;
    buf_init(&b, 0);
    status_queues_json(&b, x, 1700000001500000LL);
    same(&b, "[{\"tenant\":\"00000000-0000-0000-0000-000000000000\",\"queue\":\"orders\",\"namespace\":\"billing\","
             "\"task\":\"\",\"configured\":true,\"partitions\":2,\"records\":40,\"lastTs\":1699999999000000,"
             "\"safeTime\":1700000000000000,\"safeLagSeconds\":1.500000},"
             "{\"tenant\":\"00000000-0000-0000-0000-000000000000\",\"queue\":\"new\",\"namespace\":\"\","
             "\"task\":\"\",\"configured\":false,\"partitions\":0,\"records\":0,\"lastTs\":0,\"safeTime\":0,"
             "\"safeLagSeconds\":0.000000}]");
    PQclear(x);
    buf_reset(&b);
    x = PGRES_NEW(STATUS_QUEUES_COLUMNS, 0);
    status_queues_json(&b, x, 1);
    same(&b, "[]");
    PQclear(x);
    buf_free(&b);
}

/* ---- the log reads by name --------------------------------------------------------------- */

typedef struct seen {
    int begins, records, ends;
    fetch_result last;
    uint64_t offs[16];
    char rows[256];
} seen;

static void f_begin(void *arg, const fetch_result *e)
{
    ((seen *)arg)->begins++;
    (void)e;
}

static int f_record(void *arg, const fetch_result *e, const record_view *v, int64_t ts)
{
    seen *s = arg;
    (void)e;
    assert_int_equal(ts, TS);
    s->offs[s->records++] = v->offset;
    return 0;
}

static void f_end(void *arg, const fetch_result *e)
{
    seen *s = arg;
    s->ends++;
    s->last = *e;
}

static void test_fetch_decode(void **state)
{
    (void)state;
    buf seg;
    buf_init(&seg, 0);
    segment_of(&seg, 4);
    /* entry 1: partition 7 of [0, 4) read from 1; entry 2: an unknown partition */
    PGresult *x = PGRES_NEW(FETCH_COLUMNS, 1);
    pgres_i64(x, 0, FETCH_ORD, 1);
    pgres_i64(x, 0, FETCH_PID, 7);
    pgres_uuid(x, 0, FETCH_PUUID, PU);
    pgres_i64(x, 0, FETCH_START, 0);
    pgres_i64(x, 0, FETCH_NEXT, 4);
    pgres_i64(x, 0, FETCH_BASE, 0);
    pgres_i64(x, 0, FETCH_TS, TS);
    pgres_i32(x, 0, FETCH_COUNT, 4);
    pgres_bytes(x, 0, FETCH_DATA, seg.data, seg.len);
    pgres_i64(x, 1, FETCH_ORD, 2);
    fetch_entry fe[2] = {{.queue = "orders", .partition = "Default", .offset = 1, .max_bytes = 1 << 20},
                         {.queue = "orders", .partition = "nope", .offset = 0, .max_bytes = 1 << 20}};
    fetch_args a = {.entries = fe, .n = 2, .max_records = 100, .max_bytes = 1 << 20};
    fetch_callbacks cb = {f_begin, f_record, f_end};
    seen s;
    memset(&s, 0, sizeof s);
    fetch_summary sum;
    assert_int_equal(fetch_decode(x, &a, &cb, &s, &sum), 0);
    assert_int_equal(s.begins, 2);
    assert_int_equal(s.ends, 2);
    assert_int_equal(s.records, 3);
    assert_int_equal(s.offs[0], 1);
    assert_int_equal(s.offs[2], 3);
    assert_int_equal(sum.records, 3);
    assert_int_equal(s.last.error, FETCH_UNKNOWN_TOPIC_OR_PARTITION);
    PQclear(x);
    buf_free(&seg);
}

static void c_row(void *arg, const changed_result *e, const changed_row *r)
{
    seen *s = arg;
    size_t n = strlen(s->rows);
    snprintf(s->rows + n, sizeof s->rows - n, "%u:%llu:%.*s:%lld-%lld@%lld;", e->index, (unsigned long long)r->id,
             (int)r->name_len, r->name, (long long)r->start_offset, (long long)r->end_offset, (long long)r->last_ts);
}

static void c_end(void *arg, const changed_result *e)
{
    seen *s = arg;
    size_t n = strlen(s->rows);
    snprintf(s->rows + n, sizeof s->rows - n, "[%u known=%d safe=%lld next=%d after=%lld]", e->index, e->known,
             (long long)e->safe_time, e->has_next, (long long)e->next_after);
}

static void test_changed_decode(void **state)
{
    (void)state;
    /* entry 1: a queue with two partitions and a page limit of 1 (the second row says more
     * follow); entry 2: an unknown queue */
    PGresult *x = PGRES_NEW(CHANGED_COLUMNS, 1);
    for (int i = 0; i < 2; i++) {
        pgres_i64(x, i, CHANGED_ORD, 1);
        pgres_i64(x, i, CHANGED_QUEUE_ID, 3);
        pgres_i64(x, i, CHANGED_SAFE_TIME, TS);
        pgres_i64(x, i, CHANGED_PID, 7 + i);
        pgres_text(x, i, CHANGED_PNAME, i ? "p2" : "p1");
        pgres_uuid(x, i, CHANGED_PUUID, PU);
        pgres_i64(x, i, CHANGED_START, 1);
        pgres_i64(x, i, CHANGED_NEXT, 5);
        pgres_i64(x, i, CHANGED_LAST_TS, TS - 1);
    }
    pgres_i64(x, 2, CHANGED_ORD, 2);
    changed_entry ce[2] = {{.queue = "orders", .after = 0, .limit = 1}, {.queue = "nope", .after = 0, .limit = 10}};
    changed_args a = {.entries = ce, .n = 2};
    changed_callbacks cb = {NULL, c_row, c_end};
    seen s;
    memset(&s, 0, sizeof s);
    assert_int_equal(changed_decode(x, &a, &cb, &s), 0);
    assert_string_equal(s.rows, "0:7:p1:1-5@1700000000123455;[0 known=1 safe=1700000000123456 next=1 after=7]"
                                "[1 known=0 safe=0 next=0 after=0]");
    PQclear(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_list),
        cmocka_unit_test(test_message_one),
        cmocka_unit_test(test_message_deleted),
        cmocka_unit_test(test_dlq_list),
        cmocka_unit_test(test_dlq_requeued_deleted),
        cmocka_unit_test(test_trace_insert_rows),
        cmocka_unit_test(test_traces),
        cmocka_unit_test(test_status_queues),
        cmocka_unit_test(test_fetch_decode),
        cmocka_unit_test(test_changed_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
