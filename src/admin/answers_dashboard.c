/* answers_dashboard.c — the dashboard answers (admin_answers.h): a queue's depth per
 * partition, the partition listing, the status page, the analytics page, this node's worker
 * entry. */
#include "admin/admin.h"
#include "admin/admin_answers.h"
#include "db/res.h"
#include "json/json.h"

void admin_iso_field(buf *b, const char *key, int64_t us)
{
    buf_printf(b, "\"%s\":", key);
    admin_iso_ms_or_null(b, us);
}

static int idle_connections(const admin_node *n)
{
    return n->pool_connected - n->pool_busy < 0 ? 0 : n->pool_connected - n->pool_busy;
}

void answer_worker(buf *b, const admin_node *n)
{
    buf_puts(b, "{\"hostname\":");
    jw_cstr(b, n->hostname);
    buf_puts(b, ",\"workerId\":");
    jw_cstr(b, n->node_id);
    /* the loop's lag is not measured; free slots = idle database connections */
    buf_printf(b, ",\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,\"freeSlots\":%d,\"dbConnections\":%d,"
                  "\"jobQueueSize\":%d,\"messagesProcessed\":%llu}",
               idle_connections(n), n->pool_connected, n->pool_pending, (unsigned long long)n->pop_messages);
}

void answer_depth(buf *b, const PGresult *x, const PGresult *policy, const char *queue, const char *group)
{
    int64_t pending = 0, parts = 0;
    buf list;
    buf_init(&list, 0);
    for (int i = 0; i < PQntuples(x); i++) {
        int64_t n = res_i64(x, i, DEPTH_PENDING);
        if (n < 0)
            n = 0;
        pending += n;
        parts += n > 0;
        if (i)
            buf_putc(&list, ',');
        buf_puts(&list, "{\"partition\":");
        res_json_str(&list, x, i, DEPTH_PARTITION);
        buf_printf(&list, ",\"pending\":%lld}", (long long)n);
    }
    buf_puts(b, "{\"queue\":");
    jw_cstr(b, queue);
    buf_puts(b, ",\"group\":");
    if (group)
        jw_cstr(b, group);
    else
        buf_puts(b, "null");
    /* a conflating group hands out one record per partition that owes work: its work depth is
     * partitionsPending; any other's is its log depth (no group named: queue level, no policy) */
    int conf = group && policy && PQntuples(policy) > 0;
    buf_printf(b, ",\"pending\":%lld,\"partitionsPending\":%lld,\"conflation\":%s,\"effectivePending\":%lld,"
                  "\"partitions\":[",
               (long long)pending, (long long)parts, conf ? "true" : "false", (long long)(conf ? parts : pending));
    buf_append(b, list.data, list.len);
    buf_puts(b, "]}");
    buf_free(&list);
}

void answer_partitions(buf *b, const PGresult *x, int64_t limit, int64_t offset)
{
    int n = PQntuples(x);
    buf_puts(b, "{\"partitions\":[");
    for (int i = 0; i < n; i++) {
        char id[37];
        res_uuid(x, i, PS_UUID, id);
        if (i)
            buf_putc(b, ',');
        buf_printf(b, "{\"id\":\"%s\",\"name\":", id);
        res_json_str(b, x, i, PS_NAME);
        buf_puts(b, ",\"queue\":");
        res_json_str(b, x, i, PS_QUEUE);
        buf_puts(b, ",\"namespace\":");
        res_json_str(b, x, i, PS_NAMESPACE);
        buf_puts(b, ",\"task\":");
        res_json_str(b, x, i, PS_TASK);
        buf_puts(b, ",\"createdAt\":");
        admin_iso_ms_or_null(b, res_i64(x, i, PS_CREATED_US));
        buf_printf(b, ",\"messages\":{\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,"
                      "\"deadLetter\":%lld},\"startOffset\":%lld,\"endOffset\":%lld,\"totalConsumed\":%lld,"
                      "\"lastActivity\":",
                   (long long)res_i64(x, i, PS_TOTAL), (long long)res_i64(x, i, PS_PENDING),
                   (long long)res_i64(x, i, PS_PROCESSING), (long long)res_i64(x, i, PS_COMPLETED),
                   (long long)res_i64(x, i, PS_DEAD_LETTERS), (long long)res_i64(x, i, PS_START_OFFSET),
                   (long long)res_i64(x, i, PS_NEXT_OFFSET), (long long)res_i64(x, i, PS_CONSUMED));
        admin_iso_us_or_null(b, res_i64(x, i, PS_LAST_TS));
        buf_puts(b, ",\"leaseExpiresAt\":");
        admin_iso_ms_or_null(b, res_i64(x, i, PS_LEASE_EXP));
        buf_putc(b, '}');
    }
    buf_printf(b, "],\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"total\":", (long long)limit, (long long)offset);
    if (n > 0)
        buf_printf(b, "%lld}}", (long long)res_i64(x, 0, PS_TOTAL_ROWS));
    else
        buf_puts(b, "null}}");
}

