/* ackreq.c — one acknowledgment of an ack body (ackreq.h). */
#include "ackreq.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A refused string field: json_str_field_msg's sentence for rc */
static qerr field_refused(qerr_detail *err, int rc, const char *where, const char *otherwise)
{
    char m[QERR_TEXT_MAX];
    json_str_field_msg(rc, where, otherwise, m, sizeof m);
    return qerr_set(err, QERR_BAD_INPUT, NULL, "%s", m);
}

int ack_partition_ref(const char *s, size_t n, uuid *out)
{
    if (uuid_parse(s, n, out) == 0)
        return 0;
    if (n == 0 || n > 19)
        return -1;
    uint64_t id = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        id = id * 10 + (uint64_t)(s[i] - '0');
    }
    if (id == 0 || id > (uint64_t)INT64_MAX || (n > 1 && s[0] == '0'))
        return -1;
    memset(out->b, 0, 8);
    for (int i = 0; i < 8; i++)
        out->b[8 + i] = (uint8_t)(id >> (8 * (7 - i)));
    return 0;
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
    if (ack_partition_ref(s, len, &it->part) < 0)
        return qerr_set(err, QERR_BAD_INPUT, NULL, "partitionId must be a UUID or a framed pop's decimal partition id%s",
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
