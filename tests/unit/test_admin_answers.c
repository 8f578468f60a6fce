/* The admin answer writers (admin/admin_answers.h) over results built without a server
 * (PQmakeEmptyPGresult + PQsetResultAttrs + PQsetvalue, binary columns as the database sends
 * them), checked byte for byte: field names, order and formats are what the routes answer
 * (docs/http-api.md; the integration tests admin*.test.mjs and dashboard.test.mjs read them live). */
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

/* ---- results without a server ------------------------------------------------------------ */

static Oid type_oid(const char *t)
{
    static const struct {
        const char *name;
        Oid oid;
    } types[] = {{"bool", 16}, {"int8", 20}, {"int4", 23}, {"text", 25}, {"float8", 701}, {"uuid", 2950}};
    for (size_t i = 0; i < ARRAY_LEN(types); i++)
        if (strcmp(types[i].name, t) == 0)
            return types[i].oid;
    fail_msg("no oid for type %s", t);
    return 0;
}

/* An empty result with the list's columns (binary, or text when text is set). */
static PGresult *mkres_fmt(const db_col_spec *cols, int n, int text)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    assert_non_null(r);
    PGresAttDesc att[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        att[i] = (PGresAttDesc){.name = (char *)cols[i].name,
                                .tableid = 0,
                                .columnid = 0,
                                .format = text ? 0 : 1,
                                .typid = type_oid(cols[i].type),
                                .typlen = -1,
                                .atttypmod = -1};
    }
    assert_int_equal(PQsetResultAttrs(r, n, att), 1);
    return r;
}
#define MKRES(list) mkres_fmt((const db_col_spec[]){list(DB_COL_SPEC)}, (int)(sizeof((const db_col_spec[]){list(DB_COL_SPEC)}) / sizeof(db_col_spec)), 0)
#define MKRES_TEXT(list) mkres_fmt((const db_col_spec[]){list(DB_COL_SPEC)}, (int)(sizeof((const db_col_spec[]){list(DB_COL_SPEC)}) / sizeof(db_col_spec)), 1)

/* Columns not set in a row read as NULL. */
static void set_i64(PGresult *r, int row, int col, int64_t v)
{
    uint8_t b[8];
    be_put64(b, (uint64_t)v);
    assert_int_equal(PQsetvalue(r, row, col, (char *)b, 8), 1);
}

static void set_i32(PGresult *r, int row, int col, int32_t v)
{
    uint8_t b[4];
    be_put32(b, (uint32_t)v);
    assert_int_equal(PQsetvalue(r, row, col, (char *)b, 4), 1);
}

static void set_f64(PGresult *r, int row, int col, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    uint8_t b[8];
    be_put64(b, u);
    assert_int_equal(PQsetvalue(r, row, col, (char *)b, 8), 1);
}

static void set_bool(PGresult *r, int row, int col, int v)
{
    char b = v ? 1 : 0;
    assert_int_equal(PQsetvalue(r, row, col, &b, 1), 1);
}

static void set_text(PGresult *r, int row, int col, const char *s)
{
    assert_int_equal(PQsetvalue(r, row, col, (char *)s, (int)strlen(s)), 1);
}

