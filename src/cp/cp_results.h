/* cp_results.h — the results of the control plane's functions, by name (db/results.h):
 * src/db/functions/cp_sync_v1.sql, cp_clusters_v1.sql, cp_purge_v1.sql and the cp_s3_*_v1.sql. Checked by tests/unit/test_db_results.c. */
#ifndef QUEEN_CP_CP_RESULTS_H
#define QUEEN_CP_CP_RESULTS_H

#include "db/results.h"

#define CP_SYNC_V1_COLUMNS(X)                                                                                  \
    X(CPS_TENANT, tenant_id, uuid)                                                                             \
    X(CPS_OTHERS, others, int8)                                                                                \
    X(CPS_OTHER_NODES, other_nodes, int4)
enum { CP_SYNC_V1_COLUMNS(DB_COL_ENUM) CPS_NCOLS };

#define CP_CLUSTERS_V1_COLUMNS(X)                                                                              \
    X(CPC_NAME, name, text)                                                                                    \
    X(CPC_TENANT, tenant_id, uuid)                                                                             \
    X(CPC_STATUS, status, text)                                                                                \
    X(CPC_EFFECTIVE, effective_status, text)                                                                   \
    X(CPC_RPS, requests_per_second, int8)                                                                      \
    X(CPC_MAX_STORAGE, max_storage_bytes, int8)                                                                \
    X(CPC_TOKEN, token_sha256, bytea)                                                                          \
    X(CPC_STORAGE, storage_bytes, int8)                                                                        \
    X(CPC_CREATED, created_at_us, int8)                                                                        \
    X(CPC_UPDATED, updated_at_us, int8)
enum { CP_CLUSTERS_V1_COLUMNS(DB_COL_ENUM) CPC_NCOLS };

/* queen.cp_purge_v1: false when there is no such cluster */
#define CP_PURGE_V1_COLUMNS(X) X(CPP_FOUND, cp_purge_v1, bool)
enum { CP_PURGE_V1_COLUMNS(DB_COL_ENUM) };

/* queen.cp_s3_get_v1 and queen.cp_s3_put_v1 (the same shape): a cluster's sink */
#define CP_S3_GET_V1_COLUMNS(X)                                                                                \
    X(CPG_TENANT, tenant_id, uuid)                                                                             \
    X(CPG_HAS_SINK, has_sink, bool)                                                                            \
    X(CPG_ENABLED, enabled, bool)                                                                              \
    X(CPG_CONFIG, config, text)                                                                                \
    X(CPG_SECRET_SET, secret_set, bool)                                                                        \
    X(CPG_UPDATED, updated_at_us, int8)
enum { CP_S3_GET_V1_COLUMNS(DB_COL_ENUM) CPG_NCOLS };
#define CP_S3_PUT_V1_COLUMNS CP_S3_GET_V1_COLUMNS

/* queen.cp_s3_delete_v1: NULL when there is no such cluster, else whether a sink was removed */
#define CP_S3_DELETE_V1_COLUMNS(X) X(CPD_REMOVED, cp_s3_delete_v1, bool)
enum { CP_S3_DELETE_V1_COLUMNS(DB_COL_ENUM) };

#endif
