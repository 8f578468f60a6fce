/* sinkobj — writes one window's objects (and optionally its manifest) the way the S3 sink
 * does, into a directory laid out like the bucket, so the integration tests can read a Hive
 * tree of real sink objects with independent readers (DuckDB, hyparquet).
 *
 *   sinkobj --root DIR --queue Q --k N --t-start US --t-end US [--prefix queen]
 *           [--tenant UUID] [--sink default] [--align hour|day|none] [--format jsonl|parquet]
 *           [--compression zstd|gzip|none|snappy] [--layout merged|per-partition]
 *           [--manifest] [--committed-at US]  < records.jsonl
 *
 * One record per input line: {"partition":"..","offset":N,"transactionId":"..","ts":N, then
 * "payload":<any JSON, kept as its exact text; null or absent = empty>, or "payloadText":"<the
 * stored text, decoded>" (so a test can store raw line breaks), or "sealed":"<the stored bytes,
 * decoded>" for a payload the node could not open}. Every ts must lie in [t-start, t-end).
 * Prints each key written, one per line (objects, then the manifest). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/sha.h>

#include "core/buf.h"
#include "core/util.h"
#include "json/json.h"
#include "sink/docs.h"
#include "sink/layout.h"
#include "sink/writer.h"

static void die(const char *msg, long line)
{
    if (line)
        fprintf(stderr, "sinkobj: line %ld: %s\n", line, msg);
    else
        fprintf(stderr, "sinkobj: %s\n", msg);
    exit(1);
}

static int pick(const char *v, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    fprintf(stderr, "sinkobj: unknown value %s\n", v);
    exit(2);
}

/* mkdir -p of the directories of path */
static void make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            die("cannot create a directory", 0);
        *p = '/';
    }
}

static void write_file(const char *root, const char *key, const void *data, size_t n)
{
    buf path;
    buf_init(&path, 0);
    buf_printf(&path, "%s/%s", root, key);
    char *p = buf_steal(&path, NULL);
    make_dirs(p);
    FILE *f = fopen(p, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0)
        die("cannot write an object", 0);
    free(p);
    printf("%s\n", key);
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256(p, n, h);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* Decodes a string member into a fresh heap copy; NULL when absent. */
static char *str_member(const json_doc *d, const char *key, size_t *len, long line)
{
    int t = json_get(d, 0, key);
    if (t < 0)
        return NULL;
    if (json_type_of(d, t) != JSON_STRING)
        die("a string field is not a string", line);
    buf b;
    buf_init(&b, 0);
    json_str_decode(d, t, &b);
    *len = b.len;
    char *s = xmalloc(b.len + 1);
    if (b.len)
        memcpy(s, b.data, b.len);
    s[b.len] = '\0';
    buf_free(&b);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const formats[] = {"jsonl", "parquet", NULL};
    static const char *const comps[] = {"zstd", "gzip", "none", "snappy", NULL};
    static const char *const layouts[] = {"merged", "per-partition", NULL};
    static const char *const aligns[] = {"hour", "day", "none", NULL};
    static const struct option opts[] = {
        {"root", required_argument, 0, 'r'},         {"queue", required_argument, 0, 'q'},
        {"k", required_argument, 0, 'k'},            {"t-start", required_argument, 0, 's'},
        {"t-end", required_argument, 0, 'e'},        {"prefix", required_argument, 0, 'p'},
        {"tenant", required_argument, 0, 't'},       {"sink", required_argument, 0, 'n'},
        {"align", required_argument, 0, 'a'},        {"format", required_argument, 0, 'f'},
        {"compression", required_argument, 0, 'c'},  {"layout", required_argument, 0, 'l'},
        {"manifest", no_argument, 0, 'm'},           {"committed-at", required_argument, 0, 'w'},
        {0, 0, 0, 0},
    };
    const char *root = NULL, *queue = NULL, *prefix = S3_DEFAULT_PREFIX, *sink = S3_DEFAULT_SINK;
    const char *tenant = "00000000-0000-0000-0000-000000000001";
    uint64_t k = 0;
    int64_t t_start = -1, t_end = -1, committed_at = 0;
    enum s3_format format = S3_FORMAT_JSONL;
    enum s3_compression comp = S3_COMP_ZSTD;
    enum s3_layout layout = S3_LAYOUT_MERGED;
    enum s3_align align = S3_ALIGN_HOUR;
    int with_manifest = 0, o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'r': root = optarg; break;
        case 'q': queue = optarg; break;
        case 'k': k = strtoull(optarg, NULL, 10); break;
        case 's': t_start = strtoll(optarg, NULL, 10); break;
        case 'e': t_end = strtoll(optarg, NULL, 10); break;
        case 'p': prefix = optarg; break;
        case 't': tenant = optarg; break;
        case 'n': sink = optarg; break;
        case 'a': align = (enum s3_align)pick(optarg, aligns); break;
        case 'f': format = (enum s3_format)pick(optarg, formats); break;
        case 'c': comp = (enum s3_compression)pick(optarg, comps); break;
        case 'l': layout = (enum s3_layout)pick(optarg, layouts); break;
        case 'm': with_manifest = 1; break;
        case 'w': committed_at = strtoll(optarg, NULL, 10); break;
        default: return 2;
        }
    }
    if (!root || !queue || t_start < 0 || t_end <= t_start) {
        fprintf(stderr, "usage: sinkobj --root DIR --queue Q --k N --t-start US --t-end US [options] < records\n");
        return 2;
    }
    size_t qlen = strlen(queue);

    /* the records; their strings live until exit */
    s3_record *recs = NULL;
    size_t n = 0, cap = 0;
    char **owned = NULL; /* every heap string the records point into, freed at the end */
    size_t nowned = 0, owned_cap = 0;
