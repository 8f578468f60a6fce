/* options.c — queue option table. */
#include "options.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

enum opt_type { O_INT, O_BOOL, O_SINK };

typedef struct opt_row {
    const char *name;
    enum opt_type type;
    size_t offset;
    int64_t def, lo, hi;
    const char *unit;
} opt_row;

#define OFF(f) offsetof(queue_options, f)
#define DAY 86400LL
static const opt_row rows[] = {
    {"priority", O_INT, OFF(priority), 0, -1000000, 1000000, NULL},
    {"leaseTime", O_INT, OFF(lease_time), 300, 0, 30 * DAY, "seconds"},
    {"retryLimit", O_INT, OFF(retry_limit), 3, 0, 1000000, NULL},
    {"retryDelay", O_INT, OFF(retry_delay), 1000, 0, 30 * DAY * 1000, "milliseconds"},
    {"maxSize", O_INT, OFF(max_size), 0, 0, INT64_MAX / 2, "messages"},
    {"ttl", O_INT, OFF(ttl), 3600, 0, 3650 * DAY, "seconds"}, /* legacy, not enforced (options.h) */
    {"deadLetterQueue", O_BOOL, OFF(dead_letter_queue), 1, 0, 1, NULL},
    {"dlqAfterMaxRetries", O_BOOL, OFF(dlq_after_max_retries), 1, 0, 1, NULL},
    {"delayedProcessing", O_INT, OFF(delayed_processing), 0, 0, 365 * DAY, "seconds"},
    {"windowBuffer", O_INT, OFF(window_buffer), 0, 0, 30 * DAY, "seconds"},
    {"retentionSeconds", O_INT, OFF(retention_seconds), 0, 0, 3650 * DAY, "seconds"},
    {"completedRetentionSeconds", O_INT, OFF(completed_retention_seconds), 0, 0, 3650 * DAY, "seconds"},
    {"retentionEnabled", O_BOOL, OFF(retention_enabled), 0, 0, 1, NULL},
    {"encryptionEnabled", O_BOOL, OFF(encryption_enabled), 0, 0, 1, NULL},
    {"maxWaitTimeSeconds", O_INT, OFF(max_wait_time_seconds), 0, 0, 3650 * DAY, "seconds"},
    {"retentionSinkHold", O_SINK, OFF(retention_sink_hold), 0, 0, 0, NULL},
    {"retentionSinkHoldMaxSeconds", O_INT, OFF(retention_sink_hold_max_seconds), 7 * DAY, 60, 3650 * DAY, "seconds"},
};
#undef OFF

void queue_options_defaults(queue_options *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < ARRAY_LEN(rows); i++)
        if (rows[i].type != O_SINK)
            *(int64_t *)((char *)o + rows[i].offset) = rows[i].def;
}

static int sink_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > SINK_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.'))
            return 0;
    }
    return 1;
}

qerr queue_options_parse(const json_doc *d, int tok, queue_options *o, qerr_detail *err)
{
    queue_options_defaults(o);
    if (tok < 0 || json_type_of(d, tok) == JSON_NULL)
        return QERR_OK;
    if (json_type_of(d, tok) != JSON_OBJECT)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "options must be an object");
    int k = json_first(d, tok);
    for (uint32_t m = 0; m < d->toks[tok].count; m++, k = json_next(d, k + 1)) {
        int v = k + 1;
        const opt_row *row = NULL;
        for (size_t i = 0; i < ARRAY_LEN(rows); i++)
            if (json_str_eq(d, k, rows[i].name))
                row = &rows[i];
        if (!row) {
            buf kb;
            buf_init(&kb, 256);
            json_str_decode(d, k, &kb);
            qerr_set(err, QERR_BAD_INPUT, NULL, "unknown option \"%s\"", buf_cstr(&kb));
            buf_free(&kb);
            return QERR_BAD_INPUT;
        }
        char *slot = (char *)o + row->offset;
        switch (row->type) {
        case O_INT: {
            int64_t x;
            if (json_int64(d, v, &x) < 0 || x < row->lo || x > row->hi)
                return qerr_set(err, QERR_BAD_INPUT, NULL, "options.%s must be an integer between %lld and %lld%s%s", row->name,
                                              (long long)row->lo, (long long)row->hi, row->unit ? " " : "", row->unit ? row->unit : "");
            *(int64_t *)slot = x;
            break;
        }
        case O_BOOL: {
            int t = json_type_of(d, v);
            if (t != JSON_TRUE && t != JSON_FALSE)
                return qerr_set(err, QERR_BAD_INPUT, NULL, "options.%s must be true or false", row->name);
            *(int64_t *)slot = t == JSON_TRUE;
            break;
        }
        case O_SINK: {
            int t = json_type_of(d, v);
            if (t == JSON_NULL || t == JSON_FALSE) {
                o->retention_sink_hold[0] = '\0';
                break;
            }
            buf name;
            buf_init(&name, SINK_NAME_MAX + 8);
            int ok = t == JSON_STRING && json_str_decode(d, v, &name) == 0 && !name.overflow &&
                     (name.len == 0 || sink_name_ok(name.data, name.len));
            if (!ok) {
                buf_free(&name);
                return qerr_set(err, QERR_BAD_INPUT, NULL,
                                "options.%s must be a sink name (letters, digits, '-', '_', '.', at most %d) or null",
                                row->name, SINK_NAME_MAX);
            }
            memset(o->retention_sink_hold, 0, sizeof o->retention_sink_hold);
            if (name.len)
                memcpy(o->retention_sink_hold, name.data, name.len);
            buf_free(&name);
            break;
        }
        }
    }
    return QERR_OK;
}

void queue_options_json(const queue_options *o, buf *out)
{
    buf_putc(out, '{');
    for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
        if (i)
            buf_putc(out, ',');
        jw_key(out, rows[i].name);
        const char *slot = (const char *)o + rows[i].offset;
        switch (rows[i].type) {
        case O_INT:
            buf_put_i64(out, *(const int64_t *)slot);
            break;
        case O_BOOL:
            buf_puts(out, *(const int64_t *)slot ? "true" : "false");
            break;
        case O_SINK:
            if (o->retention_sink_hold[0])
                jw_cstr(out, o->retention_sink_hold);
            else
                buf_puts(out, "null");
            break;
        }
    }
    buf_putc(out, '}');
}

void queue_options_defaults_json(buf *out)
{
    queue_options o;
    queue_options_defaults(&o);
    queue_options_json(&o, out);
}

void queue_option_raw(buf *b, const json_doc *d, int ok, const char *key)
{
    int t = ok ? json_get(d, 0, key) : -1;
    if (t < 0) {
        buf_puts(b, "null");
        return;
    }
    size_t n;
    const char *raw = json_raw(d, t, &n);
    buf_append(b, raw, n);
}

int queue_options_open(json_doc *d, const char *text, size_t len)
{
    memset(d, 0, sizeof *d);
    return json_parse(d, text, len, NULL) == 0 && json_type_of(d, 0) == JSON_OBJECT;
}

void queue_options_fields(buf *b, const json_doc *d, int ok, const char *const fields[][2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        buf_printf(b, "%s\"%s\":", i ? "," : "", fields[i][0]);
        queue_option_raw(b, d, ok, fields[i][1]);
    }
}
