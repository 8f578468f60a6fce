-- seek_v1: moves a consumer group's cursor on every partition of a queue (or the one named):
--   p_mode 'end'    → the partition's end (nothing left to read)
--          'start'  → the first record still stored
--          'ts'     → the first record stamped at or after p_ts
--          'offset' → p_offset, clamped to the stored range
-- Partitions the group has no cursor on get one, so a seek is never a no-op for them. Leases
-- are cleared (their acks are refused from now on) and the retry count starts again.
-- Returns one row per partition moved (status 'ok'), or one row 'queue_not_found' /
-- 'partition_not_found'.
-- Lock order: the queue's partitions (key share, in id order), then the group's cursor rows in
-- partition-id order, as ack_v1 takes them. It waits for any lock at most 200 ms, as the
-- deletions do: its upsert creates the group's missing cursors in partition-id order, and a pop
-- of the same group creating cursors of its own does so in claim order (its hints, or least
-- recent claim first), so each would wait on the unique index for the cursor the other
-- inserted. The pop waits first, so PostgreSQL's deadlock check (after 1 s) would abort the
-- pop; with the timeout the seek gives way (lock_not_available, retried by the caller:
-- src/api/api_common.c) and the pop goes on.
CREATE OR REPLACE FUNCTION queen.seek_v1(p_tenant uuid, p_group text, p_queue text, p_partition text, p_mode text,
                                         p_ts bigint, p_offset bigint)
RETURNS TABLE (status text, partition_id bigint, partition_uuid uuid, partition_name text, next_offset bigint,
               previous_offset bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
BEGIN
    SET LOCAL lock_timeout = '200ms'; -- give way to consumers: see above
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'queue_not_found'::text, NULL::bigint, NULL::uuid, NULL::text, NULL::bigint, NULL::bigint;
        RETURN;
    END IF;
    IF p_partition IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = p_partition) THEN
        RETURN QUERY SELECT 'partition_not_found'::text, NULL::bigint, NULL::uuid, NULL::text, NULL::bigint,
                            NULL::bigint;
        RETURN;
    END IF;
    -- partitions before cursors (lock order); a partition deleted meanwhile is not seen below
    PERFORM 1 FROM queen.partitions p
     WHERE p.queue_id = v_qid AND (p_partition IS NULL OR p.name = p_partition)
     ORDER BY p.id FOR KEY SHARE;
    PERFORM 1 FROM queen.cursors x
     WHERE x.queue_id = v_qid AND x.consumer_group = p_group
       AND (p_partition IS NULL OR x.partition_id = (SELECT p.id FROM queen.partitions p
                                                      WHERE p.queue_id = v_qid AND p.name = p_partition))
     ORDER BY x.partition_id FOR UPDATE;
    RETURN QUERY
    WITH target AS (
        SELECT p.id, p.uuid, p.name, o.off AS prev,
               CASE p_mode WHEN 'end' THEN p.next_offset
                           WHEN 'start' THEN p.start_offset
                           WHEN 'ts' THEN queen.offset_at_ts_v1(p.id, p_ts)
                           ELSE least(greatest(p_offset, p.start_offset), p.next_offset) END AS off
        FROM queen.partitions p
        LEFT JOIN LATERAL (SELECT x.next_offset AS off FROM queen.cursors x
                            WHERE x.partition_id = p.id AND x.consumer_group = p_group) o ON true
        WHERE p.queue_id = v_qid AND (p_partition IS NULL OR p.name = p_partition)
        ORDER BY p.id
    ), moved AS (
        INSERT INTO queen.cursors AS x (partition_id, consumer_group, queue_id, next_offset)
        SELECT t.id, p_group, v_qid, t.off FROM target t ORDER BY t.id
        ON CONFLICT (partition_id, consumer_group) DO UPDATE
           SET next_offset = excluded.next_offset, lease_id = NULL, lease_expires_at = NULL, lease_start = NULL,
               lease_end = NULL, lease_txns = NULL, lease_done = NULL, lease_failed = false, retry_count = 0
        RETURNING x.partition_id, x.next_offset
    )
    SELECT 'ok'::text, t.id, t.uuid, t.name, m.next_offset, t.prev
    FROM target t JOIN moved m ON m.partition_id = t.id
    ORDER BY t.name;
END
$$;
