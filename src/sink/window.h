/* window.h — the window rules of spec/s3-sink.txt ("Windows on the broker's clock"), pure:
 * no clock of its own, every time here is a broker stamp (µs) the caller read from
 * PostgreSQL.
 *
 * Window k of a queue holds the records with t_start <= ts < t_end. t_start is at or after the
 * end of window k-1 (the committed tEnd, called t0 here; 0 for QUEEN_S3_START=earliest before
 * anything was committed), and t_end is never later than the ceiling, safeTime minus
 * QUEEN_S3_SAFE_GUARD_MS. Below safeTime no record can still commit, so once the intent fixes
 * [t_start, t_end) a rebuild reads the same records.
 *
 * The caller reads the log forward in slices and keeps every record with t0 <= ts < read_to
 * buffered (read_to never passes the ceiling). From that state these rules decide:
 *   t_start  = max(t0, floor(first)), floor to the hour (align hour or none) or the day
 *              (align day), where first is the smallest buffered ts and, while a lost range
 *              waits, the stamp the loss was seen at (lost_ts) if smaller: an empty stretch
 *              before the first buffered record is not written, the first window of a queue
 *              read from the start begins at the hour its first record falls in, and a
 *              window that holds only lost ranges lies around the stamps that showed the
 *              loss (not at t0, which is 0 for QUEEN_S3_START=earliest: the first hour of
 *              1970). With lost_ts unknown (0) such a window starts at t0.
 *   boundary = the next hour/day boundary strictly above t_start (none: no boundary).
 *   A window closes, at t_end, when it holds at least one record (or a lost range waits to be
 *   recorded) and:
 *     ALIGN   read_to >= boundary                       t_end = boundary
 *     SIZE    bytes >= target (uncompressed weight)     t_end = min(read_to, boundary)
 *     AGE     ceiling - t_start >= max_window           t_end = min(read_to, boundary)
 *     MEMORY  the node passed QUEEN_S3_MEMORY_MB and this queue holds the most
 *                                                       t_end = min(read_to, boundary)
 *     DRAIN   stopping, and 1 MiB is buffered or the window is open 10 s on the broker's
 *             clock (ceiling - t_start >= 10 s)         t_end = min(read_to, boundary)
 *   checked in that order (the first that holds names the reason). A t_end must be above
 *   t_start; otherwise nothing closes.
 *   With nothing buffered and nothing lost, nothing closes: the stretch [t0, read_to) is
 *   empty and is skipped with no object (completeThrough = read_to).
 *
 * The record weight (what target and the memory budget count) is the payload plus the
 * partition name and transactionId plus 64 bytes of envelope, so even null payloads move the
 * size rule. */
#ifndef QUEEN_SINK_WINDOW_H
#define QUEEN_SINK_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "sink/sinkcfg.h"

#define S3_US_PER_HOUR 3600000000LL
#define S3_US_PER_DAY 86400000000LL
#define S3_DRAIN_MIN_BYTES (1u << 20)
#define S3_DRAIN_MIN_AGE_US 10000000LL
#define S3_RECORD_ENVELOPE 64

/* Floor of t to the hour (hour, none) or the day (day), UTC, for t >= 0. */
int64_t s3_align_floor(int64_t t, enum s3_align a);
/* The first hour/day boundary strictly above t; INT64_MAX for none. */
int64_t s3_align_next(int64_t t, enum s3_align a);

static inline uint64_t s3_record_weight(size_t partition_len, size_t txn_len, size_t payload_len)
{
    return (uint64_t)payload_len + partition_len + txn_len + S3_RECORD_ENVELOPE;
}

typedef struct s3_window_state {
    int64_t t0;       /* end of the last committed window (0: from the start of the log) */
    int64_t read_to;  /* every record with t0 <= ts < read_to is buffered; read_to >= t0 */
    int64_t ceiling;  /* safeTime - guard, as last read */
    uint64_t records; /* buffered, all with t0 <= ts < read_to */
    uint64_t bytes;   /* their weight */
    int64_t min_ts;   /* the smallest buffered ts (when records > 0) */
    int lost;         /* lost ranges were found and wait for a window to record them */
    int64_t lost_ts;  /* while lost: the smallest stamp a loss was seen at (0 = unknown); the
                       * caller keeps it below read_to */
} s3_window_state;

typedef struct s3_window_rules {
    uint64_t target_bytes;
    int64_t max_window_us;
    enum s3_align align;
    int memory_pressure;
    int draining;
} s3_window_rules;

enum s3_close { S3_CLOSE_NONE = 0, S3_CLOSE_ALIGN, S3_CLOSE_SIZE, S3_CLOSE_AGE, S3_CLOSE_MEMORY, S3_CLOSE_DRAIN };
const char *s3_close_name(enum s3_close c); /* "none", "align", "size", "age", "memory", "drain" */

/* t_start of the open window as the rules above define it (t0 when nothing is buffered). */
int64_t s3_window_start(const s3_window_state *w, enum s3_align a);

/* Whether the open window closes now; on a close, *t_start and *t_end bound it. */
enum s3_close s3_window_decide(const s3_window_state *w, const s3_window_rules *r, int64_t *t_start,
                               int64_t *t_end);

/* How far the next read may reach: the ceiling, but not past the open window's boundary
 * when something is buffered or a lost range waits with its stamp (records beyond it belong
 * to the next window and would only be carried). Never below read_to. */
int64_t s3_window_read_limit(const s3_window_state *w, enum s3_align a);

#endif
