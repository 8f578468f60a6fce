/* popdec.c — the pop result's rows, decoded (popdec.h). */
#include "popdec.h"

#include <stdio.h>
#include <string.h>

void pop_decoder_init(pop_decoder *d, pop_record_fn on_record, pop_partition_fn on_partition, void *arg,
                      pop_outcome *out)
{
    memset(d, 0, sizeof *d);
    d->on_record = on_record;
    d->on_partition = on_partition;
    d->arg = arg;
    d->out = out;
    memset(out, 0, sizeof *out);
}

int pop_decoder_row(pop_decoder *d, const pop_row *r)
{
    pop_outcome *out = d->out;
    if (r->kind != POP_ROW_SEGMENT && d->have) {
        if (d->on_partition)
            d->on_partition(d->arg, &d->cur);
        d->have = 0;
    }
    if (r->kind == POP_ROW_EMPTY) {
        snprintf(out->why, sizeof out->why, "%.*s", (int)r->pname_len, r->pname ? r->pname : "");
        out->retry_at = r->c;
        return 0;
    }
    if (r->kind == POP_ROW_POLICY) {
        out->policy = 1;
        out->conflation = r->a != 0;
        out->conflict = r->b != 0;
        return 0;
    }
    if (r->kind == POP_ROW_CONFLATED) {
        if (r->a > 0)
            out->conflated += (uint64_t)r->a;
        return 0;
    }
    if (r->kind == POP_ROW_HINT) {
        popped_partition hint;
        memset(&hint, 0, sizeof hint);
        hint.index = -1;
        hint.id = r->pid;
        if (d->on_partition)
            d->on_partition(d->arg, &hint);
        return 0;
    }
    if (r->kind == POP_ROW_CLAIM) {
        popped_partition *cur = &d->cur;
        memset(cur, 0, sizeof *cur);
        cur->index = d->claims++;
        cur->id = r->pid;
        cur->uuid = r->puuid;
        cur->name = r->pname;
        cur->name_len = r->pname_len;
        cur->start = r->a;
        cur->end = r->b;
        cur->lease_expires = r->c;
        cur->more = !r->seg_count_null && r->seg_count == 1;
        cur->attempt = r->seg_ts_null ? 1 : (uint32_t)r->seg_ts;
        /* pop_ns_v1's rows carry the queue of each claim */
        cur->queue = r->qname;
        cur->queue_len = r->qname ? r->qname_len : 0;
        out->claimed++;
        d->have = 1;
        return 0;
    }
    /* a segment belongs to the claim before it (pop_v1 sends none before the first claim;
     * one would read against a zeroed claim and deliver nothing) */
    seg_reader sr;
    if (seg_reader_init(&sr, r->seg_data, r->seg_len, (uint64_t)r->a, (uint32_t)r->seg_count) < 0)
        return -1;
    seg_reader_skip_below(&sr, (uint64_t)d->cur.start);
    record_view v;
    int rc;
    while ((rc = seg_reader_next(&sr, &v)) == 1) {
        if ((int64_t)v.offset < d->cur.start)
            continue;
        if ((int64_t)v.offset >= d->cur.end)
            break;
        out->records++;
        d->on_record(d->arg, &d->cur, &v, r->seg_ts);
    }
    seg_reader_done(&sr);
    return rc < 0 ? -1 : 0;
}

void pop_decoder_end(pop_decoder *d)
{
    if (d->have && d->on_partition)
        d->on_partition(d->arg, &d->cur);
    d->have = 0;
}
