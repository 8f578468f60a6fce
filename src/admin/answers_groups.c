/* answers_groups.c — the consumer-group answers (admin_answers.h): listing with real lag,
 * lagging partitions, one group's positions, deletion, subscription start, seeks. */
#include <stdio.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/admin_answers.h"
#include "core/uuid.h"
#include "db/res.h"
#include "json/json.h"

static int64_t whole_seconds(int64_t us)
{
    return us > 0 ? us / 1000000 : 0;
}

/* "uuid" of a uuid column, or null */
static void uuid_or_null(buf *b, const PGresult *r, int row, int col)
{
    char u[37];
    res_uuid(r, row, col, u);
    if (u[0])
        buf_printf(b, "\"%s\"", u);
    else
        buf_puts(b, "null");
}

void answer_groups(buf *b, const PGresult *g)
{
    buf_putc(b, '[');
    int n = PQntuples(g);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(b, ',');
        int64_t max_lag_us = res_i64(g, i, GROUPS_MAX_TIME_LAG_US);
        buf_puts(b, "{\"name\":");
        res_json_str(b, g, i, GROUPS_GROUP);
        buf_puts(b, ",\"topics\":[");
        res_json_str(b, g, i, GROUPS_QUEUE);
        buf_puts(b, "],\"queueName\":");
        res_json_str(b, g, i, GROUPS_QUEUE);
        buf_printf(b, ",\"members\":%lld,\"partitions\":%lld,\"partitionsWithLag\":%lld,\"totalLag\":%lld,"
                      "\"maxTimeLag\":%lld,\"maxTimeLagMs\":%lld,\"state\":\"%s\",\"activeLeases\":%lld,\"lastConsumedAt\":",
                   (long long)res_i64(g, i, GROUPS_MEMBERS), (long long)res_i64(g, i, GROUPS_PARTITIONS),
                   (long long)res_i64(g, i, GROUPS_PARTITIONS_WITH_LAG), (long long)res_i64(g, i, GROUPS_TOTAL_LAG),
                   (long long)whole_seconds(max_lag_us), (long long)(max_lag_us / 1000),
                   admin_group_state(max_lag_us, res_bool(g, i, GROUPS_EVER_CONSUMED)),
                   (long long)res_i64(g, i, GROUPS_ACTIVE_LEASES));
        admin_iso_ms_or_null(b, res_i64(g, i, GROUPS_LAST_CONSUMED_US));
        buf_puts(b, ",\"subscriptionMode\":");
        res_json_str(b, g, i, GROUPS_SUB_MODE);
        buf_puts(b, ",\"subscriptionTimestamp\":");
        admin_iso_ms_or_null(b, res_null(g, i, GROUPS_SUB_TS) ? 0 : res_i64(g, i, GROUPS_SUB_TS));
        buf_puts(b, ",\"subscriptionCreatedAt\":");
        admin_iso_ms_or_null(b, res_i64(g, i, GROUPS_SUB_CREATED_US));
        buf_putc(b, '}');
    }
    buf_putc(b, ']');
}

void answer_lagging(buf *b, const PGresult *g)
{
    buf_putc(b, '[');
    int n = PQntuples(g);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(b, ',');
        char pu[37];
        res_uuid(g, i, LAGGING_PARTITION_UUID, pu);
        int64_t lag_us = res_i64(g, i, LAGGING_TIME_LAG_US);
        buf_puts(b, "{\"consumer_group\":");
        res_json_str(b, g, i, LAGGING_GROUP);
        buf_puts(b, ",\"queue_name\":");
        res_json_str(b, g, i, LAGGING_QUEUE);
        buf_puts(b, ",\"partition_name\":");
        res_json_str(b, g, i, LAGGING_PARTITION);
        buf_printf(b, ",\"partition_id\":\"%s\",\"worker_id\":", pu);
        uuid_or_null(b, g, i, LAGGING_LIVE_LEASE);
        buf_printf(b, ",\"offset_lag\":%lld,\"time_lag_seconds\":%lld,\"lag_hours\":%.3f,\"oldest_unconsumed_at\":",
                   (long long)res_i64(g, i, LAGGING_OFFSET_LAG), (long long)whole_seconds(lag_us),
                   (double)lag_us / 3.6e9);
        admin_iso_us_or_null(b, res_i64(g, i, LAGGING_LAG_TS));
        buf_puts(b, ",\"last_consumed_at\":");
        admin_iso_ms_or_null(b, res_i64(g, i, LAGGING_LAST_CONSUMED_US));
        buf_printf(b, ",\"next_offset\":%lld,\"end_offset\":%lld}", (long long)res_i64(g, i, LAGGING_NEXT_OFFSET),
                   (long long)res_i64(g, i, LAGGING_END_OFFSET));
    }
    buf_putc(b, ']');
}

