-- cp_s3_delete_v1: removes a cluster's sink and its sealed secret (DELETE
-- /api/cp/clusters/:cluster/s3). NULL when there is no cluster of that name, false when it had
-- no sink, true when one was removed. Objects in the bucket are never touched. Locks: the
-- cluster row, the secret's KV row, the sink row (docs/lock-order.md).
CREATE OR REPLACE FUNCTION queen.cp_s3_delete_v1(p_name text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_tenant uuid;
    v_kv     int;
    v_row    int;
BEGIN
    SELECT c.tenant_id INTO v_tenant FROM queen.cp_clusters c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    DELETE FROM queen.kv k
     WHERE k.tenant_id = '00000000-0000-0000-0000-000000000002'::uuid
       AND k.namespace = 'queen-cp-s3' AND k.key = v_tenant::text;
    GET DIAGNOSTICS v_kv = ROW_COUNT;
    DELETE FROM queen.cp_sinks s WHERE s.cluster = p_name;
    GET DIAGNOSTICS v_row = ROW_COUNT;
    RETURN v_row > 0 OR v_kv > 0;
END
$$;
