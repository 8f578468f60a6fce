/* answers_resources.c — the resources answers (admin_answers.h): overview, queues, one queue
 * with its partitions and every consumer group's position on them, namespaces, tasks,
 * deletions, the lag gauges of /metrics/prometheus, and configure's answer. */
#include <string.h>

#include "admin/admin.h"
#include "admin/admin_answers.h"
#include "core/util.h"
#include "db/res.h"
#include "json/json.h"
#include "metrics/metrics.h"
#include "queue/options.h"

static void counts_json(buf *b, int64_t total, int64_t pending, int64_t processing, int64_t completed, int64_t failed,
                        int64_t dead)
{
    buf_printf(b, "{\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,\"failed\":%lld,"
                  "\"deadLetter\":%lld}",
               (long long)total, (long long)pending, (long long)processing, (long long)completed, (long long)failed,
               (long long)dead);
}

void answer_overview(buf *b, const PGresult *o, const PGresult *l)
{
    buf_printf(b, "{\"queues\":%lld,\"partitions\":%lld,\"namespaces\":%lld,\"tasks\":%lld,\"messages\":",
               (long long)res_i64(o, 0, OV_QUEUES), (long long)res_i64(o, 0, OV_PARTITIONS),
               (long long)res_i64(o, 0, OV_NAMESPACES), (long long)res_i64(o, 0, OV_TASKS));
    counts_json(b, res_i64(o, 0, OV_TOTAL), res_i64(o, 0, OV_PENDING), res_i64(o, 0, OV_PROCESSING),
                res_i64(o, 0, OV_COMPLETED), res_i64(o, 0, OV_FAILED), res_i64(o, 0, OV_DEAD_LETTERS));
    buf_printf(b, ",\"lag\":{\"pairs\":%lld,\"time\":{\"avg\":%.3f,\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                  "\"offset\":{\"avg\":%.3f,\"median\":%.3f,\"min\":%lld,\"max\":%lld}}",
               (long long)res_i64(l, 0, OL_PAIRS), res_f64(l, 0, OL_TIME_AVG_US) / 1e6,
               res_f64(l, 0, OL_TIME_MEDIAN_US) / 1e6, (double)res_i64(l, 0, OL_TIME_MIN_US) / 1e6,
               (double)res_i64(l, 0, OL_TIME_MAX_US) / 1e6, res_f64(l, 0, OL_OFFSET_AVG),
               res_f64(l, 0, OL_OFFSET_MEDIAN), (long long)res_i64(l, 0, OL_OFFSET_MIN),
               (long long)res_i64(l, 0, OL_OFFSET_MAX));
    /* acks are not logged per record, so the processed rate is not known here (the node's
     * queen_acks_total counters are) */
    buf_printf(b, ",\"throughput\":{\"ingestedPerSecond\":%.3f,\"processedPerSecond\":null},\"timestamp\":",
               (double)res_i64(o, 0, OV_INGESTED_60S) / 60.0);
    admin_iso_ms_or_null(b, res_i64(o, 0, OV_NOW_US));
    buf_puts(b, ",\"statsAge\":0}");
}

