/* fuzz_bodies — json_parse then the push item reader (storage/pushreq.h) over every element of
 * "items", and the acknowledgment reader (consume/ackreq.h) over every element of
 * "acknowledgments" and on the root, as POST /api/v1/push, /ack/batch and /ack do.
 * Checks: a refusal always says why (a bounded, non-empty message); an accepted push item has
 * names of 1..255 bytes without NUL, a transactionId of 1..255 bytes, a payload that is a span
 * of the input and valid JSON; an accepted ack has a transactionId and a status. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consume/ackreq.h"
#include "json/json.h"
#include "storage/pushreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_bodies: check failed at line %d: %s\n", __LINE__, #c);                      \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static int valid_json(const char *p, size_t n)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    int ok = json_parse(&d, p, n, NULL) == 0;
    json_doc_free(&d);
    return ok;
}

static void check_msg(const char *msg, size_t cap)
{
    size_t n = strnlen(msg, cap);
    CHECK(n > 0 && n < cap);
}

static void pushes(const char *src, size_t size)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts o = {.token_depth = 3};
    if (json_parse(&d, src, size, &o) == 0 && json_type_of(&d, 0) == JSON_OBJECT) {
        int items = json_get(&d, 0, "items");
        if (json_type_of(&d, items) == JSON_ARRAY) {
            arena ar;
            arena_init(&ar);
            uint32_t i = 0;
            for (int t = json_first(&d, items); i < d.toks[items].count; i++, t = json_next(&d, t)) {
                push_item pi;
                memset(&pi, 0, sizeof pi);
                qerr_detail err;
                memset(&err, 0, sizeof err);
                qerr e = push_item_read(&ar, &d, t, i, &pi, &err);
                CHECK(e == QERR_OK || e == QERR_BAD_INPUT);
                if (e != QERR_OK) {
                    check_msg(err.text, sizeof err.text);
                    continue;
                }
                CHECK(pi.queue_len >= 1 && pi.queue_len <= PUSH_NAME_MAX_BYTES && !memchr(pi.queue, 0, pi.queue_len));
                CHECK(pi.partition_len >= 1 && pi.partition_len <= PUSH_NAME_MAX_BYTES &&
                      !memchr(pi.partition, 0, pi.partition_len));
                CHECK(pi.txn_len >= 1 && pi.txn_len <= PUSH_TXN_MAX_BYTES && !memchr(pi.txn, 0, pi.txn_len));
                if (pi.payload) {
                    CHECK(pi.payload >= src && pi.payload + pi.payload_len <= src + size);
                    CHECK(valid_json(pi.payload, pi.payload_len));
                }
            }
            arena_free(&ar);
        }
    }
    json_doc_free(&d);
}

static void ack_check(arena *ar, const json_doc *d, int t, int batch, uint32_t i)
{
    ack_item it;
    memset(&it, 0, sizeof it);
    qerr_detail err;
    memset(&err, 0, sizeof err);
    qerr e = ack_item_read(ar, d, t, batch, i, &it, &err);
    CHECK(e == QERR_OK || e == QERR_BAD_INPUT);
    if (e != QERR_OK) {
        check_msg(err.text, sizeof err.text);
        return;
    }
    CHECK(it.txn && strlen(it.txn) == it.txn_len);
    CHECK(it.status != NULL);
}

static void acks(const char *src, size_t size)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    if (json_parse(&d, src, size, NULL) == 0) {
        arena ar;
        arena_init(&ar);
        ack_check(&ar, &d, 0, 0, 0);
        int arr = json_type_of(&d, 0) == JSON_OBJECT ? json_get(&d, 0, "acknowledgments") : -1;
        if (json_type_of(&d, arr) == JSON_ARRAY) {
            uint32_t i = 0;
            for (int t = json_first(&d, arr); i < d.toks[arr].count; i++, t = json_next(&d, t))
                ack_check(&ar, &d, t, 1, i);
        }
        arena_free(&ar);
    }
    json_doc_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    const char *src = (const char *)data;
    pushes(src, size);
    acks(src, size);
    return 0;
}
