/* payload.c — opening sealed payloads for readers (see payload.h). */
#include "payload.h"

#include <string.h>

#include "json/json.h"

int record_payload_open(const record_view *v, buf *tmp, const char **payload, size_t *len, enum seal_result *why)
{
    enum seal_result r = SEAL_OK;
    *payload = v->payload;
    *len = v->payload_len;
    /* an empty payload was never sealed (a deleted record keeps none either): nothing to open */
    if ((v->flags & REC_ENCRYPTED) && v->payload_len > 0) {
        buf_reset(tmp);
        r = seal_open(seal_node_key(), v->payload, v->payload_len, tmp);
        if (r == SEAL_OK) {
            *payload = tmp->data;
            *len = tmp->len;
        }
    }
    if (why)
        *why = r;
    return r == SEAL_OK ? 0 : -1;
}

void record_payload_error_text(const record_view *v, enum seal_result why, char *out, size_t cap)
{
    seal_describe(seal_node_key(), v->payload, v->payload_len, why, out, cap);
}

int record_payload_json(buf *b, const record_view *v)
{
    if (v->payload_len == 0) {
        buf_puts(b, "null");
        return 0;
    }
    if (!(v->flags & REC_ENCRYPTED)) {
        buf_append(b, v->payload, v->payload_len);
        return 0;
    }
    /* opened straight into the answer: seal_open appends only a verified plaintext */
    size_t before = b->len;
    enum seal_result r = seal_open(seal_node_key(), v->payload, v->payload_len, b);
    if (r == SEAL_OK) {
        if (b->len == before)
            buf_puts(b, "null"); /* sealed from an empty payload */
        return 0;
    }
    char why[160];
    record_payload_error_text(v, r, why, sizeof why);
    buf_puts(b, "null,\"" PAYLOAD_ERROR_FIELD "\":");
    jw_cstr(b, why);
    return -1;
}