void answer_queues(buf *b, const PGresult *x, int64_t limit, int64_t offset)
{
    int n = PQntuples(x);
    buf_puts(b, "{\"queues\":[");
    for (int i = 0; i < n; i++) {
        char id[37];
        res_uuid(x, i, QS_UUID, id);
        if (i)
            buf_putc(b, ',');
        buf_printf(b, "{\"id\":\"%s\",\"name\":", id);
        res_json_str(b, x, i, QS_NAME);
        buf_puts(b, ",\"namespace\":");
        res_json_str(b, x, i, QS_NAMESPACE);
        buf_puts(b, ",\"task\":");
        res_json_str(b, x, i, QS_TASK);
        buf_puts(b, ",\"createdAt\":");
        admin_iso_ms_or_null(b, res_i64(x, i, QS_CREATED_US));
        buf_printf(b, ",\"configured\":%s,\"partitions\":%lld,\"messages\":{\"total\":%lld,\"pending\":%lld,"
                      "\"processing\":%lld,\"completed\":%lld,\"deadLetter\":%lld},\"lastActivity\":",
                   res_bool(x, i, QS_CONFIGURED) ? "true" : "false", (long long)res_i64(x, i, QS_PARTITIONS),
                   (long long)res_i64(x, i, QS_TOTAL), (long long)res_i64(x, i, QS_PENDING),
                   (long long)res_i64(x, i, QS_PROCESSING), (long long)res_i64(x, i, QS_COMPLETED),
                   (long long)res_i64(x, i, QS_DEAD_LETTERS));
        admin_iso_us_or_null(b, res_i64(x, i, QS_LAST_TS));
        buf_putc(b, '}');
    }
    buf_printf(b, "],\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"total\":", (long long)limit, (long long)offset);
    if (n > 0)
        buf_printf(b, "%lld}}", (long long)res_i64(x, 0, QS_TOTAL_ROWS));
    else
        buf_puts(b, "null}}");
}

