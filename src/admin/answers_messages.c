/* answers_messages.c — the JSON of the message and dead-letter answers, from their rows (see
 * answers_messages.h). */
#include "answers_messages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/uuid.h"
#include "db/res.h"
#include "json/json.h"
#include "queue/options.h"
#include "storage/logread.h"

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
    const PGresult *res;
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

/* Where a record's partition, queue, namespace and task are in a row */
typedef struct head_cols {
    int puuid, queue, partition, ns, task;
} head_cols;
static const head_cols LIST_HEAD = {LM_PUUID, LM_QNAME, LM_PNAME, LM_NS, LM_TASK};
static const head_cols ONE_HEAD = {MSG_PART_UUID, MSG_PART_QUEUE, MSG_PART_NAME, MSG_PART_NS, MSG_PART_TASK};

/* The fields a listed record and one record both start with: id (the message id of partition
 * pid at the record's offset), transactionId, partitionId, queuePath ("queue/partition"),
 * queue, partition, namespace, task. Opens the object. */
static void record_head_json(buf *b, int64_t pid, const record_view *v, const PGresult *x, int row,
                             const head_cols *c)
{
    uuid mid;
    uuid_message_id((uint64_t)pid, v->offset, &mid);
    char ms[37], pu[37], txn[512];
    uuid_format(&mid, ms);
    res_uuid(x, row, c->puuid, pu);
    size_t tl = record_txn_text(v, txn, sizeof txn);
    buf_printf(b, "{\"id\":\"%s\",\"transactionId\":", ms);
    jw_string(b, txn, tl);
    buf_printf(b, ",\"partitionId\":\"%s\",\"queuePath\":", pu);
    size_t ql, pl;
    const char *qn = res_text(x, row, c->queue, &ql), *pn = res_text(x, row, c->partition, &pl);
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
    res_json_str(b, x, row, c->ns);
    buf_puts(b, ",\"task\":");
    res_json_str(b, x, row, c->task);
}

static void trace_or_null(buf *b, const record_view *v)
{
    if (v->trace) {
        char t[37];
        format_uuid_text(v->trace, t);
        buf_printf(b, "\"%s\"", t);
    } else {
        buf_puts(b, "null");
    }
}

static void producer_or_null(buf *b, const record_view *v)
{
    if (v->producer)
        jw_string(b, v->producer, v->producer_len);
    else
        buf_puts(b, "null");
}

static void record_list_json(buf *b, page *pg, const list_part *p, const record_view *v, int64_t ts,
                             enum rec_status st)
{
    const PGresult *x = pg->res;
    int row = p->row;
    record_head_json(b, p->id, v, x, row, &LIST_HEAD);
    int consumed = 0;
    for (int k = 0; k < p->bus_n; k++)
        consumed += (int64_t)v->offset < pg->bus[p->bus_from + k].off;
    buf_printf(b, ",\"offset\":%llu,\"status\":\"%s\",\"queueStatus\":\"%s\",\"busStatus\":{\"consumedBy\":%d,"
                  "\"totalGroups\":%d},\"traceId\":",
               (unsigned long long)v->offset, admin_status_name(st), admin_status_name(st), consumed, p->bus_n);
    trace_or_null(b, v);
    buf_puts(b, ",\"producerSub\":");
    producer_or_null(b, v);
    buf_printf(b, ",\"queuePriority\":%lld,\"createdAt\":", (long long)res_i64(x, row, LM_PRIO));
    admin_iso_us_or_null(b, ts);
    buf_puts(b, ",\"leaseExpiresAt\":");
    admin_iso_ms_or_null(b, st == REC_PROCESSING ? p->lease_exp : 0);
    buf_putc(b, '}');
}

int answer_messages_list(buf *b, const PGresult *x, const messages_page *c)
{
    page pg;
    memset(&pg, 0, sizeof pg);
    pg.res = x;
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
    buf_puts(b, "{\"messages\":[");
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
        if (seg_reader_init(&sr, (const uint8_t *)PQgetvalue(x, i, LM_SEG_DATA), (size_t)PQgetlength(x, i, LM_SEG_DATA),
                            (uint64_t)base, count) < 0) {
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
                buf_putc(b, ',');
            record_list_json(b, &pg, p, v, ts, st);
        }
        seg_reader_done(&sr);
    }
    free(pg.parts);
    free(pg.dead);
    free(pg.bus);
    free(pg.views);
    if (corrupt)
        return -1;
    const char *type = has_qm && max_bus ? "hybrid" : has_qm ? "queue" : max_bus ? "bus" : "none";
    buf_printf(b, "],\"mode\":{\"hasQueueMode\":%s,\"busGroupsCount\":%d,\"type\":\"%s\"},"
                  "\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"hasMore\":%s}}",
               has_qm ? "true" : "false", max_bus, type, (long long)c->limit, (long long)c->offset,
               more ? "true" : "false");
    return 0;
}

