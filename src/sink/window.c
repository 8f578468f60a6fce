/* window.c — when a window closes and where its bounds lie (rules in window.h). Pure
 * arithmetic on broker stamps: the same state always gives the same decision. */
#include "window.h"

static int64_t unit_of(enum s3_align a)
{
    return a == S3_ALIGN_DAY ? S3_US_PER_DAY : S3_US_PER_HOUR;
}

int64_t s3_align_floor(int64_t t, enum s3_align a)
{
    int64_t u = unit_of(a);
    int64_t r = t % u;
    if (r < 0) /* floor, not truncation, should a stamp ever be negative */
        r += u;
    return t - r;
}

int64_t s3_align_next(int64_t t, enum s3_align a)
{
    if (a == S3_ALIGN_NONE)
        return INT64_MAX;
    int64_t f = s3_align_floor(t, a);
    int64_t u = unit_of(a);
    return f > INT64_MAX - u ? INT64_MAX : f + u;
}

const char *s3_close_name(enum s3_close c)
{
    switch (c) {
    case S3_CLOSE_NONE: return "none";
    case S3_CLOSE_ALIGN: return "align";
    case S3_CLOSE_SIZE: return "size";
    case S3_CLOSE_AGE: return "age";
    case S3_CLOSE_MEMORY: return "memory";
    case S3_CLOSE_DRAIN: return "drain";
    }
    return "none";
}

int64_t s3_window_start(const s3_window_state *w, enum s3_align a)
{
    int have = 0;
    int64_t first = 0;
    if (w->records > 0) {
        first = w->min_ts;
        have = 1;
    }
    if (w->lost && w->lost_ts > 0 && (!have || w->lost_ts < first)) {
        first = w->lost_ts;
        have = 1;
    }
    if (!have)
        return w->t0;
    int64_t f = s3_align_floor(first, a);
    return f > w->t0 ? f : w->t0;
}

/* ceiling - t_start >= span, without overflow on extreme stamps */
static int open_for(const s3_window_state *w, int64_t t_start, int64_t span)
{
    if (w->ceiling < t_start)
        return 0;
    return (uint64_t)w->ceiling - (uint64_t)t_start >= (uint64_t)span;
}

enum s3_close s3_window_decide(const s3_window_state *w, const s3_window_rules *r, int64_t *t_start, int64_t *t_end)
{
    if (w->records == 0 && !w->lost)
        return S3_CLOSE_NONE;
    int64_t start = s3_window_start(w, r->align);
    int64_t boundary = s3_align_next(start, r->align);
    int64_t capped = w->read_to < boundary ? w->read_to : boundary;
    enum s3_close why = S3_CLOSE_NONE;
    int64_t end = 0;
    if (w->read_to >= boundary) {
        why = S3_CLOSE_ALIGN;
        end = boundary;
    } else if (w->bytes >= r->target_bytes) {
        why = S3_CLOSE_SIZE;
        end = capped;
    } else if (open_for(w, start, r->max_window_us)) {
        why = S3_CLOSE_AGE;
        end = capped;
    } else if (r->memory_pressure) {
        why = S3_CLOSE_MEMORY;
        end = capped;
    } else if (r->draining && (w->bytes >= S3_DRAIN_MIN_BYTES || open_for(w, start, S3_DRAIN_MIN_AGE_US))) {
        why = S3_CLOSE_DRAIN;
        end = capped;
    }
    if (why == S3_CLOSE_NONE || end <= start)
        return S3_CLOSE_NONE;
    *t_start = start;
    *t_end = end;
    return why;
}

int64_t s3_window_read_limit(const s3_window_state *w, enum s3_align a)
{
    int64_t lim = w->ceiling;
    if (w->records > 0 || (w->lost && w->lost_ts > 0)) {
        int64_t boundary = s3_align_next(s3_window_start(w, a), a);
        if (boundary < lim)
            lim = boundary;
    }
    return lim < w->read_to ? w->read_to : lim;
}
