/* Unit tests for the push encoder (storage/pushenc.h): grouping by (tenant, queue, partition),
 * in-batch dedup of producer transactionIds, sealing for the queues that need it, and the
 * binary arrays handed to queen.push_v1, read back element by element. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "core/buf.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "storage/pushenc.h"
#include "storage/record.h"
#include "storage/sealq.h"

static const uint8_t T1[16] = {1};
static const uint8_t T2[16] = {2};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The elements of a one-dimensional binary array: count, and element k's bytes. */
typedef struct arr_view {
    uint32_t oid, n;
    const uint8_t *el[64];
    int32_t len[64];
} arr_view;

static arr_view arr_read(const push_enc *e, int a)
{
    arr_view v;
    memset(&v, 0, sizeof v);
    const uint8_t *p = (const uint8_t *)e->values[a];
    size_t n = (size_t)e->lengths[a];
    assert_int_equal(e->formats[a], 1);
    assert_true(n >= 20);
    assert_int_equal(rd32(p), 1); /* one dimension */
    v.oid = rd32(p + 8);
    v.n = rd32(p + 12);
    assert_int_equal(rd32(p + 16), 1); /* lower bound */
    assert_true(v.n <= 64);
    const uint8_t *q = p + 20, *end = p + n;
    for (uint32_t k = 0; k < v.n; k++) {
        assert_true(q + 4 <= end);
        v.len[k] = (int32_t)rd32(q);
        q += 4;
        v.el[k] = q;
        if (v.len[k] > 0)
            q += v.len[k];
        assert_true(q <= end);
    }
    assert_ptr_equal(q, end);
    return v;
}

static int32_t el_i32(const arr_view *v, uint32_t k)
{
    assert_int_equal(v->len[k], 4);
    return (int32_t)rd32(v->el[k]);
}

static void el_text_eq(const arr_view *v, uint32_t k, const char *want)
{
    assert_int_equal(v->len[k], (int32_t)strlen(want));
    assert_memory_equal(v->el[k], want, strlen(want));
}

static push_item item(const char *queue, const char *part, const char *payload, const char *txn, int producer)
{
    push_item it;
    memset(&it, 0, sizeof it);
    it.queue = queue;
    it.queue_len = (uint32_t)strlen(queue);
    it.partition = part;
    it.partition_len = (uint32_t)strlen(part);
    it.payload = payload;
    it.payload_len = payload ? (uint32_t)strlen(payload) : 0;
    it.txn = txn;
    it.txn_len = (uint32_t)strlen(txn);
    it.txn_producer = (uint8_t)producer;
    return it;
}

static void req_init(push_req *r, const uint8_t tenant[16], push_item *items, uint32_t n, push_req *next)
{
    memset(r, 0, sizeof *r);
    memcpy(r->tenant, tenant, 16);
    r->items = items;
    r->n = n;
    r->next = next;
}

/* The records of segment k of the call, in order; their views live until the next call or
 * seg_records_release (a codec-1 segment's are in what the reader inflated). */
static seg_reader last_reader;

static void seg_records_release(void)
{
    seg_reader_done(&last_reader);
    memset(&last_reader, 0, sizeof last_reader);
}

static int seg_records(const push_enc *e, uint32_t k, record_view *out, int cap)
{
    arr_view data = arr_read(e, A_DATA), count = arr_read(e, A_COUNT);
    seg_records_release();
    seg_reader s;
    assert_int_equal(seg_reader_init(&s, data.el[k], (size_t)data.len[k], 0, (uint32_t)el_i32(&count, k)), 0);
    int n = 0;
    int rc;
    while ((rc = seg_reader_next(&s, &out[n])) == 1) {
        n++;
        assert_true(n < cap);
    }
    assert_int_equal(rc, 0);
    last_reader = s;
    return n;
}

static uint8_t seg_codec_byte(const push_enc *e, uint32_t k)
{
    arr_view data = arr_read(e, A_DATA);
    return data.el[k][0];
}

