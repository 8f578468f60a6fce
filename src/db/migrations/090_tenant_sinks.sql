-- 090_tenant_sinks — a bucket per tenant (docs/control-plane.md, "The sink per tenant";
-- spec/s3-sink.txt, "A bucket per tenant").
--
-- The proxy's own tenant holds what the control plane keeps in the replicated KV: each
-- cluster's S3 secret key, sealed with QUEEN_ENCRYPTION_KEY (namespace queen-cp-s3, key = the
-- cluster's tenant). No credential reaches it: it cannot be a cluster's tenant and a JWT naming
-- it is refused.
INSERT INTO queen.tenants (id, name) VALUES ('00000000-0000-0000-0000-000000000002', 'queen-proxy')
ON CONFLICT (id) DO NOTHING;

-- One row per cluster that has a sink: its settings (the canonical JSON of the per-sink fields,
-- never the secret), whether it runs, and when it was last written (every node rebuilds the
-- tenant's sink when updated_at moves). Deleting the cluster deletes its row; a purge deletes it
-- too (cp_purge_v1).
CREATE TABLE queen.cp_sinks (
    cluster     text PRIMARY KEY REFERENCES queen.cp_clusters (name) ON DELETE CASCADE,
    tenant_id   uuid NOT NULL,
    enabled     boolean NOT NULL DEFAULT true,
    config      text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