void answer_group_detail(buf *b, const PGresult *g)
{
    size_t start = b->len;
    buf_putc(b, '{');
    int n = PQntuples(g);
    const char *cur = NULL;
    size_t cur_len = 0;
    int nparts = 0;
    int64_t total = 0, max_us = 0;
    for (int i = 0; i <= n; i++) {
        size_t ql = 0;
        const char *qn = i < n ? res_text(g, i, GD_QUEUE, &ql) : NULL;
        if (cur && (!qn || ql != cur_len || memcmp(qn, cur, ql) != 0)) {
            buf_printf(b, "],\"totalLag\":%lld,\"maxTimeLag\":%lld}", (long long)total, (long long)whole_seconds(max_us));
            cur = NULL;
        }
        if (i == n)
            break;
        if (!cur) {
            if (b->len > start + 1)
                buf_putc(b, ',');
            jw_string(b, qn, ql);
            buf_puts(b, ":{\"partitions\":[");
            cur = qn;
            cur_len = ql;
            nparts = 0;
            total = 0;
            max_us = 0;
        }
        if (res_null(g, i, GD_PARTITION))
            continue; /* a queue without partitions */
        char pu[37];
        res_uuid(g, i, GD_PARTITION_UUID, pu);
        int64_t lag = res_i64(g, i, GD_OFFSET_LAG), lag_us = res_i64(g, i, GD_TIME_LAG_US);
        total += lag;
        if (lag_us > max_us)
            max_us = lag_us;
        if (nparts++)
            buf_putc(b, ',');
        buf_puts(b, "{\"partition\":");
        res_json_str(b, g, i, GD_PARTITION);
        buf_printf(b, ",\"partitionId\":\"%s\",\"workerId\":", pu);
        uuid_or_null(b, g, i, GD_LIVE_LEASE);
        buf_puts(b, ",\"lastConsumedAt\":");
        admin_iso_ms_or_null(b, res_i64(g, i, GD_LAST_CONSUMED_US));
        buf_printf(b, ",\"totalConsumed\":%lld,\"offsetLag\":%lld,\"timeLagSeconds\":%lld,\"leaseActive\":%s,"
                      "\"leaseExpiresAt\":",
                   (long long)res_i64(g, i, GD_TOTAL_CONSUMED), (long long)lag, (long long)whole_seconds(lag_us),
                   res_bool(g, i, GD_LEASE_ACTIVE) ? "true" : "false");
        admin_iso_ms_or_null(b, res_i64(g, i, GD_LIVE_LEASE_EXPIRES));
        buf_printf(b, ",\"hasCursor\":%s,\"nextOffset\":%lld,\"startOffset\":%lld,\"endOffset\":%lld}",
                   res_bool(g, i, GD_HAS_CURSOR) ? "true" : "false", (long long)res_i64(g, i, GD_NEXT_OFFSET),
                   (long long)res_i64(g, i, GD_START_OFFSET), (long long)res_i64(g, i, GD_END_OFFSET));
    }
    buf_putc(b, '}');
}

