-- kv_gc_v1: reclaim expired keys, a bounded batch at a time, on one node at a time (a
-- transaction-scoped try-lock: the other nodes skip the round). Rows a batch holds are skipped,
-- never waited for: the batch decides their fate itself.
CREATE OR REPLACE FUNCTION queen.kv_gc_v1(p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now bigint := queen.now_us();
    n     integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7158258767386912002) THEN
        RETURN -1;
    END IF;
    DELETE FROM queen.kv x
     WHERE (x.tenant_id, x.namespace, x.key) IN (
            SELECT y.tenant_id, y.namespace, y.key FROM queen.kv y
             WHERE y.expires_at <= v_now
             ORDER BY y.expires_at LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
