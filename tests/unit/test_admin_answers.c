/* The admin answer writers (admin/admin_answers.h) over results built without a server
 * (tests/unit/support/pgres.h: binary columns as the database sends them), checked byte for
 * byte: field names, order and formats are what the routes answer (docs/http-api.md;
 * the integration tests admin*.test.mjs and dashboard.test.mjs read them live). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "admin/admin.h"
#include "admin/admin_answers.h"
#include "core/util.h"
#include "core/uuid.h"
#include "support/pgres.h"

/* ---- results without a server (tests/unit/support/pgres.h) ----------------------------- */

#define MKRES(list) PGRES_NEW(list, 1)
#define MKRES_TEXT(list) PGRES_NEW(list, 0)

static void set_uuid(PGresult *r, int row, int col, const char *s)
{
    uuid u;
    assert_int_equal(uuid_parse(s, strlen(s), &u), 0);
    pgres_uuid(r, row, col, u.b);
}

static void expect(buf *b, const char *want)
{
    if (strcmp(buf_cstr(b), want) != 0) {
        fprintf(stderr, "answer\n  got:  %s\n  want: %s\n", buf_cstr(b), want);
        fail_msg("the answer differs");
    }
    buf_free(b);
    buf_init(b, 0);
}

#define U1 "0192f3a4-0000-7000-8000-000000000001"
#define U2 "0192f3a4-0000-7000-8000-000000000002"
#define L1 "0192f3a4-0000-7000-8000-0000000000aa"
#define T0 1700000000000000LL /* 2023-11-14T22:13:20Z */
#define T0_MS "2023-11-14T22:13:20.000Z"

/* ---- consumer groups --------------------------------------------------------------------- */

static void test_groups(void **state)
{
    (void)state;
    PGresult *g = MKRES(ADMIN_GROUPS_COLUMNS);
    pgres_text(g, 0, GROUPS_QUEUE, "q1");
    pgres_text(g, 0, GROUPS_GROUP, "g1");
    pgres_i64(g, 0, GROUPS_MEMBERS, 2);
    pgres_i64(g, 0, GROUPS_PARTITIONS, 3);
    pgres_i64(g, 0, GROUPS_PARTITIONS_WITH_LAG, 1);
    pgres_i64(g, 0, GROUPS_TOTAL_LAG, 5);
    pgres_i64(g, 0, GROUPS_MAX_TIME_LAG_US, 400 * 1000000LL + 1500);
    pgres_bool(g, 0, GROUPS_EVER_CONSUMED, 1);
    pgres_i64(g, 0, GROUPS_ACTIVE_LEASES, 1);
    pgres_text(g, 0, GROUPS_SUB_MODE, "new");
    pgres_i64(g, 0, GROUPS_SUB_CREATED_US, T0);
    pgres_i64(g, 0, GROUPS_LAST_CONSUMED_US, T0 + 123000);
    /* a second pair: nothing consumed, no lag, no subscription */
    pgres_text(g, 1, GROUPS_QUEUE, "q\"2");
    pgres_text(g, 1, GROUPS_GROUP, "g2");
    pgres_i64(g, 1, GROUPS_SUB_TS, T0);
    buf b;
    buf_init(&b, 0);
    answer_groups(&b, g);
    expect(&b, "[{\"name\":\"g1\",\"topics\":[\"q1\"],\"queueName\":\"q1\",\"members\":2,\"partitions\":3,"
               "\"partitionsWithLag\":1,\"totalLag\":5,\"maxTimeLag\":400,\"maxTimeLagMs\":400001,\"state\":\"Lagging\","
               "\"activeLeases\":1,\"lastConsumedAt\":\"2023-11-14T22:13:20.123Z\",\"subscriptionMode\":\"new\","
               "\"subscriptionTimestamp\":null,\"subscriptionCreatedAt\":\"" T0_MS "\"},"
               "{\"name\":\"g2\",\"topics\":[\"q\\\"2\"],\"queueName\":\"q\\\"2\",\"members\":0,\"partitions\":0,"
               "\"partitionsWithLag\":0,\"totalLag\":0,\"maxTimeLag\":0,\"maxTimeLagMs\":0,\"state\":\"Dead\","
               "\"activeLeases\":0,\"lastConsumedAt\":null,\"subscriptionMode\":null,"
               "\"subscriptionTimestamp\":\"" T0_MS "\",\"subscriptionCreatedAt\":null}]");
    PQclear(g);
    g = MKRES(ADMIN_GROUPS_COLUMNS);
    answer_groups(&b, g);
    expect(&b, "[]");
    PQclear(g);
    buf_free(&b);
}

static void test_lagging(void **state)
{
    (void)state;
    PGresult *g = MKRES(ADMIN_LAGGING_COLUMNS);
    pgres_text(g, 0, LAGGING_GROUP, "g");
    pgres_text(g, 0, LAGGING_QUEUE, "q");
    pgres_text(g, 0, LAGGING_PARTITION, "P");
    set_uuid(g, 0, LAGGING_PARTITION_UUID, U1);
    set_uuid(g, 0, LAGGING_LIVE_LEASE, L1);
    pgres_i64(g, 0, LAGGING_OFFSET_LAG, 7);
    pgres_i64(g, 0, LAGGING_TIME_LAG_US, 7200 * 1000000LL);
    pgres_i64(g, 0, LAGGING_LAG_TS, T0 + 5);
    pgres_i64(g, 0, LAGGING_NEXT_OFFSET, 3);
    pgres_i64(g, 0, LAGGING_END_OFFSET, 10);
    buf b;
    buf_init(&b, 0);
    answer_lagging(&b, g);
    expect(&b, "[{\"consumer_group\":\"g\",\"queue_name\":\"q\",\"partition_name\":\"P\",\"partition_id\":\"" U1 "\","
               "\"worker_id\":\"" L1 "\",\"offset_lag\":7,\"time_lag_seconds\":7200,\"lag_hours\":2.000,"
               "\"oldest_unconsumed_at\":\"2023-11-14T22:13:20.000005Z\",\"last_consumed_at\":null,"
               "\"next_offset\":3,\"end_offset\":10}]");
    PQclear(g);
    buf_free(&b);
}

