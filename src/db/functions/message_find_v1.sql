-- message_find_v1: the segments that may hold one record of a partition, for the decoder.
-- Cheapest first: a message id names the offset (p_msg_off, when the id's partition p_msg_pid
-- is this partition); a producer transactionId within the
-- dedup window, a dead letter or the live lease of a cursor names it too. Otherwise the
-- partition's segments are scanned, bounded by p_max_segments and p_max_bytes: from p_after_ts
-- upwards when the transactionId is a server UUIDv7 (it carries the time it was made, just
-- before its push committed), else newest first. hit = true: the row's target offset is
-- known (the decoder checks that offset only).
CREATE OR REPLACE FUNCTION queen.message_find_v1(p_tenant uuid, p_puuid uuid, p_txn text, p_msg_pid bigint, p_msg_off bigint,
                                      p_after_ts bigint, p_max_segments integer, p_max_bytes bigint)
RETURNS TABLE (target bigint, base_offset bigint, last_offset bigint, ts bigint, record_count integer, data bytea)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_pid bigint;
    v_off bigint;
BEGIN
    SELECT p.id INTO v_pid FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE p.uuid = p_puuid AND q.tenant_id = p_tenant;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_msg_pid = v_pid THEN
        v_off := p_msg_off;
    END IF;
    IF v_off IS NULL AND p_txn IS NOT NULL THEN
        SELECT d.off INTO v_off FROM queen.dedup d WHERE d.partition_id = v_pid AND d.txn_id = p_txn;
    END IF;
    IF v_off IS NULL AND p_txn IS NOT NULL THEN
        SELECT d.off INTO v_off FROM queen.dead_letters d WHERE d.partition_id = v_pid AND d.txn_id = p_txn
         ORDER BY d.id DESC LIMIT 1;
    END IF;
    IF v_off IS NULL AND p_txn IS NOT NULL THEN
        SELECT c.lease_start + array_position(c.lease_txns, p_txn) - 1 INTO v_off
          FROM queen.cursors c
         WHERE c.partition_id = v_pid AND array_position(c.lease_txns, p_txn) IS NOT NULL LIMIT 1;
    END IF;
    IF v_off IS NOT NULL THEN
        RETURN QUERY SELECT v_off, s.base_offset, s.last_offset, s.ts, s.record_count, s.data
                       FROM queen.segments s
                      WHERE s.partition_id = v_pid AND s.last_offset >= v_off AND s.base_offset <= v_off;
        RETURN;
    END IF;
    IF p_txn IS NULL THEN
        RETURN;
    END IF;
    IF p_after_ts IS NOT NULL THEN
        RETURN QUERY SELECT NULL::bigint, x.base_offset, x.last_offset, x.ts, x.record_count, x.data
          FROM (SELECT s.*, sum(s.payload_bytes) OVER (ORDER BY s.ts) - s.payload_bytes AS before
                  FROM (SELECT * FROM queen.segments s WHERE s.partition_id = v_pid AND s.ts >= p_after_ts
                         ORDER BY s.ts LIMIT p_max_segments) s) x
         WHERE x.before < p_max_bytes ORDER BY x.ts;
    ELSE
        RETURN QUERY SELECT NULL::bigint, x.base_offset, x.last_offset, x.ts, x.record_count, x.data
          FROM (SELECT s.*, sum(s.payload_bytes) OVER (ORDER BY s.last_offset DESC) - s.payload_bytes AS before
                  FROM (SELECT * FROM queen.segments s WHERE s.partition_id = v_pid
                         ORDER BY s.last_offset DESC LIMIT p_max_segments) s) x
         WHERE x.before < p_max_bytes ORDER BY x.last_offset DESC;
    END IF;
END
$$;
