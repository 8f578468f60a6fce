-- trace_gc_v1: deletes the traces whose records retention has removed: a trace stored when
-- its partition ended at log_end names a record below log_end, gone once the partition's
-- start_offset reaches log_end. A bounded batch at a time, on one node at a time (a
-- transaction-scoped try-lock: the others skip the round and get -1). Rows a partition
-- deletion's cascade holds are skipped (SKIP LOCKED), so a round never waits for a lock; it
-- reads partitions without locking them. Returns how many traces were deleted.
CREATE OR REPLACE FUNCTION queen.trace_gc_v1(p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7158258767386912003) THEN
        RETURN -1;
    END IF;
    DELETE FROM queen.message_traces t
    WHERE t.id IN (
        SELECT x.id FROM queen.partitions p
        CROSS JOIN LATERAL (SELECT y.id FROM queen.message_traces y
                            WHERE y.partition_id = p.id AND y.log_end <= p.start_offset
                            LIMIT p_limit FOR UPDATE SKIP LOCKED) x
        WHERE p.start_offset > 0
        LIMIT p_limit);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