static void test_group_detail(void **state)
{
    (void)state;
    PGresult *g = MKRES(ADMIN_GROUP_DETAIL_COLUMNS);
    for (int i = 0; i < 2; i++) {
        pgres_text(g, i, GD_QUEUE, "a");
        pgres_text(g, i, GD_PARTITION, i ? "P2" : "P1");
        set_uuid(g, i, GD_PARTITION_UUID, i ? U2 : U1);
        pgres_bool(g, i, GD_HAS_CURSOR, !i);
        pgres_i64(g, i, GD_NEXT_OFFSET, 4);
        pgres_i64(g, i, GD_END_OFFSET, 10);
        pgres_i64(g, i, GD_OFFSET_LAG, 6);
        pgres_i64(g, i, GD_TIME_LAG_US, i ? 9000000 : 2500000);
        pgres_bool(g, i, GD_LEASE_ACTIVE, i);
        pgres_i64(g, i, GD_TOTAL_CONSUMED, 4);
        pgres_i64(g, i, GD_START_OFFSET, 1);
    }
    set_uuid(g, 1, GD_LIVE_LEASE, L1);
    pgres_i64(g, 1, GD_LIVE_LEASE_EXPIRES, T0);
    pgres_text(g, 2, GD_QUEUE, "b"); /* a queue without partitions */
    buf b;
    buf_init(&b, 0);
    answer_group_detail(&b, g);
    expect(&b, "{\"a\":{\"partitions\":[{\"partition\":\"P1\",\"partitionId\":\"" U1 "\",\"workerId\":null,"
               "\"lastConsumedAt\":null,\"totalConsumed\":4,\"offsetLag\":6,\"timeLagSeconds\":2,\"leaseActive\":false,"
               "\"leaseExpiresAt\":null,\"hasCursor\":true,\"nextOffset\":4,\"startOffset\":1,\"endOffset\":10},"
               "{\"partition\":\"P2\",\"partitionId\":\"" U2 "\",\"workerId\":\"" L1 "\",\"lastConsumedAt\":null,"
               "\"totalConsumed\":4,\"offsetLag\":6,\"timeLagSeconds\":9,\"leaseActive\":true,"
               "\"leaseExpiresAt\":\"" T0_MS "\",\"hasCursor\":false,\"nextOffset\":4,\"startOffset\":1,"
               "\"endOffset\":10}],\"totalLag\":12,\"maxTimeLag\":9},"
               "\"b\":{\"partitions\":[],\"totalLag\":0,\"maxTimeLag\":0}}");
    PQclear(g);
    g = MKRES(ADMIN_GROUP_DETAIL_COLUMNS);
    answer_group_detail(&b, g);
    expect(&b, "{}");
    PQclear(g);
    buf_free(&b);
}

static void test_group_changes(void **state)
{
    (void)state;
    PGresult *d = MKRES(DELETE_GROUP_V1_COLUMNS);
    pgres_text(d, 0, DELETE_GROUP_STATUS, "ok");
    pgres_i64(d, 0, DELETE_GROUP_CURSORS, 3);
    pgres_i64(d, 0, DELETE_GROUP_SUBSCRIPTIONS, 1);
    buf b;
    buf_init(&b, 0);
    answer_group_deleted(&b, d, "g", "q", 1);
    expect(&b, "{\"success\":true,\"consumerGroup\":\"g\",\"queueName\":\"q\",\"deletedPartitions\":3,"
               "\"metadataDeleted\":true,\"subscriptionsDeleted\":1}");
    answer_group_deleted(&b, d, "g", NULL, 0);
    expect(&b, "{\"success\":true,\"consumerGroup\":\"g\",\"deletedPartitions\":3,\"metadataDeleted\":false,"
               "\"subscriptionsDeleted\":1}");
    PQclear(d);
    PGresult *s = MKRES(SET_SUBSCRIPTION_V1_COLUMNS);
    pgres_i64(s, 0, SET_SUBSCRIPTION_N, 2);
    answer_subscription(&b, s, "g", T0);
    expect(&b, "{\"success\":true,\"consumerGroup\":\"g\",\"newTimestamp\":\"" T0_MS "\",\"rowsUpdated\":2}");
    PQclear(s);
    buf_free(&b);
}

