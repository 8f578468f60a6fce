/* sinkdb.h — the S3 sink's PostgreSQL calls, on a blocking libpq connection that one sink
 * thread owns (the sink never touches the loop's pool). Each call is one statement, its own
 * transaction; a lost connection is reconnected by the next call.
 *
 * The reads are the lease-free reads of the log (no lease, no cursor): the queue clock ticked
 * and read (safeTime), the records stamped in a time slice, positions by time, and the queue
 * list of a tenant. SQL: src/db/functions/sink_*_v1.sql. */
#ifndef QUEEN_SINK_SINKDB_H
#define QUEEN_SINK_SINKDB_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "kv/kv.h"

typedef struct sinkdb {
    PGconn *c;          /* NULL while disconnected */
    char *conninfo;     /* owned */
    int64_t statement_timeout_ms;
    int64_t connect_timeout_ms;
    uint64_t next_try_ms; /* no reconnect before this (backoff) */
    int backoff_ms;
    char err[512];      /* the last failure, for status */
} sinkdb;

void sinkdb_init(sinkdb *d, const char *conninfo, int64_t statement_timeout_ms, int64_t connect_timeout_ms);
void sinkdb_close(sinkdb *d);
/* 0 when connected (connecting now if needed), -1 (d->err says why; backing off). */
int sinkdb_ensure(sinkdb *d);

/* The queue clock, ticked: *qid, *safe_time, *now_us (the database's clock). 0, 1 when the
 * queue does not exist, -1 on a database failure (d->err). */
int sinkdb_clock(sinkdb *d, const uint8_t tenant[16], const char *queue, int64_t *qid, int64_t *safe_time,
                 int64_t *now_us);

/* One partition row of a slice or a position scan. */
typedef struct sinkdb_part {
    const char *name;
    size_t name_len;
    const uint8_t *uuid;  /* 16 bytes */
    int64_t start_offset; /* first offset still stored */
    int64_t next_offset;  /* next offset to be written */
    int64_t last_offset;  /* positions: greatest offset stamped in the range, -1 = none */
    int64_t last_ts;      /* slices: the stamp of the partition's last record; 0 otherwise */
} sinkdb_part;

/* One segment of a slice (data is the encoded records, storage/record.h). */
typedef struct sinkdb_seg {
    const char *name;
    size_t name_len;
    const uint8_t *uuid;
    int64_t base_offset;
    int64_t ts;
    uint32_t count;
    const uint8_t *data;
    size_t data_len;
} sinkdb_seg;

typedef struct sinkdb_slice_cb {
    void *arg;
    void (*on_part)(void *arg, const sinkdb_part *p); /* every partition moved since `from` */
    int (*on_seg)(void *arg, const sinkdb_seg *s);    /* non-zero stops (corrupt data) */
} sinkdb_slice_cb;

/* The records of queue qid stamped in [from, to), cut by `budget` bytes at a stamp boundary
 * and, with align_us > 0, at the first hour/day boundary above its first record (*end = where
 * the slice really ends, <= to). Partitions come first (on_part), then segments (on_seg).
 * 0, -1 on a database failure (d->err), or -2 when on_seg refused a segment (corrupt data:
 * reading it again gives the same answer). */
int sinkdb_slice(sinkdb *d, int64_t qid, int64_t from, int64_t to, int64_t budget, int64_t align_us,
                 const sinkdb_slice_cb *cb, int64_t *end);

/* For each partition moved since from: the greatest offset stamped in [from, to). 0 or -1. */
int sinkdb_positions(sinkdb *d, int64_t qid, int64_t from, int64_t to, void (*on_part)(void *, const sinkdb_part *),
                     void *arg);

/* Every partition of the queue with its first offset stamped at or after t (in
 * p->last_offset; its next offset when none is). 0 or -1. */
int sinkdb_positions_at(sinkdb *d, int64_t qid, int64_t t, void (*on_part)(void *, const sinkdb_part *), void *arg);

/* The tenant's queue names, in name order (*names heap array of heap strings). 0 or -1. */
int sinkdb_queues(sinkdb *d, const uint8_t tenant[16], char ***names, int *n);
void sinkdb_names_free(char **names, int n);

/* A KV batch (kv_batch_sync): 0 with *out (check out->fail), -1 on a database failure. */
int sinkdb_kv(sinkdb *d, const uint8_t tenant[16], const kv_op *ops, int n, kv_outcome *out);

/* Live keys of a namespace under a prefix: how many (values unread). 0 or -1. */
int sinkdb_kv_count(sinkdb *d, const uint8_t tenant[16], const char *ns, const char *prefix, int64_t *count);

/* One control-plane tenant sink row (cp_s3_sinks_v1). Strings owned. */
typedef struct sinkdb_cp_row {
    char cluster[64];
    uint8_t tenant[16];
    int enabled;
    char *config;          /* the settings' canonical JSON */
    char *sealed;          /* base64 of the sealed secret, NULL when none is stored */
    char effective[16];    /* active, push_blocked or suspended */
    int64_t updated_us;
} sinkdb_cp_row;

/* Every control-plane tenant sink (*rows heap array). 0 or -1 (d->err). */
int sinkdb_cp_sinks(sinkdb *d, sinkdb_cp_row **rows, int *n);
void sinkdb_cp_rows_free(sinkdb_cp_row *rows, int n);

#endif