static void test_groups_by_tenant_queue_partition(void **state)
{
    (void)state;
    push_item a[3] = {item("q", "p1", "{\"a\":1}", "t1", 0), item("q", "p2", "2", "t2", 0),
                      item("q", "p1", "3", "t3", 0)};
    push_item b[2] = {item("q", "p1", "4", "t4", 0), item("r", "p1", NULL, "t5", 0)};
    push_item c[1] = {item("q", "p1", "6", "t6", 0)};
    push_req rc, rb, ra;
    req_init(&rc, T2, c, 1, NULL);
    req_init(&rb, T1, b, 2, &rc);
    req_init(&ra, T1, a, 3, &rb);
    push_enc e;
    push_enc_init(&e);
    assert_int_equal(push_enc_build(&e, &ra, 30000000), 6);
    /* groups in order of first appearance: (T1,q,p1) (T1,q,p2) (T1,r,p1) (T2,q,p1) */
    assert_int_equal(e.ngroups, 4);
    assert_int_equal(e.groups[0].n, 3);
    assert_ptr_equal(e.groups[0].items[0], &a[0]);
    assert_ptr_equal(e.groups[0].items[1], &a[2]);
    assert_ptr_equal(e.groups[0].items[2], &b[0]);
    assert_int_equal(a[2].pos, 1);
    assert_int_equal(b[0].group, 0);
    assert_ptr_equal(b[1].req, &rb);
    for (uint32_t g = 0; g < 4; g++)
        assert_int_equal(e.groups[g].sql_idx, g + 1);
    arr_view ten = arr_read(&e, A_TENANT), q = arr_read(&e, A_QUEUE), p = arr_read(&e, A_PART),
             n = arr_read(&e, A_COUNT), bytes = arr_read(&e, A_BYTES), dd = arr_read(&e, A_DDTXN);
    assert_int_equal(ten.n, 4);
    assert_memory_equal(ten.el[3], T2, 16);
    assert_memory_equal(ten.el[0], T1, 16);
    el_text_eq(&q, 2, "r");
    el_text_eq(&p, 1, "p2");
    assert_int_equal(el_i32(&n, 0), 3);
    assert_int_equal(el_i32(&n, 3), 1);
    assert_int_equal(el_i32(&bytes, 0), 7 + 1 + 1); /* payload bytes of the group */
    assert_int_equal(el_i32(&bytes, 2), 0);          /* an empty payload */
    assert_int_equal(dd.n, 0);                       /* no producer transactionIds */
    record_view v[8];
    assert_int_equal(seg_records(&e, 0, v, 8), 3);
    assert_int_equal(v[0].payload_len, 7);
    assert_memory_equal(v[0].payload, "{\"a\":1}", 7);
    assert_memory_equal(v[2].payload, "4", 1);
    assert_int_equal(v[0].flags & (REC_ENCRYPTED | REC_TXN_PRODUCER), 0);
    /* the dedup window, big-endian µs */
    assert_int_equal(e.lengths[9], 8);
    assert_int_equal(be_get64((const uint8_t *)e.values[9]), 30000000);
    push_enc_free(&e);
}

static void test_in_batch_dedup(void **state)
{
    (void)state;
    push_item a[4] = {item("q", "p", "1", "same", 1), item("q", "p", "2", "same", 1),
                      item("q", "other", "3", "same", 1), item("q", "p", "4", "same", 0)};
    push_item b[1] = {item("q", "p", "5", "same", 1)};
    push_req rb, ra;
    req_init(&rb, T1, b, 1, NULL);
    req_init(&ra, T1, a, 4, &rb);
    push_enc e;
    push_enc_init(&e);
    /* a repeat within the group (even in another request) is the first one's duplicate; the
     * same id in another partition, or a generated (non-producer) one, is not */
    assert_int_equal(push_enc_build(&e, &ra, 0), 3);
    assert_ptr_equal(a[1].dup_of, &a[0]);
    assert_ptr_equal(b[0].dup_of, &a[0]);
    assert_null(a[2].dup_of);
    assert_null(a[3].dup_of);
    assert_int_equal(e.groups[0].n, 2);
    /* producer ids go to the database's dedup check with their group and position */
    arr_view g = arr_read(&e, A_DDG), pos = arr_read(&e, A_DDPOS), txt = arr_read(&e, A_DDTXN);
    assert_int_equal(e.ndd, 2);
    assert_int_equal(g.n, 2);
    assert_int_equal(el_i32(&g, 0), 1);
    assert_int_equal(el_i32(&pos, 0), 0);
    assert_int_equal(el_i32(&g, 1), 2);
    assert_int_equal(el_i32(&pos, 1), 0);
    el_text_eq(&txt, 1, "same");
    assert_ptr_equal(e.dd_items[1], &a[2]);
    record_view v[4];
    assert_int_equal(seg_records(&e, 0, v, 4), 2);
    assert_true(v[0].flags & REC_TXN_PRODUCER);
    assert_false(v[1].flags & REC_TXN_PRODUCER);
    /* settle: repeats take the first one's outcome (a full queue stays full) */
    a[0].status = PUSH_QUEUED;
    a[0].offset = 41;
    a[0].partition_id = 9;
    push_enc_settle(&ra);
    assert_int_equal(a[1].status, PUSH_DUPLICATE);
    assert_int_equal(a[1].offset, 41);
    assert_int_equal(b[0].partition_id, 9);
    assert_int_equal(a[2].status, PUSH_PENDING);
    a[0].status = PUSH_FULL;
    push_enc_settle(&ra);
    assert_int_equal(b[0].status, PUSH_FULL);
    push_enc_free(&e);
}

