/* api_messages.c — browsing the log: GET /api/v1/messages (filtered, newest first, paged) and
 * GET /api/v1/messages/:partitionId/:transactionId (one record with its payload) and DELETE
 * of one (queen.message_delete_v1 marks it deleted in its segment; readers skip it).
 *
 * Records live in segments that only C can decode. The list is one call of
 * queen.list_messages_v1, which counts matching records per segment from offsets (so it can
 * skip whole segments for `offset`) and returns the page's segments with each partition's
 * cursor positions and dead-lettered offsets; the decoder below gives each record its status
 * by the same rule (admin_record_status) and cuts the page.
 *
 * A single record is found without scanning when possible: a message id names its offset, a
 * producer transactionId is in the dedup window's index, a dead letter or a live lease names
 * it. Otherwise the partition's segments are scanned, bounded (admin.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "core/uuid.h"
#include "queue/options.h"

/* ---- GET /api/v1/messages ---------------------------------------------------------------- */

typedef struct list_part {
    int64_t id;
    int row; /* its kind-0 row */
    int64_t start, done, live_end, lease_exp;
    int has_qm;
    int bus_from, bus_n; /* its consumer groups' positions: bus_offs[bus_from .. +bus_n] */
} list_part;

typedef struct pid_off {
    int64_t pid, off;
} pid_off;

typedef struct list_ctx {
    const char *queue;
    int has_status;
    enum rec_status status;
    int64_t limit, offset;
} list_ctx;

