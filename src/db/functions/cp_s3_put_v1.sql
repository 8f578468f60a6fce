-- cp_s3_put_v1: writes a cluster's sink (PUT /api/cp/clusters/:cluster/s3). p_sealed is the
-- secret key sealed with QUEEN_ENCRYPTION_KEY (base64 of the envelope), or NULL to keep the
-- stored one. Every call writes and moves updated_at, so every node rebuilds the tenant's sink;
-- one with a secret always replaces it (a rotated secret reaches the sink). No row when there
-- is no cluster of that name, or when p_sealed is NULL and no secret is stored (secret_set
-- false: the route asks for one). Locks: the cluster row, then the secret's KV row (space 0 of
-- the proxy's tenant), then the sink row (docs/lock-order.md).
CREATE OR REPLACE FUNCTION queen.cp_s3_put_v1(p_name text, p_enabled boolean, p_config text, p_sealed text)
RETURNS TABLE (tenant_id uuid, has_sink boolean, enabled boolean, config text, secret_set boolean,
               updated_at_us bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_tenant uuid;
    v_now    timestamptz := clock_timestamp();
    v_us     bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
BEGIN
    SELECT c.tenant_id INTO v_tenant FROM queen.cp_clusters c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_sealed IS NOT NULL THEN
        INSERT INTO queen.kv (tenant_id, namespace, key, value, version, expires_at, updated_at)
        VALUES ('00000000-0000-0000-0000-000000000002'::uuid, 'queen-cp-s3', v_tenant::text,
                to_json(p_sealed)::text, nextval('queen.kv_version_seq'), NULL, v_us)
        ON CONFLICT (tenant_id, namespace, key) DO UPDATE
           SET value = EXCLUDED.value, version = EXCLUDED.version, expires_at = NULL,
               updated_at = EXCLUDED.updated_at;
    ELSIF NOT EXISTS (SELECT 1 FROM queen.kv k
                       WHERE k.tenant_id = '00000000-0000-0000-0000-000000000002'::uuid
                         AND k.namespace = 'queen-cp-s3' AND k.key = v_tenant::text) THEN
        RETURN QUERY SELECT v_tenant, false, false, NULL::text, false, NULL::bigint;
        RETURN;
    END IF;
    INSERT INTO queen.cp_sinks AS s (cluster, tenant_id, enabled, config, updated_at)
    VALUES (p_name, v_tenant, p_enabled, p_config, v_now)
    ON CONFLICT (cluster) DO UPDATE
       SET tenant_id = EXCLUDED.tenant_id, enabled = EXCLUDED.enabled, config = EXCLUDED.config,
           updated_at = GREATEST(EXCLUDED.updated_at, s.updated_at + interval '1 microsecond');
    RETURN QUERY SELECT g.* FROM queen.cp_s3_get_v1(p_name) g;
END
$$;
