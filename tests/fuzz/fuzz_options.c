/* fuzz_options — json_parse then queue_options_parse on arbitrary input. Checks: values are
 * within their ranges, the written JSON re-parses to the same options, and the outcome does not
 * depend on whether nested containers were tokenised (token_depth 1). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "queue/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_options: check failed at line %d: %s\n", __LINE__, #c);                     \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static int parse_with(const char *src, size_t len, uint32_t token_depth, queue_options *o, qerr_detail *err,
                      int *parsed)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.max_tokens = 0, .token_depth = token_depth};
    *parsed = json_parse(&d, src, len, &jo) == 0;
    int r = -2;
    if (*parsed) {
        memset(err, 0, sizeof *err);
        r = (int)queue_options_parse(&d, 0, o, err);
        CHECK(r == QERR_OK || r == QERR_BAD_INPUT);
        if (r == QERR_BAD_INPUT)
            CHECK(err->text[0] != '\0' && strlen(err->text) < sizeof err->text);
    }
    json_doc_free(&d);
    return r;
}

/* Same options: every integer field and the hold name (bytes after the name's NUL may differ
 * when a longer name was overwritten by a shorter one, and do not count). */
static int same_options(const queue_options *x, const queue_options *y)
{
    return memcmp(x, y, offsetof(queue_options, retention_sink_hold)) == 0 &&
           strcmp(x->retention_sink_hold, y->retention_sink_hold) == 0;
}

static void check_ranges(const queue_options *o)
{
    CHECK(o->priority >= -1000000 && o->priority <= 1000000);
    CHECK(o->lease_time >= 0 && o->lease_time <= 30 * 86400);
    CHECK(o->retention_sink_hold_max_seconds >= 60);
    CHECK(o->dead_letter_queue == 0 || o->dead_letter_queue == 1);
    CHECK(o->dlq_after_max_retries == 0 || o->dlq_after_max_retries == 1);
    CHECK(o->retention_enabled == 0 || o->retention_enabled == 1);
    CHECK(o->encryption_enabled == 0 || o->encryption_enabled == 1);
    CHECK(memchr(o->retention_sink_hold, '\0', sizeof o->retention_sink_hold) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    queue_options a, b;
    qerr_detail ea, eb;
    int pa, pb;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    int ra = parse_with(src, size, 0, &a, &ea, &pa);
    int rb = parse_with(src, size, 1, &b, &eb, &pb);
    CHECK(pa == pb);
    if (!pa)
        return 0;
    /* only the root object's members are looked at, so opaque nested values change nothing */
    CHECK(ra == rb);
    if (ra != QERR_OK) {
        CHECK(strcmp(ea.text, eb.text) == 0);
        return 0;
    }
    CHECK(same_options(&a, &b));
    check_ranges(&a);

    /* the JSON written back parses to the same options and writes the same text */
    buf w;
    buf_init(&w, 0);
    queue_options_json(&a, &w);
    queue_options c;
    memset(&c, 0, sizeof c);
    qerr_detail ec;
    int pc;
    int rc = parse_with(w.data, w.len, 0, &c, &ec, &pc);
    if (!pc || rc != QERR_OK) {
        fprintf(stderr, "fuzz_options: written options not accepted: %.*s (%s)\n", (int)w.len, w.data, ec.text);
        abort();
    }
    CHECK(same_options(&a, &c));
    buf w2;
    buf_init(&w2, 0);
    queue_options_json(&c, &w2);
    CHECK(w.len == w2.len && memcmp(w.data, w2.data, w.len) == 0);
    buf_free(&w2);
    buf_free(&w);
    return 0;
}
