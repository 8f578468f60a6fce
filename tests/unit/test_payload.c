/* Unit tests for what readers get of a payload (storage/payload.h) and for the cache of
 * queues to seal for (storage/sealq.h): plain and sealed records, every reason a sealed one
 * cannot be opened, the JSON forms, the cache's marks, expiry and bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/seal.h"
#include "storage/payload.h"
#include "storage/record.h"
#include "storage/sealq.h"

static const char K1[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
static const char K2[] = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

static seal_key key_of(const char *t)
{
    seal_key k;
    qerr_detail err;
    assert_int_equal(seal_key_parse(t, &k, &err), QERR_OK);
    return k;
}

/* A one-record segment holding payload (sealed under k when k), decoded into v; seg owns the
 * bytes v points to. */
static void record_of(buf *seg, const seal_key *k, const char *payload, record_view *v)
{
    buf sealed;
    buf_init(&sealed, 0);
    record_in r;
    memset(&r, 0, sizeof r);
    r.txn = "t-1";
    r.txn_len = 3;
    r.payload = payload;
    r.payload_len = payload ? strlen(payload) : 0;
    if (k) {
        assert_int_equal(seal_seal(k, r.payload, r.payload_len, &sealed), 0);
        r.payload = sealed.data;
        r.payload_len = sealed.len;
        r.encrypted = 1;
    }
    buf_reset(seg);
    segment_begin(seg);
    assert_int_equal(record_encode(seg, &r), 0);
    buf_free(&sealed);
    seg_reader sr;
    assert_int_equal(seg_reader_init(&sr, (const uint8_t *)seg->data, seg->len, 0, 1), 0);
    assert_int_equal(seg_reader_next(&sr, v), 1);
}

static void test_plain(void **state)
{
    (void)state;
    seal_set_node_key(NULL);
    buf seg, tmp, json;
    buf_init(&seg, 0);
    buf_init(&tmp, 0);
    buf_init(&json, 0);
    record_view v;
    record_of(&seg, NULL, "{\"total\":42.00}", &v);
    const char *p;
    size_t n;
    enum seal_result why = SEAL_CORRUPT;
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, &why), 0);
    assert_int_equal(why, SEAL_OK);
    assert_ptr_equal(p, v.payload); /* no copy */
    assert_int_equal(n, 15);
    assert_int_equal(tmp.len, 0);
    assert_int_equal(record_payload_json(&json, &v), 0);
    assert_string_equal(buf_cstr(&json), "{\"total\":42.00}");
    record_of(&seg, NULL, NULL, &v);
    buf_reset(&json);
    assert_int_equal(record_payload_json(&json, &v), 0);
    assert_string_equal(buf_cstr(&json), "null");
    buf_free(&seg);
    buf_free(&tmp);
    buf_free(&json);
}

static void test_sealed(void **state)
{
    (void)state;
    seal_key k1 = key_of(K1), k2 = key_of(K2);
    buf seg, tmp, json;
    buf_init(&seg, 0);
    buf_init(&tmp, 0);
    buf_init(&json, 0);
    record_view v;
    record_of(&seg, &k1, "{\"total\":42.00}", &v);
    assert_true(v.flags & REC_ENCRYPTED);
    assert_null(memmem(seg.data, seg.len, "42.00", 5));
    const char *p;
    size_t n;
    enum seal_result why;

    /* the right key: plaintext, in tmp and in JSON */
    seal_set_node_key(&k1);
    buf_puts(&tmp, "stale");
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, &why), 0);
    assert_int_equal(why, SEAL_OK);
    assert_int_equal(n, 15);
    assert_memory_equal(p, "{\"total\":42.00}", 15);
    assert_ptr_equal(p, tmp.data);
    buf_puts(&json, "{\"payload\":");
    assert_int_equal(record_payload_json(&json, &v), 0);
    buf_putc(&json, '}');
    assert_string_equal(buf_cstr(&json), "{\"payload\":{\"total\":42.00}}");

    /* another key: the envelope comes back with the reason, JSON says null and why */
    seal_set_node_key(&k2);
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, &why), -1);
    assert_int_equal(why, SEAL_WRONG_KEY);
    assert_ptr_equal(p, v.payload);
    assert_int_equal(n, v.payload_len);
    buf_reset(&json);
    buf_puts(&json, "{\"payload\":");
    assert_int_equal(record_payload_json(&json, &v), -1);
    buf_putc(&json, '}');
    char want[300], f1[9], f2[9];
    seal_fingerprint_hex(&k1, f1);
    seal_fingerprint_hex(&k2, f2);
    snprintf(want, sizeof want,
             "{\"payload\":null,\"payloadError\":\"sealed under another key (fingerprint %s, this node's is %s)\"}", f1,
             f2);
    assert_string_equal(buf_cstr(&json), want);

    /* no key */
    seal_set_node_key(NULL);
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, NULL), -1);
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, &why), -1);
    assert_int_equal(why, SEAL_NO_KEY);
    buf_reset(&json);
    record_payload_json(&json, &v);
    assert_string_equal(buf_cstr(&json),
                        "null,\"payloadError\":\"sealed, and this node has no QUEEN_ENCRYPTION_KEY to open it\"");

    /* the right key but a flipped byte of the ciphertext */
    seal_set_node_key(&k1);
    ((char *)v.payload)[20] ^= 1;
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, &why), -1);
    assert_int_equal(why, SEAL_CORRUPT);
    buf_reset(&json);
    assert_int_equal(record_payload_json(&json, &v), -1);
    assert_non_null(strstr(buf_cstr(&json), "\"payloadError\":\"the sealed value is corrupt"));
    assert_null(strstr(buf_cstr(&json), "total"));

    /* an empty payload sealed: null, like an empty plain one */
    record_of(&seg, &k1, NULL, &v);
    assert_int_equal(v.payload_len, SEAL_OVERHEAD);
    assert_int_equal(record_payload_open(&v, &tmp, &p, &n, &why), 0);
    assert_int_equal(n, 0);
    buf_reset(&json);
    assert_int_equal(record_payload_json(&json, &v), 0);
    assert_string_equal(buf_cstr(&json), "null");
    seal_set_node_key(NULL);
    buf_free(&seg);
    buf_free(&tmp);
    buf_free(&json);
}