void answer_status_page(buf *b, int64_t from, int64_t to, int64_t bucket, const PGresult *se, const PGresult *qu,
                        const PGresult *ms, const PGresult *dl, const admin_node *node)
{
    double bsec = (double)bucket / 1e6;
    buf_puts(b, "{\"timeRange\":{");
    admin_iso_field(b, "from", from);
    buf_putc(b, ',');
    admin_iso_field(b, "to", to);
    buf_printf(b, "},\"bucketMinutes\":%lld,\"pointCount\":%d,\"throughput\":[", (long long)(bucket / 60000000),
               PQntuples(se));
    for (int i = 0; i < PQntuples(se); i++) {
        int64_t n = res_i64(se, i, SERIES_RECORDS);
        if (i)
            buf_putc(b, ',');
        buf_putc(b, '{');
        admin_iso_field(b, "timestamp", res_i64(se, i, SERIES_BUCKET_US));
        /* processed and popped are not logged per record: 0; the process figures are now's */
        buf_printf(b, ",\"ingested\":%lld,\"processed\":0,\"popMessages\":0,\"ingestedPerSecond\":%.3f,"
                      "\"processedPerSecond\":0,\"popPerSecond\":0,\"avgLagMs\":0,\"maxLagMs\":0,"
                      "\"avgEventLoopLagMs\":0,\"maxEventLoopLagMs\":0,\"minFreeSlots\":0,\"dbErrors\":0,"
                      "\"ackFailed\":0,\"dlqCount\":0,\"queenCpuUserPct\":%.2f,\"queenCpuSysPct\":%.2f,"
                      "\"queenRssMb\":%.1f,\"dbPoolActive\":%d,\"dbPoolIdle\":%d,\"dbPoolSize\":%d}",
                   (long long)n, (double)n / bsec, node->cpu_user_pct, node->cpu_sys_pct, node->rss_mb,
                   node->pool_busy, idle_connections(node), node->pool_size);
    }
    buf_puts(b, "],\"queues\":[");
    for (int i = 0; i < PQntuples(qu); i++) {
        char id[37];
        res_uuid(qu, i, DQ_UUID, id);
        if (i)
            buf_putc(b, ',');
        buf_printf(b, "{\"id\":\"%s\",\"name\":", id);
        res_json_str(b, qu, i, DQ_NAME);
        buf_puts(b, ",\"namespace\":");
        res_json_str(b, qu, i, DQ_NAMESPACE);
        buf_puts(b, ",\"task\":");
        res_json_str(b, qu, i, DQ_TASK);
        buf_printf(b, ",\"partitions\":%lld,\"totalConsumed\":%lld}", (long long)res_i64(qu, i, DQ_PARTITIONS),
                   (long long)res_i64(qu, i, DQ_CONSUMED));
    }
    int64_t dead = res_i64(dl, 0, DD_DEAD_LETTERS);
    buf_printf(b, "],\"messages\":{\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,"
                  "\"failed\":0,\"deadLetter\":%lld}",
               (long long)res_i64(ms, 0, DC_TOTAL), (long long)res_i64(ms, 0, DC_PENDING),
               (long long)res_i64(ms, 0, DC_PROCESSING), (long long)res_i64(ms, 0, DC_COMPLETED), (long long)dead);
    buf_printf(b, ",\"leases\":{\"active\":%lld,\"partitionsWithLeases\":%lld,\"totalBatchSize\":%lld,\"totalAcked\":%lld}",
               (long long)res_i64(ms, 0, DC_LEASES), (long long)res_i64(ms, 0, DC_LEASED_PARTITIONS),
               (long long)res_i64(ms, 0, DC_LEASED_RECORDS), (long long)res_i64(ms, 0, DC_ACKED_RECORDS));
    buf_printf(b, ",\"deadLetterQueue\":{\"totalMessages\":%lld,\"affectedPartitions\":%lld,\"topErrors\":",
               (long long)dead, (long long)res_i64(dl, 0, DD_PARTITIONS));
    size_t tl;
    const char *top = res_text(dl, 0, DD_TOP_ERRORS, &tl);
    if (tl)
        buf_append(b, top, tl);
    else
        buf_puts(b, "[]");
    buf_puts(b, "},\"workers\":[");
    answer_worker(b, node);
    buf_printf(b, "],\"errors\":{\"dbErrors\":%llu,\"ackFailed\":%llu,\"dlqMessages\":%lld},\"statsAge\":0}",
               (unsigned long long)node->pool_failures, (unsigned long long)node->acks_failed, (long long)dead);
}

void answer_analytics(buf *b, const PGresult *se, const char *interval, int64_t from, int64_t to)
{
    buf_puts(b, "{\"dataPoints\":[");
    for (int i = 0; i < PQntuples(se); i++) {
        if (i)
            buf_putc(b, ',');
        buf_putc(b, '{');
        admin_iso_field(b, "timestamp", res_i64(se, i, SERIES_BUCKET_US));
        buf_printf(b, ",\"messages\":%lld}", (long long)res_i64(se, i, SERIES_RECORDS));
    }
    buf_printf(b, "],\"interval\":\"%s\",", interval);
    admin_iso_field(b, "from", from);
    buf_putc(b, ',');
    admin_iso_field(b, "to", to);
    buf_putc(b, '}');
}
