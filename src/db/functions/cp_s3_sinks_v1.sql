-- cp_s3_sinks_v1: every cluster's sink, as each node with the sink reads them every five
-- seconds: the tenant, whether it runs (enabled), its settings, the sealed secret (the base64
-- text of the envelope, NULL when none is stored), the cluster's effective status (as
-- cp_clusters_v1 computes it) and updated_at, which moves on every write.
CREATE OR REPLACE FUNCTION queen.cp_s3_sinks_v1()
RETURNS TABLE (cluster text, tenant_id uuid, enabled boolean, config text, sealed text,
               effective_status text, updated_at_us bigint)
LANGUAGE sql STABLE AS $$
    SELECT s.cluster, c.tenant_id, s.enabled, s.config,
           (SELECT k.value::json #>> '{}' FROM queen.kv k
             WHERE k.tenant_id = '00000000-0000-0000-0000-000000000002'::uuid
               AND k.namespace = 'queen-cp-s3' AND k.key = c.tenant_id::text),
           CASE GREATEST(CASE c.status WHEN 'active' THEN 0 WHEN 'push_blocked' THEN 1 ELSE 2 END,
                         CASE t.status WHEN 'active' THEN 0 WHEN 'push_blocked' THEN 1 ELSE 2 END)
               WHEN 0 THEN 'active' WHEN 1 THEN 'push_blocked' ELSE 'suspended' END,
           (extract(epoch FROM s.updated_at) * 1000000)::bigint
      FROM queen.cp_sinks s
      JOIN queen.cp_clusters c ON c.name = s.cluster
      LEFT JOIN queen.tenants t ON t.id = c.tenant_id
     ORDER BY c.tenant_id
$$;
