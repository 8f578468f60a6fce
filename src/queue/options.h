/* options.h — queue options: names, defaults, ranges, validation and JSON (pure logic).
 *
 * Every option of the earlier release plus the sink's retention hold. `configure` is a full
 * overwrite: options not sent take their defaults. An unknown option, a wrong type or a value
 * out of range is an error naming the option and what it accepts. */
#ifndef QUEEN_QUEUE_OPTIONS_H
#define QUEEN_QUEUE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/qerr.h"
#include "json/json.h"

#define SINK_NAME_MAX 64

typedef struct queue_options {
    int64_t lease_time;
    int64_t retry_limit;
    int64_t retry_delay;
    int64_t priority;
    int64_t delayed_processing;
    int64_t window_buffer;
    int64_t max_size;
    int64_t ttl;                   /* legacy: stored and reported, never enforced (as in 0.15) */
    int64_t dead_letter_queue;
    int64_t dlq_after_max_retries;
    int64_t retention_enabled;
    int64_t retention_seconds;
    int64_t completed_retention_seconds;
    int64_t encryption_enabled;
    int64_t max_wait_time_seconds;
    int64_t retention_sink_hold_max_seconds;
    char retention_sink_hold[SINK_NAME_MAX + 1]; /* "" = no hold */
} queue_options;

void queue_options_defaults(queue_options *o);
/* Parses the `options` object (tok may be -1: all defaults). Returns QERR_OK, or
 * QERR_BAD_INPUT with the client's sentence in err. */
qerr queue_options_parse(const json_doc *d, int tok, queue_options *o, qerr_detail *err);
/* Appends the raw JSON of option `key` of an options object d (an effective options row:
 * stored options over the defaults, queen.queue_options_v1), or null when !ok (d is not an
 * object) or the key is absent. The admin answers (message detail, queue detail) show these. */
void queue_option_raw(buf *b, const json_doc *d, int ok, const char *key);

/* Parses a queue's stored options (JSON text) into d, zeroed first, for queue_option_raw: 1
 * when they are an object, 0 otherwise (then every option reads null). Free d with
 * json_doc_free either way. */
int queue_options_open(json_doc *d, const char *text, size_t len);

/* Writes "name":<raw option> for each {answer name, option key} of fields, comma-separated
 * (no leading or trailing comma), each as queue_option_raw writes it. */
void queue_options_fields(buf *b, const json_doc *d, int ok, const char *const fields[][2], size_t n);

/* Writes the full option set as a JSON object, in a fixed order. */
void queue_options_json(const queue_options *o, buf *out);
/* The defaults as a JSON object: what every node writes into queen.option_defaults at boot,
 * so the SQL reads this table's defaults (queen.queue_options_v1) and has none of its own. */
void queue_options_defaults_json(buf *out);

#endif
