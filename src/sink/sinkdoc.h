/* sinkdoc.h — a tenant's sink settings as a document (spec/s3-sink.txt, "A bucket per tenant"):
 * the body of PUT /api/cp/clusters/:cluster/s3, checked with the sink's own rules. Pure.
 *
 * The document is a JSON object of the per-sink settings by field name (sinkcfg.h lists them:
 * queues, endpoint, region, bucket, accessKey, pathStyle, prefix, sse, sseKmsKeyId, format,
 * compression, parquetCodec, layout, align, start, targetMb, maxWindowMs, sink) plus
 * secretKey (a string of 1..=4096 bytes) and enabled (a boolean). Refused, each with its code:
 *   s3_node_wide_setting  a node-wide setting (memoryMb, leaseTtlMs, ... , instance, crashAt,
 *                         partitions): those are the node's environment only
 *   s3_secret_field       another field named like a secret (secret, password, token,
 *                         credential, private key, session key, in any case)
 *   unknown_field         any other field
 *   s3_too_large          the settings (all but secretKey) past 32 KiB
 *   s3_invalid_secret     secretKey not a string, empty, past 4 KiB, or holding a NUL
 *   s3_invalid_setting    a value the sink's rules refuse (a range, an enumeration, the
 *                         endpoint, names, ...), or of the wrong JSON type; the sentence is the
 *                         sink's own, with field names for the variables
 *   invalid_request       not a JSON object
 * The refusal names the field and never holds the secret key. */
#ifndef QUEEN_SINK_SINKDOC_H
#define QUEEN_SINK_SINKDOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

#define S3_DOC_MAX_SETTINGS (32 * 1024)
#define S3_DOC_MAX_SECRET 4096

typedef struct s3_doc_refusal {
    const char *code;  /* one of the codes above */
    char field[64];    /* the field at fault, "" when none */
    char msg[600];
} s3_doc_refusal;

typedef struct s3_sink_doc {
    s3_sink_config cfg;  /* the settings; cfg.secret_key is the document's secretKey or NULL */
    int has_secret;      /* secretKey was given */
    int enabled;         /* enabled, true when absent */
    buf settings;        /* the settings as canonical JSON: the given fields, by name, in a fixed
                          * order, without secretKey and enabled (what GET shows as config) */
} s3_sink_doc;

/* 0 with *out filled (free it with s3_sink_doc_free), or -1 with *why. keep_secret: a secret
 * is stored already, so a document without secretKey is complete (the caller puts the stored
 * secret in cfg.secret_key); without it a missing secretKey is refused (s3_invalid_secret). */
int s3_sink_doc_parse(const char *json, size_t len, const uint8_t tenant[16], int keep_secret, s3_sink_doc *out,
                      s3_doc_refusal *why);
void s3_sink_doc_free(s3_sink_doc *d);

#endif