#define OWN(p)                                                                                                  \
    do {                                                                                                      \
        if (nowned == owned_cap) {                                                                            \
            owned_cap = owned_cap ? owned_cap * 2 : 4096;                                                     \
            owned = xrealloc(owned, owned_cap * sizeof *owned);                                               \
        }                                                                                                     \
        owned[nowned++] = (p);                                                                                \
    } while (0)
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    long lineno = 0;
    while ((got = getline(&line, &lcap, stdin)) > 0) {
        lineno++;
        char *text = xstrndup(line, (size_t)got);
        OWN(text);
        json_doc d;
        memset(&d, 0, sizeof d);
        if (json_parse(&d, text, (size_t)got, NULL) < 0 || json_type_of(&d, 0) != JSON_OBJECT)
            die("not a JSON object", lineno);
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            recs = xrealloc(recs, cap * sizeof *recs);
        }
        s3_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->partition = str_member(&d, "partition", &r->partition_len, lineno);
        r->txn = str_member(&d, "transactionId", &r->txn_len, lineno);
        OWN((char *)r->partition);
        OWN((char *)r->txn);
        int to = json_get(&d, 0, "offset"), tt = json_get(&d, 0, "ts");
        if (!r->partition || !r->txn || json_int64(&d, to, &r->offset) < 0 || json_int64(&d, tt, &r->ts) < 0)
            die("partition, transactionId, offset and ts are required", lineno);
        if (r->ts < t_start || r->ts >= t_end)
            die("ts is outside [t-start, t-end)", lineno);
        size_t plen = 0;
        char *s;
        int tp = json_get(&d, 0, "payload");
        if ((s = str_member(&d, "sealed", &plen, lineno))) {
            OWN(s);
            r->payload = s;
            r->payload_len = plen;
            r->payload_kind = S3_PAYLOAD_SEALED;
        } else if ((s = str_member(&d, "payloadText", &plen, lineno))) {
            OWN(s);
            r->payload = s;
            r->payload_len = plen;
        } else if (tp >= 0 && json_type_of(&d, tp) != JSON_NULL) {
            r->payload = json_raw(&d, tp, &r->payload_len); /* borrowed from text, kept */
        }
        json_doc_free(&d);
    }
    free(line);
    s3_records_sort(recs, n);

    const char *ext = s3_object_ext(format, comp);
    if (!ext)
        die("the codec does not fit the format", 0);
    s3_manifest m;
    memset(&m, 0, sizeof m);
    m.sink = sink;
    m.tenant = tenant;
    m.queue = queue;
    m.queue_len = qlen;
    m.k = k;
    m.t_start = t_start;
    m.t_end = t_end;
    m.format = format;
    m.compression = comp;
    m.layout = layout;
    m.objects = xcalloc(n ? n : 1, sizeof *m.objects);
    buf wname;
    buf_init(&wname, 0);
    s3_writer_name(format, comp, &wname);
    snprintf(m.writer, sizeof m.writer, "%s", buf_cstr(&wname));
    m.committed_at_us = committed_at;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || recs[i].ts < m.min_ts)
            m.min_ts = recs[i].ts;
        if (i == 0 || recs[i].ts > m.max_ts)
            m.max_ts = recs[i].ts;
        if (i == 0 || recs[i].partition_len != recs[i - 1].partition_len ||
            memcmp(recs[i].partition, recs[i - 1].partition, recs[i].partition_len) != 0)
            m.partitions++;
    }
    m.records = n;

    /* one run of records per object: the whole window, or one partition */
    size_t at = 0;
    while (at < n || (at == 0 && n == 0 && layout == S3_LAYOUT_MERGED)) {
        size_t end = n;
        if (layout == S3_LAYOUT_PER_PARTITION) {
            end = at + 1;
            while (end < n && recs[end].partition_len == recs[at].partition_len &&
                   memcmp(recs[end].partition, recs[at].partition, recs[at].partition_len) == 0)
                end++;
        }
        buf obj, key;
        buf_init(&obj, 0);
        buf_init(&key, 0);
        char err[256];
        if (s3_object_build(format, comp, recs + at, end - at, queue, qlen, tenant, &obj, err, sizeof err) < 0)
            die(err, 0);
        if (layout == S3_LAYOUT_PER_PARTITION)
            s3_key_data_partition(&key, prefix, tenant, queue, qlen, k, t_start, t_end, align, recs[at].partition,
                                  recs[at].partition_len, recs[at].offset, recs[end - 1].offset, ext);
        else
            s3_key_data(&key, prefix, tenant, queue, qlen, k, t_start, t_end, align, ext);
        write_file(root, buf_cstr(&key), obj.data, obj.len);
        s3_manifest_object *mo = &m.objects[m.nobjects++];
        mo->key = buf_steal(&key, NULL);
        mo->bytes = obj.len;
        mo->records = end - at;
        sha256_hex(obj.data ? obj.data : "", obj.len, mo->sha256);
        if (layout == S3_LAYOUT_PER_PARTITION) {
            mo->partition = (char *)recs[at].partition;
            mo->partition_len = recs[at].partition_len;
            mo->first_offset = recs[at].offset;
            mo->last_offset = recs[end - 1].offset;
        }
        m.bytes += obj.len;
        buf_free(&obj);
        buf_free(&key);
        if (n == 0)
            break;
        at = end;
    }
    if (with_manifest) {
        buf mj, key;
        buf_init(&mj, 0);
        buf_init(&key, 0);
        s3_manifest_json(&mj, &m);
        s3_key_manifest(&key, prefix, tenant, queue, qlen, k);
        write_file(root, buf_cstr(&key), mj.data, mj.len);
        buf_free(&mj);
        buf_free(&key);
    }
    for (int i = 0; i < m.nobjects; i++)
        free(m.objects[i].key);
    free(m.objects);
    buf_free(&wname);
    for (size_t i = 0; i < nowned; i++)
        free(owned[i]);
    free(owned);
    free(recs);
    return 0;
}
