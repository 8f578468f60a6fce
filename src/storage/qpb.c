/* qpb.c — decoding the QPB1 binary push body (see qpb.h). */
#include "qpb.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "core/zdctx.h"
#include "json/json.h"

typedef struct rd {
    const uint8_t *p;
    size_t n;
    size_t at;
} rd;

static int fail(qpb_error *e, const char *reason, int64_t group, int64_t item, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(qpb_error *e, const char *reason, int64_t group, int64_t item, const char *fmt, ...)
{
    e->reason = reason;
    e->group = group;
    e->item = item;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (group >= 0 && item >= 0)
        snprintf(e->detail, sizeof e->detail, "binary push: group %lld, message %lld: %s", (long long)group,
                 (long long)item, msg);
    else if (group >= 0)
        snprintf(e->detail, sizeof e->detail, "binary push: group %lld: %s", (long long)group, msg);
    else
        snprintf(e->detail, sizeof e->detail, "binary push: %s", msg);
    return -1;
}

static int get_u8(rd *r, uint8_t *v)
{
    if (r->n - r->at < 1)
        return -1;
    *v = r->p[r->at++];
    return 0;
}

static int get_u16(rd *r, uint32_t *v)
{
    if (r->n - r->at < 2)
        return -1;
    *v = (uint32_t)r->p[r->at] | (uint32_t)r->p[r->at + 1] << 8;
    r->at += 2;
    return 0;
}

static int get_u32(rd *r, uint32_t *v)
{
    if (r->n - r->at < 4)
        return -1;
    const uint8_t *p = r->p + r->at;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    r->at += 4;
    return 0;
}

static int get_span(rd *r, size_t len, const uint8_t **out)
{
    if (r->n - r->at < len)
        return -1;
    *out = r->p + r->at;
    r->at += len;
    return 0;
}

int qpb_is(const void *body, size_t len)
{
    return body && len >= 4 && memcmp(body, "QPB1", 4) == 0;
}

/* A name or transaction id: UTF-8, no NUL, bounded. */
static int text_ok(const uint8_t *p, size_t n)
{
    return memchr(p, '\0', n) == NULL && utf8_valid(p, n) == 0;
}

static int name(rd *r, qpb_error *e, int64_t g, const char *what, const char *reason, const char **out,
                uint32_t *olen)
{
    uint32_t len;
    const uint8_t *p;
    if (get_u16(r, &len) < 0 || get_span(r, len, &p) < 0)
        return fail(e, "truncated", g, -1, "the body ends inside the %s name", what);
    if (len == 0 || len > QPB_NAME_MAX || !text_ok(p, len))
        return fail(e, reason, g, -1, "the %s name must be 1 to %u bytes of UTF-8 without NUL characters", what,
                    QPB_NAME_MAX);
    *out = (const char *)p;
    *olen = len;
    return 0;
}

static int txn_ok(const uint8_t *p, uint32_t len, qpb_error *e, int64_t g, int64_t i)
{
    if (len > QPB_TXN_MAX || !text_ok(p, len))
        return fail(e, "bad_transaction_id", g, i,
                    "the transactionId must be at most %u bytes of UTF-8 without NUL characters", QPB_TXN_MAX);
    return 0;
}

static int payload_ok(const uint8_t *p, uint32_t len, qpb_error *e, int64_t g, int64_t i)
{
    if (len == 0)
        return fail(e, "bad_payload", g, i, "the payload is empty: it must be one JSON text");
    json_doc jd;
    memset(&jd, 0, sizeof jd);
    json_opts jo = {.token_depth = 1};
    int rc = json_parse(&jd, (const char *)p, len, &jo);
    if (rc < 0)
        fail(e, "bad_payload", g, i, "the payload is not one JSON text: %s", jd.err);
    json_doc_free(&jd);
    return rc < 0 ? -1 : 0;
}

/* One zstd frame, exactly, declaring its content size, at most *budget bytes decompressed. */
static int unzstd(const uint8_t *z, size_t zlen, size_t *budget, arena *ar, const uint8_t **out, size_t *olen,
                  qpb_error *e, int64_t g, const char *what)
{
    unsigned long long size = ZSTD_getFrameContentSize(z, zlen);
    if (size == ZSTD_CONTENTSIZE_ERROR)
        return fail(e, "zstd_invalid", g, -1, "%s is not a zstd frame", what);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN)
        return fail(e, "zstd_invalid", g, -1, "%s's zstd frame must declare its content size in its header", what);
    if (size > *budget)
        return fail(e, "too_large", g, -1, "%s decompresses to %llu bytes, over what the request may expand to (%zu left)",
                    what, size, *budget);
    size_t fsz = ZSTD_findFrameCompressedSize(z, zlen);
    if (ZSTD_isError(fsz) || fsz != zlen)
        return fail(e, "zstd_invalid", g, -1, "%s must be exactly one zstd frame", what);
    uint8_t *dst = arena_alloc(ar, size ? (size_t)size : 1);
    size_t got = zdctx_decompress(dst, (size_t)size, z, zlen);
    if (ZSTD_isError(got) || got != size)
        return fail(e, "zstd_invalid", g, -1, "%s's zstd frame does not decompress: %s", what,
                    ZSTD_isError(got) ? ZSTD_getErrorName(got) : "shorter than its header says");
    *budget -= (size_t)size;
    *out = dst;
    *olen = (size_t)size;
    return 0;
}