static void test_only_pending_items(void **state)
{
    (void)state;
    push_item a[3] = {item("q", "p", "1", "x", 1), item("q", "p", "2", "y", 1), item("q", "p2", "3", "z", 1)};
    push_req ra;
    req_init(&ra, T1, a, 3, NULL);
    push_enc e;
    push_enc_init(&e);
    assert_int_equal(push_enc_build(&e, &ra, 0), 3);
    /* a rebuild after the database answered some as duplicates writes only the rest; a group
     * left with nothing gets no index and no array element */
    a[0].status = PUSH_DUPLICATE;
    a[2].status = PUSH_DUPLICATE;
    assert_int_equal(push_enc_build(&e, &ra, 0), 1);
    assert_int_equal(e.ngroups, 1);
    assert_ptr_equal(e.groups[0].items[0], &a[1]);
    assert_int_equal(a[1].pos, 0);
    arr_view q = arr_read(&e, A_QUEUE);
    assert_int_equal(q.n, 1);
    a[1].status = PUSH_DUPLICATE;
    assert_int_equal(push_enc_build(&e, &ra, 0), 0);
    assert_int_equal(arr_read(&e, A_DATA).n, 0);
    push_enc_free(&e);
}


/* The producer frames of items, as QPB1 flag 8 sends them, compressed into z. */
static void make_zframe(push_item *items, uint32_t n, buf *z, push_zframe *zf)
{
    buf raw;
    buf_init(&raw, 0);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t blen = 1 + 16 + 2 + items[i].txn_len + items[i].payload_len;
        uint8_t h[4] = {(uint8_t)blen, (uint8_t)(blen >> 8), 0, 0};
        buf_append(&raw, h, 4);
        buf_putc(&raw, 0);
        uint8_t id[16] = {0x01, 0x8f, 0, 0, 0, 0, 0x70, 0, 0x80};
        id[15] = (uint8_t)i;
        buf_append(&raw, id, 16);
        uint8_t tl[2] = {(uint8_t)items[i].txn_len, 0};
        buf_append(&raw, tl, 2);
        buf_append(&raw, items[i].txn, items[i].txn_len);
        buf_append(&raw, items[i].payload, items[i].payload_len);
    }
    size_t cap = ZSTD_compressBound(raw.len);
    buf_reset(z);
    buf_reserve(z, cap);
    z->len = ZSTD_compress(z->data, cap, raw.data, raw.len, 1);
    assert_false(ZSTD_isError(z->len));
    buf_free(&raw);
    *zf = (push_zframe){(const uint8_t *)z->data, z->len, items, n, 0};
    for (uint32_t i = 0; i < n; i++)
        items[i].zf = zf;
}

static void test_whole_producer_frames_are_kept(void **state)
{
    (void)state;
    push_item a[3] = {item("q", "p", "{\"a\":1}", "t0", 1), item("q", "p", "[2]", "t1", 1), item("q", "p", "3", "t2", 1)};
    push_item b[1] = {item("q", "p", "\"json\"", "tj", 1)};
    buf z;
    buf_init(&z, 0);
    push_zframe zf;
    make_zframe(a, 3, &z, &zf);
    push_req rb, ra;
    req_init(&rb, T1, b, 1, NULL);
    req_init(&ra, T1, a, 3, &rb);
    push_enc e;
    push_enc_init(&e);
    assert_int_equal(push_enc_build(&e, &ra, 0), 4);
    /* one segment for the partition: codec 1, the frame as sent, then the JSON item's record */
    assert_int_equal(e.ngroups, 1);
    assert_int_equal(seg_codec_byte(&e, 0), SEGMENT_CHUNKED);
    arr_view data = arr_read(&e, A_DATA), bytes = arr_read(&e, A_BYTES);
    assert_true(memmem(data.el[0], (size_t)data.len[0], z.data, z.len) != NULL);
    assert_int_equal(el_i32(&bytes, 0), 7 + 3 + 1 + 6);
    record_view v[8];
    assert_int_equal(seg_records(&e, 0, v, 8), 4);
    assert_memory_equal(v[1].payload, "[2]", 3);
    assert_memory_equal(v[3].payload, "\"json\"", 6);
    char t[8];
    assert_int_equal(record_txn_text(&v[2], t, sizeof t), 2);
    assert_memory_equal(t, "t2", 2);
    /* the dedup check still gets every producer transactionId */
    assert_int_equal(e.ndd, 4);
    /* after the database answered one as a duplicate the frame is no longer whole: codec 0 */
    a[1].status = PUSH_DUPLICATE;
    assert_int_equal(push_enc_build(&e, &ra, 0), 3);
    assert_int_equal(seg_codec_byte(&e, 0), SEGMENT_VERSION);
    assert_int_equal(seg_records(&e, 0, v, 8), 3);
    assert_memory_equal(v[1].payload, "3", 1);
    push_enc_free(&e);
    /* a repeat inside the frame: codec 0 without the repeat */
    push_item c[3] = {item("q", "p", "1", "same", 1), item("q", "p", "2", "other", 1), item("q", "p", "3", "same", 1)};
    make_zframe(c, 3, &z, &zf);
    push_req rc;
    req_init(&rc, T1, c, 3, NULL);
    push_enc_init(&e);
    assert_int_equal(push_enc_build(&e, &rc, 0), 2);
    assert_ptr_equal(c[2].dup_of, &c[0]);
    assert_int_equal(seg_codec_byte(&e, 0), SEGMENT_VERSION);
    push_enc_free(&e);
    buf_free(&z);
    seg_records_release();
}