/* First row of the sorted (by partition id) group rows for pid, or n. */
static int group_rows_from(const PGresult *g, int64_t pid)
{
    int lo = 0, hi = PQntuples(g);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (res_i64(g, mid, QG_PARTITION_ID) < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The queue's own fields, up to and including the opening of its partition list. */
static void queue_head(buf *b, const PGresult *x, int status_view)
{
    char qid[37];
    res_uuid(x, 0, QC_UUID, qid);
    size_t optlen;
    const char *opts = res_text(x, 0, QC_OPTIONS, &optlen);
    json_doc od;
    int ok = queue_options_open(&od, opts, optlen);
    if (status_view) {
        buf_printf(b, "{\"queue\":{\"id\":\"%s\",\"name\":", qid);
        res_json_str(b, x, 0, QC_NAME);
        buf_puts(b, ",\"namespace\":");
        res_json_str(b, x, 0, QC_NS);
        buf_puts(b, ",\"task\":");
        res_json_str(b, x, 0, QC_TASK);
        buf_puts(b, ",\"priority\":");
        queue_option_raw(b, &od, ok, "priority");
        buf_puts(b, ",\"createdAt\":");
        admin_iso_ms_or_null(b, res_i64(x, 0, QC_CREATED));
        static const char *const CONFIG[][2] = {{"leaseTime", "leaseTime"}, {"retryLimit", "retryLimit"},
                                                {"retryDelay", "retryDelay"}, {"ttl", "ttl"},
                                                {"maxQueueSize", "maxSize"},  {"deadLetterQueue", "deadLetterQueue"}};
        buf_puts(b, ",\"config\":{");
        queue_options_fields(b, &od, ok, CONFIG, ARRAY_LEN(CONFIG));
        buf_puts(b, "}},\"partitions\":[");
    } else {
        buf_printf(b, "{\"id\":\"%s\",\"name\":", qid);
        res_json_str(b, x, 0, QC_NAME);
        buf_puts(b, ",\"namespace\":");
        res_json_str(b, x, 0, QC_NS);
        buf_puts(b, ",\"task\":");
        res_json_str(b, x, 0, QC_TASK);
        buf_puts(b, ",\"createdAt\":");
        admin_iso_ms_or_null(b, res_i64(x, 0, QC_CREATED));
        buf_printf(b, ",\"configured\":%s,\"options\":", res_bool(x, 0, QC_CONFIGURED) ? "true" : "false");
        if (ok)
            buf_append(b, opts, optlen);
        else
            buf_puts(b, "{}");
        buf_puts(b, ",\"partitions\":[");
    }
    json_doc_free(&od);
}

/* every consumer group's position on partition pid */
static void partition_groups(buf *b, const PGresult *g, int64_t pid)
{
    buf_puts(b, ",\"consumerGroups\":[");
    int k = 0;
    for (int j = group_rows_from(g, pid); j < PQntuples(g) && res_i64(g, j, QG_PARTITION_ID) == pid; j++) {
        if (k++)
            buf_putc(b, ',');
        int64_t lag_us = res_i64(g, j, QG_TIME_LAG_US);
        buf_puts(b, "{\"name\":");
        res_json_str(b, g, j, QG_GROUP);
        buf_printf(b, ",\"hasCursor\":%s,\"nextOffset\":%lld,\"offsetLag\":%lld,\"timeLagSeconds\":%lld,"
                      "\"timeLagMs\":%lld,\"leaseActive\":%s}",
                   res_bool(g, j, QG_HAS_CURSOR) ? "true" : "false", (long long)res_i64(g, j, QG_NEXT_OFFSET),
                   (long long)res_i64(g, j, QG_OFFSET_LAG), (long long)(lag_us / 1000000), (long long)(lag_us / 1000),
                   res_bool(g, j, QG_LEASE_ACTIVE) ? "true" : "false");
    }
    buf_putc(b, ']');
}

/* the per group totals of the queue */
static void group_totals(buf *b, const PGresult *gt)
{
    buf_puts(b, ",\"consumerGroups\":[");
    int ng = PQntuples(gt);
    for (int j = 0; j < ng; j++) {
        if (j)
            buf_putc(b, ',');
        int64_t max_us = res_i64(gt, j, QGT_MAX_TIME_LAG_US);
        buf_puts(b, "{\"name\":");
        res_json_str(b, gt, j, QGT_GROUP);
        buf_printf(b, ",\"members\":%lld,\"partitionsWithLag\":%lld,\"totalLag\":%lld,\"maxTimeLag\":%lld,"
                      "\"state\":\"%s\",\"subscriptionMode\":",
                   (long long)res_i64(gt, j, QGT_MEMBERS), (long long)res_i64(gt, j, QGT_PARTITIONS_WITH_LAG),
                   (long long)res_i64(gt, j, QGT_TOTAL_LAG), (long long)(max_us / 1000000),
                   admin_group_state(max_us, res_bool(gt, j, QGT_EVER_CONSUMED)));
        res_json_str(b, gt, j, QGT_SUB_MODE);
        buf_puts(b, ",\"subscriptionTimestamp\":");
        admin_iso_ms_or_null(b, res_null(gt, j, QGT_SUB_TS) ? 0 : res_i64(gt, j, QGT_SUB_TS));
        buf_putc(b, '}');
    }
    buf_putc(b, ']');
}

void answer_queue(buf *b, const PGresult *x, const PGresult *g, const PGresult *gt, int status_view)
{
    int n = PQntuples(x);
    queue_head(b, x, status_view);
    int64_t t_total = 0, t_pending = 0, t_processing = 0, t_completed = 0, t_failed = 0, t_dead = 0;
    int np = 0;
    for (int i = 0; i < n; i++) {
        if (res_null(x, i, PC_ID))
            continue; /* a queue without partitions */
        char pu[37];
        res_uuid(x, i, PC_UUID, pu);
        int64_t total = res_i64(x, i, PC_TOTAL), completed = res_i64(x, i, PC_COMPLETED);
        int64_t processing = res_i64(x, i, PC_PROCESSING), pending = res_i64(x, i, PC_PENDING);
        int64_t failed = res_i64(x, i, PC_FAILED), dead = res_i64(x, i, PC_DEAD);
        t_total += total;
        t_completed += completed;
        t_processing += processing;
        t_pending += pending;
        t_failed += failed;
        t_dead += dead;
        if (np++)
            buf_putc(b, ',');
        buf_printf(b, "{\"id\":\"%s\",\"name\":", pu);
        res_json_str(b, x, i, PC_NAME);
        buf_puts(b, ",\"createdAt\":");
        admin_iso_ms_or_null(b, res_i64(x, i, PC_CREATED));
        buf_printf(b, ",\"startOffset\":%lld,\"endOffset\":%lld", (long long)res_i64(x, i, PC_START),
                   (long long)res_i64(x, i, PC_NEXT));
        if (status_view) {
            buf_puts(b, ",\"messages\":");
            counts_json(b, total, pending, processing, completed, failed, dead);
        }
        buf_puts(b, ",\"stats\":");
        counts_json(b, total, pending, processing, completed, failed, dead);
        if (status_view) {
            buf_printf(b, ",\"cursor\":{\"totalConsumed\":%lld,\"nextOffset\":", (long long)res_i64(x, i, PC_CONSUMED));
            if (res_bool(x, i, PC_HAS_QM))
                buf_printf(b, "%lld}", (long long)(res_i64(x, i, PC_START) + completed));
            else
                buf_puts(b, "null}");
            buf_puts(b, ",\"lastActivity\":");
            admin_iso_us_or_null(b, res_i64(x, i, PC_LAST_TS));
        }
        buf_puts(b, ",\"leaseExpiresAt\":");
        admin_iso_ms_or_null(b, res_i64(x, i, PC_LEASE_EXP));
        buf_puts(b, ",\"oldestMessage\":");
        admin_iso_us_or_null(b, total > 0 ? res_i64(x, i, PC_OLDEST) : 0);
        buf_puts(b, ",\"newestMessage\":");
        admin_iso_us_or_null(b, total > 0 ? res_i64(x, i, PC_LAST_TS) : 0);
        if (!status_view)
            partition_groups(b, g, res_i64(x, i, PC_ID));
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"totals\":");
    if (status_view) {
        buf_puts(b, "{\"messages\":");
        counts_json(b, t_total, t_pending, t_processing, t_completed, t_failed, t_dead);
        buf_printf(b, ",\"total\":%lld,\"pending\":%lld,\"processing\":%lld,\"completed\":%lld,\"failed\":%lld,"
                      "\"deadLetter\":%lld}",
                   (long long)t_total, (long long)t_pending, (long long)t_processing, (long long)t_completed,
                   (long long)t_failed, (long long)t_dead);
    } else {
        counts_json(b, t_total, t_pending, t_processing, t_completed, t_failed, t_dead);
        group_totals(b, gt);
    }
    buf_putc(b, '}');
}

void answer_grouped(buf *b, const PGresult *x, const char *key)
{
    buf_printf(b, "{\"%ss\":[", key);
    for (int i = 0; i < PQntuples(x); i++) {
        if (i)
            buf_putc(b, ',');
        buf_printf(b, "{\"%s\":", key);
        res_json_str(b, x, i, GRP_NAME);
        buf_printf(b, ",\"queues\":%lld,\"partitions\":%lld,\"messages\":{\"total\":%lld,\"pending\":%lld,"
                      "\"processing\":%lld,\"completed\":%lld}}",
                   (long long)res_i64(x, i, GRP_QUEUES), (long long)res_i64(x, i, GRP_PARTITIONS),
                   (long long)res_i64(x, i, GRP_TOTAL), (long long)res_i64(x, i, GRP_PENDING),
                   (long long)res_i64(x, i, GRP_PROCESSING), (long long)res_i64(x, i, GRP_COMPLETED));
    }
    buf_puts(b, "]}");
}

void answer_queue_deleted(buf *b, const PGresult *x, const char *queue)
{
    buf_puts(b, "{\"deleted\":true,\"queue\":");
    jw_cstr(b, queue);
    buf_printf(b, ",\"existed\":%s,\"partitions\":%lld,\"records\":%lld}",
               res_bool(x, 0, DELETE_QUEUE_EXISTED) ? "true" : "false",
               (long long)res_i64(x, 0, DELETE_QUEUE_PARTITIONS), (long long)res_i64(x, 0, DELETE_QUEUE_RECORDS));
}

void answer_partition_deleted(buf *b, const PGresult *x, const char *queue, const char *partition)
{
    char pu[37];
    res_uuid(x, 0, DELETE_PARTITION_UUID, pu);
    buf_puts(b, "{\"deleted\":true,\"queue\":");
    jw_cstr(b, queue);
    buf_puts(b, ",\"partition\":");
    jw_cstr(b, partition);
    buf_printf(b, ",\"partitionId\":\"%s\",\"records\":%lld}", pu, (long long)res_i64(x, 0, DELETE_PARTITION_RECORDS));
}

/* queue="…",group="…"[,tenant="…"]: the tenant only when it is not the default one */
static void lag_labels(buf *l, const PGresult *x, int i, int with_group, const uint8_t default_tenant[16])
{
    size_t n;
    const char *s = res_text(x, i, METRICS_LAG_QUEUE, &n);
    buf_puts(l, "queue=\"");
    metric_label_escape(l, s, n);
    buf_putc(l, '"');
    if (with_group) {
        s = res_text(x, i, METRICS_LAG_GROUP, &n);
        buf_puts(l, ",group=\"");
        metric_label_escape(l, s, n);
        buf_putc(l, '"');
    }
    if (PQgetlength(x, i, METRICS_LAG_TENANT) == 16 &&
        memcmp(PQgetvalue(x, i, METRICS_LAG_TENANT), default_tenant, 16) != 0) {
        char t[37];
        res_uuid(x, i, METRICS_LAG_TENANT, t);
        buf_printf(l, ",tenant=\"%s\"", t);
    }
}

void answer_lag_metrics(buf *b, const PGresult *x, const uint8_t default_tenant[16])
{
    int n = PQntuples(x);
    buf l;
    buf_init(&l, 0);
    /* one family at a time: a family's samples must be contiguous */
    for (int fam = 0; fam < 3; fam++) {
        static const char *const names[] = {"queen_queue_lag_records", "queen_queue_lag_seconds", "queen_dead_letters"};
        static const char *const helps[] = {
            "Records not yet done by a consumer group (queue mode: __QUEUE_MODE__), from offsets",
            "Age of the oldest record a consumer group has not done", "Dead letters of a queue not requeued"};
        metric_help(b, names[fam], "gauge", helps[fam]);
        for (int i = 0; i < n; i++) {
            int kind = (int)res_i64(x, i, METRICS_LAG_KIND);
            if ((fam < 2) != (kind == METRICS_LAG_ROW_GROUP))
                continue;
            buf_reset(&l);
            lag_labels(&l, x, i, fam < 2, default_tenant);
            if (fam == 1)
                metric_f64(b, names[fam], buf_cstr(&l), (double)res_i64(x, i, METRICS_LAG_US) / 1e6);
            else
                metric_u64(b, names[fam], buf_cstr(&l), (uint64_t)res_i64(x, i, METRICS_LAG_VAL));
        }
    }
    buf_free(&l);
}

void answer_configured(buf *b, const PGresult *x, const char *queue, const char *ns, const char *task,
                       const char *options, size_t options_len)
{
    buf_puts(b, "{\"configured\":true,\"queueId\":");
    jw_cstr(b, PQgetvalue(x, 0, CFG_QUEUE_UUID));
    buf_puts(b, ",\"partitionId\":");
    if (PQgetisnull(x, 0, CFG_PARTITION_UUID))
        buf_puts(b, "null");
    else
        jw_cstr(b, PQgetvalue(x, 0, CFG_PARTITION_UUID));
    buf_puts(b, ",\"queue\":");
    jw_cstr(b, queue);
    buf_puts(b, ",\"namespace\":");
    jw_cstr(b, ns);
    buf_puts(b, ",\"task\":");
    jw_cstr(b, task);
    buf_puts(b, ",\"options\":");
    buf_append(b, options, options_len);
    buf_putc(b, '}');
}
