/* s3xml.h — the little XML the S3 client must read: an error body
 * (<Error><Code>..</Code><Message>..</Message></Error>), CreateMultipartUpload's <UploadId>,
 * and CompleteMultipartUpload's answer, which can be a 200 whose body is an <Error>.
 *
 * Not a general XML parser: one pass over a bounded input that checks the document is well
 * formed (one root, matching tags, known entities, nesting at most S3XML_MAX_DEPTH) and picks
 * the text of one element by its path from the root. Namespace prefixes are ignored (local
 * names match), a DOCTYPE is refused (S3 never sends one, and it is where entity expansion
 * lives), attributes are skipped. Pure: no libcurl, fuzzed by tests/fuzz/fuzz_s3xml.c. */
#ifndef QUEEN_S3_S3XML_H
#define QUEEN_S3_S3XML_H

#include <stddef.h>

#include "core/buf.h"

/* S3's documents are two or three levels deep; anything much deeper is not one of them. */
#define S3XML_MAX_DEPTH 32
/* A path names at most this many levels ("Error/Code" is two). */
#define S3XML_MAX_PATH 8

/* The text of the first element at path (local names from the root, '/'-separated, e.g.
 * "InitiateMultipartUploadResult/UploadId"), entities decoded, CDATA kept, into out (appended).
 * 1 found, 0 well formed but absent, -1 malformed (or out passed its ceiling). */
int s3xml_text(const char *xml, size_t len, const char *path, buf *out);

/* The root element's local name into out (appended): 1, 0 for an empty/blank body, -1 malformed. */
int s3xml_root(const char *xml, size_t len, buf *out);

/* When the body is an <Error> document: its Code and Message (each truncated to fit, NUL
 * terminated; either may come out empty) and 1; 0 when the body is blank or another document;
 * -1 when it is not well formed. */
int s3xml_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg, size_t msg_cap);

#endif
