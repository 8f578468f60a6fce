/* pushenc.c — the encoder behind every write of records (pushenc.h): grouping, in-batch dedup,
 * sealing, the arrays of queen.push_v1. Pure: no libuv, no libpq. */
#include "pushenc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "db/pgarray.h"
#include "record.h"

void push_enc_init(push_enc *e)
{
    memset(e, 0, sizeof *e);
    arena_init(&e->ar);
}

void push_enc_free(push_enc *e)
{
    for (int a = 0; a < PUSH_ARRAYS; a++)
        pgarray_free(&e->arr[a]);
    free(e->groups);
    free(e->dd_items);
    arena_free(&e->ar);
    memset(e, 0, sizeof *e);
}

/* Whether g->items[k] starts a producer frame that reaches the encoder whole: its n items in
 * order, none dropped as a duplicate, and nothing to seal. */
static int zframe_whole(const push_group *g, uint32_t k)
{
    const push_item *it = g->items[k];
    const push_zframe *zf = it->zf;
    if (!zf || g->sealed || zf->first != it || g->n - k < zf->n)
        return 0;
    for (uint32_t j = 1; j < zf->n; j++)
        if (g->items[k + j] != zf->first + j)
            return 0;
    return 1;
}

/* The record an item encodes to (its payload as sent: sealing replaces it) */
static record_in record_of(const push_item *it)
{
    const push_req *own = it->req;
    return (record_in){
        .txn = it->txn,
        .txn_len = it->txn_len,
        .txn_producer = it->txn_producer,
        .trace = it->has_trace ? it->trace : NULL,
        .producer = own->producer,
        .producer_len = own->producer_len,
        .payload = it->payload,
        .payload_len = it->payload_len,
    };
}

static void encode_one(buf *seg, const push_item *it)
{
    record_in rec = record_of(it);
    record_encode(seg, &rec);
}

/* Codec 1: the producer frames that arrived whole are kept as they were sent (one zstd chunk
 * each), the other records go in chunks of our records between them. */
static void encode_chunked(const push_group *g, buf *seg, buf *recs, uint64_t *bytes)
{
    buf_reset(seg);
    segment_begin_chunked(seg);
    buf_reset(recs);
    uint32_t nrec = 0;
    for (uint32_t k = 0; k < g->n;) {
        const push_item *it = g->items[k];
        *bytes += it->payload_len;
        if (!zframe_whole(g, k)) {
            encode_one(recs, it);
            nrec++;
            k++;
            continue;
        }
        if (nrec) {
            segment_chunk_records(seg, nrec, recs->data, recs->len);
            buf_reset(recs);
            nrec = 0;
        }
        const push_zframe *zf = it->zf;
        for (uint32_t j = 1; j < zf->n; j++)
            *bytes += g->items[k + j]->payload_len;
        segment_chunk_zframes(seg, zf->n, it->req->producer, it->req->producer_len, zf->z, zf->zlen, zf->anon);
        k += zf->n;
    }
    if (nrec)
        segment_chunk_records(seg, nrec, recs->data, recs->len);
}

/* Encodes a group's records as one segment into seg, their payloads sealed under key when
 * g->sealed (an empty payload too, so every record says sealed); *bytes = the stored payload
 * bytes. -1 when a seal failed (the segment is then incomplete). A group holding a producer
 * frame that arrived whole is written as codec 1 (encode_chunked). */
static int encode_group(const push_group *g, const seal_key *key, buf *seg, buf *sealed, uint64_t *bytes)
{
    *bytes = 0;
    for (uint32_t k = 0; k < g->n; k++)
        if (zframe_whole(g, k)) {
            encode_chunked(g, seg, sealed, bytes);
            return 0;
        }
    buf_reset(seg);
    segment_begin(seg);
    for (uint32_t k = 0; k < g->n; k++) {
        const push_item *it = g->items[k];
        record_in rec = record_of(it);
        if (g->sealed) {
            buf_reset(sealed);
            if (seal_seal(key, it->payload, it->payload_len, sealed) < 0)
                return -1;
            rec.payload = sealed->data;
            rec.payload_len = sealed->len;
            rec.encrypted = 1;
        }
        record_encode(seg, &rec);
        *bytes += rec.payload_len;
    }
    return 0;
}

