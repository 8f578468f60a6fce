-- partition_cleanup_v1: deletes up to p_limit partitions that hold no record and have had none
-- (nor been created) for p_idle_us, with their cursors and dedup rows (PARTITION_CLEANUP_DAYS);
-- a partition with dead letters, or one a stream's state row names, is kept. A later push creates the partition again: a new id and
-- uuid, offsets from 0 again. One node at a time (try-lock 737002). Returns how many were
-- deleted.
-- Locks as the admin deletion does — the partition's cursors, then the partition — but it never
-- waits: the cursors and the row (the row only if it still has no dead letter, checked under
-- the lock, which a new dead letter's foreign key would need), then what the delete cascades
-- into — the partition's dedup rows and (normally none) segments — all NOWAIT; a partition whose
-- rows are busy (a push, an ack) is left for a later round. Waiting in the cascade for the dedup
-- rows could meet the dedup GC, which deletes rows of many partitions in stamp order.
CREATE OR REPLACE FUNCTION queen.partition_cleanup_v1(p_limit integer, p_idle_us bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_cut bigint := queen.now_us() - p_idle_us;
    v_id  bigint;
    n     integer := 0;
BEGIN
    IF p_idle_us <= 0 OR NOT pg_try_advisory_xact_lock(737002) THEN
        RETURN 0;
    END IF;
    FOR v_id IN
        SELECT p.id FROM queen.partitions p
         WHERE p.next_offset = p.start_offset AND p.last_ts < v_cut
           AND p.created_at < to_timestamp(v_cut / 1000000.0)
           -- its dead letters are the only copy of what retention removed: kept
           AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = p.id)
           -- a stream's open state names it (docs/streams.md): kept until the window closes
           AND NOT EXISTS (SELECT 1 FROM queen.stream_state s WHERE s.partition_uuid = p.uuid)
         ORDER BY p.id LIMIT p_limit
    LOOP
        BEGIN
            PERFORM 1 FROM queen.cursors c WHERE c.partition_id = v_id ORDER BY c.consumer_group FOR UPDATE NOWAIT;
            PERFORM 1 FROM queen.partitions p
              WHERE p.id = v_id AND p.next_offset = p.start_offset AND p.last_ts < v_cut
                AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = p.id)
                AND NOT EXISTS (SELECT 1 FROM queen.stream_state s WHERE s.partition_uuid = p.uuid)
              FOR UPDATE OF p NOWAIT;
            IF FOUND THEN
                PERFORM 1 FROM queen.dedup x WHERE x.partition_id = v_id ORDER BY x.txn_id FOR UPDATE NOWAIT;
                PERFORM 1 FROM queen.segments s WHERE s.partition_id = v_id ORDER BY s.last_offset FOR UPDATE NOWAIT;
                DELETE FROM queen.partitions p WHERE p.id = v_id;
                n := n + 1;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    RETURN n;
END
$$;