static int cmp_part(const void *a, const void *b)
{
    int64_t x = ((const list_part *)a)->id, y = ((const list_part *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_pid_off(const void *a, const void *b)
{
    const pid_off *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The page under construction. */
typedef struct page {
    PGresult *res;
    list_part *parts;
    int nparts;
    pid_off *dead;
    int ndead;
    pid_off *bus; /* (pid, first offset not done) per consumer group */
    int nbus;
    record_view *views;
    uint32_t views_cap;
} page;

static list_part *find_part(page *pg, int64_t pid)
{
    list_part key = {.id = pid};
    return bsearch(&key, pg->parts, (size_t)pg->nparts, sizeof key, cmp_part);
}

static int is_dead(page *pg, int64_t pid, int64_t off)
{
    pid_off key = {pid, off};
    return pg->ndead && bsearch(&key, pg->dead, (size_t)pg->ndead, sizeof key, cmp_pid_off) != NULL;
}

static void record_list_json(buf *b, page *pg, const list_part *p, const record_view *v, int64_t ts,
                             enum rec_status st)
{
    PGresult *x = pg->res;
    int row = p->row;
    uuid mid;
    uuid_message_id((uint64_t)p->id, v->offset, &mid);
    char ms[37], pu[37], txn[512];
    uuid_format(&mid, ms);
    res_uuid(x, row, LM_PUUID, pu);
    size_t tl = record_txn_text(v, txn, sizeof txn);
    buf_printf(b, "{\"id\":\"%s\",\"transactionId\":", ms);
    jw_string(b, txn, tl);
    buf_printf(b, ",\"partitionId\":\"%s\",\"queuePath\":", pu);
    size_t ql, pl;
    const char *qn = res_text(x, row, LM_QNAME, &ql), *pn = res_text(x, row, LM_PNAME, &pl);
    buf qp;
    buf_init(&qp, 0);
    buf_append(&qp, qn, ql);
    buf_putc(&qp, '/');
    buf_append(&qp, pn, pl);
    jw_string(b, qp.data, qp.len);
    buf_free(&qp);
    buf_puts(b, ",\"queue\":");
    jw_string(b, qn, ql);
    buf_puts(b, ",\"partition\":");
    jw_string(b, pn, pl);
    buf_puts(b, ",\"namespace\":");
    res_json_str(b, x, row, LM_NS);
    buf_puts(b, ",\"task\":");
    res_json_str(b, x, row, LM_TASK);
    int consumed = 0;
    for (int k = 0; k < p->bus_n; k++)
        consumed += (int64_t)v->offset < pg->bus[p->bus_from + k].off;
    buf_printf(b, ",\"offset\":%llu,\"status\":\"%s\",\"queueStatus\":\"%s\",\"busStatus\":{\"consumedBy\":%d,"
                  "\"totalGroups\":%d},\"traceId\":",
               (unsigned long long)v->offset, admin_status_name(st), admin_status_name(st), consumed, p->bus_n);
    if (v->trace) {
        char t[37];
        format_uuid_text(v->trace, t);
        buf_printf(b, "\"%s\"", t);
    } else {
        buf_puts(b, "null");
    }
    buf_puts(b, ",\"producerSub\":");
    if (v->producer)
        jw_string(b, v->producer, v->producer_len);
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"queuePriority\":%lld,\"createdAt\":", (long long)res_i64(x, row, LM_PRIO));
    admin_iso_us_or_null(b, ts);
    buf_puts(b, ",\"leaseExpiresAt\":");
    admin_iso_ms_or_null(b, st == REC_PROCESSING ? p->lease_exp : 0);
    buf_putc(b, '}');
}

static void on_messages(api_query *q, PGresult *const *res)
{
    list_ctx *c = q->arg;
    http_req *r = q->http;
    if (c->queue && res[1] && PQntuples(res[1]) == 1 && !res_bool(res[1], 0, 0)) {
        http_respond_error(r, 404, "queue not found: %s", c->queue);
        return;
    }
    page pg;
    memset(&pg, 0, sizeof pg);
    PGresult *x = pg.res = res[0];
    int n = PQntuples(x);
    pg.parts = xcalloc((size_t)n + 1, sizeof *pg.parts);
    pg.dead = xcalloc((size_t)n + 1, sizeof *pg.dead);
    pg.bus = xcalloc((size_t)n + 1, sizeof *pg.bus);
    int first_seg = n;
    for (int i = 0; i < n; i++) {
        int kind = (int)res_i64(x, i, LM_KIND);
        if (kind == LM_ROW_PARTITION) {
            list_part *p = &pg.parts[pg.nparts++];
            p->id = res_i64(x, i, LM_PID);
            p->row = i;
            p->start = res_i64(x, i, LM_PART_START);
            p->done = res_i64(x, i, LM_PART_DONE);
            p->live_end = res_i64(x, i, LM_PART_LIVE_END);
            p->lease_exp = res_i64(x, i, LM_PART_LEASE_EXP);
            p->has_qm = res_i64(x, i, LM_PART_HAS_QM) != 0;
        } else if (kind == LM_ROW_DEAD) {
            pg.dead[pg.ndead++] = (pid_off){res_i64(x, i, LM_PID), res_i64(x, i, LM_DEAD_OFFSET)};
        } else if (kind == LM_ROW_CURSOR) {
            pg.bus[pg.nbus++] = (pid_off){res_i64(x, i, LM_PID), res_i64(x, i, LM_CURSOR_NEXT)};
        } else if (first_seg == n) {
            first_seg = i;
        }
    }
    qsort(pg.parts, (size_t)pg.nparts, sizeof *pg.parts, cmp_part);
    qsort(pg.dead, (size_t)pg.ndead, sizeof *pg.dead, cmp_pid_off);
    qsort(pg.bus, (size_t)pg.nbus, sizeof *pg.bus, cmp_pid_off);
    int has_qm = 0, max_bus = 0;
    for (int i = 0, j = 0; i < pg.nparts; i++) {
        list_part *p = &pg.parts[i];
        while (j < pg.nbus && pg.bus[j].pid < p->id)
            j++;
        p->bus_from = j;
        while (j < pg.nbus && pg.bus[j].pid == p->id)
            j++, p->bus_n++;
        has_qm |= p->has_qm;
        if (p->bus_n > max_bus)
            max_bus = p->bus_n;
    }
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"messages\":[");
    int emitted = 0, more = 0, corrupt = 0;
    int64_t end = c->offset + c->limit;
    for (int i = first_seg; i < n && !more && !corrupt; i++) {
        list_part *p = find_part(&pg, res_i64(x, i, LM_PID));
        if (!p) {
            corrupt = 1;
            break;
        }
        int64_t base = res_i64(x, i, LM_SEG_BASE), ts = res_i64(x, i, LM_SEG_TS), before = res_i64(x, i, LM_SEG_BEFORE);
        uint32_t count = (uint32_t)res_i64(x, i, LM_SEG_COUNT);
        if (count > pg.views_cap) {
            pg.views_cap = count;
            pg.views = xrealloc(pg.views, count * sizeof *pg.views);
        }
        seg_reader sr;
        uint32_t nv = 0;
        if (seg_reader_init(&sr, (const uint8_t *)PQgetvalue(x, i, LM_SEG_DATA), (size_t)PQgetlength(x, i, LM_SEG_DATA), (uint64_t)base,
                            count) < 0) {
            corrupt = 1;
            break;
        }
        int rc;
        while (nv < count && (rc = seg_reader_next(&sr, &pg.views[nv])) == 1)
            nv++;
        if (nv != count) {
            seg_reader_done(&sr);
            corrupt = 1;
            break;
        }
        /* newest first: the segment's records from the last one down */
        int64_t idx = before;
        for (uint32_t k = count; k-- > 0;) {
            const record_view *v = &pg.views[k];
            int64_t off = (int64_t)v->offset;
            if (off < p->start)
                continue;
            enum rec_status st = admin_record_status(off, p->done, p->live_end, is_dead(&pg, p->id, off));
            if (c->has_status && st != c->status)
                continue;
            int64_t at = idx++;
            if (v->flags & REC_DELETED)
                continue; /* counted where SQL counts it, so pages still line up; not listed */
            if (at < c->offset)
                continue;
            if (at >= end) {
                more = 1;
                break;
            }
            if (emitted++)
                buf_putc(&b, ',');
            record_list_json(&b, &pg, p, v, ts, st);
        }
        seg_reader_done(&sr);
    }
    free(pg.parts);
    free(pg.dead);
    free(pg.bus);
    free(pg.views);
    if (corrupt) {
        buf_free(&b);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    const char *type = has_qm && max_bus ? "hybrid" : has_qm ? "queue" : max_bus ? "bus" : "none";
    buf_printf(&b, "],\"mode\":{\"hasQueueMode\":%s,\"busGroupsCount\":%d,\"type\":\"%s\"},"
                   "\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"hasMore\":%s}}",
               has_qm ? "true" : "false", max_bus, type, (long long)c->limit, (long long)c->offset,
               more ? "true" : "false");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_messages_list(http_req *r)
{
    list_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    int64_t from = 0, to = 0;
    int has_from, has_to;
    if (api_query_int_or_respond(r, "limit", 200, 1, ADMIN_MESSAGES_MAX_LIMIT, &c->limit) < 0 ||
        api_query_int_or_respond(r, "offset", 0, 0, ADMIN_MESSAGES_MAX_OFFSET, &c->offset) < 0 ||
        api_query_time_or_respond(r, "from", &from, &has_from) < 0 ||
        api_query_time_or_respond(r, "to", &to, &has_to) < 0)
        return;
    const char *status = api_query_str(r, "status");
    if (status) {
        if (admin_status_parse(status, &c->status) < 0) {
            http_respond_error(r, 400, "status must be one of pending, processing, completed, dead_letter");
            return;
        }
        c->has_status = 1;
    }
    /* as the earlier release: the last hour unless told otherwise */
    if (!has_from)
        from = wall_us() - 3600LL * 1000000;
    if (has_to && to < from) {
        http_respond_error(r, 400, "from must not be after to");
        return;
    }
    const char *ns = api_query_str(r, "ns");
    if (!ns)
        ns = api_query_str(r, "namespace");
    c->queue = api_query_str(r, "queue");
    api_query *q = api_query_new(r, on_messages, c);
    int s = api_query_stmt(q, ADMIN_LIST_MESSAGES_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_text(q, s, c->queue);
    api_param_text(q, s, api_query_str(r, "partition"));
    api_param_text(q, s, ns);
    api_param_text(q, s, api_query_str(r, "task"));
    api_param_text(q, s, status);
    api_param_i64(q, s, from);
    if (has_to)
        api_param_i64(q, s, to);
    else
        api_param_null(q, s);
    api_param_i64(q, s, c->offset);
    /* one more than the page, to know whether another page follows */
    api_param_i64(q, s, c->limit + 1);
    if (c->queue) {
        s = api_query_stmt(q, ADMIN_QUEUE_EXISTS_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_text(q, s, c->queue);
    }
    api_query_submit(q);
}

/* ---- GET /api/v1/messages/:partitionId/:transactionId ------------------------------------ */

typedef struct get_ctx {
    uint8_t part[16];
    const char *txn;
    size_t txn_len;
    int is_msg_id;
    uint64_t msg_pid, msg_off;
    buf scratch;
    seg_reader sr;  /* the segment the record was found in: its views live until get_ctx_free */
    int found_row;  /* its row in message_find_v1's result */
    api_locate_fn located; /* api_message_locate */
    void *located_arg;
} get_ctx;

static void get_ctx_free(get_ctx *c)
{
    buf_free(&c->scratch);
    seg_reader_done(&c->sr);
}

/* Looks for the record in the segments found; 1 with *v set, 0 not there, -1 corrupt. */
static int find_in_segments(get_ctx *c, const PGresult *f, record_view *v, int64_t *ts)
{
    for (int i = 0; i < PQntuples(f); i++) {
        int64_t target = res_null(f, i, FIND_TARGET) ? -1 : res_i64(f, i, FIND_TARGET);
        seg_reader *srp = &c->sr;
        seg_reader_done(srp);
        if (seg_reader_init(srp, (const uint8_t *)PQgetvalue(f, i, FIND_DATA), (size_t)PQgetlength(f, i, FIND_DATA),
                            (uint64_t)res_i64(f, i, FIND_BASE), (uint32_t)res_i64(f, i, FIND_COUNT)) < 0)
            return -1;
        int rc;
        while ((rc = seg_reader_next(srp, v)) == 1) {
            if (v->flags & REC_DELETED)
                continue;
            if (target >= 0) {
                if ((int64_t)v->offset != target)
                    continue;
            } else {
                char t[512];
                size_t tl = record_txn_text(v, t, sizeof t);
                if (tl != c->txn_len || memcmp(t, c->txn, tl) != 0)
                    continue;
            }
            *ts = res_i64(f, i, FIND_TS);
            c->found_row = i;
            return 1;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void on_message(api_query *q, PGresult *const *res)
{
    get_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *pi = res[0], *f = res[1], *cur = res[2], *dl = res[3];
    if (PQntuples(pi) == 0) {
        http_respond_error(r, 404, "partition not found: %s", r->params[0]);
        return;
    }
    int64_t pid = res_i64(pi, 0, 0), start = res_i64(pi, 0, 3), endo = res_i64(pi, 0, 4);
    record_view v;
    int64_t ts = 0;
    int found = find_in_segments(c, f, &v, &ts);
    if (found < 0) {
        get_ctx_free(c);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    if (!found) {
        /* retention may have removed it from the log while a dead letter keeps a copy */
        for (int i = 0; i < PQntuples(dl) && !found; i++) {
            int64_t off = res_i64(dl, i, 2);
            size_t tl;
            const char *t = res_text(dl, i, 7, &tl);
            int match = (c->is_msg_id && (int64_t)c->msg_pid == pid && (uint64_t)off == c->msg_off) ||
                        (tl == c->txn_len && memcmp(t, c->txn, tl) == 0);
            if (match && !res_null(dl, i, 6) &&
                admin_record_decode((const uint8_t *)PQgetvalue(dl, i, 6), (size_t)PQgetlength(dl, i, 6),
                                    (uint64_t)off, &c->scratch, &v) == 0) {
                ts = res_i64(dl, i, 8);
                found = 1;
            }
        }
    }
    if (!found) {
        get_ctx_free(c);
        http_respond_error(r, 404, "Message not found");
        return;
    }
    int64_t off = (int64_t)v.offset;
    /* positions: queue mode's cursor and lease, the consumer groups' cursors */
    int has_qm = 0, nbus = 0, consumed_by = 0;
    int64_t done = start, live_end = start, lease_exp = 0, retry = 0, bus_min = INT64_MAX;
    for (int i = 0; i < PQntuples(cur); i++) {
        size_t gl;
        const char *g = res_text(cur, i, 0, &gl);
        int64_t next = res_i64(cur, i, 1);
        next = next < start ? start : next > endo ? endo : next;
        if (gl == strlen(ADMIN_QUEUE_MODE) && memcmp(g, ADMIN_QUEUE_MODE, gl) == 0) {
            has_qm = 1;
            done = next;
            live_end = next;
            if (res_bool(cur, i, 6)) {
                int64_t le = res_i64(cur, i, 3);
                live_end = le < next ? next : le > endo ? endo : le;
                lease_exp = res_i64(cur, i, 4);
                retry = res_i64(cur, i, 5);
            }
        } else {
            nbus++;
            consumed_by += off < next;
            if (next < bus_min)
                bus_min = next;
        }
    }
    if (!has_qm && nbus > 0)
        done = live_end = bus_min;
    int dead = 0, dl_row = -1;
    for (int i = 0; i < PQntuples(dl); i++) {
        if (res_i64(dl, i, 2) == off) {
            dead = 1;
            if (dl_row < 0)
                dl_row = i; /* newest first */
        }
    }
    enum rec_status st = admin_record_status(off, done, live_end, dead);

    char pu[37], ms[37], txn[512];
    res_uuid(pi, 0, 1, pu);
    uuid mid;
    uuid_message_id((uint64_t)pid, (uint64_t)off, &mid);
    uuid_format(&mid, ms);
    size_t tl = record_txn_text(&v, txn, sizeof txn);
    size_t ql, pl;
    const char *qn = res_text(pi, 0, 5, &ql), *pn = res_text(pi, 0, 2, &pl);
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"id\":\"%s\",\"transactionId\":", ms);
    jw_string(&b, txn, tl);
    buf_printf(&b, ",\"partitionId\":\"%s\",\"queuePath\":", pu);
    buf qp;
    buf_init(&qp, 0);
    buf_append(&qp, qn, ql);
    buf_putc(&qp, '/');
    buf_append(&qp, pn, pl);
    jw_string(&b, qp.data, qp.len);
    buf_free(&qp);
    buf_puts(&b, ",\"queue\":");
    jw_string(&b, qn, ql);
    buf_puts(&b, ",\"partition\":");
    jw_string(&b, pn, pl);
    buf_puts(&b, ",\"namespace\":");
    res_json_str(&b, pi, 0, 6);
    buf_puts(&b, ",\"task\":");
    res_json_str(&b, pi, 0, 7);
    buf_printf(&b, ",\"offset\":%lld,\"status\":\"%s\",\"payload\":", (long long)off, admin_status_name(st));
    admin_payload_json(&b, &v);
    buf_printf(&b, ",\"isEncrypted\":%s,\"traceId\":", (v.flags & REC_ENCRYPTED) ? "true" : "false");
    if (v.trace) {
        char t[37];
        format_uuid_text(v.trace, t);
        buf_printf(&b, "\"%s\"", t);
    } else {
        buf_puts(&b, "null");
    }
    buf_puts(&b, ",\"producerSub\":");
    if (v.producer)
        jw_string(&b, v.producer, v.producer_len);
    else
        buf_puts(&b, "null");
    buf_puts(&b, ",\"createdAt\":");
    admin_iso_us_or_null(&b, ts);
    buf_puts(&b, ",\"errorMessage\":");
    if (dl_row >= 0)
        res_json_str(&b, dl, dl_row, 3);
    else
        buf_puts(&b, "null");
    buf_printf(&b, ",\"retryCount\":%lld,\"leaseExpiresAt\":",
               (long long)(dl_row >= 0 ? res_i64(dl, dl_row, 4) : st == REC_PROCESSING ? retry : 0));
    admin_iso_ms_or_null(&b, st == REC_PROCESSING ? lease_exp : 0);
    /* the effective options: stored over the defaults (queen.queue_options_v1) */
    size_t optlen;
    const char *opts = res_text(pi, 0, 8, &optlen);
    json_doc od;
    memset(&od, 0, sizeof od);
    int ok = json_parse(&od, opts, optlen, NULL) == 0 && json_type_of(&od, 0) == JSON_OBJECT;
    buf_puts(&b, ",\"queueConfig\":{\"leaseTime\":");
    queue_option_raw(&b, &od, ok, "leaseTime");
    buf_puts(&b, ",\"retryLimit\":");
    queue_option_raw(&b, &od, ok, "retryLimit");
    buf_puts(&b, ",\"retryDelay\":");
    queue_option_raw(&b, &od, ok, "retryDelay");
    buf_puts(&b, ",\"ttl\":");
    queue_option_raw(&b, &od, ok, "ttl");
    buf_puts(&b, ",\"priority\":");
    queue_option_raw(&b, &od, ok, "priority");
    json_doc_free(&od);
    const char *type = has_qm && nbus ? "hybrid" : has_qm ? "queue" : nbus ? "bus" : "none";
    buf_printf(&b, "},\"mode\":{\"hasQueueMode\":%s,\"busGroupsCount\":%d,\"consumedByGroups\":%d,\"type\":\"%s\"},"
                   "\"consumerGroups\":[",
               has_qm ? "true" : "false", nbus, consumed_by, type);
    for (int i = 0; i < PQntuples(cur); i++) {
        int64_t next = res_i64(cur, i, 1);
        int leased = res_bool(cur, i, 6) && off >= next && off < res_i64(cur, i, 3);
        if (i)
            buf_putc(&b, ',');
        buf_puts(&b, "{\"name\":");
        res_json_str(&b, cur, i, 0);
        buf_printf(&b, ",\"consumed\":%s,\"nextOffset\":%lld,\"leaseExpiresAt\":", off < next ? "true" : "false",
                   (long long)next);
        admin_iso_ms_or_null(&b, leased ? res_i64(cur, i, 4) : 0);
        buf_putc(&b, '}');
    }
    buf_puts(&b, "],\"deadLetters\":[");
    int k = 0;
    for (int i = 0; i < PQntuples(dl); i++) {
        if (res_i64(dl, i, 2) != off)
            continue;
        if (k++)
            buf_putc(&b, ',');
        buf_printf(&b, "{\"dlqId\":%lld,\"consumerGroup\":", (long long)res_i64(dl, i, 0));
        res_json_str(&b, dl, i, 1);
        buf_puts(&b, ",\"errorMessage\":");
        res_json_str(&b, dl, i, 3);
        buf_printf(&b, ",\"retryCount\":%lld,\"failedAt\":", (long long)res_i64(dl, i, 4));
        admin_iso_ms_or_null(&b, res_i64(dl, i, 5));
        buf_putc(&b, '}');
    }
    buf_puts(&b, "]}");
    get_ctx_free(c);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

/* The statements that find one record of partition pu: 0 its partition, 1 the segments that
 * may hold it, 2 the partition's cursors (with_cursors), then its dead letters. */
static get_ctx *record_query(http_req *r, const uuid *pu_in, const char *txn, size_t txn_len, api_query_fn done,
                             int with_cursors, api_query **out)
{
    uuid pu = *pu_in;
    get_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    buf_init(&c->scratch, 0);
    memcpy(c->part, pu.b, 16);
    c->txn = txn;
    c->txn_len = txn_len;
    uuid mid;
    if (uuid_parse(c->txn, c->txn_len, &mid) == 0 && uuid_message_id_decode(&mid, &c->msg_pid, &c->msg_off) == 0)
        c->is_msg_id = 1;
    int64_t v7 = admin_uuid_v7_time_us(c->txn, c->txn_len);
    api_query *q = api_query_new(r, done, c);
    int s = api_query_stmt(q, ADMIN_MESSAGE_PARTITION_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    s = api_query_stmt(q, ADMIN_MESSAGE_FIND_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    api_param_text(q, s, c->txn);
    if (c->is_msg_id) {
        api_param_i64(q, s, (int64_t)c->msg_pid);
        api_param_i64(q, s, (int64_t)c->msg_off);
    } else {
        api_param_null(q, s);
        api_param_null(q, s);
    }
    if (v7 > 0)
        api_param_i64(q, s, v7 - ADMIN_FIND_V7_SLACK_US);
    else
        api_param_null(q, s);
    api_param_i64(q, s, ADMIN_FIND_MAX_SEGMENTS);
    api_param_i64(q, s, ADMIN_FIND_MAX_BYTES);
    if (with_cursors) {
        s = api_query_stmt(q, ADMIN_MESSAGE_CURSORS_SQL);
        api_param_uuid(q, s, r->tenant);
        api_param_uuid(q, s, pu.b);
    }
    s = api_query_stmt(q, ADMIN_MESSAGE_DEAD_SQL);
    api_param_uuid(q, s, r->tenant);
    api_param_uuid(q, s, pu.b);
    api_param_text(q, s, c->txn);
    if (c->is_msg_id)
        api_param_i64(q, s, (int64_t)c->msg_off);
    else
        api_param_null(q, s);
    *out = q;
    return c;
}

static get_ctx *message_query(http_req *r, api_query_fn done, int with_cursors, api_query **out)
{
    uuid pu;
    if (uuid_parse(r->params[0], r->param_lens[0], &pu) < 0) {
        http_respond_error(r, 400, "partitionId must be a UUID");
        return NULL;
    }
    return record_query(r, &pu, r->params[1], strlen(r->params[1]), done, with_cursors, out);
}

static void on_located(api_query *q, PGresult *const *res)
{
    get_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *pi = res[0], *f = res[1], *dl = res[2];
    if (PQntuples(pi) == 0) {
        get_ctx_free(c);
        c->located(r, c->located_arg, -2);
        return;
    }
    int64_t pid = res_i64(pi, 0, 0);
    record_view v;
    int64_t ts = 0, off = -1;
    int found = find_in_segments(c, f, &v, &ts);
    if (found < 0) {
        get_ctx_free(c);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    if (found)
        off = (int64_t)v.offset;
    for (int i = 0; i < PQntuples(dl) && off < 0; i++) {
        int64_t o = res_i64(dl, i, 2);
        size_t tl;
        const char *t = res_text(dl, i, 7, &tl);
        if ((c->is_msg_id && (int64_t)c->msg_pid == pid && (uint64_t)o == c->msg_off) ||
            (tl == c->txn_len && memcmp(t, c->txn, tl) == 0))
            off = o;
    }
    get_ctx_free(c);
    c->located(r, c->located_arg, off);
}

void api_message_locate(http_req *r, const uint8_t part[16], const char *txn, size_t txn_len, api_locate_fn done,
                        void *arg)
{
    uuid pu;
    memcpy(pu.b, part, 16);
    api_query *q;
    get_ctx *c = record_query(r, &pu, txn, txn_len, on_located, 0, &q);
    c->located = done;
    c->located_arg = arg;
    api_query_submit(q);
}

void api_message_get(http_req *r)
{
    api_query *q;
    if (message_query(r, on_message, 1, &q))
        api_query_submit(q);
}

/* ---- DELETE /api/v1/messages/:partitionId/:transactionId --------------------------------- */

static void respond_deleted(http_req *r, int ok)
{
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"success\":%s,\"partitionId\":", ok ? "true" : "false");
    jw_cstr(&b, r->params[0]);
    buf_puts(&b, ",\"transactionId\":");
    jw_cstr(&b, r->params[1]);
    buf_printf(&b, ",\"message\":\"%s\"}", ok ? "Message deleted successfully" : "Message not found");
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

static void on_deleted(api_query *q, PGresult *const *res)
{
    /* the delete is the last statement (a codec-1 segment's re-encoding may come first) */
    const PGresult *d = res[q->dbr.nstmt - 1];
    respond_deleted(q->http, PQntuples(d) == 1 && res_bool(d, 0, MESSAGE_DELETE_DONE));
}

static void on_delete_found(api_query *q, PGresult *const *res)
{
    get_ctx *c = q->arg;
    http_req *r = q->http;
    PGresult *pi = res[0], *f = res[1], *dl = res[2];
    if (PQntuples(pi) == 0) {
        get_ctx_free(c);
        respond_deleted(r, 0);
        return;
    }
    int64_t pid = res_i64(pi, 0, 0);
    record_view v;
    int64_t ts, off = -1;
    char txn[512];
    size_t tl = 0;
    int found = find_in_segments(c, f, &v, &ts);
    if (found < 0) {
        get_ctx_free(c);
        http_respond_error(r, 500, "a stored segment could not be decoded");
        return;
    }
    const uint8_t *flat = NULL; /* a codec-1 segment, re-encoded as codec 0 before the delete */
    size_t flat_len = 0;
    int64_t flat_last = 0;
    if (found) {
        off = (int64_t)v.offset;
        tl = record_txn_text(&v, txn, sizeof txn);
        int row = c->found_row;
        const uint8_t *data = (const uint8_t *)PQgetvalue(f, row, FIND_DATA);
        size_t len = (size_t)PQgetlength(f, row, FIND_DATA);
        if (segment_is_chunked(data, len)) {
            buf out;
            buf_init(&out, 0);
            if (segment_to_records(data, len, (uint32_t)res_i64(f, row, FIND_COUNT), &out) < 0) {
                buf_free(&out);
                get_ctx_free(c);
                http_respond_error(r, 500, "a stored segment could not be decoded");
                return;
            }
            uint8_t *copy = arena_alloc(&r->ar, out.len);
            memcpy(copy, out.data, out.len);
            flat = copy;
            flat_len = out.len;
            flat_last = res_i64(f, row, FIND_LAST);
            buf_free(&out);
        }
    } else {
        /* retention removed it from the log; a dead letter may still hold a copy */
        for (int i = 0; i < PQntuples(dl) && off < 0; i++) {
            int64_t o = res_i64(dl, i, 2);
            size_t dl_len;
            const char *t = res_text(dl, i, 7, &dl_len);
            if ((c->is_msg_id && (int64_t)c->msg_pid == pid && (uint64_t)o == c->msg_off) ||
                (dl_len == c->txn_len && memcmp(t, c->txn, dl_len) == 0)) {
                off = o;
                tl = dl_len < sizeof txn ? dl_len : sizeof txn - 1;
                memcpy(txn, t, tl);
            }
        }
    }
    get_ctx_free(c);
    if (off < 0) {
        respond_deleted(r, 0);
        return;
    }
    txn[tl] = 0;
    char *t = arena_strndup(&r->ar, txn, tl);
    api_query *d = api_query_new(r, on_deleted, c);
    if (flat) {
        /* records inside a producer's zstd frame cannot be marked one by one: the segment becomes
         * codec 0 first (the same records; only a codec-1 segment is replaced, so a concurrent
         * delete that did this already is left alone) */
        int f0 = api_query_stmt(d, "UPDATE queen.segments SET data = $3 WHERE partition_id = $1 AND last_offset = $2 "
                                   "AND get_byte(data, 0) = 2");
        api_param_i64(d, f0, pid);
        api_param_i64(d, f0, flat_last);
        api_param_bytes(d, f0, flat, flat_len);
    }
    int s = api_query_stmt(d, "SELECT queen.message_delete_v1($1::uuid, $2::uuid, $3::int8, $4::text)");
    api_param_uuid(d, s, r->tenant);
    api_param_uuid(d, s, c->part);
    api_param_i64(d, s, off);
    api_param_text(d, s, t);
    api_query_submit(d);
}

void api_message_delete(http_req *r)
{
    api_query *q;
    if (message_query(r, on_delete_found, 0, &q))
        api_query_submit(q);
}