static void set_uuid(PGresult *r, int row, int col, const char *s)
{
    uuid u;
    assert_int_equal(uuid_parse(s, strlen(s), &u), 0);
    assert_int_equal(PQsetvalue(r, row, col, (char *)u.b, 16), 1);
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
    set_text(g, 0, GROUPS_QUEUE, "q1");
    set_text(g, 0, GROUPS_GROUP, "g1");
    set_i64(g, 0, GROUPS_MEMBERS, 2);
    set_i64(g, 0, GROUPS_PARTITIONS, 3);
    set_i64(g, 0, GROUPS_PARTITIONS_WITH_LAG, 1);
    set_i64(g, 0, GROUPS_TOTAL_LAG, 5);
    set_i64(g, 0, GROUPS_MAX_TIME_LAG_US, 400 * 1000000LL + 1500);
    set_bool(g, 0, GROUPS_EVER_CONSUMED, 1);
    set_i64(g, 0, GROUPS_ACTIVE_LEASES, 1);
    set_text(g, 0, GROUPS_SUB_MODE, "new");
    set_i64(g, 0, GROUPS_SUB_CREATED_US, T0);
    set_i64(g, 0, GROUPS_LAST_CONSUMED_US, T0 + 123000);
    /* a second pair: nothing consumed, no lag, no subscription */
    set_text(g, 1, GROUPS_QUEUE, "q\"2");
    set_text(g, 1, GROUPS_GROUP, "g2");
    set_i64(g, 1, GROUPS_SUB_TS, T0);
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
    set_text(g, 0, LAGGING_GROUP, "g");
    set_text(g, 0, LAGGING_QUEUE, "q");
    set_text(g, 0, LAGGING_PARTITION, "P");
    set_uuid(g, 0, LAGGING_PARTITION_UUID, U1);
    set_uuid(g, 0, LAGGING_LIVE_LEASE, L1);
    set_i64(g, 0, LAGGING_OFFSET_LAG, 7);
    set_i64(g, 0, LAGGING_TIME_LAG_US, 7200 * 1000000LL);
    set_i64(g, 0, LAGGING_LAG_TS, T0 + 5);
    set_i64(g, 0, LAGGING_NEXT_OFFSET, 3);
    set_i64(g, 0, LAGGING_END_OFFSET, 10);
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
        set_text(g, i, GD_QUEUE, "a");
        set_text(g, i, GD_PARTITION, i ? "P2" : "P1");
        set_uuid(g, i, GD_PARTITION_UUID, i ? U2 : U1);
        set_bool(g, i, GD_HAS_CURSOR, !i);
        set_i64(g, i, GD_NEXT_OFFSET, 4);
        set_i64(g, i, GD_END_OFFSET, 10);
        set_i64(g, i, GD_OFFSET_LAG, 6);
        set_i64(g, i, GD_TIME_LAG_US, i ? 9000000 : 2500000);
        set_bool(g, i, GD_LEASE_ACTIVE, i);
        set_i64(g, i, GD_TOTAL_CONSUMED, 4);
        set_i64(g, i, GD_START_OFFSET, 1);
    }
    set_uuid(g, 1, GD_LIVE_LEASE, L1);
    set_i64(g, 1, GD_LIVE_LEASE_EXPIRES, T0);
    set_text(g, 2, GD_QUEUE, "b"); /* a queue without partitions */
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
    set_text(d, 0, DELETE_GROUP_STATUS, "ok");
    set_i64(d, 0, DELETE_GROUP_CURSORS, 3);
    set_i64(d, 0, DELETE_GROUP_SUBSCRIPTIONS, 1);
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
    set_i64(s, 0, SET_SUBSCRIPTION_N, 2);
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
    set_text(s, 0, SEEK_STATUS, "ok");
    set_i64(s, 0, SEEK_PARTITION_ID, 7);
    set_uuid(s, 0, SEEK_PARTITION_UUID, U1);
    set_text(s, 0, SEEK_PARTITION_NAME, "P");
    set_i64(s, 0, SEEK_NEXT_OFFSET, 3);
    set_i64(s, 0, SEEK_PREVIOUS_OFFSET, 10);
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
    set_text(s, 0, SEEK_STATUS, "ok");
    set_uuid(s, 0, SEEK_PARTITION_UUID, U1);
    set_text(s, 0, SEEK_PARTITION_NAME, "A");
    set_i64(s, 0, SEEK_NEXT_OFFSET, 3);
    set_text(s, 1, SEEK_STATUS, "ok");
    set_uuid(s, 1, SEEK_PARTITION_UUID, U2);
    set_text(s, 1, SEEK_PARTITION_NAME, "B");
    set_i64(s, 1, SEEK_NEXT_OFFSET, 0);
    set_i64(s, 1, SEEK_PREVIOUS_OFFSET, 5);
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
    set_text(s, 0, SEEK_STATUS, "partition_not_found");
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
        set_i64(o, 0, c, c + 1);
    set_i64(o, 0, OV_NOW_US, T0);
    set_i64(l, 0, OL_PAIRS, 4);
    set_f64(l, 0, OL_TIME_AVG_US, 1500000.0);
    set_f64(l, 0, OL_TIME_MEDIAN_US, 1000000.0);
    set_i64(l, 0, OL_TIME_MIN_US, 250000);
    set_i64(l, 0, OL_TIME_MAX_US, 3000000);
    set_f64(l, 0, OL_OFFSET_AVG, 2.5);
    set_f64(l, 0, OL_OFFSET_MEDIAN, 2.0);
    set_i64(l, 0, OL_OFFSET_MIN, 1);
    set_i64(l, 0, OL_OFFSET_MAX, 6);
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
    set_text(x, 0, QS_NAME, "q");
    set_text(x, 0, QS_NAMESPACE, "ns");
    set_text(x, 0, QS_TASK, "");
    set_i64(x, 0, QS_CREATED_US, T0);
    set_i64(x, 0, QS_PARTITIONS, 2);
    set_i64(x, 0, QS_TOTAL, 10);
    set_i64(x, 0, QS_PENDING, 4);
    set_i64(x, 0, QS_PROCESSING, 1);
    set_i64(x, 0, QS_COMPLETED, 5);
    set_bool(x, 0, QS_CONFIGURED, 1);
    set_i64(x, 0, QS_DEAD_LETTERS, 1);
    set_i64(x, 0, QS_TOTAL_ROWS, 9);
    set_i64(x, 0, QS_LAST_TS, T0 + 1);
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
    set_text(x, 0, QC_NAME, "q");
    set_text(x, 0, QC_NS, "");
    set_text(x, 0, QC_TASK, "t");
    set_i64(x, 0, QC_CREATED, T0);
    set_text(x, 0, QC_OPTIONS, "{\"leaseTime\":300,\"retryLimit\":3,\"priority\":0}");
    set_bool(x, 0, QC_CONFIGURED, 0);
    set_uuid(x, 0, PC_UUID, U2);
    set_text(x, 0, PC_NAME, "Default");
    set_i64(x, 0, PC_CREATED, T0);
    set_i64(x, 0, PC_TOTAL, 10);
    set_i64(x, 0, PC_COMPLETED, 5);
    set_i64(x, 0, PC_PROCESSING, 1);
    set_i64(x, 0, PC_PENDING, 4);
    set_i64(x, 0, PC_START, 2);
    set_i64(x, 0, PC_NEXT, 12);
    set_i64(x, 0, PC_LAST_TS, T0 + 2);
    set_i64(x, 0, PC_OLDEST, T0 + 1);
    set_i64(x, 0, PC_DEAD, 1);
    set_i64(x, 0, PC_FAILED, 0);
    set_i64(x, 0, PC_CONSUMED, 5);
    set_i64(x, 0, PC_ID, 42);
    set_bool(x, 0, PC_HAS_QM, 1);
    set_i64(g, 0, QG_PARTITION_ID, 41); /* another partition's row: not listed */
    set_text(g, 0, QG_GROUP, "x");
    set_i64(g, 1, QG_PARTITION_ID, 42);
    set_text(g, 1, QG_GROUP, "g");
    set_bool(g, 1, QG_HAS_CURSOR, 1);
    set_i64(g, 1, QG_NEXT_OFFSET, 9);
    set_i64(g, 1, QG_OFFSET_LAG, 3);
    set_i64(g, 1, QG_TIME_LAG_US, 2500000);
    set_bool(g, 1, QG_LEASE_ACTIVE, 0);
    set_text(gt, 0, QGT_GROUP, "g");
    set_i64(gt, 0, QGT_MEMBERS, 1);
    set_i64(gt, 0, QGT_PARTITIONS_WITH_LAG, 1);
    set_i64(gt, 0, QGT_TOTAL_LAG, 3);
    set_i64(gt, 0, QGT_MAX_TIME_LAG_US, 2500000);
    set_bool(gt, 0, QGT_EVER_CONSUMED, 1);
    set_text(gt, 0, QGT_SUB_MODE, "all");
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
    set_text(x, 0, QC_NAME, "e");
    set_text(x, 0, QC_OPTIONS, "not json");
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
    set_text(x, 0, GRP_NAME, "billing");
    for (int c = GRP_QUEUES; c <= GRP_COMPLETED; c++)
        set_i64(x, 0, c, c);
    buf b;
    buf_init(&b, 0);
    answer_grouped(&b, x, "namespace");
    expect(&b, "{\"namespaces\":[{\"namespace\":\"billing\",\"queues\":1,\"partitions\":2,\"messages\":{\"total\":3,"
               "\"pending\":4,\"processing\":5,\"completed\":6}}]}");
    PQclear(x);
    PGresult *d = MKRES(DELETE_QUEUE_V1_COLUMNS);
    set_bool(d, 0, DELETE_QUEUE_EXISTED, 1);
    set_i64(d, 0, DELETE_QUEUE_PARTITIONS, 2);
    set_i64(d, 0, DELETE_QUEUE_RECORDS, 30);
    answer_queue_deleted(&b, d, "q");
    expect(&b, "{\"deleted\":true,\"queue\":\"q\",\"existed\":true,\"partitions\":2,\"records\":30}");
    PQclear(d);
    d = MKRES(DELETE_PARTITION_V1_COLUMNS);
    set_text(d, 0, DELETE_PARTITION_STATUS, "ok");
    set_uuid(d, 0, DELETE_PARTITION_UUID, U2);
    set_i64(d, 0, DELETE_PARTITION_RECORDS, 4);
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
    set_i32(x, 0, METRICS_LAG_KIND, METRICS_LAG_ROW_GROUP);
    PQsetvalue(x, 0, METRICS_LAG_TENANT, (char *)deflt, 16);
    set_text(x, 0, METRICS_LAG_QUEUE, "q\"1");
    set_text(x, 0, METRICS_LAG_GROUP, "g");
    set_i64(x, 0, METRICS_LAG_VAL, 5);
    set_i64(x, 0, METRICS_LAG_US, 2500000);
    set_i32(x, 1, METRICS_LAG_KIND, METRICS_LAG_ROW_DEAD);
    set_uuid(x, 1, METRICS_LAG_TENANT, U1);
    set_text(x, 1, METRICS_LAG_QUEUE, "q2");
    set_i64(x, 1, METRICS_LAG_VAL, 2);
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
    set_text(x, 0, CFG_QUEUE_UUID, U1);
    set_text(x, 0, CFG_PARTITION_UUID, U2);
    set_text(x, 0, CFG_LOCKED, "1");
    buf b;
    buf_init(&b, 0);
    const char opts[] = "{\"leaseTime\":60}";
    answer_configured(&b, x, "q", "", "t", opts, sizeof opts - 1);
    expect(&b, "{\"configured\":true,\"queueId\":\"" U1 "\",\"partitionId\":\"" U2 "\",\"queue\":\"q\","
               "\"namespace\":\"\",\"task\":\"t\",\"options\":{\"leaseTime\":60}}");
    PQclear(x);
    x = MKRES_TEXT(ADMIN_CONFIGURE_COLUMNS);
    set_text(x, 0, CFG_QUEUE_UUID, U1);
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
    set_text(x, 0, DEPTH_PARTITION, "A");
    set_i64(x, 0, DEPTH_PENDING, 3);
    set_text(x, 1, DEPTH_PARTITION, "B");
    set_i64(x, 1, DEPTH_PENDING, -2); /* read as 0 */
    set_text(x, 2, DEPTH_PARTITION, "C");
    set_i64(x, 2, DEPTH_PENDING, 4);
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
    set_i32(p, 0, POLICY_CONFLATES, 1);
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
    set_text(x, 0, PS_NAME, "P");
    set_text(x, 0, PS_QUEUE, "q");
    set_text(x, 0, PS_NAMESPACE, "");
    set_text(x, 0, PS_TASK, "");
    set_i64(x, 0, PS_CREATED_US, T0);
    for (int c = PS_TOTAL; c <= PS_NEXT_OFFSET; c++)
        set_i64(x, 0, c, c);
    set_i64(x, 0, PS_LAST_TS, T0 + 3);
    set_i64(x, 0, PS_CONSUMED, 14);
    set_i64(x, 0, PS_LEASE_EXP, T0);
    set_i64(x, 0, PS_TOTAL_ROWS, 1);
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
    set_i64(se, 0, SERIES_BUCKET_US, T0);
    set_i64(se, 0, SERIES_RECORDS, 120);
    set_i64(se, 1, SERIES_BUCKET_US, T0 + 60000000);
    set_i64(se, 1, SERIES_RECORDS, 0);
    set_uuid(qu, 0, DQ_UUID, U1);
    set_text(qu, 0, DQ_NAME, "q");
    set_text(qu, 0, DQ_NAMESPACE, "");
    set_text(qu, 0, DQ_TASK, "");
    set_i64(qu, 0, DQ_PARTITIONS, 1);
    set_i64(qu, 0, DQ_CONSUMED, 9);
    for (int c = DC_TOTAL; c <= DC_ACKED_RECORDS; c++)
        set_i64(ms, 0, c, c + 1);
    set_i64(dl, 0, DD_DEAD_LETTERS, 3);
    set_i64(dl, 0, DD_PARTITIONS, 1);
    set_text(dl, 0, DD_TOP_ERRORS, "[{\"error\":\"boom\",\"count\":3}]");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
