/* ackreq.c — one acknowledgment of an ack body (ackreq.h). */
#include "ackreq.h"

#include <stdio.h>
#include <string.h>

int ack_item_read(arena *ar, const json_doc *d, int t, int batch, uint32_t i, ack_item *it, char *msg, size_t ml)
{
    const char *s;
    size_t len;
    if (json_type_of(d, t) != JSON_OBJECT) {
        snprintf(msg, ml, "Each acknowledgment must be an object (acknowledgments[%u] is not)", i);
        return -1;
    }
    int rc = json_str_field(ar, d, t, "transactionId", &it->txn, &it->txn_len);
    if (rc <= 0) {
        json_str_field_msg(rc, "transactionId",
                           batch ? "Each acknowledgment must have a valid transactionId string" : "transactionId is required",
                           msg, ml);
        return -1;
    }
    rc = json_str_field(ar, d, t, "partitionId", &s, &len);
    if (rc <= 0) {
        json_str_field_msg(rc, "partitionId",
                           batch ? "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"
                                 : "partitionId is required to ensure message uniqueness",
                           msg, ml);
        return -1;
    }
    if (uuid_parse(s, len, &it->part) < 0) {
        snprintf(msg, ml, "partitionId must be a UUID%s", batch ? " in every acknowledgment" : "");
        return -1;
    }
    rc = json_str_field(ar, d, t, "status", &it->status, &len);
    if (rc < 0) {
        json_str_field_msg(rc, "status", "status must be a string (completed, failed, dlq or retry)", msg, ml);
        return -1;
    }
    if (rc == 0)
        it->status = "completed";
    rc = json_str_field(ar, d, t, "leaseId", &s, &len);
    if (rc < 0) {
        json_str_field_msg(rc, "leaseId", "leaseId must be a string", msg, ml);
        return -1;
    }
    if (rc == 1 && len > 0) {
        if (uuid_parse(s, len, &it->lease) < 0) {
            snprintf(msg, ml, "leaseId must be a UUID");
            return -1;
        }
        it->has_lease = 1;
    }
    rc = json_str_field(ar, d, t, "error", &it->error, &len);
    if (rc < 0) {
        json_str_field_msg(rc, "error", "error must be a string", msg, ml);
        return -1;
    }
    return 0;
}