static void test_seek(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 0);
    /* one partition */
    PGresult *s = MKRES(SEEK_V1_COLUMNS);
    pgres_text(s, 0, SEEK_STATUS, "ok");
    pgres_i64(s, 0, SEEK_PARTITION_ID, 7);
    set_uuid(s, 0, SEEK_PARTITION_UUID, U1);
    pgres_text(s, 0, SEEK_PARTITION_NAME, "P");
    pgres_i64(s, 0, SEEK_NEXT_OFFSET, 3);
    pgres_i64(s, 0, SEEK_PREVIOUS_OFFSET, 10);
    assert_string_equal(admin_seek_status(s), "ok");
    admin_seek k = {.group = "g", .queue = "q", .partition = "P", .mode = "offset", .offset = 3};
    answer_seek(&b, s, &k);
    uuid mid;
    uuid_message_id(7, 2, &mid);
    char ms[37], want[512];
    uuid_format(&mid, ms);
    snprintf(want, sizeof want,
             "{\"success\":true,\"consumerGroup\":\"g\",\"queueName\":\"q\",\"partitionName\":\"P\",\"updated\":true,"
             "\"cursorMovedTo\":\"%s\",\"nextOffset\":3,\"previousOffset\":10}",
             ms);
    expect(&b, want);
    PQclear(s);
    /* every partition, by time */
    s = MKRES(SEEK_V1_COLUMNS);
    pgres_text(s, 0, SEEK_STATUS, "ok");
    set_uuid(s, 0, SEEK_PARTITION_UUID, U1);
    pgres_text(s, 0, SEEK_PARTITION_NAME, "A");
    pgres_i64(s, 0, SEEK_NEXT_OFFSET, 3);
    pgres_text(s, 1, SEEK_STATUS, "ok");
    set_uuid(s, 1, SEEK_PARTITION_UUID, U2);
    pgres_text(s, 1, SEEK_PARTITION_NAME, "B");
    pgres_i64(s, 1, SEEK_NEXT_OFFSET, 0);
    pgres_i64(s, 1, SEEK_PREVIOUS_OFFSET, 5);
    admin_seek all = {.group = "g", .queue = "q", .mode = "ts", .ts = T0};
    answer_seek(&b, s, &all);
    expect(&b, "{\"success\":true,\"consumerGroup\":\"g\",\"queueName\":\"q\",\"seekToEnd\":false,\"seekToStart\":false,"
               "\"targetTimestamp\":\"" T0_MS "\",\"targetOffset\":null,\"partitionsUpdated\":2,\"partitions\":["
               "{\"partition\":\"A\",\"partitionId\":\"" U1 "\",\"nextOffset\":3,\"previousOffset\":null},"
               "{\"partition\":\"B\",\"partitionId\":\"" U2 "\",\"nextOffset\":0,\"previousOffset\":5}]}");
    PQclear(s);
    /* a partition seek that moved nothing; the refusals */
    s = MKRES(SEEK_V1_COLUMNS);
    assert_string_equal(admin_seek_status(s), "ok");
    answer_seek(&b, s, &k);
    expect(&b, "{\"success\":true,\"consumerGroup\":\"g\",\"queueName\":\"q\",\"partitionName\":\"P\",\"updated\":false,"
               "\"cursorMovedTo\":null,\"nextOffset\":0,\"previousOffset\":null}");
    pgres_text(s, 0, SEEK_STATUS, "partition_not_found");
    assert_string_equal(admin_seek_status(s), "partition_not_found");
    PQclear(s);
    buf_free(&b);
}

/* ---- resources --------------------------------------------------------------------------- */

static void test_overview(void **state)
{
    (void)state;
    PGresult *o = MKRES(ADMIN_OVERVIEW_COLUMNS), *l = MKRES(ADMIN_OVERVIEW_LAG_COLUMNS);
    for (int c = OV_QUEUES; c <= OV_INGESTED_60S; c++)
        pgres_i64(o, 0, c, c + 1);
    pgres_i64(o, 0, OV_NOW_US, T0);
    pgres_i64(l, 0, OL_PAIRS, 4);
    pgres_f64(l, 0, OL_TIME_AVG_US, 1500000.0);
    pgres_f64(l, 0, OL_TIME_MEDIAN_US, 1000000.0);
    pgres_i64(l, 0, OL_TIME_MIN_US, 250000);
    pgres_i64(l, 0, OL_TIME_MAX_US, 3000000);
    pgres_f64(l, 0, OL_OFFSET_AVG, 2.5);
    pgres_f64(l, 0, OL_OFFSET_MEDIAN, 2.0);
    pgres_i64(l, 0, OL_OFFSET_MIN, 1);
    pgres_i64(l, 0, OL_OFFSET_MAX, 6);
    buf b;
    buf_init(&b, 0);
    answer_overview(&b, o, l);
    expect(&b, "{\"queues\":1,\"partitions\":2,\"namespaces\":3,\"tasks\":4,\"messages\":{\"total\":5,\"pending\":6,"
               "\"processing\":7,\"completed\":8,\"failed\":9,\"deadLetter\":10},\"lag\":{\"pairs\":4,"
               "\"time\":{\"avg\":1.500,\"median\":1.000,\"min\":0.250,\"max\":3.000},"
               "\"offset\":{\"avg\":2.500,\"median\":2.000,\"min\":1,\"max\":6}},"
               "\"throughput\":{\"ingestedPerSecond\":0.183,\"processedPerSecond\":null},"
               "\"timestamp\":\"" T0_MS "\",\"statsAge\":0}");
    PQclear(o);
    PQclear(l);
    buf_free(&b);
}

