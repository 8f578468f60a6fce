/* fuzz_sinkdoc — a tenant's sink settings document (sink/sinkdoc.h) from the input, parsed
 * once with no stored secret and once with one kept. Checks: no crash or leak; a refusal has a
 * code and a sentence without a QUEEN_S3_ variable name; an accepted document's canonical
 * settings are a JSON object that never holds secretKey or enabled, and its secret is the
 * document's own (present exactly when the document had one). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "sink/sinkdoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_sinkdoc: check failed at line %d: %s\n", __LINE__, #c);                    \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t T[16] = {1, 2, 3, 4, 5, 6, 0x40, 8, 0x80, 10, 11, 12, 13, 14, 15, 16};
    for (int keep = 0; keep < 2; keep++) {
        s3_sink_doc d;
        s3_doc_refusal why;
        if (s3_sink_doc_parse((const char *)data, size, T, keep, &d, &why) < 0) {
            CHECK(why.code && why.code[0]);
            CHECK(why.msg[0]);
            /* the sink's sentences name fields, not variables (a name the input holds may echo) */
            CHECK(memmem(data, size, "QUEEN_S3_", 9) || !strstr(why.msg, "QUEEN_S3_"));
            continue;
        }
        CHECK(keep || d.has_secret);
        CHECK(!!d.cfg.secret_key == d.has_secret);
        const char *set = buf_cstr(&d.settings);
        json_doc j;
        memset(&j, 0, sizeof j);
        CHECK(json_parse(&j, set, d.settings.len, NULL) == 0);
        CHECK(json_type_of(&j, 0) == JSON_OBJECT);
        CHECK(json_get(&j, 0, "secretKey") < 0 && json_get(&j, 0, "enabled") < 0);
        json_doc_free(&j);
        CHECK(d.cfg.bucket && d.cfg.endpoint && d.cfg.region && d.cfg.access_key);
        s3_sink_doc_free(&d);
    }
    return 0;
}
