/* pushreq.c — one item of a push body (pushreq.h). */
#include "pushreq.h"

#include <stdio.h>
#include <string.h>

#include "core/uuid.h"

qerr push_item_read(arena *ar, const json_doc *d, int it, uint32_t i, push_item *pi, qerr_detail *err)
{
    if (json_type_of(d, it) != JSON_OBJECT)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "Each item must be an object (items[%u] is not)", i);
    const char *s;
    size_t len;
    int rc = json_str_field(ar, d, it, "queue", &s, &len);
    if (rc == 0 || rc == -1)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "Queue must be a string");
    if (rc == JSON_STR_NUL || len == 0 || len > PUSH_NAME_MAX_BYTES)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "Queue name must be 1 to %d bytes without NUL characters (items[%u])",
                        PUSH_NAME_MAX_BYTES, i);
    pi->queue = s;
    pi->queue_len = (uint32_t)len;
    rc = json_str_field(ar, d, it, "partition", &s, &len);
    if (rc == -1)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "Partition must be a string");
    if (rc == 0) {
        s = "Default";
        len = 7;
    }
    if (rc == JSON_STR_NUL || len == 0 || len > PUSH_NAME_MAX_BYTES)
        return qerr_set(err, QERR_BAD_INPUT, NULL,
                        "Partition name must be 1 to %d bytes without NUL characters (items[%u])", PUSH_NAME_MAX_BYTES, i);
    pi->partition = s;
    pi->partition_len = (uint32_t)len;
    rc = json_str_field(ar, d, it, "transactionId", &s, &len);
    if (rc == -1)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "TransactionId must be a string");
    if (rc == JSON_STR_NUL || (rc == 1 && len > 0)) {
        if (rc == JSON_STR_NUL || len > PUSH_TXN_MAX_BYTES)
            return qerr_set(err, QERR_BAD_INPUT, NULL,
                            "TransactionId must be at most %d bytes without NUL characters (items[%u])",
                            PUSH_TXN_MAX_BYTES, i);
        pi->txn = s;
        pi->txn_len = (uint32_t)len;
        pi->txn_producer = 1;
    } else {
        uuid u;
        uuid_v7(&u);
        char *t = arena_alloc(ar, 37);
        uuid_format(&u, t);
        pi->txn = t;
        pi->txn_len = 36;
    }
    rc = json_str_field(ar, d, it, "traceId", &s, &len);
    if (rc == -1)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "TraceId must be a string");
    if (rc == JSON_STR_NUL || (rc == 1 && len > 0)) {
        uuid u;
        if (rc == JSON_STR_NUL || uuid_parse(s, len, &u) < 0)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "TraceId must be a UUID (items[%u])", i);
        memcpy(pi->trace, u.b, 16);
        pi->has_trace = 1;
    }
    int pl = json_get(d, it, "payload");
    if (pl >= 0) {
        size_t plen;
        const char *raw = json_raw(d, pl, &plen);
        pi->payload = raw;
        pi->payload_len = (uint32_t)plen;
    }
    return QERR_OK;
}
