/* fuzz_popreq — url_query_parse then pop_request_read (consume/popreq.h) on arbitrary query
 * strings, with and without a named partition, as GET /api/v1/pop/... does. Checks: an
 * accepted pop is within its bounds (batch 1..10000, partitions 1..100 and 1 for a named
 * partition, timeout 0..3600000 ms, booleans 0/1, a group); a refusal is QERR_BAD_INPUT with
 * a sentence. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consume/popreq.h"
#include "core/arena.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_popreq: check failed at line %d: %s\n", __LINE__, #c);                      \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    arena ar;
    arena_init(&ar);
    char *q = arena_strndup(&ar, (const char *)data, size);
    url_query uq;
    const char *bad = NULL;
    if (url_query_parse(&ar, q, strlen(q), &uq, &bad) == URL_OK) {
        for (int named = 0; named < 2; named++) {
            pop_defaults def = {.batch = 1 + named * 99, .timeout_ms = 30000, .subscription_mode = named};
            pop_request r;
            memset(&r, 0, sizeof r);
            r.args.queue = "q";
            r.args.partition = named ? "p" : NULL;
            qerr_detail err;
            memset(&err, 0, sizeof err);
            qerr e = pop_request_read(&uq, &def, &r, &err);
            if (e != QERR_OK) {
                CHECK(e == QERR_BAD_INPUT);
                CHECK(err.text[0] != '\0');
                continue;
            }
            CHECK(r.args.group && *r.args.group);
            CHECK(r.args.batch >= 1 && r.args.batch <= POP_MAX_BATCH);
            CHECK(r.args.max_partitions >= 1 && r.args.max_partitions <= POP_MAX_PARTITIONS);
            if (named)
                CHECK(r.args.max_partitions == 1);
            CHECK(r.timeout_ms >= 0 && r.timeout_ms <= 3600000);
            CHECK(r.wait == 0 || r.wait == 1);
            CHECK(r.args.auto_ack == 0 || r.args.auto_ack == 1);
            CHECK(r.sizing.autopilot == 0 || r.sizing.autopilot == 1);
            CHECK(!r.args.sub_mode || strcmp(r.args.sub_mode, "new") == 0);
        }
    }
    arena_free(&ar);
    return 0;
}
