/* Unit tests for the QPF1 framed pop writer (consume/qpf.h), read back by the tests' own decoder
 * (tests/qpf_decode.h): the head and the answer's own keys, records split where offsets jump or
 * created_at changes, trace and producer flags, empty payloads, several claims, and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../qpf_decode.h"
#include "consume/qpf.h"

static qd_answer A;

static const uint8_t ID[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t TR[16] = {0xaa, 0xbb, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xcc};

static int eq(const uint8_t *p, size_t n, const char *s)
{
    return n == strlen(s) && memcmp(p, s, n) == 0;
}

static void add(qpf_writer *w, uint64_t off, int64_t ts, const char *payload)
{
    char txn[32];
    snprintf(txn, sizeof txn, "t%llu", (unsigned long long)off);
    assert_int_equal(qpf_message(w, off, ts, ID, NULL, txn, strlen(txn), NULL, 0, payload, strlen(payload)), 0);
}

static void test_head_records_and_flags(void **state)
{
    (void)state;
    qpf_writer w;
    buf out;
    buf_init(&out, 0);
    assert_int_equal(qpf_begin(&w, 0, "q", 1, "lease-1", 7, "__QUEUE_MODE__", 14), 0);
    assert_int_equal(qpf_claim(&w, 42, "Default", 7, 10, 19, 1), 0);
    add(&w, 10, 1000, "1");
    add(&w, 11, 1000, "{\"a\":[1,2]}");
    add(&w, 13, 1000, "\"x\"");    /* 12 was deleted: a new record */
    add(&w, 14, 2000, "null");     /* another segment: a new record */
    assert_int_equal(qpf_message(&w, 15, 2000, ID, TR, "tx", 2, "alice", 5, "", 0), 0);
    assert_int_equal(qpf_finish(&w, "{\"frames\":true}", 15, &out), 0);
    assert_int_equal(qd_decode((const uint8_t *)out.data, out.len, &A), 0);
    assert_true(eq(A.extra, A.extra_len, "{\"frames\":true}"));
    assert_true(eq(A.queue, A.queue_len, "q") && eq(A.lease, A.lease_len, "lease-1"));
    assert_true(eq(A.group, A.group_len, "__QUEUE_MODE__"));
    assert_int_equal(A.claims, 1);
    assert_int_equal(A.records, 3);
    assert_int_equal(A.n, 5);
    uint64_t offs[5] = {10, 11, 13, 14, 15};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(A.msgs[i].offset, offs[i]);
        assert_int_equal(A.msgs[i].partition_id, 42);
        assert_true(eq(A.msgs[i].partition, A.msgs[i].partition_len, "Default"));
        assert_memory_equal(A.msgs[i].id, ID, 16);
    }
    assert_int_equal(A.msgs[2].created_us, 1000);
    assert_int_equal(A.msgs[3].created_us, 2000);
    assert_true(eq(A.msgs[1].payload, A.msgs[1].payload_len, "{\"a\":[1,2]}"));
    assert_true(eq(A.msgs[2].txn, A.msgs[2].txn_len, "t13"));
    assert_int_equal(A.msgs[0].flags, 0);
    assert_int_equal(A.msgs[4].flags, QPF_FLAG_TRACE | QPF_FLAG_PRODUCER);
    assert_memory_equal(A.msgs[4].trace, TR, 16);
    assert_true(eq(A.msgs[4].producer, A.msgs[4].producer_len, "alice"));
    assert_int_equal(A.msgs[4].payload_len, 0);
    for (uint32_t i = 0; i < A.n; i++)
        assert_int_equal(A.msgs[i].flags & QPF_FLAG_ENCRYPTED, 0);
    buf_free(&out);
}

static void test_claims_and_default_keys(void **state)
{
    (void)state;
    qpf_writer w;
    buf out;
    buf_init(&out, 0);
    assert_int_equal(qpf_begin(&w, 0, "q", 1, "", 0, "g", 1), 0);
    assert_int_equal(qpf_claim(&w, 1, "a", 1, 0, 1, 1), 0);
    add(&w, 0, 5, "0");
    add(&w, 1, 5, "1");
    assert_int_equal(qpf_claim(&w, 2, "b", 1, 7, 7, 3), 0);
    add(&w, 7, 5, "7");
    assert_int_equal(qpf_claim(&w, 3, "c", 1, 0, 0, 1), 0); /* a claim whose record was deleted */
    assert_int_equal(qpf_finish(&w, NULL, 0, &out), 0);
    assert_int_equal(qd_decode((const uint8_t *)out.data, out.len, &A), 0);
    assert_true(eq(A.extra, A.extra_len, "{}"));
    assert_int_equal(A.claims, 3);
    assert_int_equal(A.n, 3);
    assert_int_equal(A.msgs[2].partition_id, 2);
    assert_int_equal(A.msgs[2].attempt, 3);
    assert_int_equal(A.lease_len, 0);
    buf_free(&out);
}


