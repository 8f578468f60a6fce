/* app.h — the node: every long-lived object the handlers reach, owned by main. */
#ifndef QUEEN_API_APP_H
#define QUEEN_API_APP_H

#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "consume/consume.h"
#include "consume/notify.h"
#include "db/embedded.h"
#include "db/pg.h"
#include "http/server.h"
#include "kv/kv.h"
#include "storage/maint.h"
#include "storage/retention.h"
#include "storage/push.h"
#include "timers/timers.h"

#define QUEEN_VERSION "0.2.0"

extern const uint8_t DEFAULT_TENANT[16];

/* Counters of the consumption routes (updated on the loop thread, read by /metrics). */
typedef struct consume_metrics {
    mcounter pops, pop_empty, pop_messages, pop_waits;
    mcounter acks_completed, acks_failed, acks_retry, acks_dlq, acks_rejected;
    mcounter retries, dead_letters;
} consume_metrics;

typedef struct app {
    const queen_config *cfg;
    uv_loop_t *loop;
    db_pool *db;
    pusher *push;
    http_server *http;
    maint *maint;
    retention *retention;
    waitq *wq;
    notifier *notify;
    kv_metrics kvm;      /* KV counters (handlers and the reaper) */
    kv_reaper *kvr;      /* deletes expired keys */
    timer_job *timers;   /* fires due timers */
    embedded_pg *emb;    /* NULL with an external database */
    int64_t started_wall_us;
    uint64_t started_mono_us;
    int shutting_down;
    consume_metrics cm;
} app;

void api_register(app *a);

/* Route handlers (one file per concern). */
void api_push(http_req *r);
void api_fetch(http_req *r);
void api_partitions_changed(http_req *r);
void api_configure(http_req *r);
void api_health(http_req *r);
void api_status(http_req *r);
void api_metrics_prometheus(http_req *r);
void api_metrics_json(http_req *r);
void api_pop_queue(http_req *r);
void api_pop_partition(http_req *r);
void api_pop_namespace(http_req *r);
/* Records were pushed to this partition: lanes popping its queue try it first. */
void api_pop_hint(const uint8_t tenant[16], const char *queue, size_t qlen, uint64_t partition_id);
void api_ack(http_req *r);
void api_ack_batch(http_req *r);
void api_lease_extend(http_req *r);
void api_kv_get(http_req *r);
void api_kv_list(http_req *r);
void api_kv_put(http_req *r);
void api_kv_put_if_absent(http_req *r);
void api_kv_delete(http_req *r);
void api_kv_incr(http_req *r);
void api_kv_batch(http_req *r);
void api_timer_create(http_req *r);
void api_timer_list(http_req *r);
void api_timer_get(http_req *r);
void api_timer_cancel(http_req *r);

/* Shared request-body helpers: parse the body as a JSON object or answer 400 (the _or_respond
 * suffix: on -1 the client has been answered). */
#include "json/json.h"
int api_parse_body_or_respond(http_req *r, json_doc *d, uint32_t token_depth);
/* A string field of an object: 1 present (decoded into the request arena, NUL-terminated),
 * 0 absent or null, -1 wrong type. */
int api_str_field(http_req *r, const json_doc *d, int obj, const char *key, const char **out, size_t *len);
/* An integer field: 1 present, 0 absent/null, -1 wrong type or out of [lo, hi]. */
int api_int_field(const json_doc *d, int obj, const char *key, int64_t lo, int64_t hi, int64_t *out);
int push_item_parse_or_respond(http_req *r, const json_doc *d, int it, uint32_t i, push_item *pi);
void api_transaction(http_req *r);
/* An integer query parameter (decimal, optional '-'): 1 present, 0 absent or empty, -1 not an
 * integer in [lo, hi]. */
int api_query_int(http_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out);
/* Answers a failed database request: 500 for an SQL error, 503 when the database was
 * unreachable or the connection was lost. */
void api_respond_db_error(http_req *r, const db_req *d);

#endif