static void test_queues(void **state)
{
    (void)state;
    PGresult *x = MKRES(ADMIN_QUEUES_COLUMNS);
    set_uuid(x, 0, QS_UUID, U1);
    pgres_text(x, 0, QS_NAME, "q");
    pgres_text(x, 0, QS_NAMESPACE, "ns");
    pgres_text(x, 0, QS_TASK, "");
    pgres_i64(x, 0, QS_CREATED_US, T0);
    pgres_i64(x, 0, QS_PARTITIONS, 2);
    pgres_i64(x, 0, QS_TOTAL, 10);
    pgres_i64(x, 0, QS_PENDING, 4);
    pgres_i64(x, 0, QS_PROCESSING, 1);
    pgres_i64(x, 0, QS_COMPLETED, 5);
    pgres_bool(x, 0, QS_CONFIGURED, 1);
    pgres_i64(x, 0, QS_DEAD_LETTERS, 1);
    pgres_i64(x, 0, QS_TOTAL_ROWS, 9);
    pgres_i64(x, 0, QS_LAST_TS, T0 + 1);
    buf b;
    buf_init(&b, 0);
    answer_queues(&b, x, 100, 0);
    expect(&b, "{\"queues\":[{\"id\":\"" U1 "\",\"name\":\"q\",\"namespace\":\"ns\",\"task\":\"\",\"createdAt\":\"" T0_MS
               "\",\"configured\":true,\"partitions\":2,\"messages\":{\"total\":10,\"pending\":4,\"processing\":1,"
               "\"completed\":5,\"deadLetter\":1},\"lastActivity\":\"2023-11-14T22:13:20.000001Z\"}],"
               "\"pagination\":{\"limit\":100,\"offset\":0,\"total\":9}}");
    PQclear(x);
    x = MKRES(ADMIN_QUEUES_COLUMNS);
    answer_queues(&b, x, 10, 20);
    expect(&b, "{\"queues\":[],\"pagination\":{\"limit\":10,\"offset\":20,\"total\":null}}");
    PQclear(x);
    buf_free(&b);
}

/* one queue with one partition, group positions and totals */
static void queue_rows(PGresult *x, PGresult *g, PGresult *gt)
{
    set_uuid(x, 0, QC_UUID, U1);
    pgres_text(x, 0, QC_NAME, "q");
    pgres_text(x, 0, QC_NS, "");
    pgres_text(x, 0, QC_TASK, "t");
    pgres_i64(x, 0, QC_CREATED, T0);
    pgres_text(x, 0, QC_OPTIONS, "{\"leaseTime\":300,\"retryLimit\":3,\"priority\":0}");
    pgres_bool(x, 0, QC_CONFIGURED, 0);
    set_uuid(x, 0, PC_UUID, U2);
    pgres_text(x, 0, PC_NAME, "Default");
    pgres_i64(x, 0, PC_CREATED, T0);
    pgres_i64(x, 0, PC_TOTAL, 10);
    pgres_i64(x, 0, PC_COMPLETED, 5);
    pgres_i64(x, 0, PC_PROCESSING, 1);
    pgres_i64(x, 0, PC_PENDING, 4);
    pgres_i64(x, 0, PC_START, 2);
    pgres_i64(x, 0, PC_NEXT, 12);
    pgres_i64(x, 0, PC_LAST_TS, T0 + 2);
    pgres_i64(x, 0, PC_OLDEST, T0 + 1);
    pgres_i64(x, 0, PC_DEAD, 1);
    pgres_i64(x, 0, PC_FAILED, 0);
    pgres_i64(x, 0, PC_CONSUMED, 5);
    pgres_i64(x, 0, PC_ID, 42);
    pgres_bool(x, 0, PC_HAS_QM, 1);
    pgres_i64(g, 0, QG_PARTITION_ID, 41); /* another partition's row: not listed */
    pgres_text(g, 0, QG_GROUP, "x");
    pgres_i64(g, 1, QG_PARTITION_ID, 42);
    pgres_text(g, 1, QG_GROUP, "g");
    pgres_bool(g, 1, QG_HAS_CURSOR, 1);
    pgres_i64(g, 1, QG_NEXT_OFFSET, 9);
    pgres_i64(g, 1, QG_OFFSET_LAG, 3);
    pgres_i64(g, 1, QG_TIME_LAG_US, 2500000);
    pgres_bool(g, 1, QG_LEASE_ACTIVE, 0);
    pgres_text(gt, 0, QGT_GROUP, "g");
    pgres_i64(gt, 0, QGT_MEMBERS, 1);
    pgres_i64(gt, 0, QGT_PARTITIONS_WITH_LAG, 1);
    pgres_i64(gt, 0, QGT_TOTAL_LAG, 3);
    pgres_i64(gt, 0, QGT_MAX_TIME_LAG_US, 2500000);
    pgres_bool(gt, 0, QGT_EVER_CONSUMED, 1);
    pgres_text(gt, 0, QGT_SUB_MODE, "all");
}