void answer_group_deleted(buf *b, const PGresult *d, const char *group, const char *queue, int metadata)
{
    buf_puts(b, "{\"success\":true,\"consumerGroup\":");
    jw_cstr(b, group);
    if (queue) {
        buf_puts(b, ",\"queueName\":");
        jw_cstr(b, queue);
    }
    buf_printf(b, ",\"deletedPartitions\":%lld,\"metadataDeleted\":%s,\"subscriptionsDeleted\":%lld}",
               (long long)res_i64(d, 0, DELETE_GROUP_CURSORS), metadata ? "true" : "false",
               (long long)res_i64(d, 0, DELETE_GROUP_SUBSCRIPTIONS));
}

void answer_subscription(buf *b, const PGresult *s, const char *group, int64_t ts)
{
    buf_puts(b, "{\"success\":true,\"consumerGroup\":");
    jw_cstr(b, group);
    buf_puts(b, ",\"newTimestamp\":");
    admin_iso_ms_or_null(b, ts);
    buf_printf(b, ",\"rowsUpdated\":%lld}", (long long)res_i64(s, 0, SET_SUBSCRIPTION_N));
}

const char *admin_seek_status(const PGresult *s)
{
    return PQntuples(s) > 0 ? res_text(s, 0, SEEK_STATUS, NULL) : "ok";
}

void answer_seek(buf *b, const PGresult *s, const admin_seek *k)
{
    int n = PQntuples(s);
    buf_puts(b, "{\"success\":true,\"consumerGroup\":");
    jw_cstr(b, k->group);
    buf_puts(b, ",\"queueName\":");
    jw_cstr(b, k->queue);
    if (k->partition) {
        buf_puts(b, ",\"partitionName\":");
        jw_cstr(b, k->partition);
        int64_t next = n > 0 ? res_i64(s, 0, SEEK_NEXT_OFFSET) : 0;
        buf_printf(b, ",\"updated\":%s,\"cursorMovedTo\":", n > 0 ? "true" : "false");
        /* the id of the last record now behind the cursor (null at the start of the log) */
        if (n > 0 && next > 0) {
            uuid mid;
            uuid_message_id((uint64_t)res_i64(s, 0, SEEK_PARTITION_ID), (uint64_t)(next - 1), &mid);
            char ms[37];
            uuid_format(&mid, ms);
            buf_printf(b, "\"%s\"", ms);
        } else {
            buf_puts(b, "null");
        }
        buf_printf(b, ",\"nextOffset\":%lld,\"previousOffset\":", (long long)next);
        if (n > 0 && !res_null(s, 0, SEEK_PREVIOUS_OFFSET))
            buf_printf(b, "%lld", (long long)res_i64(s, 0, SEEK_PREVIOUS_OFFSET));
        else
            buf_puts(b, "null");
    } else {
        buf_printf(b, ",\"seekToEnd\":%s,\"seekToStart\":%s,\"targetTimestamp\":",
                   strcmp(k->mode, "end") == 0 ? "true" : "false", strcmp(k->mode, "start") == 0 ? "true" : "false");
        admin_iso_ms_or_null(b, strcmp(k->mode, "ts") == 0 ? k->ts : 0);
        buf_puts(b, ",\"targetOffset\":");
        if (strcmp(k->mode, "offset") == 0)
            buf_printf(b, "%lld", (long long)k->offset);
        else
            buf_puts(b, "null");
        buf_printf(b, ",\"partitionsUpdated\":%d,\"partitions\":[", n);
        for (int i = 0; i < n && i < ADMIN_SEEK_MAX_LISTED; i++) {
            char pu[37];
            res_uuid(s, i, SEEK_PARTITION_UUID, pu);
            if (i)
                buf_putc(b, ',');
            buf_puts(b, "{\"partition\":");
            res_json_str(b, s, i, SEEK_PARTITION_NAME);
            buf_printf(b, ",\"partitionId\":\"%s\",\"nextOffset\":%lld,\"previousOffset\":", pu,
                       (long long)res_i64(s, i, SEEK_NEXT_OFFSET));
            if (res_null(s, i, SEEK_PREVIOUS_OFFSET))
                buf_puts(b, "null}");
            else
                buf_printf(b, "%lld}", (long long)res_i64(s, i, SEEK_PREVIOUS_OFFSET));
        }
        buf_putc(b, ']');
    }
    buf_putc(b, '}');
}
