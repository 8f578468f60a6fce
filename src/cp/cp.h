/* cp.h — the embedded proxy's view of the control plane on one node (docs/control-plane.md).
 *
 * Every node keeps the clusters in memory and reads them again once a second in one round
 * trip (cp_clusters_v1), together with the request-rate sync (cp_sync_v1: this node's counts
 * of the second that ended, the other nodes' in return); every fifth round also measures each
 * capped cluster's storage. Admission (cp_admit) is a hash lookup and a counter: no request
 * waits for the database. A control-plane write on this node asks for a round at once
 * (cp_node_refresh) and answers after it, so this node applies its own writes before it
 * answers; the other nodes apply them within a second.
 *
 * Loop-thread only. */
#ifndef QUEEN_CP_CP_H
#define QUEEN_CP_CP_H

#include <stdint.h>
#include <uv.h>

#include "core/buf.h"
#include "cp/cpcfg.h"
#include "db/pg.h"
#include "metrics/metrics.h"

/* The proxy's own tenant (00000000-0000-0000-0000-000000000002, made by migration 090): its KV
 * holds the clusters' sealed S3 secrets. No cluster may take it and no credential reaches it. */
extern const uint8_t CP_PROXY_TENANT[16];

typedef struct cp_cluster {
    char name[CP_NAME_MAX + 1];
    uint8_t tenant[16];
    int status;          /* the cluster's own */
    int effective;       /* the worse of the cluster's and its tenant's */
    int64_t rps;         /* 0 = no rate quota */
    int64_t max_storage; /* 0 = no ceiling */
    uint8_t token_hash[32];
    int64_t storage_bytes; /* last measured; -1 not yet */
    int64_t created_us, updated_us;
    cp_rate rate;
    uint64_t refused[4]; /* data-plane refusals on this node: rate, suspended, push_blocked, storage */
} cp_cluster;

typedef struct cp_node cp_node;

cp_node *cp_node_new(uv_loop_t *loop, db_pool *db, const char *node_id);
void cp_node_start(cp_node *n);
void cp_node_stop(cp_node *n); /* closes the timer; a round in flight finishes */
void cp_node_free(cp_node *n); /* after the loop stopped */
/* A round now (or right after the one in flight); cb runs when it is done, with ok = 0 when it
 * failed. */
void cp_node_refresh(cp_node *n, void (*cb)(void *arg, int ok), void *arg);
/* 1 once a round has read the clusters */
int cp_node_ready(const cp_node *n);

const cp_cluster *cp_by_tenant(cp_node *n, const uint8_t tenant[16]);
const cp_cluster *cp_by_token(cp_node *n, const uint8_t hash[32]);
const cp_cluster *cp_by_name(cp_node *n, const char *name);

enum cp_verdict { CPV_OK, CPV_RATE_LIMITED, CPV_SUSPENDED, CPV_PUSH_BLOCKED, CPV_STORAGE_EXCEEDED };
/* The verdict for one data-plane request of `tenant`. kind: 0 reads (or frees), 1 writes that
 * grow storage (KV), 2 pushes records (push, timers, a transaction's pushes). Suspended refuses
 * every kind, push_blocked kind 2, the storage ceiling kinds 1 and 2; then the request counts
 * against the rate quota. A tenant that is no cluster is CPV_OK. CPV_RATE_LIMITED sets
 * *retry_after_ms. */
enum cp_verdict cp_admit(cp_node *n, const uint8_t tenant[16], int kind, int64_t *retry_after_ms);
/* The same without the rate (a request already admitted that turns out to push). */
enum cp_verdict cp_push_verdict(cp_node *n, const uint8_t tenant[16], int kind);
/* The i-th cluster (by name), NULL past the end. */
const cp_cluster *cp_cluster_at(cp_node *n, uint32_t i);

void cp_node_metrics(cp_node *n, buf *b);
/* The last failed round's sentence ("" when the last round worked). */
const char *cp_node_last_error(const cp_node *n);

#endif