static void test_queue(void **state)
{
    (void)state;
    PGresult *x = MKRES(ADMIN_QUEUE_COLUMNS), *g = MKRES(ADMIN_QUEUE_GROUPS_COLUMNS),
             *gt = MKRES(ADMIN_QUEUE_GROUP_TOTALS_COLUMNS);
    queue_rows(x, g, gt);
    buf b;
    buf_init(&b, 0);
    answer_queue(&b, x, g, gt, 0);
    expect(&b, "{\"id\":\"" U1 "\",\"name\":\"q\",\"namespace\":\"\",\"task\":\"t\",\"createdAt\":\"" T0_MS "\","
               "\"configured\":false,\"options\":{\"leaseTime\":300,\"retryLimit\":3,\"priority\":0},"
               "\"partitions\":[{\"id\":\"" U2 "\",\"name\":\"Default\",\"createdAt\":\"" T0_MS "\","
               "\"startOffset\":2,\"endOffset\":12,\"stats\":{\"total\":10,\"pending\":4,\"processing\":1,"
               "\"completed\":5,\"failed\":0,\"deadLetter\":1},\"leaseExpiresAt\":null,"
               "\"oldestMessage\":\"2023-11-14T22:13:20.000001Z\",\"newestMessage\":\"2023-11-14T22:13:20.000002Z\","
               "\"consumerGroups\":[{\"name\":\"g\",\"hasCursor\":true,\"nextOffset\":9,\"offsetLag\":3,"
               "\"timeLagSeconds\":2,\"timeLagMs\":2500,\"leaseActive\":false}]}],"
               "\"totals\":{\"total\":10,\"pending\":4,\"processing\":1,\"completed\":5,\"failed\":0,\"deadLetter\":1},"
               "\"consumerGroups\":[{\"name\":\"g\",\"members\":1,\"partitionsWithLag\":1,\"totalLag\":3,"
               "\"maxTimeLag\":2,\"state\":\"Stable\",\"subscriptionMode\":\"all\",\"subscriptionTimestamp\":null}]}");
    answer_queue(&b, x, g, gt, 1);
    expect(&b, "{\"queue\":{\"id\":\"" U1 "\",\"name\":\"q\",\"namespace\":\"\",\"task\":\"t\",\"priority\":0,"
               "\"createdAt\":\"" T0_MS "\",\"config\":{\"leaseTime\":300,\"retryLimit\":3,\"retryDelay\":null,"
               "\"ttl\":null,\"maxQueueSize\":null,\"deadLetterQueue\":null}},"
               "\"partitions\":[{\"id\":\"" U2 "\",\"name\":\"Default\",\"createdAt\":\"" T0_MS "\","
               "\"startOffset\":2,\"endOffset\":12,\"messages\":{\"total\":10,\"pending\":4,\"processing\":1,"
               "\"completed\":5,\"failed\":0,\"deadLetter\":1},\"stats\":{\"total\":10,\"pending\":4,\"processing\":1,"
               "\"completed\":5,\"failed\":0,\"deadLetter\":1},\"cursor\":{\"totalConsumed\":5,\"nextOffset\":7},"
               "\"lastActivity\":\"2023-11-14T22:13:20.000002Z\",\"leaseExpiresAt\":null,"
               "\"oldestMessage\":\"2023-11-14T22:13:20.000001Z\",\"newestMessage\":\"2023-11-14T22:13:20.000002Z\"}],"
               "\"totals\":{\"messages\":{\"total\":10,\"pending\":4,\"processing\":1,\"completed\":5,\"failed\":0,"
               "\"deadLetter\":1},\"total\":10,\"pending\":4,\"processing\":1,\"completed\":5,\"failed\":0,"
               "\"deadLetter\":1}}");
    PQclear(x);
    /* a queue without partitions: one row with NULL partition columns */
    x = MKRES(ADMIN_QUEUE_COLUMNS);
    set_uuid(x, 0, QC_UUID, U1);
    pgres_text(x, 0, QC_NAME, "e");
    pgres_text(x, 0, QC_OPTIONS, "not json");
    answer_queue(&b, x, g, gt, 1);
    expect(&b, "{\"queue\":{\"id\":\"" U1 "\",\"name\":\"e\",\"namespace\":null,\"task\":null,\"priority\":null,"
               "\"createdAt\":null,\"config\":{\"leaseTime\":null,\"retryLimit\":null,\"retryDelay\":null,"
               "\"ttl\":null,\"maxQueueSize\":null,\"deadLetterQueue\":null}},\"partitions\":[],"
               "\"totals\":{\"messages\":{\"total\":0,\"pending\":0,\"processing\":0,\"completed\":0,\"failed\":0,"
               "\"deadLetter\":0},\"total\":0,\"pending\":0,\"processing\":0,\"completed\":0,\"failed\":0,"
               "\"deadLetter\":0}}");
    PQclear(x);
    PQclear(g);
    PQclear(gt);
    buf_free(&b);
}

static void test_grouped_and_deletes(void **state)
{
    (void)state;
    PGresult *x = MKRES(ADMIN_GROUPED_COLUMNS);
    pgres_text(x, 0, GRP_NAME, "billing");
    for (int c = GRP_QUEUES; c <= GRP_COMPLETED; c++)
        pgres_i64(x, 0, c, c);
    buf b;
    buf_init(&b, 0);
    answer_grouped(&b, x, "namespace");
    expect(&b, "{\"namespaces\":[{\"namespace\":\"billing\",\"queues\":1,\"partitions\":2,\"messages\":{\"total\":3,"
               "\"pending\":4,\"processing\":5,\"completed\":6}}]}");
    PQclear(x);
    PGresult *d = MKRES(DELETE_QUEUE_V1_COLUMNS);
    pgres_bool(d, 0, DELETE_QUEUE_EXISTED, 1);
    pgres_i64(d, 0, DELETE_QUEUE_PARTITIONS, 2);
    pgres_i64(d, 0, DELETE_QUEUE_RECORDS, 30);
    answer_queue_deleted(&b, d, "q");
    expect(&b, "{\"deleted\":true,\"queue\":\"q\",\"existed\":true,\"partitions\":2,\"records\":30}");
    PQclear(d);
    d = MKRES(DELETE_PARTITION_V1_COLUMNS);
    pgres_text(d, 0, DELETE_PARTITION_STATUS, "ok");
    set_uuid(d, 0, DELETE_PARTITION_UUID, U2);
    pgres_i64(d, 0, DELETE_PARTITION_RECORDS, 4);
    answer_partition_deleted(&b, d, "q", "P");
    expect(&b, "{\"deleted\":true,\"queue\":\"q\",\"partition\":\"P\",\"partitionId\":\"" U2 "\",\"records\":4}");
    PQclear(d);
    buf_free(&b);
}