static void test_seals_the_queues_that_need_it(void **state)
{
    (void)state;
    seal_key k;
    qerr_detail err;
    assert_int_equal(seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &k, &err),
                     QERR_OK);
    seal_set_node_key(&k);
    sealq *sq = sealq_new();
    sealq_set(sq, T1, "secret", 6, 1, mono_ms());
    push_item a[3] = {item("secret", "p", "{\"card\":1}", "t1", 0), item("plain", "p", "{\"x\":2}", "t2", 0),
                      item("secret", "p", NULL, "t3", 0)};
    push_req ra;
    req_init(&ra, T1, a, 3, NULL);
    push_enc e;
    push_enc_init(&e);
    e.sq = sq;
    assert_int_equal(push_enc_build(&e, &ra, 0), 3);
    assert_true(e.groups[0].sealed);
    assert_false(e.groups[1].sealed);
    record_view v[4];
    assert_int_equal(seg_records(&e, 0, v, 4), 2);
    buf o;
    buf_init(&o, 0);
    for (int i = 0; i < 2; i++) {
        /* every record of a sealed group says so, the empty payload too */
        assert_true(v[i].flags & REC_ENCRYPTED);
        assert_true(seal_is_envelope(v[i].payload, v[i].payload_len));
        buf_reset(&o);
        assert_int_equal(seal_open(&k, v[i].payload, v[i].payload_len, &o), SEAL_OK);
    }
    assert_int_equal(o.len, 0);
    buf_reset(&o);
    seal_open(&k, v[0].payload, v[0].payload_len, &o);
    assert_int_equal(o.len, 10);
    assert_memory_equal(o.data, "{\"card\":1}", 10);
    /* the stored bytes are the sealed ones */
    arr_view bytes = arr_read(&e, A_BYTES);
    assert_int_equal(el_i32(&bytes, 0), (int32_t)(v[0].payload_len + v[1].payload_len));
    assert_int_equal(seg_records(&e, 1, v, 4), 1);
    assert_false(v[0].flags & REC_ENCRYPTED);
    assert_memory_equal(v[0].payload, "{\"x\":2}", 7);
    /* push_v1 refused plain records for group 2: it is returned and its queue marked */
    const push_group *g = push_enc_refused(&e, SEALQ_SQLSTATE, "push_v1: group 2 of queue plain has encryption");
    assert_ptr_equal(g, &e.groups[1]);
    assert_true(sealq_wants(sq, T1, "plain", 5, mono_ms()));
    assert_null(push_enc_refused(&e, "40001", "push_v1: group 2"));
    assert_int_equal(push_enc_build(&e, &ra, 0), 3);
    assert_true(e.groups[1].sealed);
    /* no node key: nothing is sealed, whatever the cache says */
    seal_set_node_key(NULL);
    assert_int_equal(push_enc_build(&e, &ra, 0), 3);
    assert_false(e.groups[0].sealed);
    buf_free(&o);
    push_enc_free(&e);
    sealq_free(sq);
}

static void test_no_key_error(void **state)
{
    (void)state;
    push_group g;
    memset(&g, 0, sizeof g);
    g.queue = "orders";
    g.queue_len = 6;
    char out[400];
    push_enc_no_key_error(&g, out, sizeof out);
    assert_non_null(strstr(out, "queue orders has encryptionEnabled"));
    assert_non_null(strstr(out, "QUEEN_ENCRYPTION_KEY"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_by_tenant_queue_partition),
        cmocka_unit_test(test_in_batch_dedup),
        cmocka_unit_test(test_only_pending_items),
        cmocka_unit_test(test_seals_the_queues_that_need_it),
        cmocka_unit_test(test_whole_producer_frames_are_kept),
        cmocka_unit_test(test_no_key_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
