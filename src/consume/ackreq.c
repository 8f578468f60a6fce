/* ackreq.c — one acknowledgment of an ack body (ackreq.h). */
#include "ackreq.h"

#include <stdio.h>
#include <string.h>

/* A refused string field: json_str_field_msg's sentence for rc */
static qerr field_refused(qerr_detail *err, int rc, const char *where, const char *otherwise)
{
    char m[QERR_TEXT_MAX];
    json_str_field_msg(rc, where, otherwise, m, sizeof m);
    return qerr_set(err, QERR_BAD_INPUT, NULL, "%s", m);
}

qerr ack_item_read(arena *ar, const json_doc *d, int t, int batch, uint32_t i, ack_item *it, qerr_detail *err)
{
    const char *s;
    size_t len;
    if (json_type_of(d, t) != JSON_OBJECT)
        return qerr_set(err, QERR_BAD_INPUT, NULL,
                        "Each acknowledgment must be an object (acknowledgments[%u] is not)", i);
    int rc = json_str_field(ar, d, t, "transactionId", &it->txn, &it->txn_len);
    if (rc <= 0)
        return field_refused(err, rc, "transactionId",
                             batch ? "Each acknowledgment must have a valid transactionId string"
                                   : "transactionId is required");
    rc = json_str_field(ar, d, t, "partitionId", &s, &len);
    if (rc <= 0)
        return field_refused(err, rc, "partitionId",
                             batch ? "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"
                                   : "partitionId is required to ensure message uniqueness");
    if (uuid_parse(s, len, &it->part) < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "partitionId must be a UUID%s",
                        batch ? " in every acknowledgment" : "");
    rc = json_str_field(ar, d, t, "status", &it->status, &len);
    if (rc < 0)
        return field_refused(err, rc, "status", "status must be a string (completed, failed, dlq or retry)");
    if (rc == 0)
        it->status = "completed";
    rc = json_str_field(ar, d, t, "leaseId", &s, &len);
    if (rc < 0)
        return field_refused(err, rc, "leaseId", "leaseId must be a string");
    if (rc == 1 && len > 0) {
        if (uuid_parse(s, len, &it->lease) < 0)
            return qerr_set(err, QERR_BAD_INPUT, NULL, "leaseId must be a UUID");
        it->has_lease = 1;
    }
    rc = json_str_field(ar, d, t, "error", &it->error, &len);
    if (rc < 0)
        return field_refused(err, rc, "error", "error must be a string");
    return QERR_OK;
}