static void test_lag_metrics(void **state)
{
    (void)state;
    static const uint8_t deflt[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    PGresult *x = MKRES(METRICS_LAG_V1_COLUMNS);
    pgres_i32(x, 0, METRICS_LAG_KIND, METRICS_LAG_ROW_GROUP);
    PQsetvalue(x, 0, METRICS_LAG_TENANT, (char *)deflt, 16);
    pgres_text(x, 0, METRICS_LAG_QUEUE, "q\"1");
    pgres_text(x, 0, METRICS_LAG_GROUP, "g");
    pgres_i64(x, 0, METRICS_LAG_VAL, 5);
    pgres_i64(x, 0, METRICS_LAG_US, 2500000);
    pgres_i32(x, 1, METRICS_LAG_KIND, METRICS_LAG_ROW_DEAD);
    set_uuid(x, 1, METRICS_LAG_TENANT, U1);
    pgres_text(x, 1, METRICS_LAG_QUEUE, "q2");
    pgres_i64(x, 1, METRICS_LAG_VAL, 2);
    buf b;
    buf_init(&b, 0);
    answer_lag_metrics(&b, x, deflt);
    expect(&b, "# HELP queen_queue_lag_records Records not yet done by a consumer group (queue mode: __QUEUE_MODE__), "
               "from offsets\n# TYPE queen_queue_lag_records gauge\n"
               "queen_queue_lag_records{queue=\"q\\\"1\",group=\"g\"} 5\n"
               "# HELP queen_queue_lag_seconds Age of the oldest record a consumer group has not done\n"
               "# TYPE queen_queue_lag_seconds gauge\n"
               "queen_queue_lag_seconds{queue=\"q\\\"1\",group=\"g\"} 2.5\n"
               "# HELP queen_dead_letters Dead letters of a queue not requeued\n# TYPE queen_dead_letters gauge\n"
               "queen_dead_letters{queue=\"q2\",tenant=\"" U1 "\"} 2\n");
    PQclear(x);
    buf_free(&b);
}

static void test_configured(void **state)
{
    (void)state;
    PGresult *x = MKRES_TEXT(ADMIN_CONFIGURE_COLUMNS);
    pgres_text(x, 0, CFG_QUEUE_UUID, U1);
    pgres_text(x, 0, CFG_PARTITION_UUID, U2);
    pgres_text(x, 0, CFG_LOCKED, "1");
    buf b;
    buf_init(&b, 0);
    const char opts[] = "{\"leaseTime\":60}";
    answer_configured(&b, x, "q", "", "t", opts, sizeof opts - 1);
    expect(&b, "{\"configured\":true,\"queueId\":\"" U1 "\",\"partitionId\":\"" U2 "\",\"queue\":\"q\","
               "\"namespace\":\"\",\"task\":\"t\",\"options\":{\"leaseTime\":60}}");
    PQclear(x);
    x = MKRES_TEXT(ADMIN_CONFIGURE_COLUMNS);
    pgres_text(x, 0, CFG_QUEUE_UUID, U1);
    answer_configured(&b, x, "q", "n", "", "{}", 2);
    expect(&b, "{\"configured\":true,\"queueId\":\"" U1 "\",\"partitionId\":null,\"queue\":\"q\",\"namespace\":\"n\","
               "\"task\":\"\",\"options\":{}}");
    PQclear(x);
    buf_free(&b);
}

/* ---- dashboard --------------------------------------------------------------------------- */

static void test_depth(void **state)
{
    (void)state;
    PGresult *x = MKRES(ADMIN_DEPTH_COLUMNS), *p = MKRES(ADMIN_DEPTH_POLICY_COLUMNS);
    pgres_text(x, 0, DEPTH_PARTITION, "A");
    pgres_i64(x, 0, DEPTH_PENDING, 3);
    pgres_text(x, 1, DEPTH_PARTITION, "B");
    pgres_i64(x, 1, DEPTH_PENDING, -2); /* read as 0 */
    pgres_text(x, 2, DEPTH_PARTITION, "C");
    pgres_i64(x, 2, DEPTH_PENDING, 4);
    buf b;
    buf_init(&b, 0);
    answer_depth(&b, x, NULL, "q", NULL);
    expect(&b, "{\"queue\":\"q\",\"group\":null,\"pending\":7,\"partitionsPending\":2,\"conflation\":false,"
               "\"effectivePending\":7,\"partitions\":[{\"partition\":\"A\",\"pending\":3},"
               "{\"partition\":\"B\",\"pending\":0},{\"partition\":\"C\",\"pending\":4}]}");
    answer_depth(&b, x, p, "q", "g");
    expect(&b, "{\"queue\":\"q\",\"group\":\"g\",\"pending\":7,\"partitionsPending\":2,\"conflation\":false,"
               "\"effectivePending\":7,\"partitions\":[{\"partition\":\"A\",\"pending\":3},"
               "{\"partition\":\"B\",\"pending\":0},{\"partition\":\"C\",\"pending\":4}]}");
    pgres_i32(p, 0, POLICY_CONFLATES, 1);
    answer_depth(&b, x, p, "q", "g");
    expect(&b, "{\"queue\":\"q\",\"group\":\"g\",\"pending\":7,\"partitionsPending\":2,\"conflation\":true,"
               "\"effectivePending\":2,\"partitions\":[{\"partition\":\"A\",\"pending\":3},"
               "{\"partition\":\"B\",\"pending\":0},{\"partition\":\"C\",\"pending\":4}]}");
    PQclear(x);
    PQclear(p);
    buf_free(&b);
}

static void test_partitions(void **state)
{
    (void)state;
    PGresult *x = MKRES(ADMIN_PARTITIONS_COLUMNS);
    set_uuid(x, 0, PS_UUID, U2);
    pgres_text(x, 0, PS_NAME, "P");
    pgres_text(x, 0, PS_QUEUE, "q");
    pgres_text(x, 0, PS_NAMESPACE, "");
    pgres_text(x, 0, PS_TASK, "");
    pgres_i64(x, 0, PS_CREATED_US, T0);
    for (int c = PS_TOTAL; c <= PS_NEXT_OFFSET; c++)
        pgres_i64(x, 0, c, c);
    pgres_i64(x, 0, PS_LAST_TS, T0 + 3);
    pgres_i64(x, 0, PS_CONSUMED, 14);
    pgres_i64(x, 0, PS_LEASE_EXP, T0);
    pgres_i64(x, 0, PS_TOTAL_ROWS, 1);
    buf b;
    buf_init(&b, 0);
    answer_partitions(&b, x, 1000, 0);
    expect(&b, "{\"partitions\":[{\"id\":\"" U2 "\",\"name\":\"P\",\"queue\":\"q\",\"namespace\":\"\",\"task\":\"\","
               "\"createdAt\":\"" T0_MS "\",\"messages\":{\"total\":6,\"pending\":7,\"processing\":8,\"completed\":9,"
               "\"deadLetter\":10},\"startOffset\":11,\"endOffset\":12,\"totalConsumed\":14,"
               "\"lastActivity\":\"2023-11-14T22:13:20.000003Z\",\"leaseExpiresAt\":\"" T0_MS "\"}],"
               "\"pagination\":{\"limit\":1000,\"offset\":0,\"total\":1}}");
    PQclear(x);
    buf_free(&b);
}

static void test_status_and_analytics(void **state)
{
    (void)state;
    PGresult *se = MKRES(ADMIN_SERIES_COLUMNS), *qu = MKRES(ADMIN_DASH_QUEUES_COLUMNS),
             *ms = MKRES(ADMIN_DASH_COUNTS_COLUMNS), *dl = MKRES(ADMIN_DASH_DLQ_COLUMNS);
    pgres_i64(se, 0, SERIES_BUCKET_US, T0);
    pgres_i64(se, 0, SERIES_RECORDS, 120);
    pgres_i64(se, 1, SERIES_BUCKET_US, T0 + 60000000);
    pgres_i64(se, 1, SERIES_RECORDS, 0);
    set_uuid(qu, 0, DQ_UUID, U1);
    pgres_text(qu, 0, DQ_NAME, "q");
    pgres_text(qu, 0, DQ_NAMESPACE, "");
    pgres_text(qu, 0, DQ_TASK, "");
    pgres_i64(qu, 0, DQ_PARTITIONS, 1);
    pgres_i64(qu, 0, DQ_CONSUMED, 9);
    for (int c = DC_TOTAL; c <= DC_ACKED_RECORDS; c++)
        pgres_i64(ms, 0, c, c + 1);
    pgres_i64(dl, 0, DD_DEAD_LETTERS, 3);
    pgres_i64(dl, 0, DD_PARTITIONS, 1);
    pgres_text(dl, 0, DD_TOP_ERRORS, "[{\"error\":\"boom\",\"count\":3}]");
    admin_node n = {.hostname = "h",
                    .node_id = "node-1",
                    .pool_size = 8,
                    .pool_connected = 8,
                    .pool_busy = 3,
                    .pool_pending = 2,
                    .pool_failures = 4,
                    .acks_failed = 5,
                    .pop_messages = 6,
                    .cpu_user_pct = 1.234,
                    .cpu_sys_pct = 0.5,
                    .rss_mb = 12.34};
    buf b;
    buf_init(&b, 0);
    answer_status_page(&b, T0, T0 + 90000000, 60000000, se, qu, ms, dl, &n);
    const char *point = ",\"processed\":0,\"popMessages\":0,\"ingestedPerSecond\":%s,\"processedPerSecond\":0,"
                        "\"popPerSecond\":0,\"avgLagMs\":0,\"maxLagMs\":0,\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,"
                        "\"minFreeSlots\":0,\"dbErrors\":0,\"ackFailed\":0,\"dlqCount\":0,\"queenCpuUserPct\":1.23,"
                        "\"queenCpuSysPct\":0.50,\"queenRssMb\":12.3,\"dbPoolActive\":3,\"dbPoolIdle\":5,\"dbPoolSize\":8}";
    char p0[512], p1[512], want[4096];
    snprintf(p0, sizeof p0, point, "2.000");
    snprintf(p1, sizeof p1, point, "0.000");
    snprintf(want, sizeof want,
             "{\"timeRange\":{\"from\":\"" T0_MS "\",\"to\":\"2023-11-14T22:14:50.000Z\"},\"bucketMinutes\":1,"
             "\"pointCount\":2,\"throughput\":[{\"timestamp\":\"" T0_MS "\",\"ingested\":120%s,"
             "{\"timestamp\":\"2023-11-14T22:14:20.000Z\",\"ingested\":0%s],"
             "\"queues\":[{\"id\":\"" U1 "\",\"name\":\"q\",\"namespace\":\"\",\"task\":\"\",\"partitions\":1,"
             "\"totalConsumed\":9}],\"messages\":{\"total\":1,\"pending\":2,\"processing\":3,\"completed\":4,"
             "\"failed\":0,\"deadLetter\":3},\"leases\":{\"active\":5,\"partitionsWithLeases\":6,\"totalBatchSize\":7,"
             "\"totalAcked\":8},\"deadLetterQueue\":{\"totalMessages\":3,\"affectedPartitions\":1,"
             "\"topErrors\":[{\"error\":\"boom\",\"count\":3}]},\"workers\":[{\"hostname\":\"h\",\"workerId\":\"node-1\","
             "\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,\"freeSlots\":5,\"dbConnections\":8,\"jobQueueSize\":2,"
             "\"messagesProcessed\":6}],\"errors\":{\"dbErrors\":4,\"ackFailed\":5,\"dlqMessages\":3},\"statsAge\":0}",
             p0, p1);
    expect(&b, want);
    answer_analytics(&b, se, "minute", T0, T0 + 90000000);
    expect(&b, "{\"dataPoints\":[{\"timestamp\":\"" T0_MS "\",\"messages\":120},"
               "{\"timestamp\":\"2023-11-14T22:14:20.000Z\",\"messages\":0}],\"interval\":\"minute\","
               "\"from\":\"" T0_MS "\",\"to\":\"2023-11-14T22:14:50.000Z\"}");
    PQclear(se);
    PQclear(qu);
    PQclear(ms);
    PQclear(dl);
    buf_free(&b);
}

static void test_node_metrics(void **state)
{
    (void)state;
    admin_node n = {.hostname = "h",
                    .node_id = "node-1",
                    .port = 6632,
                    .now_us = T0,
                    .uptime_s = 12.5,
                    .pool_size = 8,
                    .pool_connected = 2,
                    .pool_busy = 3, /* more busy than connected: idle reads 0 */
                    .pool_pending = 1,
                    .pops = 10,
                    .pop_messages = 20,
                    .acks_completed = 15,
                    .acks_failed = 2,
                    .dead_letters = 1,
                    .cpu_user_pct = 1.5,
                    .cpu_sys_pct = 0.25,
                    .rss_mb = 30.06};
    buf b;
    buf_init(&b, 0);
    answer_system_metrics(&b, T0 - 3600000000LL, T0, 60000000, &n);
    expect(&b, "{\"timeRange\":{\"from\":\"2023-11-14T21:13:20.000Z\",\"to\":\"" T0_MS "\"},\"bucketMinutes\":1,"
               "\"replicas\":[{\"hostname\":\"h\",\"port\":6632,\"workerId\":\"node-1\",\"timeSeries\":[{"
               "\"timestamp\":\"" T0_MS "\",\"metrics\":{\"cpu\":{\"user_pct\":{\"avg\":1.50,\"min\":1.50,\"max\":1.50,"
               "\"last\":1.50},\"system_pct\":{\"avg\":0.25,\"min\":0.25,\"max\":0.25,\"last\":0.25}},"
               "\"memory\":{\"rss_mb\":{\"avg\":30.1,\"min\":30.1,\"max\":30.1,\"last\":30.1}},"
               "\"database\":{\"pool_size\":{\"avg\":8,\"min\":8,\"max\":8,\"last\":8},"
               "\"pool_active\":{\"avg\":3,\"min\":3,\"max\":3,\"last\":3},"
               "\"pool_idle\":{\"avg\":0,\"min\":0,\"max\":0,\"last\":0},"
               "\"pending\":{\"avg\":1,\"min\":1,\"max\":1,\"last\":1}},\"uptimeSeconds\":12.500}}]}]}");
    answer_system_metrics(&b, T0, T0, 60000000, NULL);
    expect(&b, "{\"timeRange\":{\"from\":\"" T0_MS "\",\"to\":\"" T0_MS "\"},\"bucketMinutes\":1,\"replicas\":[]}");
    answer_worker_metrics(&b, T0, T0, &n);
    expect(&b, "{\"timeRange\":{\"from\":\"" T0_MS "\",\"to\":\"" T0_MS "\"},\"workers\":[{\"hostname\":\"h\","
               "\"workerId\":\"node-1\",\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,\"freeSlots\":0,"
               "\"dbConnections\":2,\"jobQueueSize\":1,\"messagesProcessed\":20,\"timeSeries\":[{\"timestamp\":\"" T0_MS
               "\",\"pops\":10,\"popMessages\":20,\"acksCompleted\":15,\"acksFailed\":2,\"deadLetters\":1}]}]}");
    answer_worker_metrics(&b, T0, T0, NULL);
    expect(&b, "{\"timeRange\":{\"from\":\"" T0_MS "\",\"to\":\"" T0_MS "\"},\"workers\":[]}");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups),       cmocka_unit_test(test_lagging),
        cmocka_unit_test(test_group_detail), cmocka_unit_test(test_group_changes),
        cmocka_unit_test(test_seek),         cmocka_unit_test(test_overview),
        cmocka_unit_test(test_queues),       cmocka_unit_test(test_queue),
        cmocka_unit_test(test_grouped_and_deletes), cmocka_unit_test(test_lag_metrics),
        cmocka_unit_test(test_configured),   cmocka_unit_test(test_depth),
        cmocka_unit_test(test_partitions),   cmocka_unit_test(test_status_and_analytics),
        cmocka_unit_test(test_node_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