static const uint8_t T1[16] = {1}, T2[16] = {2};

static void test_sealq(void **state)
{
    (void)state;
    sealq *q = sealq_new();
    assert_false(sealq_wants(q, T1, "orders", 6, 1000));
    sealq_set(q, T1, "orders", 6, 1, 1000);
    assert_true(sealq_wants(q, T1, "orders", 6, 1000));
    assert_true(sealq_wants(q, T1, "orders", 6, 1000 + SEALQ_TTL_MS - 1));
    assert_false(sealq_wants(q, T1, "orders", 6, 1000 + SEALQ_TTL_MS)); /* expired */
    /* tenants and names are distinct keys; a prefix is not the name */
    assert_false(sealq_wants(q, T2, "orders", 6, 1000));
    assert_false(sealq_wants(q, T1, "order", 5, 1000));
    /* renewed, then cleared */
    sealq_set(q, T1, "orders", 6, 1, 5000);
    assert_true(sealq_wants(q, T1, "orders", 6, 5000 + SEALQ_TTL_MS - 1));
    sealq_set(q, T1, "orders", 6, 0, 6000);
    assert_false(sealq_wants(q, T1, "orders", 6, 6000));
    assert_int_equal(sealq_count(q, 6000), 0);
    /* clearing an unknown queue stores nothing; a name past 255 bytes is no queue */
    sealq_set(q, T2, "x", 1, 0, 6000);
    char longname[300];
    memset(longname, 'a', sizeof longname);
    sealq_set(q, T1, longname, sizeof longname, 1, 6000);
    assert_false(sealq_wants(q, T1, longname, sizeof longname, 6000));
    assert_int_equal(sealq_count(q, 6000), 0);

    /* past SEALQ_MAX marks: expired ones are dropped first, the live ones stay */
    char name[32];
    for (int i = 0; i < SEALQ_MAX - 1; i++) {
        int len = snprintf(name, sizeof name, "old-%d", i);
        sealq_set(q, T1, name, (size_t)len, 1, 10000);
    }
    sealq_set(q, T2, "live", 4, 1, 10000 + SEALQ_TTL_MS);
    uint64_t later = 10000 + SEALQ_TTL_MS + 1;
    sealq_set(q, T2, "new", 3, 1, later); /* compacts: every old-* mark has expired */
    assert_true(sealq_wants(q, T2, "live", 4, later));
    assert_true(sealq_wants(q, T2, "new", 3, later));
    assert_false(sealq_wants(q, T1, "old-7", 5, later));
    assert_int_equal(sealq_count(q, later), 2);
    /* all live and full: everything is dropped (each queue is learnt again by one refusal) */
    for (int i = 0; i < SEALQ_MAX; i++) {
        int len = snprintf(name, sizeof name, "q-%d", i);
        sealq_set(q, T1, name, (size_t)len, 1, later);
    }
    assert_true(sealq_count(q, later) <= 2);
    assert_true(sealq_wants(q, T1, name, strlen(name), later)); /* the one that made room */
    sealq_free(q);
    sealq_free(NULL);
}

static void test_refused_group(void **state)
{
    (void)state;
    assert_int_equal(sealq_refused_group("push_v1: group 3 (queue \"orders\") has encryptionEnabled and its "
                                         "records are not sealed"),
                     3);
    assert_int_equal(sealq_refused_group("push_v1: group 12 (queue \"push_v1: group 9\") ..."), 12);
    assert_int_equal(sealq_refused_group("something else"), 0);
    assert_int_equal(sealq_refused_group(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_sealed),
        cmocka_unit_test(test_sealq),
        cmocka_unit_test(test_refused_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
