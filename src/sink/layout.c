/* layout.c — the sink's object, sidecar and KV keys (see layout.h for the forms). Pure. */
#include "layout.h"

#include <stdio.h>
#include <string.h>

#include "core/timeutil.h"

static int plain(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

void s3_name_escape(buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (plain(c))
            continue;
        buf_append(out, s + run, i - run);
        char e[3] = {'%', hex[c >> 4], hex[c & 15]};
        buf_append(out, e, 3);
        run = i + 1;
    }
    buf_append(out, s + run, n - run);
}

const char *s3_object_ext(enum s3_format f, enum s3_compression c)
{
    if (f == S3_FORMAT_PARQUET)
        return "parquet";
    switch (c) {
    case S3_COMP_ZSTD: return "jsonl.zst";
    case S3_COMP_GZIP: return "jsonl.gz";
    case S3_COMP_NONE: return "jsonl";
    case S3_COMP_SNAPPY: break; /* no JSONL object is snappy */
    }
    return NULL;
}

/* <prefix>/ when there is a prefix (the configuration never gives an empty one; a test may) */
static void put_prefix(buf *out, const char *prefix)
{
    if (prefix && prefix[0]) {
        buf_puts(out, prefix);
        buf_putc(out, '/');
    }
}

static void put_tenant_queue(buf *out, const char *tenant, const char *queue, size_t qlen)
{
    buf_puts(out, "tenant=");
    s3_name_escape(out, tenant, strlen(tenant));
    buf_puts(out, "/queue=");
    s3_name_escape(out, queue, qlen);
}

void s3_key_window_dir(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen,
                       int64_t t_start, enum s3_align align)
{
    char iso[32];
    format_iso_us(t_start, iso); /* YYYY-MM-DDTHH:... in UTC */
    put_prefix(out, prefix);
    put_tenant_queue(out, tenant, queue, qlen);
    buf_puts(out, "/dt=");
    buf_append(out, iso, 10);
    if (align != S3_ALIGN_DAY) {
        buf_puts(out, "/hour=");
        buf_append(out, iso + 11, 2);
    }
}

static void put_window_name(buf *out, uint64_t k, int64_t t_start, int64_t t_end)
{
    buf_printf(out, "/w-%010llu-%lld-%lld", (unsigned long long)k, (long long)t_start, (long long)t_end);
}

void s3_key_data(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen, uint64_t k,
                 int64_t t_start, int64_t t_end, enum s3_align align, const char *ext)
{
    s3_key_window_dir(out, prefix, tenant, queue, qlen, t_start, align);
    put_window_name(out, k, t_start, t_end);
    buf_putc(out, '.');
    buf_puts(out, ext);
}

void s3_key_data_partition(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen,
                           uint64_t k, int64_t t_start, int64_t t_end, enum s3_align align, const char *partition,
                           size_t plen, int64_t first_offset, int64_t last_offset, const char *ext)
{
    s3_key_window_dir(out, prefix, tenant, queue, qlen, t_start, align);
    put_window_name(out, k, t_start, t_end);
    buf_puts(out, "-p-");
    s3_name_escape(out, partition, plen);
    buf_printf(out, "-%lld-%lld.", (long long)first_offset, (long long)last_offset);
    buf_puts(out, ext);
}

static void sidecar_dir(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen)
{
    put_prefix(out, prefix);
    buf_puts(out, "_queen/");
    put_tenant_queue(out, tenant, queue, qlen);
}

void s3_key_manifest(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen, uint64_t k)
{
    sidecar_dir(out, prefix, tenant, queue, qlen);
    buf_printf(out, "/windows/%010llu.json", (unsigned long long)k);
}

void s3_key_checkpoint(buf *out, const char *prefix, const char *tenant, const char *queue, size_t qlen,
                       uint64_t k)
{
    sidecar_dir(out, prefix, tenant, queue, qlen);
    buf_printf(out, "/checkpoint/%010llu.json.zst", (unsigned long long)k);
}

void s3_kv_key(buf *out, const char *sink, const char *queue, size_t qlen, const char *what)
{
    buf_puts(out, "s3:");
    s3_name_escape(out, sink, strlen(sink)); /* a valid sink name escapes to itself */
    buf_putc(out, ':');
    s3_name_escape(out, queue, qlen);
    buf_putc(out, ':');
    buf_puts(out, what);
}

void s3_kv_presence_prefix(buf *out, const char *sink)
{
    buf_puts(out, "s3:");
    s3_name_escape(out, sink, strlen(sink));
    buf_puts(out, ":node=");
}

void s3_kv_presence_key(buf *out, const char *sink, const char *instance)
{
    s3_kv_presence_prefix(out, sink);
    s3_name_escape(out, instance, strlen(instance));
}

uint64_t s3_checkpoint_k(uint64_t k, int64_t every)
{
    if (every <= 0)
        return 0;
    return k - k % (uint64_t)every;
}
