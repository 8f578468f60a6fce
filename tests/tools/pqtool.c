/* pqtool — writes the S3 sink's Parquet file (queen_record schema) from JSON lines, so the
 * integration tests can read what src/parquet writes with independent readers (DuckDB,
 * hyparquet). One line per row: {"partition":"..","offset":N,"transactionId":"..","ts":N,
 * "payload":<any JSON, stored as its text; null or absent = null>}.
 *   pqtool <zstd|snappy|none> <row-group-rows> <out.parquet> [key=value ...]  < rows.jsonl */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "json/json.h"
#include "parquet/parquet.h"

static int str_of(const json_doc *d, int obj, const char *key, buf *out)
{
    int t = json_get(d, obj, key);
    if (t < 0 || json_type_of(d, t) != JSON_STRING)
        return -1;
    buf_reset(out);
    return json_str_decode(d, t, out);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: pqtool <zstd|snappy|none> <row-group-rows> <out> [key=value ...]\n");
        return 2;
    }
    enum pq_codec codec = strcmp(argv[1], "zstd") == 0     ? PQ_CODEC_ZSTD
                          : strcmp(argv[1], "snappy") == 0 ? PQ_CODEC_SNAPPY
                                                           : PQ_CODEC_NONE;
    buf out;
    buf_init(&out, 0);
    pq_writer *w = pq_writer_new(PQ_QUEEN_RECORD_NAME, PQ_QUEEN_RECORD, 5, codec, 3, (uint32_t)atol(argv[2]), &out);
    if (!w)
        return 2;
    for (int i = 4; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            return 2;
        *eq = 0;
        pq_writer_kv(w, argv[i], eq + 1);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    buf part, txn;
    buf_init(&part, 0);
    buf_init(&txn, 0);
    long lineno = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        lineno++;
        json_doc d;
        memset(&d, 0, sizeof d); /* json_parse reuses a doc's token buffer: a fresh one is zeroed */
        if (json_parse(&d, line, (size_t)n, NULL) < 0 || json_type_of(&d, 0) != JSON_OBJECT) {
            fprintf(stderr, "line %ld: not a JSON object\n", lineno);
            return 1;
        }
        pq_value v[5];
        memset(v, 0, sizeof v);
        int to = json_get(&d, 0, "offset"), tt = json_get(&d, 0, "ts"), tp = json_get(&d, 0, "payload");
        if (str_of(&d, 0, "partition", &part) < 0 || str_of(&d, 0, "transactionId", &txn) < 0 || to < 0 || tt < 0 ||
            json_int64(&d, to, &v[1].i) < 0 || json_int64(&d, tt, &v[3].i) < 0) {
            fprintf(stderr, "line %ld: bad fields\n", lineno);
            return 1;
        }
        v[0].s = part.data ? part.data : "";
        v[0].n = part.len;
        v[2].s = txn.data ? txn.data : "";
        v[2].n = txn.len;
        if (tp < 0 || json_type_of(&d, tp) == JSON_NULL)
            v[4].is_null = 1;
        else
            v[4].s = json_raw(&d, tp, &v[4].n);
        if (pq_write_row(w, v) < 0) {
            fprintf(stderr, "line %ld: write failed\n", lineno);
            return 1;
        }
        json_doc_free(&d);
    }
    if (pq_writer_finish(w) < 0)
        return 1;
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) != 0)
        return 1;
    pq_writer_free(w);
    buf_free(&out);
    buf_free(&part);
    buf_free(&txn);
    free(line);
    return 0;
}
