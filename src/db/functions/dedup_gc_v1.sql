-- dedup_gc_v1: forgets producer transactionIds older than the dedup window, a bounded batch at
-- a time, on one node at a time (a transaction-scoped try-lock: the others skip the round and
-- get -1). Returns how many were forgotten.
CREATE OR REPLACE FUNCTION queen.dedup_gc_v1(p_window_us bigint, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7158258767386912001) THEN
        RETURN -1;
    END IF;
    DELETE FROM queen.dedup d
    WHERE (d.partition_id, d.txn_id) IN (
        SELECT x.partition_id, x.txn_id FROM queen.dedup x
        WHERE x.ts < queen.now_us() - p_window_us
        ORDER BY x.ts LIMIT p_limit);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