/* A producer's frame handed out as stored: one codec-1 record, its bytes unchanged, between
 * records framed here; offsets must keep ascending inside the claim. */
static void test_stored_frame_record(void **state)
{
    (void)state;
    static const uint8_t Z[5] = {0x28, 0xb5, 0x2f, 0xfd, 0x99};
    qpf_writer w;
    buf out;
    buf_init(&out, 0);
    assert_int_equal(qpf_begin(&w, 0, "q", 1, "", 0, "g", 1), 0);
    assert_int_equal(qpf_claim(&w, 7, "p", 1, 0, 9, 1), 0);
    add(&w, 0, 1000, "1");
    assert_int_equal(qpf_stored(&w, 1, 1000, 4, Z, sizeof Z), 0);
    assert_int_equal(qpf_stored(&w, 3, 1000, 1, Z, sizeof Z), -1);  /* not ascending */
    assert_int_equal(qpf_stored(&w, 8, 1000, 3, Z, sizeof Z), -1);  /* past the claim */
    assert_int_equal(qpf_message(&w, 4, 1000, ID, NULL, "t", 1, NULL, 0, "2", 1), -1); /* inside it */
    add(&w, 5, 1000, "2");
    assert_int_equal(w.messages, 6);
    assert_int_equal(qpf_finish(&w, NULL, 0, &out), 0);
    /* the stored record sits after the first record: base 1, count 4, codec 1, len 5, Z */
    uint8_t want[8 + 8 + 4 + 1 + 4 + 5] = {1, 0, 0, 0, 0, 0, 0, 0, 0xe8, 3, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 5, 0, 0, 0};
    memcpy(want + 25, Z, sizeof Z);
    assert_non_null(memmem(out.data, out.len, want, sizeof want));
    buf_free(&out);
}

static void test_refusals(void **state)
{
    (void)state;
    qpf_writer w;
    static char big[70000];
    memset(big, 'x', sizeof big);
    assert_int_equal(qpf_begin(&w, 0, big, sizeof big, "", 0, "g", 1), -1);
    qpf_free(&w);
    assert_int_equal(qpf_begin(&w, 0, "q", 1, "", 0, "g", 1), 0);
    /* no claim open */
    assert_int_equal(qpf_message(&w, 0, 0, ID, NULL, "t", 1, NULL, 0, "1", 1), -1);
    assert_int_equal(qpf_claim(&w, 1, "p", 1, 5, 4, 1), -1); /* last before first */
    assert_int_equal(qpf_claim(&w, 1, "p", 1, 5, 9, 1), 0);
    assert_int_equal(qpf_message(&w, 4, 0, ID, NULL, "t", 1, NULL, 0, "1", 1), -1);  /* before the claim */
    assert_int_equal(qpf_message(&w, 10, 0, ID, NULL, "t", 1, NULL, 0, "1", 1), -1); /* after it */
    assert_int_equal(qpf_message(&w, 6, 0, ID, NULL, "t", 1, NULL, 0, "1", 1), 0);
    assert_int_equal(qpf_message(&w, 6, 0, ID, NULL, "t", 1, NULL, 0, "1", 1), -1); /* not ascending */
    assert_int_equal(qpf_message(&w, 7, 0, ID, NULL, big, sizeof big, NULL, 0, "1", 1), -1);
    assert_int_equal(qpf_message(&w, 7, 0, ID, NULL, "t", 1, big, sizeof big, "1", 1), -1);
    qpf_free(&w);
    /* an answer past its max */
    buf out;
    buf_init(&out, 0);
    assert_int_equal(qpf_begin(&w, 64, "q", 1, "", 0, "g", 1), 0);
    assert_int_equal(qpf_claim(&w, 1, "p", 1, 0, 9, 1), 0);
    assert_int_equal(qpf_message(&w, 0, 0, ID, NULL, "t", 1, NULL, 0, big, 100), -1);
    assert_int_equal(qpf_finish(&w, NULL, 0, &out), -1);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_records_and_flags),
        cmocka_unit_test(test_claims_and_default_keys),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_stored_frame_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
