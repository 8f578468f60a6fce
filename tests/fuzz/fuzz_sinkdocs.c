/* fuzz_sinkdocs — every parser of sink/docs.h (lease, intent, commit pointer, manifest,
 * checkpoint) on the same arbitrary input.
 *
 * Checks: no crash and no leak; a refusal names its document; an accepted document, written
 * again, is valid JSON that parses back to the same values, and writing that again gives the
 * same bytes (write . parse is idempotent), so nothing the sink stores can drift on a rewrite. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "json/json.h"
#include "sink/docs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_sinkdocs: check failed at line %d: %s\n", __LINE__, #c);                   \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static void check_json(const buf *b)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    CHECK(json_parse(&d, b->data, b->len, NULL) == 0);
    CHECK(json_type_of(&d, 0) == JSON_OBJECT);
    json_doc_free(&d);
}

static void check_err(const char *err, const char *doc)
{
    CHECK(strncmp(err, doc, strlen(doc)) == 0 && err[strlen(doc)] == ':');
}

static int same(const buf *a, const buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void lease(const char *in, size_t n)
{
    char err[256];
    s3_lease_doc a, b;
    if (s3_lease_doc_parse(in, n, &a, err, sizeof err) < 0) {
        check_err(err, "lease");
        return;
    }
    buf j;
    buf_init(&j, 0);
    s3_lease_doc_json(&j, &a);
    check_json(&j);
    CHECK(s3_lease_doc_parse(j.data, j.len, &b, err, sizeof err) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    buf_free(&j);
}

static void intent(const char *in, size_t n)
{
    char err[256];
    s3_intent a, b;
    if (s3_intent_parse(in, n, &a, err, sizeof err) < 0) {
        check_err(err, "intent");
        return;
    }
    CHECK(a.t_end > a.t_start && a.t_start >= 0);
    buf j;
    buf_init(&j, 0);
    s3_intent_json(&j, &a);
    check_json(&j);
    CHECK(s3_intent_parse(j.data, j.len, &b, err, sizeof err) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    buf_free(&j);
}

static void committed(const char *in, size_t n)
{
    char err[256];
    s3_committed a, b;
    if (s3_committed_parse(in, n, &a, err, sizeof err) < 0) {
        check_err(err, "committed");
        return;
    }
    CHECK(a.t_end >= 0);
    CHECK(a.k_base <= a.k);
    buf j;
    buf_init(&j, 0);
    s3_committed_json(&j, &a);
    check_json(&j);
    CHECK(s3_committed_parse(j.data, j.len, &b, err, sizeof err) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    buf_free(&j);
}

static void manifest(const char *in, size_t n)
{
    char err[256];
    s3_manifest a, b;
    if (s3_manifest_parse(in, n, &a, err, sizeof err) < 0) {
        check_err(err, "manifest");
        CHECK(a.sink == NULL && a.objects == NULL);
        return;
    }
    CHECK(a.owned && a.sink && a.tenant && a.queue && a.t_end > a.t_start);
    buf j1, j2;
    buf_init(&j1, 0);
    buf_init(&j2, 0);
    s3_manifest_json(&j1, &a);
    check_json(&j1);
    CHECK(s3_manifest_parse(j1.data, j1.len, &b, err, sizeof err) == 0);
    CHECK(b.k == a.k && b.t_start == a.t_start && b.t_end == a.t_end && b.nobjects == a.nobjects &&
          b.nlost == a.nlost && b.records == a.records && b.bytes == a.bytes && b.format == a.format &&
          b.compression == a.compression && b.layout == a.layout && b.queue_len == a.queue_len &&
          b.committed_at_us == a.committed_at_us);
    CHECK(memcmp(a.queue, b.queue, a.queue_len) == 0 && strcmp(a.sink, b.sink) == 0);
    for (int i = 0; i < a.nobjects; i++)
        CHECK(strcmp(a.objects[i].key, b.objects[i].key) == 0 && a.objects[i].bytes == b.objects[i].bytes &&
              strcmp(a.objects[i].sha256, b.objects[i].sha256) == 0 &&
              !a.objects[i].partition == !b.objects[i].partition);
    s3_manifest_json(&j2, &b);
    CHECK(same(&j1, &j2));
    s3_manifest_free(&a);
    s3_manifest_free(&b);
    buf_free(&j1);
    buf_free(&j2);
}

static void checkpoint(const char *in, size_t n)
{
    char err[256];
    s3_checkpoint a, b;
    if (s3_checkpoint_parse(in, n, &a, err, sizeof err) < 0) {
        check_err(err, "checkpoint");
        CHECK(a.positions == NULL);
        return;
    }
    for (int i = 1; i < a.npositions; i++) {
        size_t l0 = a.positions[i - 1].partition_len, l1 = a.positions[i].partition_len;
        int c = memcmp(a.positions[i - 1].partition, a.positions[i].partition, l0 < l1 ? l0 : l1);
        CHECK(c < 0 || (c == 0 && l0 < l1)); /* sorted, no duplicate */
    }
    buf j1, j2;
    buf_init(&j1, 0);
    buf_init(&j2, 0);
    s3_checkpoint_json(&j1, &a);
    check_json(&j1);
    CHECK(s3_checkpoint_parse(j1.data, j1.len, &b, err, sizeof err) == 0);
    CHECK(a.k == b.k && a.t_end == b.t_end && a.npositions == b.npositions);
    for (int i = 0; i < a.npositions; i++)
        CHECK(a.positions[i].offset == b.positions[i].offset && a.positions[i].has_uuid == b.positions[i].has_uuid &&
              memcmp(a.positions[i].uuid, b.positions[i].uuid, 16) == 0);
    s3_checkpoint_json(&j2, &b);
    CHECK(same(&j1, &j2));
    s3_checkpoint_free(&a);
    s3_checkpoint_free(&b);
    buf_free(&j1);
    buf_free(&j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    lease(in, size);
    intent(in, size);
    committed(in, size);
    manifest(in, size);
    checkpoint(in, size);
    return 0;
}