/* The frames of one flag-8 group: n frames filling the decompressed bytes exactly. */
static int frames(const uint8_t *p, size_t len, uint32_t n, qpb_item *items, uint32_t g, qpb_error *e)
{
    rd r = {p, len, 0};
    for (uint32_t i = 0; i < n; i++) {
        qpb_item *it = &items[i];
        uint32_t blen, tlen;
        uint8_t fl;
        const uint8_t *body, *id, *txn;
        if (get_u32(&r, &blen) < 0 || get_span(&r, blen, &body) < 0)
            return fail(e, "bad_frame", g, i, "the frame's length runs past its group's %zu decompressed bytes", len);
        rd f = {body, blen, 0};
        if (get_u8(&f, &fl) < 0 || get_span(&f, 16, &id) < 0 || get_u16(&f, &tlen) < 0 || get_span(&f, tlen, &txn) < 0)
            return fail(e, "bad_frame", g, i, "the frame (%u bytes) ends inside its head (flags, id, transactionId)", blen);
        if (fl != 0)
            return fail(e, "bad_frame", g, i, "the frame's flag byte is %u; a pushed frame carries 0", fl);
        if ((id[6] & 0xF0) != 0x70 || (id[8] & 0xC0) != 0x80)
            return fail(e, "bad_message_id", g, i, "the message id is not a version-7 UUID");
        if (txn_ok(txn, tlen, e, g, i) < 0)
            return -1;
        const uint8_t *pl = body + f.at;
        uint32_t plen = blen - (uint32_t)f.at;
        if (payload_ok(pl, plen, e, g, i) < 0)
            return -1;
        it->has_id = 1;
        memcpy(it->id, id, 16);
        it->txn = tlen ? (const char *)txn : NULL;
        it->txn_len = tlen;
        it->payload = (const char *)pl;
        it->payload_len = plen;
    }
    if (r.at != len)
        return fail(e, "trailing_bytes", g, -1, "%zu bytes follow the group's %u frames in its zstd frame", len - r.at, n);
    return 0;
}

