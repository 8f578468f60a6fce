/* metrics.h — counters and histograms for /metrics/prometheus, safe to update from any thread
 * (relaxed atomics), and the text-format renderers. */
#ifndef QUEEN_METRICS_METRICS_H
#define QUEEN_METRICS_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct mcounter {
    _Atomic uint64_t v;
} mcounter;

static inline void mc_add(mcounter *c, uint64_t n)
{
    atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}
static inline uint64_t mc_get(const mcounter *c)
{
    return atomic_load_explicit(&c->v, memory_order_relaxed);
}

#define MHIST_MAX_BUCKETS 24

typedef struct mhist {
    const double *bounds; /* upper bounds, ascending; +Inf is implicit */
    int nb;
    double scale;         /* observed integers are divided by this when rendered (1e6 for µs → s) */
    _Atomic uint64_t buckets[MHIST_MAX_BUCKETS];
    _Atomic uint64_t count;
    _Atomic uint64_t sum;
} mhist;

void mhist_init(mhist *h, const double *bounds, int nb, double scale);
void mhist_observe(mhist *h, uint64_t v); /* v in raw units (bounds are in rendered units) */

void metric_help(buf *b, const char *name, const char *type, const char *help);
void metric_u64(buf *b, const char *name, const char *labels, uint64_t v);
void metric_f64(buf *b, const char *name, const char *labels, double v);
void metric_hist(buf *b, const char *name, const char *labels, const mhist *h);

/* Prometheus label value escaping (backslash, quote, newline). */
void metric_label_escape(buf *b, const char *s, size_t n);

#endif
