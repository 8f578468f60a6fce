/* fuzz_cyclereq — json_parse then the stream cycle reader (streams/cyclereq.h) as POST
 * /streams/v1/cycle runs it: on the root object, or on every element of a root array.
 * Checks: a refusal or failure always says why (a bounded, non-empty message), a refusal with a
 * reason has a code; an accepted cycle has a group, ops with keys of 0..STATE_KEY_MAX_BYTES
 * bytes whose values (upserts) are spans of the input, items whose transactionIds are 1..255
 * bytes (derived ones: "sq:" + 36 hex digits, the same when derived again, another with a
 * salt), and a seed that starts with "a" for a cycle with an ack, "f" for a flush. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "storage/pushreq.h"
#include "streams/cyclereq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_cyclereq: check failed at line %d: %s\n", __LINE__, #c);                    \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static void one(const char *src, size_t size, const json_doc *d, int o, const char *at)
{
    arena ar;
    arena_init(&ar);
    cycle_req c;
    cycle_err err;
    cycle_rc rc = cycle_read(&ar, d, o, at, &c, &err);
    CHECK(rc == CYCLE_OK || rc == CYCLE_BAD || rc == CYCLE_FAILED);
    if (rc != CYCLE_OK) {
        size_t n = strnlen(err.text, sizeof err.text);
        CHECK(n > 0 && n < sizeof err.text);
        CHECK(!err.reason || err.code);
        arena_free(&ar);
        return;
    }
    CHECK(c.group && *c.group);
    CHECK(c.seed && c.seed_len >= 1 && c.seed[0] == (c.has_ack ? 'a' : 'f'));
    if (c.has_ack)
        CHECK(c.ack_txn && *c.ack_txn && c.ack_status);
    for (uint32_t i = 0; i < c.nops; i++) {
        const cycle_op *op = &c.ops[i];
        CHECK(op->key && op->key_len <= STATE_KEY_MAX_BYTES);
        if (op->del) {
            CHECK(!op->value);
        } else {
            CHECK(op->value && op->value_len > 0);
            CHECK((op->value >= src && op->value + op->value_len <= src + size) || !memcmp(op->value, "{}", 2));
        }
        if (op->has_version)
            CHECK(op->version >= 0);
    }
    for (uint32_t i = 0; i < c.nitems; i++) {
        const push_item *it = &c.items[i];
        CHECK(it->txn && it->txn_len >= 1 && it->txn_len <= PUSH_TXN_MAX_BYTES && it->txn_producer);
        CHECK(it->payload && it->payload_len > 0);
        if (c.derived[i]) {
            CHECK(it->txn_len == CYCLE_TXN_LEN && !memcmp(it->txn, "sq:", 3));
            char again[CYCLE_TXN_LEN + 1];
            cycle_derive_txn(&c, NULL, 0, i, it, again);
            CHECK(!memcmp(again, it->txn, CYCLE_TXN_LEN));
            cycle_derive_txn(&c, "1:7,", 4, i, it, again);
            CHECK(memcmp(again, it->txn, CYCLE_TXN_LEN) != 0);
        }
    }
    cycle_rederive(&ar, &c, "1:7,", 4);
    for (uint32_t i = 0; i < c.nitems; i++)
        CHECK(c.items[i].status == 0 && c.items[i].txn_len >= 1);
    arena_free(&ar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {.max_tokens = 0, .token_depth = 5};
    if (json_parse(&d, src, size, &jo) == 0) {
        if (json_type_of(&d, 0) == JSON_ARRAY) {
            uint32_t n = d.toks[0].count;
            int o = json_first(&d, 0);
            for (uint32_t i = 0; i < n && i < 100; i++, o = json_next(&d, o)) {
                char at[24];
                snprintf(at, sizeof at, "[%u]", i);
                one(src, size, &d, o, at);
            }
        } else {
            one(src, size, &d, 0, NULL);
        }
    }
    json_doc_free(&d);
    return 0;
}
