-- lease_extend_v2: pushes the expiry of every cursor a lease of the caller's tenant holds to at
-- least now + p_seconds. The lease's cursor rows (one per partition a multi-partition pop
-- claimed) are locked in partition-id order first, as ack_v1 takes them, instead of the
-- physical order a multi-row UPDATE would take. A lease of another tenant reads as 'Lease not
-- found'. Returns the earliest new expiry, or why not ('Lease not found', 'Lease already
-- expired'). (v1 took any tenant's lease id: docs/auth.md.)
CREATE OR REPLACE FUNCTION queen.lease_extend_v2(p_tenant uuid, p_lease uuid, p_seconds integer,
                                      OUT expires_at bigint, OUT error text)
LANGUAGE plpgsql AS $$
DECLARE
    v_now bigint := queen.now_us();
    v_pids bigint[];
    n integer;
BEGIN
    SELECT array_agg(x.partition_id ORDER BY x.partition_id) INTO v_pids
      FROM (SELECT c.partition_id FROM queen.cursors c JOIN queen.queues q ON q.id = c.queue_id
             WHERE c.lease_id = p_lease AND q.tenant_id = p_tenant
             ORDER BY c.partition_id FOR UPDATE OF c) x;
    IF v_pids IS NULL THEN
        error := 'Lease not found';
        RETURN;
    END IF;
    UPDATE queen.cursors x SET lease_expires_at = greatest(x.lease_expires_at, v_now + p_seconds::bigint * 1000000)
     WHERE x.partition_id = ANY (v_pids) AND x.lease_id = p_lease AND x.lease_expires_at >= v_now;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        error := 'Lease already expired';
        RETURN;
    END IF;
    SELECT min(x.lease_expires_at) INTO expires_at FROM queen.cursors x
     WHERE x.partition_id = ANY (v_pids) AND x.lease_id = p_lease;
END
$$;
