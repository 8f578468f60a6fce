/* popreq.c — a pop's query string (popreq.h). */
#include "popreq.h"

#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "core/util.h"

/* "true"/"1"/"yes" (any case) → 1, "false"/"0"/"no" → 0, absent → def, else -1 */
static int query_bool(const url_query *q, const char *name, int def)
{
    const char *v = url_query_get(q, name);
    if (!v || !*v)
        return def;
    size_t n = strlen(v);
    if (ascii_ieq(v, n, "true") || ascii_ieq(v, n, "1") || ascii_ieq(v, n, "yes"))
        return 1;
    if (ascii_ieq(v, n, "false") || ascii_ieq(v, n, "0") || ascii_ieq(v, n, "no"))
        return 0;
    return -1;
}

/* integer in [lo, hi]; absent → def; bad → def with *ok = 0 */
static int64_t query_int(const url_query *q, const char *name, int64_t def, int64_t lo, int64_t hi, int *ok)
{
    const char *v = url_query_get(q, name);
    if (!v || !*v)
        return def;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end || x < lo || x > hi) {
        *ok = 0;
        return def;
    }
    return x;
}

qerr pop_request_read(const url_query *q, const pop_defaults *def, pop_request *r, qerr_detail *err)
{
    pop_args *pa = &r->args;
    const char *g = url_query_get(q, "consumerGroup");
    r->has_group = g && *g;
    pa->group = r->has_group ? g : QUEUE_MODE_GROUP;
    int ok = 1;
    /* the 2.x knobs: autopilot sizes what the client left unset (consume/autopilot.h) */
    pop_sizing *sz = &r->sizing;
    sz->autopilot = query_bool(q, "autopilot", 0);
    int conflation = query_bool(q, "conflation", 0);
    /* frames=true: QPF1 (consume/qpf.h) for the answers with messages; empty answers and
     * namespace pops (one queue per answer in QPF1) stay JSON, the documented fallback */
    int frames = query_bool(q, "frames", 0);
    if (sz->autopilot < 0 || conflation < 0 || frames < 0)
        return qerr_set(err, QERR_BAD_INPUT, "invalid_request",
                        "autopilot, conflation and frames must be true or false");
    sz->batch = query_int(q, "batch", 0, 1, POP_MAX_BATCH, &ok);
    if (!ok)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "batch must be an integer between 1 and %d", POP_MAX_BATCH);
    sz->partitions = pa->partition ? 1 : query_int(q, "partitions", 0, 1, POP_MAX_PARTITIONS, &ok);
    if (!ok)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "partitions must be an integer between 1 and %d",
                        POP_MAX_PARTITIONS);
    sz->batch_set = sz->batch > 0;
    sz->partitions_set = sz->partitions > 0;
    pop_size(sz, def->batch, POP_MAX_BATCH, POP_MAX_PARTITIONS);
    pa->batch = sz->batch;
    pa->max_partitions = sz->partitions;
    r->timeout_ms = query_int(q, "timeout", def->timeout_ms, 0, 3600000, &ok);
    if (!ok)
        return qerr_set(err, QERR_BAD_INPUT, NULL,
                        "timeout must be an integer number of milliseconds between 0 and 3600000");
    r->wait = query_bool(q, "wait", 0);
    pa->auto_ack = query_bool(q, "autoAck", 0);
    if (r->wait < 0 || pa->auto_ack < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "wait and autoAck must be true or false");
    r->conflation = conflation;
    pa->conflation = conflation;
    r->frames = frames;
    const char *mode = url_query_get(q, "subscriptionMode");
    if ((!mode || !*mode) && (def->subscription_mode == 1 || def->subscription_mode == 2))
        mode = "new";
    const char *from = url_query_get(q, "subscriptionFrom");
    if (from && *from) {
        if (strcmp(from, "now") == 0) {
            pa->sub_mode = "new";
        } else if (parse_iso_us(from, strlen(from), &pa->sub_from) < 0) {
            return qerr_set(err, QERR_BAD_INPUT, NULL, "subscriptionFrom must be 'now' or an ISO-8601 timestamp");
        }
    }
    /* "new" and its synonym "new-only" start at now; every other mode (all, from_beginning, ...)
     * reads from the beginning, as the earlier release did */
    if (mode && *mode && (ascii_ieq(mode, strlen(mode), "new") || ascii_ieq(mode, strlen(mode), "new-only")))
        pa->sub_mode = "new";
    return QERR_OK;
}
