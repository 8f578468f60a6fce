/* base64.h — base64 (RFC 4648 §4) both ways, for the payloads the 2.x wire carries as text
 * (timers) and the stored bytes an answer shows as text (sealed payloads, the sink's JSONL).
 * No dependencies beyond buf. */
#ifndef QUEEN_CORE_BASE64_H
#define QUEEN_CORE_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Appends the base64 of p (standard alphabet, with padding). */
void b64_encode(buf *out, const void *p, size_t n);
/* Decodes s (b64_decode's rules) and appends the bytes to out: 0, or b64_decode's error (out
 * unchanged), or -3 when out would pass its maximum. */
int b64_decode_buf(const char *s, size_t n, buf *out, unsigned flags);

/* Decoding flags. */
#define B64_URL_TOO 1u      /* also take the URL-safe alphabet ('-', '_'), even mixed */
#define B64_URL_ONLY 2u     /* the URL-safe alphabet only (base64url, RFC 4648 §5) */
#define B64_NEED_PADDING 4u /* the text must be padded to a multiple of four */
#define B64_NO_PADDING 8u   /* no '=' at all (JWT) */

/* Decodes base64 into out (cap bytes). Padding is optional unless B64_NEED_PADDING, and the
 * bits past the last byte must be zero (one text per byte string). Returns the decoded length
 * (a result longer than cap is counted but not stored); B64_BAD_CHAR for a character outside
 * the alphabet or misplaced padding; B64_BAD_FORM for a length no base64 text has, missing
 * padding, or non-zero trailing bits. The decoded length is at most n / 4 * 3 + 2. */
#define B64_BAD_CHAR (-1)
#define B64_BAD_FORM (-2)
long b64_decode(const char *s, size_t n, uint8_t *out, size_t cap, unsigned flags);

#endif
