-- cp_s3_get_v1: a cluster's sink as the control plane shows it (GET /api/cp/clusters/:cluster/s3):
-- no row when there is no cluster of that name; else the cluster's tenant and, when it has a
-- sink, has_sink with its settings, whether it runs, whether a sealed secret is stored
-- (secret_set), and updated_at. The secret itself is never returned.
CREATE OR REPLACE FUNCTION queen.cp_s3_get_v1(p_name text)
RETURNS TABLE (tenant_id uuid, has_sink boolean, enabled boolean, config text, secret_set boolean,
               updated_at_us bigint)
LANGUAGE sql STABLE AS $$
    SELECT c.tenant_id, s.cluster IS NOT NULL, COALESCE(s.enabled, false), s.config,
           EXISTS (SELECT 1 FROM queen.kv k
                    WHERE k.tenant_id = '00000000-0000-0000-0000-000000000002'::uuid
                      AND k.namespace = 'queen-cp-s3' AND k.key = c.tenant_id::text),
           (extract(epoch FROM s.updated_at) * 1000000)::bigint
      FROM queen.cp_clusters c
      LEFT JOIN queen.cp_sinks s ON s.cluster = c.name
     WHERE c.name = p_name
$$;
