/* timeutil.h — wall-clock and monotonic time, and the µs ISO-8601 format used on the wire. */
#ifndef QUEEN_CORE_TIMEUTIL_H
#define QUEEN_CORE_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

int64_t wall_us(void);     /* CLOCK_REALTIME, µs since the epoch */
uint64_t mono_ms(void);    /* CLOCK_MONOTONIC, ms */
uint64_t mono_us(void);

/* Writes "YYYY-MM-DDTHH:MM:SS.ffffffZ" (27 chars + NUL) for µs since the epoch (UTC). */
size_t format_iso_us(int64_t us, char out[32]);
/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 chars + NUL). */
size_t format_iso_ms(int64_t us, char out[32]);
/* Parses an ISO-8601/RFC 3339 timestamp (date, optional time, fraction up to µs, Z or ±hh:mm)
 * into µs since the epoch. Returns 0 or -1. */
int parse_iso_us(const char *s, size_t n, int64_t *out);

#endif
