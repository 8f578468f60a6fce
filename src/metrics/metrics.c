/* metrics.c — Prometheus text-format rendering. */
#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void mhist_init(mhist *h, const double *bounds, int nb, double scale)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->nb = nb < MHIST_MAX_BUCKETS ? nb : MHIST_MAX_BUCKETS;
    h->scale = scale > 0 ? scale : 1;
}

void mhist_observe(mhist *h, uint64_t v)
{
    double x = (double)v / h->scale;
    int i = 0;
    while (i < h->nb && x > h->bounds[i])
        i++;
    if (i < h->nb)
        atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
}

void metric_help(buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metric_u64(buf *b, const char *name, const char *labels, uint64_t v)
{
    if (labels && *labels)
        buf_printf(b, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
    else
        buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void put_double(buf *b, double v)
{
    if (isnan(v))
        buf_puts(b, "NaN");
    else if (isinf(v))
        buf_puts(b, v > 0 ? "+Inf" : "-Inf");
    else
        buf_printf(b, "%.9g", v);
}

void metric_f64(buf *b, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        buf_printf(b, "%s{%s} ", name, labels);
    else
        buf_printf(b, "%s ", name);
    put_double(b, v);
    buf_putc(b, '\n');
}

void metric_hist(buf *b, const char *name, const char *labels, const mhist *h)
{
    uint64_t cum = 0;
    const char *sep = labels && *labels ? "," : "";
    const char *lab = labels ? labels : "";
    for (int i = 0; i < h->nb; i++) {
        cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        buf_printf(b, "%s_bucket{%s%sle=\"", name, lab, sep);
        put_double(b, h->bounds[i]);
        buf_printf(b, "\"} %llu\n", (unsigned long long)cum);
    }
    uint64_t count = atomic_load_explicit(&h->count, memory_order_relaxed);
    buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, lab, sep, (unsigned long long)count);
    if (*lab)
        buf_printf(b, "%s_sum{%s} ", name, lab);
    else
        buf_printf(b, "%s_sum ", name);
    put_double(b, (double)atomic_load_explicit(&h->sum, memory_order_relaxed) / h->scale);
    buf_putc(b, '\n');
    if (*lab)
        buf_printf(b, "%s_count{%s} %llu\n", name, lab, (unsigned long long)count);
    else
        buf_printf(b, "%s_count %llu\n", name, (unsigned long long)count);
}

void metric_label_escape(buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' || c == '"') {
            buf_putc(b, '\\');
            buf_putc(b, c);
        } else if (c == '\n') {
            buf_puts(b, "\\n");
        } else {
            buf_putc(b, c);
        }
    }
}
