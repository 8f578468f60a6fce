/* admin_answers.h — the JSON (and Prometheus text) of the admin routes' answers, written from
 * the rows of their statements (admin_statements.h, admin_results.h). Pure: results in, text
 * out, no I/O, no http_req; the routes (api_groups.c, api_resources.c, api_dashboard.c,
 * api_configure.c) decide the status, send what these write, and tests/unit/test_admin_answers.c
 * checks them byte for byte over results built without a server (PQmakeEmptyPGresult).
 * Shapes: docs/http-api.md. Each writer appends to b. */
#ifndef QUEEN_ADMIN_ADMIN_ANSWERS_H
#define QUEEN_ADMIN_ADMIN_ANSWERS_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* ---- consumer groups (answers_groups.c) -------------------------------------------------- */

/* GET /api/v1/consumer-groups: ADMIN_GROUPS_SQL rows */
void answer_groups(buf *b, const PGresult *g);
/* GET /api/v1/consumer-groups/lagging: ADMIN_LAGGING_SQL rows */
void answer_lagging(buf *b, const PGresult *g);
/* GET /api/v1/consumer-groups/:group: ADMIN_GROUP_DETAIL_SQL rows, one object per queue */
void answer_group_detail(buf *b, const PGresult *g);
/* DELETE /api/v1/consumer-groups/:group[/queues/:queue]: the delete_group_v1 row (status not
 * queue_not_found); queue NULL = every queue */
void answer_group_deleted(buf *b, const PGresult *d, const char *group, const char *queue, int metadata);
/* POST /api/v1/consumer-groups/:group/subscription: the set_subscription_v1 row */
void answer_subscription(buf *b, const PGresult *s, const char *group, int64_t ts);

/* A seek as the request asked it: mode end | start | ts | offset; partition NULL = every
 * partition of the queue. */
typedef struct admin_seek {
    const char *group, *queue, *partition;
    const char *mode;
    int64_t ts;
    int64_t offset;
} admin_seek;
/* Seek answers list at most this many partitions (partitionsUpdated counts them all). */
#define ADMIN_SEEK_MAX_LISTED 1000
/* "ok", "queue_not_found" or "partition_not_found": the seek_v1 rows' status (no row = ok). */
const char *admin_seek_status(const PGresult *s);
/* POST .../seek, 200: the seek_v1 rows of a seek whose status is ok */
void answer_seek(buf *b, const PGresult *s, const admin_seek *k);

/* ---- resources (answers_resources.c) ----------------------------------------------------- */

/* GET /api/v1/resources/overview: the ADMIN_OVERVIEW_SQL and ADMIN_OVERVIEW_LAG_SQL rows */
void answer_overview(buf *b, const PGresult *o, const PGresult *l);
/* GET /api/v1/resources/queues, /api/v1/status/queues: ADMIN_QUEUES_SQL rows */
void answer_queues(buf *b, const PGresult *x, int64_t limit, int64_t offset);
/* GET /api/v1/resources/queues/:queue (status_view 0) and /api/v1/status/queues/:queue
 * (status_view 1): ADMIN_QUEUE_SQL rows (at least one: the queue exists), the
 * ADMIN_QUEUE_GROUPS_SQL and ADMIN_QUEUE_GROUP_TOTALS_SQL rows */
void answer_queue(buf *b, const PGresult *x, const PGresult *g, const PGresult *gt, int status_view);
/* GET /api/v1/resources/namespaces (key "namespace"), /tasks ("task"): ADMIN_GROUPED_COLUMNS rows */
void answer_grouped(buf *b, const PGresult *x, const char *key);
/* DELETE /api/v1/resources/queues/:queue: the delete_queue_v1 row */
void answer_queue_deleted(buf *b, const PGresult *x, const char *queue);
/* DELETE .../partitions/:partition: the delete_partition_v1 row (status ok) */
void answer_partition_deleted(buf *b, const PGresult *x, const char *queue, const char *partition);
/* /metrics/prometheus: the lag and dead-letter gauge families from the metrics_lag_v1 rows;
 * the tenant label only for tenants other than default_tenant */
void answer_lag_metrics(buf *b, const PGresult *x, const uint8_t default_tenant[16]);
/* POST /api/v1/configure, 200: the ADMIN_CONFIGURE_SQL row (text results) and the request's
 * queue, namespace, task and options JSON as stored */
void answer_configured(buf *b, const PGresult *x, const char *queue, const char *ns, const char *task,
                       const char *options, size_t options_len);

/* ---- dashboard (answers_dashboard.c) ----------------------------------------------------- */

/* What this node says about itself (the worker entry, the status page's process figures). */
typedef struct admin_node {
    const char *hostname, *node_id;
    int pool_size, pool_connected, pool_busy, pool_pending;
    uint64_t pool_failures, acks_failed, pop_messages;
    double cpu_user_pct, cpu_sys_pct, rss_mb;
} admin_node;

/* "key":"…Z" (ms) or "key":null */
void admin_iso_field(buf *b, const char *key, int64_t us);
/* This node as one entry of the dashboard's worker list. */
void answer_worker(buf *b, const admin_node *n);
/* GET /api/v1/resources/queues/:queue/depth: ADMIN_DEPTH_COLUMNS rows; group NULL = queue
 * level; policy: the ADMIN_DEPTH_POLICY_SQL rows (NULL without a group) */
void answer_depth(buf *b, const PGresult *x, const PGresult *policy, const char *queue, const char *group);
/* GET /api/v1/resources/partitions: ADMIN_PARTITIONS_SQL rows */
void answer_partitions(buf *b, const PGresult *x, int64_t limit, int64_t offset);
/* GET /api/v1/status: the ADMIN_SERIES_SQL, ADMIN_DASH_QUEUES_SQL, ADMIN_DASH_COUNTS_SQL and
 * ADMIN_DASH_DLQ_SQL rows over [from, to] in buckets of bucket µs */
void answer_status_page(buf *b, int64_t from, int64_t to, int64_t bucket, const PGresult *se, const PGresult *qu,
                        const PGresult *ms, const PGresult *dl, const admin_node *n);
/* GET /api/v1/status/analytics: ADMIN_SERIES_SQL rows */
void answer_analytics(buf *b, const PGresult *se, const char *interval, int64_t from, int64_t to);

#endif
