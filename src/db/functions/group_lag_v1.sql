-- group_lag_v1: where a consumer group stands on every partition of the queues it reads: one row per
-- (queue, group, partition). A (queue, group) pair exists when the group has a cursor on one
-- of the queue's partitions or a subscription on the queue; pairs are taken in (tenant, queue,
-- group) order, at most p_pairs of them. On a partition without a cursor the group would
-- start where pop_v1 starts it (the subscription's first offset, else the start of the log),
-- and its lag is counted from there. A queue without partitions yields one row with NULL
-- partition columns, so the pair is still listed.
--   next_offset: the first record the group has not done (clamped to the stored range)
--   offset_lag:  records not done = end_offset - next_offset
--   lag_ts:      stamp of the record at next_offset (NULL when nothing is pending)
--   time_lag_us: now - lag_ts (0 when nothing is pending)
CREATE OR REPLACE FUNCTION queen.group_lag_v1(p_tenant uuid, p_queue text, p_group text, p_pairs integer)
RETURNS TABLE (tenant_id uuid, queue_id bigint, queue_name text, consumer_group text, partition_id bigint,
               partition_uuid uuid, partition_name text, has_cursor boolean, next_offset bigint,
               start_offset bigint, end_offset bigint, offset_lag bigint, lag_ts bigint, time_lag_us bigint,
               lease_id uuid, lease_expires_at bigint, lease_end bigint, total_consumed bigint,
               last_consumed_us bigint, sub_mode text, sub_ts bigint, sub_created_us bigint, now_us bigint)
LANGUAGE sql VOLATILE AS $$
    WITH pairs AS (
        SELECT q.tenant_id AS tid, q.id AS qid, q.name AS qname, g.grp
        FROM queen.queues q
        CROSS JOIN LATERAL (SELECT DISTINCT c.consumer_group AS grp FROM queen.cursors c WHERE c.queue_id = q.id
                            UNION
                            SELECT s.consumer_group FROM queen.subscriptions s WHERE s.queue_id = q.id) g
        WHERE (p_tenant IS NULL OR q.tenant_id = p_tenant) AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_group IS NULL OR g.grp = p_group)
        ORDER BY q.tenant_id, q.name, g.grp
        LIMIT p_pairs
    ), clock AS (SELECT queen.now_us() AS now)
    SELECT pr.tid, pr.qid, pr.qname, pr.grp, p.id, p.uuid, p.name, c.partition_id IS NOT NULL, e.eff,
           p.start_offset, p.next_offset, p.next_offset - e.eff, t.ts,
           CASE WHEN t.ts IS NULL THEN 0 ELSE greatest(k.now - t.ts, 0) END,
           c.lease_id, c.lease_expires_at, c.lease_end, c.total_consumed,
           (extract(epoch FROM c.last_consumed_at) * 1000000)::bigint, s.mode, s.start_ts,
           (extract(epoch FROM s.created_at) * 1000000)::bigint, k.now
    FROM pairs pr
    CROSS JOIN clock k
    LEFT JOIN queen.partitions p ON p.queue_id = pr.qid
    LEFT JOIN queen.cursors c ON c.partition_id = p.id AND c.consumer_group = pr.grp
    LEFT JOIN queen.subscriptions s ON s.queue_id = pr.qid AND s.consumer_group = pr.grp
                                   AND pr.grp <> '__QUEUE_MODE__'
    LEFT JOIN LATERAL (
        SELECT least(greatest(CASE WHEN c.partition_id IS NOT NULL THEN c.next_offset
                                   WHEN s.start_ts IS NOT NULL THEN queen.offset_at_ts_v1(p.id, s.start_ts)
                                   ELSE p.start_offset END,
                              p.start_offset),
                     p.next_offset) AS eff
        WHERE p.id IS NOT NULL) e ON true
    LEFT JOIN LATERAL (
        SELECT sg.ts FROM queen.segments sg
        WHERE sg.partition_id = p.id AND sg.last_offset >= e.eff AND e.eff < p.next_offset
        ORDER BY sg.last_offset LIMIT 1) t ON true
$$;
