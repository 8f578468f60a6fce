-- cp_clusters_v1: every cluster of the control plane with its effective status (the worse of
-- the cluster's and its tenant's: active < push_blocked < suspended; a tenant row that is
-- missing or has another status counts as suspended) and, when p_storage, the bytes the
-- tenant holds (its log segments' stored sizes plus its KV values), else -1.
CREATE OR REPLACE FUNCTION queen.cp_clusters_v1(p_storage boolean)
RETURNS TABLE (name text, tenant_id uuid, status text, effective_status text, requests_per_second bigint,
               max_storage_bytes bigint, token_sha256 bytea, storage_bytes bigint, created_at_us bigint,
               updated_at_us bigint)
LANGUAGE sql STABLE AS $$
    SELECT c.name, c.tenant_id, c.status,
           CASE GREATEST(CASE c.status WHEN 'active' THEN 0 WHEN 'push_blocked' THEN 1 ELSE 2 END,
                         CASE t.status WHEN 'active' THEN 0 WHEN 'push_blocked' THEN 1 ELSE 2 END)
               WHEN 0 THEN 'active' WHEN 1 THEN 'push_blocked' ELSE 'suspended' END,
           c.requests_per_second, c.max_storage_bytes, c.token_sha256,
           CASE WHEN p_storage AND c.max_storage_bytes > 0 THEN
               COALESCE((SELECT sum(octet_length(s.data))::bigint
                           FROM queen.queues q
                           JOIN queen.partitions p ON p.queue_id = q.id
                           JOIN queen.segments s ON s.partition_id = p.id
                          WHERE q.tenant_id = c.tenant_id), 0)
               + COALESCE((SELECT sum(octet_length(k.value))::bigint FROM queen.kv k
                            WHERE k.tenant_id = c.tenant_id), 0)
           ELSE -1 END,
           (extract(epoch FROM c.created_at) * 1000000)::bigint,
           (extract(epoch FROM c.updated_at) * 1000000)::bigint
      FROM queen.cp_clusters c
      LEFT JOIN queen.tenants t ON t.id = c.tenant_id
     ORDER BY c.name
$$;