/* Groups the pending items of the requests by (tenant, queue, partition), drops repeats of a producer
 * transactionId within the batch, encodes one segment per group and fills the arrays.
 * Returns the number of records to write. */
uint64_t push_enc_build(push_enc *b, push_req *reqs, int64_t dedup_window_us)
{
    arena_free(&b->ar);
    arena_init(&b->ar);
    strmap gmap, ddmap;
    strmap_init(&gmap);
    strmap_init(&ddmap);
    b->ngroups = 0;
    b->ndd = 0;
    buf key;
    buf_init(&key, 0);
    for (push_req *r = reqs; r; r = r->next) {
        for (uint32_t i = 0; i < r->n; i++) {
            push_item *it = &r->items[i];
            if (it->status != PUSH_PENDING)
                continue;
            buf_reset(&key);
            buf_append(&key, r->tenant, 16);
            buf_append(&key, it->queue, it->queue_len);
            buf_putc(&key, '\0');
            buf_append(&key, it->partition, it->partition_len);
            int ins;
            uint32_t *gi = strmap_get(&gmap, key.data, key.len);
            if (!gi) {
                char *k = arena_alloc(&b->ar, key.len);
                memcpy(k, key.data, key.len);
                gi = strmap_put(&gmap, k, key.len, b->ngroups, &ins);
                if (b->ngroups == b->gcap) {
                    b->gcap = b->gcap ? b->gcap * 2 : 8;
                    b->groups = xrealloc(b->groups, b->gcap * sizeof *b->groups);
                }
                push_group *g = &b->groups[b->ngroups++];
                memset(g, 0, sizeof *g);
                g->tenant = r->tenant;
                g->queue = it->queue;
                g->queue_len = it->queue_len;
                g->partition = it->partition;
                g->partition_len = it->partition_len;
            }
            push_group *g = &b->groups[*gi];
            it->group = *gi;
            it->dup_of = NULL;
            it->req = r;
            if (it->txn_producer) {
                buf_reset(&key);
                uint8_t gb[4];
                be_put32(gb, *gi);
                buf_append(&key, gb, 4);
                buf_append(&key, it->txn, it->txn_len);
                uint32_t *first = strmap_get(&ddmap, key.data, key.len);
                if (first) {
                    it->dup_of = g->items[*first];
                    continue;
                }
                char *k = arena_alloc(&b->ar, key.len);
                memcpy(k, key.data, key.len);
                strmap_put(&ddmap, k, key.len, g->n, &ins);
            }
            if (g->n == g->cap) {
                g->cap = g->cap ? g->cap * 2 : 8;
                push_item **ni = arena_alloc(&b->ar, g->cap * sizeof *ni);
                if (g->n)
                    memcpy(ni, g->items, g->n * sizeof *ni);
                g->items = ni;
            }
            it->pos = g->n;
            g->items[g->n++] = it;
        }
    }
    buf_free(&key);
    strmap_free(&gmap);
    strmap_free(&ddmap);

    for (int a = 0; a < PUSH_ARRAYS; a++)
        pgarray_free(&b->arr[a]);
    pgarray_begin(&b->arr[A_TENANT], OID_UUID);
    pgarray_begin(&b->arr[A_QUEUE], OID_TEXT);
    pgarray_begin(&b->arr[A_PART], OID_TEXT);
    pgarray_begin(&b->arr[A_COUNT], OID_INT4);
    pgarray_begin(&b->arr[A_BYTES], OID_INT4);
    pgarray_begin(&b->arr[A_DATA], OID_BYTEA);
    pgarray_begin(&b->arr[A_DDG], OID_INT4);
    pgarray_begin(&b->arr[A_DDPOS], OID_INT4);
    pgarray_begin(&b->arr[A_DDTXN], OID_TEXT);
    uint64_t total = 0;
    uint32_t sql_idx = 0;
    buf seg, sealed;
    buf_init(&seg, 0);
    buf_init(&sealed, 0);
    const seal_key *nkey = seal_node_key();
    uint64_t now_ms = mono_ms();
    for (uint32_t gi = 0; gi < b->ngroups; gi++) {
        push_group *g = &b->groups[gi];
        if (g->n == 0) {
            g->sql_idx = 0;
            continue;
        }
        g->sql_idx = ++sql_idx;
        /* all of a group's records are sealed or none: push_v1 reads the first one's flags */
        g->sealed = nkey && b->sq && sealq_wants(b->sq, g->tenant, g->queue, g->queue_len, now_ms);
        uint64_t bytes;
        if (encode_group(g, nkey, &seg, &sealed, &bytes) < 0) {
            /* only a failing RAND_bytes gets here: the whole group goes plain, so a queue that
             * needs sealing refuses it (push_v1) instead of taking a half-sealed segment */
            log_error("push", "sealing a payload of queue %.*s failed", (int)g->queue_len, g->queue);
            g->sealed = 0;
            encode_group(g, nkey, &seg, &sealed, &bytes);
        }
        for (uint32_t k = 0; k < g->n; k++) {
            push_item *it = g->items[k];
            if (it->txn_producer) {
                if (b->ndd == b->ddcap) {
                    b->ddcap = b->ddcap ? b->ddcap * 2 : 16;
                    b->dd_items = xrealloc(b->dd_items, b->ddcap * sizeof *b->dd_items);
                }
                b->dd_items[b->ndd++] = it;
                pgarray_add_i32(&b->arr[A_DDG], (int32_t)g->sql_idx);
                pgarray_add_i32(&b->arr[A_DDPOS], (int32_t)k);
                pgarray_add(&b->arr[A_DDTXN], it->txn, it->txn_len);
            }
        }
        pgarray_add(&b->arr[A_TENANT], g->tenant, 16);
        pgarray_add(&b->arr[A_QUEUE], g->queue, g->queue_len);
        pgarray_add(&b->arr[A_PART], g->partition, g->partition_len);
        pgarray_add_i32(&b->arr[A_COUNT], (int32_t)g->n);
        pgarray_add_i32(&b->arr[A_BYTES], (int32_t)(bytes > INT32_MAX ? INT32_MAX : bytes));
        pgarray_add(&b->arr[A_DATA], seg.data, seg.len);
        total += g->n;
    }
    buf_free(&seg);
    buf_free(&sealed);
    for (int a = 0; a < PUSH_ARRAYS; a++) {
        pgarray_finish(&b->arr[a]);
        b->values[a] = b->arr[a].b.data;
        b->lengths[a] = (int)b->arr[a].b.len;
        b->formats[a] = 1;
    }
    be_put64(b->window, (uint64_t)dedup_window_us);
    b->values[9] = (const char *)b->window;
    b->lengths[9] = 8;
    b->formats[9] = 1;
    return total;
}

