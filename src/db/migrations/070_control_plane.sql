-- 070_control_plane — the embedded proxy's clusters (docs/control-plane.md).
--
-- A cluster is one broker tenant. It has no foreign key to queen.tenants on purpose: purging a
-- cluster deletes its tenant row (which cascades to every queue, KV row, timer and stream of
-- the tenant) and inserts it again, and the cluster row must survive that.
CREATE TABLE queen.cp_clusters (
    name               text PRIMARY KEY,
    tenant_id          uuid NOT NULL UNIQUE,
    status             text NOT NULL DEFAULT 'active'
                       CHECK (status IN ('active', 'push_blocked', 'suspended')),
    requests_per_second bigint NOT NULL DEFAULT 0,   -- 0 = no rate quota
    max_storage_bytes  bigint NOT NULL DEFAULT 0,    -- 0 = no storage ceiling
    token_sha256       bytea NOT NULL,               -- SHA-256 of the data-plane token
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- Each node's request count per cluster tenant for its last complete second, rewritten once a
-- second by that node (cp_sync_v1): the quota is shared across nodes without any request
-- touching the database.
CREATE TABLE queen.cp_usage (
    tenant_id  uuid NOT NULL,
    node_id    text NOT NULL,
    window_s   bigint NOT NULL,
    requests   bigint NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