/* u32 groups | the groups (flag 8: frames), to the end of r. */
static int decode_groups(rd *rr, uint8_t flags, size_t budget, arena *ar, qpb_body *out, qpb_error *e)
{
    rd r = *rr;
    uint32_t groups;
    if (get_u32(&r, &groups) < 0)
        return fail(e, "truncated", -1, -1, "the body ends before its group count");
    /* every group takes at least 2+1+2+1+4 bytes: bounds the count before anything is sized by it */
    if (groups > (r.n - r.at) / 10)
        return fail(e, "truncated", -1, -1, "%u groups do not fit in the %zu bytes that follow", groups, r.n - r.at);
    out->groups = groups;
    if (flags & QPB_FLAG_FRAMES)
        out->zgroups = arena_alloc(ar, (groups ? groups : 1) * sizeof *out->zgroups);
    size_t cap = 0, total = 0;
    qpb_item *items = NULL;
    for (uint32_t g = 0; g < groups; g++) {
        const char *q, *p;
        uint32_t qlen, plen, n;
        if (name(&r, e, g, "queue", "bad_queue", &q, &qlen) < 0 ||
            name(&r, e, g, "partition", "bad_partition", &p, &plen) < 0)
            return -1;
        if (get_u32(&r, &n) < 0)
            return fail(e, "truncated", g, -1, "the body ends before the group's message count");
        const uint8_t *zp = NULL;
        size_t zlen = 0;
        if (flags & QPB_FLAG_FRAMES) {
            uint32_t zl;
            if (get_u32(&r, &zl) < 0 || get_span(&r, zl, &zp) < 0)
                return fail(e, "truncated", g, -1, "the body ends inside the group's zstd frame");
            zlen = zl;
        } else if (n > (r.n - r.at) / 4) {
            return fail(e, "truncated", g, -1, "%u messages do not fit in the %zu bytes that follow", n, r.n - r.at);
        }
        if (n == 0)
            return fail(e, "bad_frame", g, -1, "a group must hold at least one message");
        const uint8_t *fr = NULL;
        size_t frn = 0;
        if (flags & QPB_FLAG_FRAMES) {
            if (unzstd(zp, zlen, &budget, ar, &fr, &frn, e, g, "the group") < 0)
                return -1;
            out->raw_bytes += frn;
            /* the smallest frame is 4 + 1 + 16 + 2 + 1 bytes */
            if (n > frn / 24)
                return fail(e, "bad_frame", g, -1, "%u frames do not fit in the group's %zu decompressed bytes", n, frn);
        }
        if (total + n > cap) {
            size_t ncap = cap ? cap * 2 : 64;
            while (ncap < total + n)
                ncap *= 2;
            qpb_item *grown = arena_alloc(ar, ncap * sizeof *grown);
            if (total)
                memcpy(grown, items, total * sizeof *grown);
            items = grown;
            cap = ncap;
        }
        qpb_item *gi = items + total;
        memset(gi, 0, n * sizeof *gi);
        for (uint32_t i = 0; i < n; i++) {
            gi[i].queue = q;
            gi[i].queue_len = qlen;
            gi[i].partition = p;
            gi[i].partition_len = plen;
            gi[i].group = g;
            gi[i].pos = i;
        }
        if (flags & QPB_FLAG_FRAMES) {
            if (frames(fr, frn, n, gi, g, e) < 0)
                return -1;
            out->zgroups[g] = (qpb_zgroup){zp, zlen, (uint32_t)total, n};
        } else {
            for (uint32_t i = 0; i < n; i++) {
                if (flags & QPB_FLAG_TXN) {
                    uint32_t tl;
                    const uint8_t *t;
                    if (get_u16(&r, &tl) < 0 || get_span(&r, tl, &t) < 0)
                        return fail(e, "truncated", g, i, "the body ends inside the transactionId");
                    if (txn_ok(t, tl, e, g, i) < 0)
                        return -1;
                    gi[i].txn = tl ? (const char *)t : NULL;
                    gi[i].txn_len = tl;
                }
                uint32_t pl;
                const uint8_t *pp;
                if (get_u32(&r, &pl) < 0 || get_span(&r, pl, &pp) < 0)
                    return fail(e, "truncated", g, i, "the body ends inside the payload");
                if (payload_ok(pp, pl, e, g, i) < 0)
                    return -1;
                gi[i].payload = (const char *)pp;
                gi[i].payload_len = pl;
            }
        }
        total += n;
        if (total > UINT32_MAX / 2)
            return fail(e, "too_large", g, -1, "too many messages in one request");
    }
    if (r.at != r.n)
        return fail(e, "trailing_bytes", -1, -1, "%zu bytes follow the last group", r.n - r.at);
    if (total == 0)
        return fail(e, "truncated", -1, -1, "the body holds no group");
    out->n = (uint32_t)total;
    out->items = items;
    return 0;
}