void push_enc_settle(push_req *reqs)
{
    for (push_req *r = reqs; r; r = r->next)
        for (uint32_t i = 0; i < r->n; i++) {
            push_item *it = &r->items[i];
            if (!it->dup_of)
                continue;
            push_item *o = it->dup_of;
            it->status = o->status == PUSH_FULL ? PUSH_FULL : PUSH_DUPLICATE;
            it->offset = o->offset;
            it->ts = o->ts;
            it->partition_id = o->partition_id;
            memcpy(it->partition_uuid, o->partition_uuid, 16);
        }
}

const push_group *push_enc_refused(push_enc *e, const char *sqlstate, const char *errmsg)
{
    if (strcmp(sqlstate, SEALQ_SQLSTATE) != 0)
        return NULL;
    uint32_t idx = sealq_refused_group(errmsg);
    for (uint32_t gi = 0; idx && gi < e->ngroups; gi++) {
        const push_group *g = &e->groups[gi];
        if (g->sql_idx != idx)
            continue;
        if (seal_node_key() && e->sq)
            sealq_set(e->sq, g->tenant, g->queue, g->queue_len, 1, mono_ms());
        return g;
    }
    log_error("push", "push_v1 refused a group this write does not have: %s", errmsg);
    return NULL;
}

void push_enc_no_key_error(const push_group *g, char *out, size_t cap)
{
    snprintf(out, cap,
             "queue %.*s has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY to seal its payloads; "
             "nothing was stored (push through a node that has the key)",
             (int)MIN(g->queue_len, 255u), g->queue);
}
