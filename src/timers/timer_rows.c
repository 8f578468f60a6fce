/* timer_rows.c — the JSON of timer results and stored timers, read from the database's rows
 * (the 2.x wire's shapes: docs/http-api.md, "Timers"). */
#include <libpq-fe.h>
#include <string.h>

#include "core/base64.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "db/pg.h"
#include "storage/record.h"
#include "timers.h"

static void put_text(buf *b, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        buf_puts(b, "null");
    else
        jw_string(b, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}

/* µs on the database's clock as ISO-8601 with six fraction digits and Z (the spelling of every
 * stamp of the 2.x wire), or null */
static void put_iso(buf *b, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) {
        buf_puts(b, "null");
        return;
    }
    char iso[32];
    format_iso_us(db_get_i64(r, row, col), iso);
    jw_cstr(b, iso);
}

void timer_result_json(buf *b, const timer_op *op, const struct pg_result *res, int row)
{
    const PGresult *r = res;
    int status = db_get_i32(r, row, TIMER_OPS_STATUS);
    const char *name = timer_status_name(status);
    int ok = status == TIMER_SCHEDULED || status == TIMER_RESCHEDULED || status == TIMER_CANCELLED;
    buf_printf(b, "{\"ok\":%s,\"status\":", ok ? "true" : "false");
    jw_cstr(b, name ? name : "unknown");
    buf_puts(b, ",\"queue\":");
    jw_string(b, op->queue, op->queue_len);
    buf_puts(b, ",\"timerKey\":");
    jw_string(b, op->key, op->key_len);
    buf_puts(b, ",\"txn\":");
    put_text(b, r, row, TIMER_OPS_TXN);
    /* a message's id here is its place in the log (docs/storage.md): it has none until it fires */
    buf_puts(b, ",\"messageId\":null,\"deliverAt\":");
    put_iso(b, r, row, TIMER_OPS_DELIVER_AT);
    buf_putc(b, '}');
}

int timer_row_members(buf *b, const struct pg_result *res, int row)
{
    const PGresult *r = res;
    seg_reader sr;
    record_view v;
    const uint8_t *seg = (const uint8_t *)PQgetvalue(r, row, TIMER_ROW_SEGMENT);
    if (seg_reader_init(&sr, seg, (size_t)PQgetlength(r, row, TIMER_ROW_SEGMENT), 0, 1) < 0 ||
        seg_reader_next(&sr, &v) != 1)
        return -1;
    buf_puts(b, "\"queue\":");
    put_text(b, r, row, TIMER_ROW_QUEUE);
    buf_puts(b, ",\"timerKey\":");
    put_text(b, r, row, TIMER_ROW_KEY);
    buf_puts(b, ",\"partition\":");
    put_text(b, r, row, TIMER_ROW_PARTITION);
    buf_puts(b, ",\"txn\":");
    put_text(b, r, row, TIMER_ROW_TXN);
    buf_puts(b, ",\"deliverAt\":");
    put_iso(b, r, row, TIMER_ROW_DELIVER_AT);
    buf_printf(b, ",\"attempts\":%d,\"createdAt\":", (int)db_get_i32(r, row, TIMER_ROW_ATTEMPTS));
    put_iso(b, r, row, TIMER_ROW_CREATED);
    /* the bytes as stored: the JSON text, or its sealed envelope (peek does not open it) */
    buf_puts(b, ",\"payload\":\"");
    b64_encode(b, v.payload, v.payload_len);
    buf_printf(b, "\",\"encrypted\":%s", (v.flags & REC_ENCRYPTED) ? "true" : "false");
    return 0;
}

int64_t timer_ops_account(timer_metrics *m, const struct pg_result *res)
{
    const PGresult *r = res;
    int64_t soonest = INT64_MAX;
    for (int i = 0; i < PQntuples(r); i++) {
        switch (db_get_i32(r, i, TIMER_OPS_STATUS)) {
        case TIMER_SCHEDULED: mc_add(&m->created, 1); break;
        case TIMER_RESCHEDULED: mc_add(&m->rescheduled, 1); break;
        case TIMER_CANCELLED: mc_add(&m->cancelled, 1); break;
        case TIMER_TOO_LATE: mc_add(&m->too_late, 1); break;
        default: break;
        }
        if (!PQgetisnull(r, i, TIMER_OPS_IN_US)) {
            int64_t in = db_get_i64(r, i, TIMER_OPS_IN_US);
            if (in < soonest)
                soonest = in;
        }
    }
    return soonest;
}
