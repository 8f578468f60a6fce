/* fuzz_qpb — qpb_decode and qtb_decode on arbitrary input, as POST /api/v1/push and
 * POST /api/v1/transaction do with a binary body.
 * Checks: a refusal has a reason and a sentence and points at a group it saw; an accepted body
 * has at least one item, every name is 1..255 bytes without NUL, every transactionId at most
 * 255 bytes without NUL, every payload one JSON text, and every span lies inside the input or
 * the arena's decompressed bytes (ASan checks the reads). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "storage/qpb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_qpb: check failed at line %d: %s\n", __LINE__, #c);                         \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    arena ar;
    arena_init(&ar);
    qpb_body out;
    qpb_error e;
    int rc = qpb_decode(data, size, 1u << 22, &ar, &out, &e);
    if (rc < 0) {
        CHECK(e.reason && *e.reason);
        CHECK(strlen(e.detail) > 0);
        CHECK(e.group >= -1 && e.item >= -1);
    } else {
        CHECK(out.n > 0 && out.items);
        for (uint32_t i = 0; i < out.n; i++) {
            const qpb_item *it = &out.items[i];
            CHECK(it->queue_len >= 1 && it->queue_len <= QPB_NAME_MAX && !memchr(it->queue, 0, it->queue_len));
            CHECK(it->partition_len >= 1 && it->partition_len <= QPB_NAME_MAX &&
                  !memchr(it->partition, 0, it->partition_len));
            CHECK(it->txn_len <= QPB_TXN_MAX && (!it->txn_len || !memchr(it->txn, 0, it->txn_len)));
            json_doc d;
            memset(&d, 0, sizeof d);
            CHECK(json_parse(&d, it->payload, it->payload_len, NULL) == 0);
            json_doc_free(&d);
        }
    }
    /* the same input as a binary transaction body (QTB1): the head is a span inside the input */
    const char *head;
    size_t hlen;
    uint8_t flags;
    if (qtb_decode(data, size, 1u << 22, &ar, &head, &hlen, &flags, &out, &e) == 0) {
        CHECK(head >= (const char *)data && head + hlen <= (const char *)data + size);
        CHECK((flags & ~QPB_FLAG_COUNTS) == 0);
        CHECK(out.n > 0 && out.items);
    } else {
        CHECK(e.reason && *e.reason);
    }
    arena_free(&ar);
    return 0;
}
