/* pop.c — pop, lease store and ack: SQL, parameters, decoding. */
#include <stdio.h>
#include <string.h>

#include "consume.h"
#include "core/util.h"
#include "db/pg.h"

const char POP_SQL[] =
    "SELECT * FROM queen.pop_v2("
    "$1::uuid, $2::text, $3::text, $4::text, $5::int4, $6::bool, $7::text, $8::int8, $9::int4, $10::uuid[], $11::int4, "
    "$12::bool, $13::int8[], $14::bool)";

static void p_set(sql_params *p, const char *v)
{
    int i = p->n++;
    p->values[i] = v;
    p->lengths[i] = 0;
    p->formats[i] = 0;
}

static void p_i64(sql_params *p, int64_t v)
{
    int i = p->n++;
    snprintf(p->text[i], sizeof p->text[i], "%lld", (long long)v);
    p->values[i] = p->text[i];
    p->lengths[i] = 0;
    p->formats[i] = 0;
}

const char POP_NS_SQL[] =
    "SELECT * FROM queen.pop_ns_v2("
    "$1::uuid, $2::text, $3::text, $4::text, $5::int4, $6::bool, $7::text, $8::int8, $9::int4, $10::uuid[], $11::int4, "
    "$12::bool)";

void pop_params(const pop_args *a, sql_params *p)
{
    memset(p, 0, sizeof *p);
    int i = p->n;
    format_uuid_text(a->tenant, p->text[i]);
    p_set(p, p->text[i]);
    if (a->ns) {
        p_set(p, a->ns);
        p_set(p, a->task);
    } else {
        p_set(p, a->queue);
        p_set(p, a->partition);
    }
    p_set(p, a->group);
    p_i64(p, a->batch);
    p_set(p, a->auto_ack ? "true" : "false");
    p_set(p, a->sub_mode);
    if (a->sub_from)
        p_i64(p, a->sub_from);
    else
        p_set(p, NULL);
    p_i64(p, a->max_partitions);
    pgarray_begin(&p->arr[0], OID_UUID);
    for (uint32_t k = 0; k < a->nleases; k++)
        pgarray_add(&p->arr[0], a->leases[k].b, 16);
    pgarray_finish(&p->arr[0]);
    i = p->n++;
    p->values[i] = p->arr[0].b.data;
    p->lengths[i] = (int)p->arr[0].b.len;
    p->formats[i] = 1;
    p_i64(p, a->lease_seconds);
    if (!a->ns) {
        p_set(p, a->split ? "true" : "false");
        if (a->hints) {
            pgarray_begin(&p->arr[1], OID_INT8);
            for (uint32_t k = 0; k < a->nhints; k++)
                pgarray_add_i64(&p->arr[1], (int64_t)a->hints[k]);
            pgarray_finish(&p->arr[1]);
            i = p->n++;
            p->values[i] = p->arr[1].b.data;
            p->lengths[i] = (int)p->arr[1].b.len;
            p->formats[i] = 1;
        } else {
            p_set(p, NULL);
        }
    }
    p_set(p, a->conflation ? "true" : "false");
}

static int64_t i64_at(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : (int64_t)be_get64((const uint8_t *)PQgetvalue(r, row, col));
}

int pop_decode(PGresult *res, pop_record_fn on_record, pop_partition_fn on_partition, void *arg,
               pop_outcome *out)
{
    pop_decoder dec;
    pop_decoder_init(&dec, on_record, on_partition, arg, out);
    int rows = PQntuples(res);
    int has_qname = PQnfields(res) > POP_QNAME;
    for (int i = 0; i < rows; i++) {
        pop_row r = {
            .kind = db_get_i32(res, i, POP_KIND),
            .pid = (uint64_t)i64_at(res, i, POP_PID),
            .puuid = (const uint8_t *)PQgetvalue(res, i, POP_PUUID),
            .pname = PQgetvalue(res, i, POP_PNAME),
            .pname_len = (size_t)PQgetlength(res, i, POP_PNAME),
            .a = i64_at(res, i, POP_A),
            .b = i64_at(res, i, POP_B),
            .c = i64_at(res, i, POP_C),
            .seg_ts = i64_at(res, i, POP_SEG_TS),
            .seg_ts_null = PQgetisnull(res, i, POP_SEG_TS),
            .seg_count_null = PQgetisnull(res, i, POP_SEG_COUNT),
            .seg_data = (const uint8_t *)PQgetvalue(res, i, POP_SEG_DATA),
            .seg_len = (size_t)PQgetlength(res, i, POP_SEG_DATA),
        };
        if (!r.seg_count_null)
            r.seg_count = db_get_i32(res, i, POP_SEG_COUNT);
        if (has_qname && !PQgetisnull(res, i, POP_QNAME)) {
            r.qname = PQgetvalue(res, i, POP_QNAME);
            r.qname_len = (size_t)PQgetlength(res, i, POP_QNAME);
        }
        if (pop_decoder_row(&dec, &r) < 0)
            return -1;
    }
    pop_decoder_end(&dec);
    return 0;
}

const char LEASE_STORE_SQL[] =
    "SELECT queen.lease_store_v1($1::text, $2::uuid[], $3::int8[], $4::int4[], $5::text[])";

void lease_store_init(lease_store *ls)
{
    memset(ls, 0, sizeof *ls);
    pgarray_begin(&ls->leases, OID_UUID);
    pgarray_begin(&ls->pids, OID_INT8);
    pgarray_begin(&ls->counts, OID_INT4);
    pgarray_begin(&ls->txns, OID_TEXT);
}

void lease_store_add_partition(lease_store *ls, const uuid *lease, uint64_t pid, uint32_t count)
{
    pgarray_add(&ls->leases, lease->b, 16);
    pgarray_add_i64(&ls->pids, (int64_t)pid);
    pgarray_add_i32(&ls->counts, (int32_t)count);
}

void lease_store_add_txn(lease_store *ls, const char *txn, size_t len)
{
    pgarray_add(&ls->txns, txn, len);
}

void lease_store_add_deleted(lease_store *ls)
{
    pgarray_add_null(&ls->txns);
}

void lease_store_finish(lease_store *ls, const char *group)
{
    sql_params *p = &ls->sp;
    p->n = 0;
    p_set(p, group);
    pgarray *arrs[4] = {&ls->leases, &ls->pids, &ls->counts, &ls->txns};
    for (int k = 0; k < 4; k++) {
        pgarray_finish(arrs[k]);
        int i = p->n++;
        p->values[i] = arrs[k]->b.data;
        p->lengths[i] = (int)arrs[k]->b.len;
        p->formats[i] = 1;
    }
}

void lease_store_free(lease_store *ls)
{
    pgarray_free(&ls->leases);
    pgarray_free(&ls->pids);
    pgarray_free(&ls->counts);
    pgarray_free(&ls->txns);
}

const char ACK_SQL[] =
    "SELECT * FROM queen.ack_v1("
    "$1::uuid, $2::text, $3::uuid[], $4::text[], $5::text[], $6::uuid[], $7::text[]) ORDER BY idx";

const char LEASE_EXTEND_SQL[] = "SELECT * FROM queen.lease_extend_v2($1::uuid, $2::uuid, $3::int4)";
