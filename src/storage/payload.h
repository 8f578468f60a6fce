/* payload.h — a record's payload as a reader gets it: the producer's bytes, whether they are
 * stored plain or sealed (REC_ENCRYPTED, crypto/seal.h) under the node's QUEEN_ENCRYPTION_KEY.
 *
 * Every read path goes through here (fetch, pop, message lookup and browsing, dead letters,
 * timers, the S3 sink), so none of them can hand out an envelope as if it were the payload.
 * Sealing on the way in is the push encoder's (storage/push.c) and the timer encoder's.
 *
 * Pure (no libuv, no libpq) and thread-safe: the node key is read-only after boot and each
 * call uses the caller's buffers. docs/encryption.md has the whole design. */
#ifndef QUEEN_STORAGE_PAYLOAD_H
#define QUEEN_STORAGE_PAYLOAD_H

#include <stddef.h>

#include "core/buf.h"
#include "crypto/seal.h"
#include "record.h"

/* The field a JSON answer adds next to a payload it could not open. */
#define PAYLOAD_ERROR_FIELD "payloadError"

/* The plaintext payload of a record.
 *  - A plain record: *payload and *len are the stored bytes (v's own memory, no copy); 0.
 *  - A sealed record: opened with the node's key into tmp (reset first; the caller owns it and
 *    keeps it alive while it uses *payload); *payload and *len point into tmp; 0.
 *  - A sealed record this node cannot open: -1 with *why = SEAL_NO_KEY, SEAL_WRONG_KEY or
 *    SEAL_CORRUPT, and *payload and *len the raw stored bytes (the envelope), so a caller that
 *    must still write something (the S3 sink writes them as a JSON string) has them.
 * A length of 0 means the producer sent no payload (read back as null). why may be NULL. */
int record_payload_open(const record_view *v, buf *tmp, const char **payload, size_t *len, enum seal_result *why);

/* Appends the value of a JSON payload field: the plaintext (a JSON text as the producer sent
 * it), null when empty, or, when the record is sealed and this node cannot open it,
 *   null,"payloadError":"<why, e.g. sealed under another key (fingerprint 1a2b3c4d, this node's is 5e6f7a8b)>"
 * i.e. null and a sibling field: the caller has just written `"payload":` (or `"data":`) inside
 * an object. Returns 0, or -1 when it wrote the error form. */
int record_payload_json(buf *b, const record_view *v);

/* The sentence record_payload_json puts in payloadError (NUL-terminated, truncated to cap). */
void record_payload_error_text(const record_view *v, enum seal_result why, char *out, size_t cap);

#endif
