-- cp_purge_v1: empties a cluster's tenant — every queue (with its partitions, segments,
-- cursors, leases and dead letters), KV row, timer and stream — by deleting the tenant row,
-- which cascades, and inserting it again with its name and status. p_remove also deletes the
-- cluster itself (and leaves the tenant row deleted). Either way the cluster's sink goes too
-- (its queen.cp_sinks row and its sealed secret in the proxy's tenant: every node stops the
-- tenant's sink at its next read; nothing in the bucket is deleted). Returns false when there
-- is no cluster of that name. Locks: the cluster row, the secret's KV row (space 0, the proxy's
-- tenant, which sorts before every cluster tenant), the sink row, then the tenant row and its
-- cascade (docs/lock-order.md).
CREATE OR REPLACE FUNCTION queen.cp_purge_v1(p_name text, p_remove boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_tenant uuid;
    v_tname  text;
    v_status text;
BEGIN
    SELECT c.tenant_id INTO v_tenant FROM queen.cp_clusters c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM queen.cp_s3_delete_v1(p_name); -- the sink row and its sealed secret, same locks
    DELETE FROM queen.tenants t WHERE t.id = v_tenant RETURNING t.name, t.status INTO v_tname, v_status;
    IF p_remove THEN
        DELETE FROM queen.cp_clusters c WHERE c.name = p_name;
        DELETE FROM queen.cp_usage u WHERE u.tenant_id = v_tenant;
    ELSE
        INSERT INTO queen.tenants (id, name, status)
        VALUES (v_tenant, COALESCE(v_tname, p_name), COALESCE(v_status, 'active'));
        UPDATE queen.cp_clusters c SET updated_at = now() WHERE c.name = p_name;
    END IF;
    RETURN true;
END
$$;