int qpb_decode(const void *body, size_t len, size_t max_raw, arena *ar, qpb_body *out, qpb_error *e)
{
    memset(out, 0, sizeof *out);
    memset(e, 0, sizeof *e);
    rd r = {body, len, 0};
    const uint8_t *magic;
    if (get_span(&r, 4, &magic) < 0 || memcmp(magic, "QPB1", 4) != 0)
        return fail(e, "bad_magic", -1, -1, "the body does not start with QPB1");
    uint8_t flags;
    if (get_u8(&r, &flags) < 0)
        return fail(e, "truncated", -1, -1, "the body ends before its flags");
    if (flags & ~(QPB_FLAG_ZSTD | QPB_FLAG_COUNTS | QPB_FLAG_TXN | QPB_FLAG_FRAMES))
        return fail(e, "bad_flags", -1, -1, "unknown flags 0x%02x (known: 1 zstd, 2 counts, 4 transaction ids, 8 frames)",
                    flags);
    if ((flags & QPB_FLAG_ZSTD) && (flags & QPB_FLAG_FRAMES))
        return fail(e, "bad_flags", -1, -1, "flags 1 (zstd body) and 8 (compressed frames) do not combine");
    out->flags = flags;
    size_t budget = max_raw;
    if (flags & QPB_FLAG_ZSTD) {
        uint32_t raw_len;
        if (get_u32(&r, &raw_len) < 0)
            return fail(e, "truncated", -1, -1, "the body ends before raw_len");
        const uint8_t *raw;
        size_t rawn;
        if (unzstd(r.p + r.at, r.n - r.at, &budget, ar, &raw, &rawn, e, -1, "the body") < 0)
            return -1;
        if (rawn != raw_len)
            return fail(e, "zstd_invalid", -1, -1, "raw_len says %u bytes, the zstd frame holds %zu", raw_len, rawn);
        out->raw_bytes = rawn;
        r = (rd){raw, rawn, 0};
    }
    return decode_groups(&r, flags, budget, ar, out, e);
}


int qtb_is(const void *body, size_t len)
{
    return body && len >= 4 && memcmp(body, "QTB1", 4) == 0;
}

int qtb_decode(const void *body, size_t len, size_t max_raw, arena *ar, const char **head, size_t *head_len,
               uint8_t *flags_out, qpb_body *out, qpb_error *e)
{
    memset(out, 0, sizeof *out);
    memset(e, 0, sizeof *e);
    rd r = {body, len, 0};
    const uint8_t *magic, *h;
    uint8_t flags;
    uint32_t hl;
    if (get_span(&r, 4, &magic) < 0 || memcmp(magic, "QTB1", 4) != 0)
        return fail(e, "bad_magic", -1, -1, "the body does not start with QTB1");
    if (get_u8(&r, &flags) < 0)
        return fail(e, "truncated", -1, -1, "the body ends before its flags");
    if (flags & ~QPB_FLAG_COUNTS)
        return fail(e, "bad_flags", -1, -1, "unknown flags 0x%02x (known: 2 counts)", flags);
    if (get_u32(&r, &hl) < 0 || get_span(&r, hl, &h) < 0)
        return fail(e, "truncated", -1, -1, "the body ends inside its JSON head");
    *head = (const char *)h;
    *head_len = hl;
    *flags_out = flags;
    out->flags = flags;
    return decode_groups(&r, QPB_FLAG_FRAMES, max_raw, ar, out, e);
}
