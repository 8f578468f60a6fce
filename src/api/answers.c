/* answers.c — the JSON of the push and pop answers (answers.h). */
#include "answers.h"

#include <string.h>

#include "core/timeutil.h"
#include "json/json.h"
#include "storage/payload.h"

static void uuid_text(const uint8_t b[16], char out[37])
{
    uuid u;
    memcpy(u.b, b, 16);
    uuid_format(&u, out);
}

void answer_push(buf *b, const push_req *pr)
{
    buf_putc(b, '[');
    for (uint32_t i = 0; i < pr->n; i++) {
        const push_item *it = &pr->items[i];
        if (i)
            buf_putc(b, ',');
        buf_puts(b, "{\"index\":");
        buf_put_u64(b, i);
        buf_puts(b, ",\"transaction_id\":");
        jw_string(b, it->txn, it->txn_len);
        buf_puts(b, it->status == PUSH_DUPLICATE ? ",\"status\":\"duplicate\"" : ",\"status\":\"queued\"");
        uuid mid;
        uuid_message_id(it->partition_id, it->offset, &mid);
        char ms[37];
        uuid_format(&mid, ms);
        buf_puts(b, ",\"message_id\":");
        jw_cstr(b, ms);
        if (it->status == PUSH_QUEUED) {
            char pu[37];
            uuid_text(it->partition_uuid, pu);
            buf_puts(b, ",\"partition_id\":");
            jw_cstr(b, pu);
            buf_puts(b, ",\"trace_id\":");
            if (it->has_trace) {
                char ts[37];
                uuid_text(it->trace, ts);
                jw_cstr(b, ts);
            } else {
                buf_puts(b, "null");
            }
        }
        buf_puts(b, ",\"queueName\":");
        jw_string(b, it->queue, it->queue_len);
        buf_putc(b, '}');
    }
    buf_putc(b, ']');
}

void answer_pop_message(buf *b, const popped_partition *p, const record_view *v, int64_t ts, const char *txn,
                        size_t txn_len, const uuid *lease, const char *group)
{
    char pu[37];
    uuid_text(p->uuid, pu);
    uuid mid;
    uuid_message_id(p->id, v->offset, &mid);
    char ms[37];
    uuid_format(&mid, ms);
    buf_printf(b, "{\"id\":\"%s\",\"transactionId\":", ms);
    jw_string(b, txn, txn_len);
    buf_puts(b, ",\"traceId\":");
    if (v->trace) {
        char t[37];
        uuid_text(v->trace, t);
        jw_cstr(b, t);
    } else {
        buf_puts(b, "null");
    }
    buf_puts(b, ",\"data\":");
    record_payload_json(b, v); /* the plaintext, or null and payloadError */
    buf_puts(b, ",\"producerSub\":");
    if (v->producer)
        jw_string(b, v->producer, v->producer_len);
    else
        buf_puts(b, "null");
    char created[32], ls[37] = "";
    format_iso_us(ts, created);
    if (lease)
        uuid_format(lease, ls);
    buf_printf(b, ",\"createdAt\":\"%s\",\"partitionId\":\"%s\",\"partition\":", created, pu);
    jw_string(b, p->name, p->name_len);
    buf_printf(b, ",\"leaseId\":\"%s\",\"consumerGroup\":", ls);
    jw_cstr(b, group);
    if (p->queue) {
        /* a namespace pop spans queues: each message names its own */
        buf_puts(b, ",\"queue\":");
        jw_string(b, p->queue, p->queue_len);
    }
    buf_putc(b, '}');
}

void answer_pop_autopilot(buf *b, int on, int64_t partitions, int64_t batch, int64_t wait_ms)
{
    if (!on)
        return;
    buf_printf(b, ",\"autopilot\":{\"partitions\":%lld,\"batch\":%lld,\"waitMs\":%lld}", (long long)partitions,
               (long long)batch, (long long)wait_ms);
}

void answer_pop_open(buf *b, const pop_answer *a, const char *msgs, size_t msgs_len)
{
    char lease[37] = "";
    if (a->lease)
        uuid_format(a->lease, lease);
    buf_puts(b, "{\"success\":true,\"queue\":");
    jw_cstr(b, a->queue);
    buf_puts(b, ",\"partition\":");
    jw_cstr(b, a->partition);
    buf_printf(b, ",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"consumerGroup\":", a->partition_id, lease);
    jw_cstr(b, a->group);
    buf_printf(b, ",\"partitionsClaimed\":%d,\"messages\":[", a->claimed);
    buf_append(b, msgs, msgs_len);
    buf_putc(b, ']');
}

void answer_ack(buf *b, const ack_row *rows, int nrows, const char *const *txn_of, uint32_t n_items)
{
    buf_putc(b, '[');
    for (int i = 0; i < nrows; i++) {
        const ack_row *a = &rows[i];
        if (i)
            buf_putc(b, ',');
        buf_puts(b, "{\"index\":");
        buf_printf(b, "%d", a->index);
        buf_puts(b, ",\"transactionId\":");
        jw_cstr(b, a->index >= 0 && (uint32_t)a->index < n_items && txn_of[a->index] ? txn_of[a->index] : "");
        buf_puts(b, a->success ? ",\"success\":true,\"error\":" : ",\"success\":false,\"error\":");
        if (a->error)
            jw_cstr(b, a->error);
        else
            buf_puts(b, "null");
        buf_puts(b, ",\"queueName\":");
        if (a->queue)
            jw_cstr(b, a->queue);
        else
            buf_puts(b, "null");
        buf_puts(b, ",\"partitionName\":");
        if (a->partition)
            jw_cstr(b, a->partition);
        else
            buf_puts(b, "null");
        buf_puts(b, a->lease_released ? ",\"leaseReleased\":true" : ",\"leaseReleased\":false");
        buf_puts(b, a->dlq ? ",\"dlq\":true}" : ",\"dlq\":false}");
    }
    buf_putc(b, ']');
}

void answer_lease_extend(buf *b, const char *lease, const char *error, int64_t expires_us)
{
    buf_puts(b, "[{\"index\":0,\"leaseId\":");
    jw_cstr(b, lease);
    buf_putc(b, ',');
    if (error) {
        buf_puts(b, "\"success\":false,\"error\":");
        jw_cstr(b, error);
        buf_puts(b, ",\"expiresAt\":null}]");
    } else {
        char at[32];
        format_iso_ms(expires_us, at);
        buf_printf(b, "\"success\":true,\"error\":null,\"expiresAt\":\"%s\"}]", at);
    }
}
