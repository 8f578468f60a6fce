/* Unit tests for the sink's documents (sink/docs.h): each writer's exact bytes (the manifest
 * as the spec prints it), round trips, any field order, unknown fields ignored, and every
 * refusal naming its document and field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "core/util.h"
#include "sink/docs.h"

static char g_err[256];
static buf g_b;

#define TENANT "00000000-0000-0000-0000-000000000001"
#define SHA "5f2ac4baa20940c6c33a5e3c7207ef7d1087db6538fea0cce88cb16ff43def78"
#define KEY                                                                                                   \
    "queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/hour=06/"                    \
    "w-0000000001-1791007200000000-1791009458377855.jsonl.zst"

/* ---- lease ---- */

static void test_lease(void **state)
{
    (void)state;
    s3_lease_doc d;
    memset(&d, 0, sizeof d);
    snprintf(d.instance, sizeof d.instance, "node-1");
    snprintf(d.incarnation, sizeof d.incarnation, "01a1007b-855d-7001-8107-adfdabd3e51c");
    d.since_ms = 1791009457000;
    buf_reset(&g_b);
    s3_lease_doc_json(&g_b, &d);
    assert_string_equal(buf_cstr(&g_b),
                        "{\"instance\":\"node-1\",\"incarnation\":\"01a1007b-855d-7001-8107-adfdabd3e51c\",\"sinceMs\":"
                        "1791009457000}");
    s3_lease_doc p;
    assert_int_equal(s3_lease_doc_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_string_equal(p.instance, "node-1");
    assert_string_equal(p.incarnation, d.incarnation);
    assert_int_equal(p.since_ms, 1791009457000);
    /* any order, unknown fields, escapes */
    const char *j = "{\"future\":[1,{}],\"sinceMs\":5,\"instance\":\"n\\u00e9\\\"1\"}";
    assert_int_equal(s3_lease_doc_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_string_equal(p.instance, "n\xc3\xa9\"1");
    assert_string_equal(p.incarnation, "");
    assert_int_equal(p.since_ms, 5);
    static const char *const bad[][2] = {
        {"{\"sinceMs\":5}", "lease: instance is missing"},
        {"{\"instance\":null}", "lease: instance is missing"},
        {"{\"instance\":\"\"}", "lease: instance is empty"},
        {"{\"instance\":1}", "lease: instance is not a string"},
        {"{\"instance\":\"a\\u0000b\"}", "lease: instance holds a NUL character"},
        {"{\"instance\":\"a\",\"sinceMs\":1.5}", "lease: sinceMs is not an integer"},
        {"{\"instance\":\"a\",\"incarnation\":\"0123456789012345678901234567890123456789\"}",
         "lease: incarnation is too long"},
        {"[]", "lease: not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3_lease_doc_parse(bad[i][0], strlen(bad[i][0]), &p, g_err, sizeof g_err), -1);
        assert_string_equal(g_err, bad[i][1]);
    }
    assert_int_equal(s3_lease_doc_parse("{", 1, &p, g_err, sizeof g_err), -1);
    assert_int_equal(strncmp(g_err, "lease: not JSON: ", 17), 0);
    assert_int_equal(s3_lease_doc_parse(NULL, 0, &p, g_err, sizeof g_err), -1);
    char big[400];
    snprintf(big, sizeof big, "{\"instance\":\"%0256d\"}", 0);
    assert_int_equal(s3_lease_doc_parse(big, strlen(big), &p, g_err, sizeof g_err), -1);
    assert_string_equal(g_err, "lease: instance is too long");
    snprintf(big, sizeof big, "{\"instance\":\"%0255d\"}", 0);
    assert_int_equal(s3_lease_doc_parse(big, strlen(big), &p, g_err, sizeof g_err), 0);
    assert_int_equal(strlen(p.instance), 255);
}

/* ---- intent ---- */

static void test_intent(void **state)
{
    (void)state;
    s3_intent d;
    memset(&d, 0, sizeof d);
    d.k = 1;
    d.t_start = 1791007200000000;
    d.t_end = 1791009458377855;
    d.format = S3_FORMAT_JSONL;
    d.compression = S3_COMP_ZSTD;
    d.layout = S3_LAYOUT_MERGED;
    snprintf(d.writer, sizeof d.writer, "queen-s3/2.0.0 jsonl+zstd");
    buf_reset(&g_b);
    s3_intent_json(&g_b, &d);
    assert_string_equal(buf_cstr(&g_b), "{\"k\":1,\"tStart\":1791007200000000,\"tEnd\":1791009458377855,\"format\":"
                                        "\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\",\"writer\":\"queen-"
                                        "s3/2.0.0 jsonl+zstd\"}");
    s3_intent p;
    assert_int_equal(s3_intent_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_memory_equal(&p, &d, sizeof d);
    /* every kind round trips */
    enum s3_format fs[] = {S3_FORMAT_JSONL, S3_FORMAT_JSONL, S3_FORMAT_PARQUET, S3_FORMAT_PARQUET};
    enum s3_compression cs[] = {S3_COMP_GZIP, S3_COMP_NONE, S3_COMP_ZSTD, S3_COMP_SNAPPY};
    for (int i = 0; i < 4; i++) {
        d.format = fs[i];
        d.compression = cs[i];
        d.layout = i % 2 ? S3_LAYOUT_PER_PARTITION : S3_LAYOUT_MERGED;
        buf_reset(&g_b);
        s3_intent_json(&g_b, &d);
        assert_int_equal(s3_intent_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
        assert_memory_equal(&p, &d, sizeof d);
    }
    /* writer is optional */
    const char *j = "{\"layout\":\"merged\",\"compression\":\"gzip\",\"format\":\"jsonl\",\"tEnd\":2,\"tStart\":1,\"k\":"
                    "18446744073709551615}";
    assert_int_equal(s3_intent_parse(j, strlen(j), &p, g_err, sizeof g_err), -1);
    assert_string_equal(g_err, "intent: k is not an integer"); /* past int64 */
    j = "{\"layout\":\"merged\",\"compression\":\"gzip\",\"format\":\"jsonl\",\"tEnd\":2,\"tStart\":1,\"k\":7,\"x\":0}";
    assert_int_equal(s3_intent_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.k, 7);
    assert_string_equal(p.writer, "");
    static const char *const bad[][2] = {
        {"{\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: k is missing"},
        {"{\"k\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: tStart is missing"},
        {"{\"k\":1,\"tStart\":1,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: tEnd is missing"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"compression\":\"zstd\",\"layout\":\"merged\"}", "intent: format is missing"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"layout\":\"merged\"}",
         "intent: compression is missing"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\"}", "intent: layout is missing"},
        {"{\"k\":-1,\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: k is negative"},
        {"{\"k\":1,\"tStart\":2,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: tEnd is not above tStart"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"csv\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: format is not a known value"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"JSONL\",\"compression\":\"zstd\",\"layout\":\"merged\"}",
         "intent: format is not a known value"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"snappy\",\"layout\":\"merged\"}",
         "intent: compression does not fit the format"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"parquet\",\"compression\":\"gzip\",\"layout\":\"merged\"}",
         "intent: compression does not fit the format"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":3}",
         "intent: layout is not a string"},
        {"{\"k\":1,\"tStart\":1,\"tEnd\":2,\"format\":\"jsonl\",\"compression\":\"zstd\",\"layout\":\"merged\","
         "\"writer\":\"0123456789012345678901234567890123456789012345678901234567890123\"}",
         "intent: writer is too long"},
        {"{\"k\":\"1\"}", "intent: k is not an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3_intent_parse(bad[i][0], strlen(bad[i][0]), &p, g_err, sizeof g_err), -1);
        assert_string_equal(g_err, bad[i][1]);
    }
}

/* ---- commit pointer ---- */

static void test_committed(void **state)
{
    (void)state;
    s3_committed d;
    memset(&d, 0, sizeof d);
    d.k = 1;
    d.t_end = 1791009458377855;
    snprintf(d.manifest, sizeof d.manifest,
             "queen/_queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/windows/0000000001.json");
    d.records = 3;
    d.bytes = 207;
    d.committed_at_ms = 1791009464741;
    buf_reset(&g_b);
    s3_committed_json(&g_b, &d);
    assert_string_equal(buf_cstr(&g_b),
                        "{\"k\":1,\"tEnd\":\"2026-10-03T06:37:38.377855Z\",\"tEndUs\":1791009458377855,\"manifest\":"
                        "\"queen/_queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/windows/0000000001."
                        "json\",\"records\":3,\"bytes\":207,\"committedAtMs\":1791009464741}");
    s3_committed p;
    assert_int_equal(s3_committed_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_memory_equal(&p, &d, sizeof d);
    /* tEndUs wins over the text */
    const char *j = "{\"k\":2,\"tEnd\":\"2000-01-01T00:00:00Z\",\"tEndUs\":42}";
    assert_int_equal(s3_committed_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.t_end, 42);
    assert_int_equal(p.records, 0);
    assert_string_equal(p.manifest, "");
    /* without it the ISO text (the µs survive), or an integer as 1.5.0 wrote */
    j = "{\"k\":2,\"tEnd\":\"2026-10-03T06:37:38.377855Z\"}";
    assert_int_equal(s3_committed_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.t_end, 1791009458377855);
    j = "{\"k\":2,\"tEnd\":\"2026-10-03T08:37:38.377855+02:00\"}";
    assert_int_equal(s3_committed_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.t_end, 1791009458377855);
    j = "{\"tEnd\":1791009458377855,\"k\":9}";
    assert_int_equal(s3_committed_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.t_end, 1791009458377855);
    assert_int_equal(p.k, 9);
    /* the starting point: k 0, no manifest */
    memset(&d, 0, sizeof d);
    d.t_end = 1791009457000000;
    buf_reset(&g_b);
    s3_committed_json(&g_b, &d);
    assert_string_equal(buf_cstr(&g_b), "{\"k\":0,\"tEnd\":\"2026-10-03T06:37:37.000000Z\",\"tEndUs\":1791009457000000,"
                                        "\"manifest\":\"\",\"records\":0,\"bytes\":0,\"committedAtMs\":0}");
    assert_int_equal(s3_committed_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_memory_equal(&p, &d, sizeof d);
    assert_int_equal(p.k_base, 0); /* absent: a pointer of its own lake from k 1 */
    /* a starting point after an earlier lake's windows 1..7: kBase, written only when not 0 */
    d.k = 7;
    d.k_base = 7;
    snprintf(d.manifest, sizeof d.manifest, "m7");
    buf_reset(&g_b);
    s3_committed_json(&g_b, &d);
    assert_string_equal(buf_cstr(&g_b), "{\"k\":7,\"tEnd\":\"2026-10-03T06:37:37.000000Z\",\"tEndUs\":1791009457000000,"
                                        "\"manifest\":\"m7\",\"records\":0,\"bytes\":0,\"committedAtMs\":0,\"kBase\":7}");
    assert_int_equal(s3_committed_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_memory_equal(&p, &d, sizeof d);
    static const char *const bad[][2] = {
        {"{\"k\":3,\"tEndUs\":5,\"kBase\":4}", "committed: kBase is above k"},
        {"{\"k\":3,\"tEndUs\":5,\"kBase\":-1}", "committed: kBase is negative"},
        {"{\"tEnd\":1}", "committed: k is missing"},
        {"{\"k\":1}", "committed: tEnd is missing"},
        {"{\"k\":1,\"tEnd\":\"yesterday\"}", "committed: tEnd is not an ISO-8601 time"},
        {"{\"k\":1,\"tEnd\":true}", "committed: tEnd is not a time"},
        {"{\"k\":1,\"tEnd\":-5}", "committed: tEnd is negative"},
        {"{\"k\":1,\"tEndUs\":-5}", "committed: tEndUs is negative"},
        {"{\"k\":1,\"tEndUs\":\"5\"}", "committed: tEndUs is not an integer"},
        {"{\"k\":1,\"tEndUs\":5,\"records\":-1}", "committed: records is negative"},
        {"{\"k\":1,\"tEndUs\":5,\"manifest\":7}", "committed: manifest is not a string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3_committed_parse(bad[i][0], strlen(bad[i][0]), &p, g_err, sizeof g_err), -1);
        assert_string_equal(g_err, bad[i][1]);
    }
}

/* ---- manifest ---- */

/* The spec's example, as it prints it (plus the final newline of a text file). */
static const char SPEC_MANIFEST[] =
    "{\n"
    "  \"sink\": \"default\",\n"
    "  \"tenant\": \"00000000-0000-0000-0000-000000000001\",\n"
    "  \"queue\": \"orders\",\n"
    "  \"k\": 1,\n"
    "  \"tStart\": 1791007200000000,\n"
    "  \"tEnd\": 1791009458377855,\n"
    "  \"format\": \"jsonl\",\n"
    "  \"compression\": \"zstd\",\n"
    "  \"layout\": \"merged\",\n"
    "  \"objects\": [\n"
    "    {\n"
    "      \"key\": \"queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/hour=06/"
    "w-0000000001-1791007200000000-1791009458377855.jsonl.zst\",\n"
    "      \"bytes\": 207,\n"
    "      \"records\": 3,\n"
    "      \"sha256\": \"5f2ac4baa20940c6c33a5e3c7207ef7d1087db6538fea0cce88cb16ff43def78\"\n"
    "    }\n"
    "  ],\n"
    "  \"records\": 3,\n"
    "  \"bytes\": 207,\n"
    "  \"partitions\": 2,\n"
    "  \"minTs\": 1791009457501942,\n"
    "  \"maxTs\": 1791009457501942,\n"
    "  \"lost\": [],\n"
    "  \"writer\": \"queen-s3/2.0.0 jsonl+zstd\",\n"
    "  \"committedAt\": \"2026-10-03T06:37:44.741000Z\"\n"
    "}\n";

static s3_manifest spec_manifest(s3_manifest_object *o)
{
    s3_manifest m;
    memset(&m, 0, sizeof m);
    m.sink = "default";
    m.tenant = TENANT;
    m.queue = "orders";
    m.queue_len = 6;
    m.k = 1;
    m.t_start = 1791007200000000;
    m.t_end = 1791009458377855;
    m.format = S3_FORMAT_JSONL;
    m.compression = S3_COMP_ZSTD;
    m.layout = S3_LAYOUT_MERGED;
    memset(o, 0, sizeof *o);
    o->key = KEY;
    o->bytes = 207;
    o->records = 3;
    snprintf(o->sha256, sizeof o->sha256, SHA);
    m.objects = o;
    m.nobjects = 1;
    m.records = 3;
    m.bytes = 207;
    m.partitions = 2;
    m.min_ts = m.max_ts = 1791009457501942;
    snprintf(m.writer, sizeof m.writer, "queen-s3/2.0.0 jsonl+zstd");
    m.committed_at_us = 1791009464741000;
    return m;
}

static void assert_manifests_equal(const s3_manifest *a, const s3_manifest *b)
{
    assert_string_equal(a->sink, b->sink);
    assert_string_equal(a->tenant, b->tenant);
    assert_int_equal(a->queue_len, b->queue_len);
    assert_memory_equal(a->queue, b->queue, a->queue_len);
    assert_int_equal(a->k, b->k);
    assert_int_equal(a->t_start, b->t_start);
    assert_int_equal(a->t_end, b->t_end);
    assert_int_equal(a->format, b->format);
    assert_int_equal(a->compression, b->compression);
    assert_int_equal(a->layout, b->layout);
    assert_int_equal(a->nobjects, b->nobjects);
    for (int i = 0; i < a->nobjects; i++) {
        assert_string_equal(a->objects[i].key, b->objects[i].key);
        assert_int_equal(a->objects[i].bytes, b->objects[i].bytes);
        assert_int_equal(a->objects[i].records, b->objects[i].records);
        assert_string_equal(a->objects[i].sha256, b->objects[i].sha256);
        assert_int_equal(!a->objects[i].partition, !b->objects[i].partition);
        if (a->objects[i].partition) {
            assert_int_equal(a->objects[i].partition_len, b->objects[i].partition_len);
            assert_memory_equal(a->objects[i].partition, b->objects[i].partition, a->objects[i].partition_len);
            assert_int_equal(a->objects[i].first_offset, b->objects[i].first_offset);
            assert_int_equal(a->objects[i].last_offset, b->objects[i].last_offset);
        }
    }
    assert_int_equal(a->records, b->records);
    assert_int_equal(a->bytes, b->bytes);
    assert_int_equal(a->partitions, b->partitions);
    assert_int_equal(a->min_ts, b->min_ts);
    assert_int_equal(a->max_ts, b->max_ts);
    assert_int_equal(a->nlost, b->nlost);
    for (int i = 0; i < a->nlost; i++) {
        assert_int_equal(a->lost[i].partition_len, b->lost[i].partition_len);
        assert_memory_equal(a->lost[i].partition, b->lost[i].partition, a->lost[i].partition_len);
        assert_int_equal(a->lost[i].from, b->lost[i].from);
        assert_int_equal(a->lost[i].to, b->lost[i].to);
    }
    assert_string_equal(a->writer, b->writer);
    assert_int_equal(a->committed_at_us, b->committed_at_us);
}

static void test_manifest_spec(void **state)
{
    (void)state;
    s3_manifest_object o;
    s3_manifest m = spec_manifest(&o);
    buf_reset(&g_b);
    s3_manifest_json(&g_b, &m);
    assert_string_equal(buf_cstr(&g_b), SPEC_MANIFEST);
    s3_manifest p;
    assert_int_equal(s3_manifest_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.owned, 1);
    assert_manifests_equal(&p, &m);
    /* written again, the same bytes */
    buf again;
    buf_init(&again, 0);
    s3_manifest_json(&again, &p);
    assert_string_equal(buf_cstr(&again), SPEC_MANIFEST);
    buf_free(&again);
    s3_manifest_free(&p);
    assert_null(p.sink);
    /* freeing a writer's (borrowed) manifest touches nothing */
    s3_manifest_free(&m);
    assert_string_equal(m.sink, "default");
}

static void test_manifest_shapes(void **state)
{
    (void)state;
    /* per-partition objects, lost ranges, odd names */
    s3_manifest_object objs[2];
    memset(objs, 0, sizeof objs);
    objs[0].key = "k/a";
    objs[0].bytes = 10;
    objs[0].records = 2;
    snprintf(objs[0].sha256, sizeof objs[0].sha256, SHA);
    objs[0].partition = "cust-1";
    objs[0].partition_len = 6;
    objs[0].first_offset = 0;
    objs[0].last_offset = 1;
    objs[1] = objs[0];
    objs[1].key = "k/b";
    objs[1].partition = "c\"\xc3\xa9";
    objs[1].partition_len = 4;
    objs[1].first_offset = objs[1].last_offset = 9;
    s3_lost_range lost[2] = {{"cust-1", 6, 3, 4}, {"x/y", 3, 0, 0}};
    s3_manifest_object o0;
    s3_manifest m = spec_manifest(&o0);
    m.layout = S3_LAYOUT_PER_PARTITION;
    m.format = S3_FORMAT_PARQUET;
    m.compression = S3_COMP_SNAPPY;
    m.queue = "a b\"c";
    m.queue_len = 5;
    m.objects = objs;
    m.nobjects = 2;
    m.lost = lost;
    m.nlost = 2;
    buf_reset(&g_b);
    s3_manifest_json(&g_b, &m);
    const char *t = buf_cstr(&g_b);
    assert_non_null(strstr(t, "  \"queue\": \"a b\\\"c\",\n"));
    assert_non_null(strstr(t, "      \"sha256\": \"" SHA "\",\n      \"partition\": \"cust-1\",\n      \"firstOffset\": "
                              "0,\n      \"lastOffset\": 1\n    },\n    {\n      \"key\": \"k/b\",\n"));
    assert_non_null(strstr(t, "  \"lost\": [\n    {\n      \"partition\": \"cust-1\",\n      \"from\": 3,\n      "
                              "\"to\": 4\n    },\n    {\n      \"partition\": \"x/y\",\n      \"from\": 0,\n      "
                              "\"to\": 0\n    }\n  ],\n  \"writer\""));
    s3_manifest p;
    assert_int_equal(s3_manifest_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_manifests_equal(&p, &m);
    s3_manifest_free(&p);
    /* an empty window (only a lost range): no objects, minTs and maxTs null */
    m.nobjects = 0;
    m.objects = NULL;
    m.records = m.bytes = m.partitions = 0;
    m.min_ts = m.max_ts = 0;
    m.nlost = 1;
    buf_reset(&g_b);
    s3_manifest_json(&g_b, &m);
    t = buf_cstr(&g_b);
    assert_non_null(strstr(t, "  \"objects\": [],\n  \"records\": 0,\n"));
    assert_non_null(strstr(t, "  \"minTs\": null,\n  \"maxTs\": null,\n"));
    assert_int_equal(s3_manifest_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_manifests_equal(&p, &m);
    s3_manifest_free(&p);
    /* compact, reordered, with unknown fields: still read */
    const char *j = "{\"objects\":[{\"sha256\":\"" SHA "\",\"records\":1,\"bytes\":2,\"key\":\"x\",\"new\":1}],"
                    "\"k\":3,\"queue\":\"q\",\"tenant\":\"t\",\"sink\":\"s\",\"tStart\":1,\"tEnd\":2,\"format\":"
                    "\"jsonl\",\"compression\":\"none\",\"layout\":\"merged\",\"records\":1,\"bytes\":2,\"extra\":{}}";
    assert_int_equal(s3_manifest_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.k, 3);
    assert_int_equal(p.nobjects, 1);
    assert_string_equal(p.objects[0].key, "x");
    assert_null(p.objects[0].partition);
    assert_int_equal(p.nlost, 0);
    assert_int_equal(p.committed_at_us, 0);
    assert_string_equal(p.writer, "");
    s3_manifest_free(&p);
}

static void test_manifest_refusals(void **state)
{
    (void)state;
    s3_manifest_object o;
    s3_manifest m = spec_manifest(&o);
    buf_reset(&g_b);
    s3_manifest_json(&g_b, &m);
    char *base = xstrdup(buf_cstr(&g_b));
    /* each required field removed: its line replaced by an unknown field */
    static const char *const required[] = {"sink", "tenant", "queue", "k", "tStart", "tEnd", "format",
                                           "compression", "layout", "objects"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        char pat[32];
        snprintf(pat, sizeof pat, "\n  \"%s\":", required[i]);
        char *at = strstr(base, pat);
        assert_non_null(at);
        char *doc = xstrdup(base);
        memcpy(doc + (at - base) + 4, "X", 1); /* "sink" -> "Xink" */
        s3_manifest p;
        assert_int_equal(s3_manifest_parse(doc, strlen(doc), &p, g_err, sizeof g_err), -1);
        char want[64];
        snprintf(want, sizeof want, "manifest: %s is missing", required[i]);
        assert_string_equal(g_err, want);
        assert_null(p.sink);
        free(doc);
    }
    /* "records" and "bytes" appear in the object too: the top-level ones */
    static const char *const bad[][2] = {
        {"\"sha256\": \"" SHA "\"", "\"sha256\": \"5F2AC4\""},
        {"\"sha256\": \"" SHA "\"", "\"sha256\": 1"},
        {"\"tEnd\": 1791009458377855", "\"tEnd\": 1791007200000000"},
        {"\"objects\": [", "\"objects\": 5, \"x\": ["},
        {"\"lost\": []", "\"lost\": [1]"},
        {"\"lost\": []", "\"lost\": [{\"partition\":\"p\",\"from\":5,\"to\":4}]"},
        {"\"lost\": []", "\"lost\": [{\"from\":5,\"to\":4}]"},
        {"\"committedAt\": \"2026-10-03T06:37:44.741000Z\"", "\"committedAt\": \"soon\""},
        {"\"compression\": \"zstd\"", "\"compression\": \"snappy\""},
        {"\"key\": \"queen/", "\"partition\": \"p\", \"key\": \"queen/"},
        {"\"key\": \"queen/", "\"partition\": \"p\", \"firstOffset\": 5, \"lastOffset\": 4, \"key\": \"queen/"},
        {"\"bytes\": 207,\n      \"records\": 3,", "\"records\": 3,"},
        {"\"key\": \"queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/hour=06/"
         "w-0000000001-1791007200000000-1791009458377855.jsonl.zst\"",
         "\"key\": \"\""},
    };
    static const char *const want[] = {
        "manifest: sha256 is not 64 lowercase hex digits",
        "manifest: sha256 is not a string",
        "manifest: tEnd is not above tStart",
        "manifest: objects is not an array",
        "manifest: lost holds something that is not an object",
        "manifest: to is below from",
        "manifest: partition is missing",
        "manifest: committedAt is not an ISO-8601 time",
        "manifest: compression does not fit the format",
        "manifest: firstOffset is missing",
        "manifest: lastOffset is below firstOffset",
        "manifest: bytes is missing",
        "manifest: key is empty",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *at = strstr(base, bad[i][0]);
        assert_non_null(at);
        buf d;
        buf_init(&d, 0);
        buf_append(&d, base, (size_t)(at - base));
        buf_puts(&d, bad[i][1]);
        buf_puts(&d, at + strlen(bad[i][0]));
        s3_manifest p;
        if (s3_manifest_parse(d.data, d.len, &p, g_err, sizeof g_err) != -1)
            fail_msg("case %zu parsed", i);
        assert_string_equal(g_err, want[i]);
        buf_free(&d);
    }
    free(base);
}

/* ---- checkpoint ---- */

static void test_checkpoint(void **state)
{
    (void)state;
    s3_position pos[3];
    memset(pos, 0, sizeof pos);
    pos[0].partition = "cust-2";
    pos[0].partition_len = 6;
    pos[0].offset = 1;
    pos[1].partition = "cust-1";
    pos[1].partition_len = 6;
    pos[1].offset = 2;
    pos[1].has_uuid = 1;
    for (int i = 0; i < 16; i++)
        pos[1].uuid[i] = (uint8_t)(0xa0 + i);
    pos[2].partition = "a\"\0b";
    pos[2].partition_len = 4;
    pos[2].offset = 0;
    s3_checkpoint c = {20, 1791009458377855, pos, 3};
    buf_reset(&g_b);
    s3_checkpoint_json(&g_b, &c);
    assert_string_equal(buf_cstr(&g_b), "{\"k\":20,\"tEnd\":1791009458377855,\"positions\":[[\"a\\\"\\u0000b\",0],"
                                        "[\"cust-1\",2,\"a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf\"],[\"cust-2\",1]]}");
    s3_checkpoint p;
    assert_int_equal(s3_checkpoint_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.k, 20);
    assert_int_equal(p.t_end, 1791009458377855);
    assert_int_equal(p.npositions, 3);
    assert_int_equal(p.positions[0].partition_len, 4);
    assert_memory_equal(p.positions[0].partition, "a\"\0b", 4);
    assert_int_equal(p.positions[0].has_uuid, 0);
    assert_string_equal(p.positions[1].partition, "cust-1");
    assert_int_equal(p.positions[1].offset, 2);
    assert_int_equal(p.positions[1].has_uuid, 1);
    assert_memory_equal(p.positions[1].uuid, pos[1].uuid, 16);
    assert_string_equal(p.positions[2].partition, "cust-2");
    s3_checkpoint_free(&p);
    assert_null(p.positions);
    /* unsorted input comes back sorted; a null uuid is no uuid */
    const char *j = "{\"positions\":[[\"b\",1,null],[\"a\",5]],\"tEnd\":7,\"k\":0,\"more\":true}";
    assert_int_equal(s3_checkpoint_parse(j, strlen(j), &p, g_err, sizeof g_err), 0);
    assert_string_equal(p.positions[0].partition, "a");
    assert_int_equal(p.positions[0].offset, 5);
    assert_string_equal(p.positions[1].partition, "b");
    assert_int_equal(p.positions[1].has_uuid, 0);
    s3_checkpoint_free(&p);
    /* empty */
    s3_checkpoint e = {0, 0, NULL, 0};
    buf_reset(&g_b);
    s3_checkpoint_json(&g_b, &e);
    assert_string_equal(buf_cstr(&g_b), "{\"k\":0,\"tEnd\":0,\"positions\":[]}");
    assert_int_equal(s3_checkpoint_parse(g_b.data, g_b.len, &p, g_err, sizeof g_err), 0);
    assert_int_equal(p.npositions, 0);
    s3_checkpoint_free(&p);
    static const char *const bad[][2] = {
        {"{\"tEnd\":1,\"positions\":[]}", "checkpoint: k is missing"},
        {"{\"k\":1,\"positions\":[]}", "checkpoint: tEnd is missing"},
        {"{\"k\":1,\"tEnd\":1}", "checkpoint: positions is missing"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":{}}", "checkpoint: positions is not an array"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[[\"a\"]]}",
         "checkpoint: positions holds an entry that is not [partition, offset(, uuid)]"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[[\"a\",1,null,4]]}",
         "checkpoint: positions holds an entry that is not [partition, offset(, uuid)]"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[\"a\"]}",
         "checkpoint: positions holds an entry that is not [partition, offset(, uuid)]"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[[1,1]]}",
         "checkpoint: positions holds a partition that is not a string of at most 1024 bytes"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[[\"a\",-1]]}",
         "checkpoint: positions holds an offset that is not a non-negative integer"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[[\"a\",1,\"nope\"]]}",
         "checkpoint: positions holds a partition id that is not a UUID"},
        {"{\"k\":1,\"tEnd\":1,\"positions\":[[\"a\",1],[\"b\",2],[\"a\",3]]}",
         "checkpoint: positions names a partition twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3_checkpoint_parse(bad[i][0], strlen(bad[i][0]), &p, g_err, sizeof g_err), -1);
        assert_string_equal(g_err, bad[i][1]);
        assert_null(p.positions);
    }
}

static int setup(void **state)
{
    (void)state;
    buf_init(&g_b, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    buf_free(&g_b);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease),         cmocka_unit_test(test_intent),
        cmocka_unit_test(test_committed),     cmocka_unit_test(test_manifest_spec),
        cmocka_unit_test(test_manifest_shapes), cmocka_unit_test(test_manifest_refusals),
        cmocka_unit_test(test_checkpoint),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
