/* readreq.h — the requests of the lease-free reads (POST /api/v1/fetch and POST
 * /api/v1/partitions/changed in the 2.x shape): their limits, what a parsed request holds, and
 * the parsers of their bodies. Pure: no libuv, no libpq (storage/logread.h runs them). */
#ifndef QUEEN_STORAGE_READREQ_H
#define QUEEN_STORAGE_READREQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/qerr.h"
#include "json/json.h"

/* Limits of one fetch call (POST /api/v1/fetch). The 2.x client sends at most 1000 entries
 * and reads 8 MiB per entry by default; more entries are refused, larger byte budgets are
 * clamped (the client passes its own max_bytes for both, whatever it is). */
#define FETCH_MAX_ENTRIES 1024
#define FETCH_DEFAULT_MAX_BYTES (8 << 20)
#define FETCH_ENTRY_MAX_BYTES (8 << 20)   /* the most one entry reads */
#define FETCH_CALL_MAX_BYTES (64 << 20)   /* the most one call reads */
/* Records in one answer at most: the byte budgets count payload bytes only, so a log of tiny
 * records would otherwise make an answer of up to 64 Mi records. */
#define FETCH_CALL_MAX_RECORDS 100000
/* Segments the statement reads per call at most, shared by its entries (each gets at least
 * FETCH_MIN_SEGMENTS_PER_ENTRY): bounds the rows one call makes PostgreSQL read whatever the
 * shape of the logs. An entry cut short answers fewer records; the reader asks again from the
 * next offset, as it does when a byte budget cut it. */
#define FETCH_CALL_SEGMENTS 4096
#define FETCH_MIN_SEGMENTS_PER_ENTRY 4

/* Discovery (POST /api/v1/partitions/changed): entries per call, partitions per page. */
#define CHANGED_MAX_ENTRIES 1024
#define CHANGED_DEFAULT_LIMIT 1000
#define CHANGED_MAX_LIMIT 1000

/* One entry: a partition read from an offset. The strings belong to the caller. */
typedef struct fetch_entry {
    const char *queue;
    const char *partition;
    int64_t offset;
    int64_t max_bytes; /* payload bytes this entry may return, 1..FETCH_ENTRY_MAX_BYTES */
} fetch_entry;

typedef struct fetch_args {
    uint8_t tenant[16];
    const fetch_entry *entries;
    uint32_t n;           /* 0..FETCH_MAX_ENTRIES */
    int64_t max_bytes;    /* payload bytes of the whole call, 1..FETCH_CALL_MAX_BYTES */
    int64_t max_records;  /* records of the whole call, 1..FETCH_CALL_MAX_RECORDS */
} fetch_args;

typedef struct changed_entry {
    const char *queue;
    int has_since;
    int64_t since;  /* inclusive stamp (µs): partitions whose last record is stamped at or after */
    int64_t after;  /* page cursor: only partitions created after this id (0 = from the first) */
    int64_t limit;  /* 1..CHANGED_MAX_LIMIT */
} changed_entry;

typedef struct changed_args {
    uint8_t tenant[16];
    const changed_entry *entries;
    uint32_t n; /* 0..CHANGED_MAX_ENTRIES */
} changed_args;

/* safeTime is refreshed (the queue clock ticked) when it is older than this */
#define SAFE_TICK_MIN_AGE_US 200000

/* Parse a request body (an object) into *a; the strings and the entries live in `ar`, the
 * tenant is the caller's to set. QERR_OK, or QERR_BAD_INPUT with err->code a stable id
 * (invalid_request, too_many_entries, invalid_time, invalid_cursor) and err->text the prose
 * for the client (core/qerr.h). Unknown fields are refused, never ignored. */
qerr fetch_parse_request(const json_doc *d, arena *ar, fetch_args *a, qerr_detail *err);
qerr changed_parse_request(const json_doc *d, arena *ar, changed_args *a, qerr_detail *err);

#endif