/* ---- one record -------------------------------------------------------------------------- */

void msg_lookup_init(msg_lookup *l, const char *txn, size_t txn_len)
{
    memset(l, 0, sizeof *l);
    buf_init(&l->scratch, 0);
    l->txn = txn;
    l->txn_len = txn_len;
    uuid mid;
    if (uuid_parse(txn, txn_len, &mid) == 0 && uuid_message_id_decode(&mid, &l->msg_pid, &l->msg_off) == 0)
        l->is_msg_id = 1;
}

void msg_lookup_free(msg_lookup *l)
{
    buf_free(&l->scratch);
    seg_reader_done(&l->sr);
}

int msg_lookup_segments(msg_lookup *l, const PGresult *f, record_view *v, int64_t *ts)
{
    for (int i = 0; i < PQntuples(f); i++) {
        int64_t target = res_null(f, i, FIND_TARGET) ? -1 : res_i64(f, i, FIND_TARGET);
        seg_reader *srp = &l->sr;
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
                if (tl != l->txn_len || memcmp(t, l->txn, tl) != 0)
                    continue;
            }
            *ts = res_i64(f, i, FIND_TS);
            l->found_row = i;
            return 1;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

int msg_lookup_dead_row(const msg_lookup *l, int64_t pid, const PGresult *dl)
{
    for (int i = 0; i < PQntuples(dl); i++) {
        int64_t off = res_i64(dl, i, MSG_DEAD_OFF);
        size_t tl;
        const char *t = res_text(dl, i, MSG_DEAD_TXN, &tl);
        if ((l->is_msg_id && (int64_t)l->msg_pid == pid && (uint64_t)off == l->msg_off) ||
            (tl == l->txn_len && memcmp(t, l->txn, tl) == 0))
            return i;
    }
    return -1;
}

int answer_message(buf *b, msg_lookup *c, const PGresult *pi, const PGresult *f, const PGresult *cur,
                   const PGresult *dl)
{
    int64_t pid = res_i64(pi, 0, MSG_PART_ID), start = res_i64(pi, 0, MSG_PART_START),
            endo = res_i64(pi, 0, MSG_PART_NEXT);
    record_view v;
    int64_t ts = 0;
    int found = msg_lookup_segments(c, f, &v, &ts);
    if (found < 0)
        return -1;
    if (!found) {
        /* retention may have removed it from the log while a dead letter keeps a copy */
        for (int i = 0; i < PQntuples(dl) && !found; i++) {
            int64_t off = res_i64(dl, i, MSG_DEAD_OFF);
            size_t tl;
            const char *t = res_text(dl, i, MSG_DEAD_TXN, &tl);
            int match = (c->is_msg_id && (int64_t)c->msg_pid == pid && (uint64_t)off == c->msg_off) ||
                        (tl == c->txn_len && memcmp(t, c->txn, tl) == 0);
            if (match && !res_null(dl, i, MSG_DEAD_RECORD) &&
                admin_record_decode((const uint8_t *)PQgetvalue(dl, i, MSG_DEAD_RECORD),
                                    (size_t)PQgetlength(dl, i, MSG_DEAD_RECORD), (uint64_t)off, &c->scratch, &v) == 0) {
                ts = res_i64(dl, i, MSG_DEAD_TS);
                found = 1;
            }
        }
    }
    if (!found)
        return 1;
    int64_t off = (int64_t)v.offset;
    /* positions: queue mode's cursor and lease, the consumer groups' cursors */
    int has_qm = 0, nbus = 0, consumed_by = 0;
    int64_t done = start, live_end = start, lease_exp = 0, retry = 0, bus_min = INT64_MAX;
    for (int i = 0; i < PQntuples(cur); i++) {
        size_t gl;
        const char *g = res_text(cur, i, MSG_CUR_GROUP, &gl);
        int64_t next = res_i64(cur, i, MSG_CUR_NEXT);
        next = next < start ? start : next > endo ? endo : next;
        if (gl == strlen(ADMIN_QUEUE_MODE) && memcmp(g, ADMIN_QUEUE_MODE, gl) == 0) {
            has_qm = 1;
            done = next;
            live_end = next;
            if (res_bool(cur, i, MSG_CUR_LEASED)) {
                int64_t le = res_i64(cur, i, MSG_CUR_LEASE_END);
                live_end = le < next ? next : le > endo ? endo : le;
                lease_exp = res_i64(cur, i, MSG_CUR_LEASE_EXP);
                retry = res_i64(cur, i, MSG_CUR_RETRY);
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
        if (res_i64(dl, i, MSG_DEAD_OFF) == off) {
            dead = 1;
            if (dl_row < 0)
                dl_row = i; /* newest first */
        }
    }
    enum rec_status st = admin_record_status(off, done, live_end, dead);

    record_head_json(b, pid, &v, pi, 0, &ONE_HEAD);
    buf_printf(b, ",\"offset\":%lld,\"status\":\"%s\",\"payload\":", (long long)off, admin_status_name(st));
    admin_payload_json(b, &v);
    buf_printf(b, ",\"isEncrypted\":%s,\"traceId\":", (v.flags & REC_ENCRYPTED) ? "true" : "false");
    trace_or_null(b, &v);
    buf_puts(b, ",\"producerSub\":");
    producer_or_null(b, &v);
    buf_puts(b, ",\"createdAt\":");
    admin_iso_us_or_null(b, ts);
    buf_puts(b, ",\"errorMessage\":");
    if (dl_row >= 0)
        res_json_str(b, dl, dl_row, MSG_DEAD_ERROR);
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"retryCount\":%lld,\"leaseExpiresAt\":",
               (long long)(dl_row >= 0 ? res_i64(dl, dl_row, MSG_DEAD_RETRY) : st == REC_PROCESSING ? retry : 0));
    admin_iso_ms_or_null(b, st == REC_PROCESSING ? lease_exp : 0);
    /* the effective options: stored over the defaults (queen.queue_options_v1) */
    size_t optlen;
    const char *opts = res_text(pi, 0, MSG_PART_OPTIONS, &optlen);
    static const char *const QUEUE_CONFIG[][2] = {
        {"leaseTime", "leaseTime"}, {"retryLimit", "retryLimit"}, {"retryDelay", "retryDelay"},
        {"ttl", "ttl"},             {"priority", "priority"}};
    json_doc od;
    int ok = queue_options_open(&od, opts, optlen);
    buf_puts(b, ",\"queueConfig\":{");
    queue_options_fields(b, &od, ok, QUEUE_CONFIG, ARRAY_LEN(QUEUE_CONFIG));
    json_doc_free(&od);
    const char *type = has_qm && nbus ? "hybrid" : has_qm ? "queue" : nbus ? "bus" : "none";
    buf_printf(b, "},\"mode\":{\"hasQueueMode\":%s,\"busGroupsCount\":%d,\"consumedByGroups\":%d,\"type\":\"%s\"},"
                  "\"consumerGroups\":[",
               has_qm ? "true" : "false", nbus, consumed_by, type);
    for (int i = 0; i < PQntuples(cur); i++) {
        int64_t next = res_i64(cur, i, MSG_CUR_NEXT);
        int leased = res_bool(cur, i, MSG_CUR_LEASED) && off >= next && off < res_i64(cur, i, MSG_CUR_LEASE_END);
        if (i)
            buf_putc(b, ',');
        buf_puts(b, "{\"name\":");
        res_json_str(b, cur, i, MSG_CUR_GROUP);
        buf_printf(b, ",\"consumed\":%s,\"nextOffset\":%lld,\"leaseExpiresAt\":", off < next ? "true" : "false",
                   (long long)next);
        admin_iso_ms_or_null(b, leased ? res_i64(cur, i, MSG_CUR_LEASE_EXP) : 0);
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"deadLetters\":[");
    int k = 0;
    for (int i = 0; i < PQntuples(dl); i++) {
        if (res_i64(dl, i, MSG_DEAD_OFF) != off)
            continue;
        if (k++)
            buf_putc(b, ',');
        buf_printf(b, "{\"dlqId\":%lld,\"consumerGroup\":", (long long)res_i64(dl, i, MSG_DEAD_ID));
        res_json_str(b, dl, i, MSG_DEAD_GROUP);
        buf_puts(b, ",\"errorMessage\":");
        res_json_str(b, dl, i, MSG_DEAD_ERROR);
        buf_printf(b, ",\"retryCount\":%lld,\"failedAt\":", (long long)res_i64(dl, i, MSG_DEAD_RETRY));
        admin_iso_ms_or_null(b, res_i64(dl, i, MSG_DEAD_FAILED_US));
        buf_putc(b, '}');
    }
    buf_puts(b, "]}");
    return 0;
}

void answer_message_deleted(buf *b, const char *partition, const char *txn, int ok)
{
    buf_printf(b, "{\"success\":%s,\"partitionId\":", ok ? "true" : "false");
    jw_cstr(b, partition);
    buf_puts(b, ",\"transactionId\":");
    jw_cstr(b, txn);
    buf_printf(b, ",\"message\":\"%s\"}", ok ? "Message deleted successfully" : "Message not found");
}

/* ---- dead letters ------------------------------------------------------------------------ */

static void dead_letter_json(buf *b, const PGresult *x, int i, buf *scratch)
{
    char pu[37];
    res_uuid(x, i, DLQ_PUUID, pu);
    uint64_t pid = (uint64_t)res_i64(x, i, DLQ_PID);
    int64_t off = res_i64(x, i, DLQ_OFF);
    uuid mid;
    uuid_message_id(pid, (uint64_t)off, &mid);
    char ms[37];
    uuid_format(&mid, ms);
    buf_printf(b, "{\"id\":\"%s\",\"dlqId\":%lld,\"transactionId\":", ms, (long long)res_i64(x, i, DLQ_ID));
    res_json_str(b, x, i, DLQ_TXN);
    buf_printf(b, ",\"partitionId\":\"%s\",\"queue\":", pu);
    res_json_str(b, x, i, DLQ_QUEUE);
    buf_puts(b, ",\"partition\":");
    res_json_str(b, x, i, DLQ_PARTITION);
    buf_printf(b, ",\"offset\":%lld,\"consumerGroup\":", (long long)off);
    res_json_str(b, x, i, DLQ_GROUP);
    buf_puts(b, ",\"errorMessage\":");
    res_json_str(b, x, i, DLQ_ERROR);
    buf_printf(b, ",\"retryCount\":%lld,\"data\":", (long long)res_i64(x, i, DLQ_RETRY));
    record_view v;
    int have = !res_null(x, i, DLQ_RECORD) &&
               admin_record_decode((const uint8_t *)PQgetvalue(x, i, DLQ_RECORD), (size_t)PQgetlength(x, i, DLQ_RECORD),
                                   (uint64_t)off, scratch, &v) == 0;
    if (have)
        admin_payload_json(b, &v);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"traceId\":");
    if (have)
        trace_or_null(b, &v);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"producerSub\":");
    if (have)
        producer_or_null(b, &v);
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"isEncrypted\":%s,\"createdAt\":", have && (v.flags & REC_ENCRYPTED) ? "true" : "false");
    admin_iso_us_or_null(b, res_i64(x, i, DLQ_TS));
    buf_puts(b, ",\"failedAt\":");
    admin_iso_ms_or_null(b, res_i64(x, i, DLQ_FAILED_US));
    buf_puts(b, ",\"requeuedAt\":");
    admin_iso_ms_or_null(b, res_i64(x, i, DLQ_REQUEUED_US));
    buf_putc(b, '}');
}

