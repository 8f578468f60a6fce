/* logread.h — lease-free reads of the log: fetch, partitions changed since a stamp, safeTime.
 *
 * Each read is a fixed SQL text plus parameters (built here) and a decoder for its result
 * (also here), so the HTTP handlers on the loop and in-process callers on their own threads
 * and connections (the S3 sink) run exactly the same query and decoding. Nothing here takes
 * a lease or moves a cursor. */
#ifndef QUEEN_STORAGE_LOGREAD_H
#define QUEEN_STORAGE_LOGREAD_H

#include <libpq-fe.h>
#include <stdint.h>

#include "core/buf.h"
#include "db/pgarray.h"
#include "record.h"

#define FETCH_MAX_RECORDS_LIMIT 100000
#define FETCH_MAX_BYTES_LIMIT (64 << 20)
#define CHANGED_LIMIT_MAX 10000
/* safeTime is refreshed (the queue clock ticked) when it is older than this */
#define SAFE_TICK_MIN_AGE_US 200000

typedef struct fetch_args {
    uint8_t tenant[16];
    const char *queue;
    const char *partition;  /* NULL = every partition of the queue */
    int64_t from_offset;    /* default start for every partition */
    const char **names;     /* optional per-partition starts */
    const int64_t *offsets;
    uint32_t noffsets;
    int64_t max_records;
    int64_t max_bytes;
    int64_t max_ts;         /* exclusive bound on record stamps; 0 = none */
} fetch_args;

/* Parameter storage for one query (values point into it). */
#define SQL_MAX_PARAMS 16
typedef struct sql_params {
    const char *values[SQL_MAX_PARAMS];
    int lengths[SQL_MAX_PARAMS];
    int formats[SQL_MAX_PARAMS];
    int n;
    char text[SQL_MAX_PARAMS][48];
    pgarray arr[2];
} sql_params;

void sql_params_free(sql_params *p);

extern const char FETCH_SQL[];
void fetch_params(const fetch_args *a, sql_params *p);

typedef struct fetch_partition {
    const char *name;
    size_t name_len;
    uint64_t id;
    const uint8_t *uuid; /* 16 bytes */
    int64_t start_offset;
    int64_t end_offset;  /* next offset to be written */
    int64_t from;        /* requested start */
    int64_t next_offset; /* where to continue: last delivered + 1, or `from` */
    uint32_t delivered;
} fetch_partition;

/* Called per record in (partition, offset) order; return non-zero to stop. */
typedef int (*fetch_record_fn)(void *arg, const fetch_partition *p, const record_view *v, int64_t ts);
/* Called once per partition after its records (also when none were delivered). */
typedef void (*fetch_partition_fn)(void *arg, const fetch_partition *p);

enum fetch_result { FETCH_OK = 0, FETCH_NO_QUEUE, FETCH_NO_PARTITION, FETCH_CORRUPT };

typedef struct fetch_summary {
    uint64_t records;
    uint64_t bytes;
    int more; /* the limits cut the answer: reading on from the nextOffsets returns more */
} fetch_summary;

enum fetch_result fetch_decode(PGresult *res, const fetch_args *a, fetch_record_fn on_record,
                               fetch_partition_fn on_partition, void *arg, fetch_summary *sum);

/* Writes one record as JSON: partition, offset, transactionId, ts, payload, traceId, producerSub. */
void fetch_record_json(buf *b, const fetch_partition *p, const record_view *v, int64_t ts);

/* partitions changed since a stamp, with the queue's safeTime from the same snapshot */
typedef struct changed_args {
    uint8_t tenant[16];
    const char *queue;
    int64_t since;     /* exclusive */
    const char *after; /* partition name cursor ("" = from the start) */
    int64_t limit;
} changed_args;

extern const char TICK_QUEUE_SQL[];
extern const char CHANGED_SQL[];
void tick_queue_params(const uint8_t tenant[16], const char *queue, sql_params *p);
void changed_params(const changed_args *a, sql_params *p);

typedef struct changed_row {
    const char *name;
    size_t name_len;
    const uint8_t *uuid;
    int64_t start_offset, end_offset, last_ts;
} changed_row;

/* Returns 0, or -1 when the queue does not exist. */
int changed_decode(PGresult *res, int64_t limit, int64_t *safe_time, void (*on_row)(void *, const changed_row *),
                   void *arg, int *more);

/* Per-queue summaries for /status: the queues of one tenant ($1), their clocks ticked first. */
extern const char TICK_TENANT_SQL[];
extern const char STATUS_QUEUES_SQL[];

void format_uuid_text(const uint8_t b[16], char out[37]);

#endif