int answer_dlq_list(buf *b, const PGresult *x, int64_t limit, int64_t offset)
{
    int n = PQntuples(x);
    if (n > 0 && !res_bool(x, 0, DLQ_QUEUE_KNOWN))
        return 1;
    int64_t total = n > 0 ? res_i64(x, 0, DLQ_TOTAL) : 0;
    buf scratch;
    buf_init(&scratch, 0);
    buf_puts(b, "{\"messages\":[");
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (res_null(x, i, DLQ_ID))
            continue; /* the page is empty: the row only carries the total */
        if (k++)
            buf_putc(b, ',');
        dead_letter_json(b, x, i, &scratch);
    }
    buf_printf(b, "],\"total\":%lld,\"pagination\":{\"limit\":%lld,\"offset\":%lld,\"total\":%lld,\"hasMore\":%s}}",
               (long long)total, (long long)limit, (long long)offset, (long long)total,
               offset + k < total ? "true" : "false");
    buf_free(&scratch);
    return 0;
}

void answer_dlq_requeued(buf *b, int64_t id, const push_item *it)
{
    uuid mid;
    uuid_message_id(it->partition_id, it->offset, &mid);
    char ms[37], pu[37];
    uuid_format(&mid, ms);
    format_uuid_text(it->partition_uuid, pu);
    buf_printf(b, "{\"requeued\":true,\"dlqId\":%lld,\"queue\":", (long long)id);
    jw_string(b, it->queue, it->queue_len);
    buf_puts(b, ",\"partition\":");
    jw_string(b, it->partition, it->partition_len);
    buf_printf(b, ",\"partitionId\":\"%s\",\"messageId\":\"%s\",\"offset\":%llu,\"transactionId\":", pu, ms,
               (unsigned long long)it->offset);
    jw_string(b, it->txn, it->txn_len);
    buf_printf(b, ",\"status\":\"%s\",\"createdAt\":", it->status == PUSH_DUPLICATE ? "duplicate" : "queued");
    admin_iso_us_or_null(b, it->ts);
    buf_putc(b, '}');
}

void answer_dlq_deleted(buf *b, int64_t id)
{
    buf_printf(b, "{\"deleted\":true,\"dlqId\":%lld}", (long long)id);
}
