-- list_messages_v1: one page of records, newest first (stamp desc, partition id, offset desc),
-- for the admin browser. SQL cannot decode records, so this returns the segments that hold
-- the page and what the decoder needs to give each record its status:
--   kind 0: a partition of the page: pid, puuid, pname, qname, ns, task, prio,
--           i1 = start offset, i2 = done (records below are completed), i3 = end of a live
--           queue-mode lease (records in [done, i3) are processing), i4 = lease expiry (µs),
--           i5 = 1 when the partition has a queue-mode cursor
--   kind 2: a dead-lettered offset of a page segment: pid, i1 = offset
--   kind 3: the cursor of a consumer group (not queue mode) on a page partition: pid, i1 = its
--           first offset not done
--   kind 1: a page segment, in page order: pid, i1 = base offset, i2 = last offset, i3 = stamp,
--           i4 = matching records in newer segments ("before"), i5 = record count, seg_data
-- Status of a record at offset o: dead_letter when a dead letter holds it; else completed when
-- o < done; processing when o < i3; else pending. "done" is the queue-mode cursor, or, on a
-- partition only consumer groups read, the least of their cursors.
-- The decoder must count exactly as the matching counts here do, which is why both follow
-- that one rule. Each partition contributes at most p_skip + p_take matching segments, so the
-- scan stops early on partitions with a long history.
-- (C names the columns and kinds in src/admin/admin_results.h.)
CREATE OR REPLACE FUNCTION queen.list_messages_v1(p_tenant uuid, p_queue text, p_partition text, p_ns text, p_task text,
                                       p_status text, p_from bigint, p_to bigint, p_skip bigint, p_take bigint)
RETURNS TABLE (kind integer, ord bigint, pid bigint, puuid uuid, pname text, qname text, ns text, task text,
               prio bigint, i1 bigint, i2 bigint, i3 bigint, i4 bigint, i5 bigint, seg_data bytea)
LANGUAGE sql VOLATILE AS $$
    WITH clock AS (SELECT queen.now_us() AS now),
    parts AS MATERIALIZED (
        SELECT p.id, p.uuid, p.name, p.start_offset, p.next_offset, q.name AS qname, q.namespace, q.task,
               (queen.queue_options_v1(q.options)->>'priority')::bigint AS prio, qm.partition_id IS NOT NULL AS has_qm,
               e.done,
               CASE WHEN qm.lease_expires_at >= k.now THEN least(greatest(qm.lease_end, e.done), p.next_offset)
                    ELSE e.done END AS live_end,
               CASE WHEN qm.lease_expires_at >= k.now THEN qm.lease_expires_at END AS lease_exp
        FROM queen.queues q
        JOIN queen.partitions p ON p.queue_id = q.id
        CROSS JOIN clock k
        LEFT JOIN queen.cursors qm ON qm.partition_id = p.id AND qm.consumer_group = '__QUEUE_MODE__'
        LEFT JOIN LATERAL (SELECT min(c.next_offset) AS m FROM queen.cursors c
                            WHERE c.partition_id = p.id AND c.consumer_group <> '__QUEUE_MODE__') bus ON true
        CROSS JOIN LATERAL (SELECT least(greatest(coalesce(qm.next_offset, bus.m, p.start_offset), p.start_offset),
                                         p.next_offset) AS done) e
        WHERE q.tenant_id = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_partition IS NULL OR p.name = p_partition) AND (p_ns IS NULL OR q.namespace = p_ns)
          AND (p_task IS NULL OR q.task = p_task)
          AND p.next_offset > p.start_offset AND p.last_ts >= p_from
    ),
    cand AS (
        SELECT x.* FROM parts p
        CROSS JOIN LATERAL (
            SELECT p.id AS pid, s.base_offset, s.last_offset, s.ts, s.record_count, m.cnt
            FROM queen.segments s
            CROSS JOIN LATERAL (SELECT greatest(s.base_offset, p.start_offset) AS lo,
                                       least(s.last_offset + 1, p.next_offset) AS hi) r
            CROSS JOIN LATERAL (SELECT CASE p_status WHEN 'completed' THEN p.start_offset
                                                     WHEN 'processing' THEN p.done
                                                     WHEN 'pending' THEN p.live_end
                                                     ELSE r.lo END AS a,
                                       CASE p_status WHEN 'completed' THEN p.done
                                                     WHEN 'processing' THEN p.live_end
                                                     ELSE r.hi END AS b) w
            CROSS JOIN LATERAL (SELECT greatest(r.lo, w.a) AS ilo, least(r.hi, w.b) AS ihi) i
            CROSS JOIN LATERAL (
                SELECT CASE
                    WHEN p_status IS NULL THEN greatest(r.hi - r.lo, 0)
                    WHEN i.ihi <= i.ilo THEN 0
                    WHEN p_status = 'dead_letter' THEN
                        (SELECT count(DISTINCT d.off) FROM queen.dead_letters d
                          WHERE d.partition_id = p.id AND d.off >= i.ilo AND d.off < i.ihi)
                    ELSE (i.ihi - i.ilo) -
                        (SELECT count(DISTINCT d.off) FROM queen.dead_letters d
                          WHERE d.partition_id = p.id AND d.off >= i.ilo AND d.off < i.ihi)
                END AS cnt) m
            WHERE s.partition_id = p.id AND s.ts >= p_from AND (p_to IS NULL OR s.ts <= p_to)
              AND s.last_offset >= p.start_offset AND m.cnt > 0
            ORDER BY s.ts DESC
            LIMIT p_skip + p_take) x
        ORDER BY x.ts DESC, x.pid, x.last_offset DESC
        LIMIT p_skip + p_take
    ),
    win AS (
        SELECT c.*, row_number() OVER o AS rn, (sum(c.cnt) OVER o - c.cnt)::bigint AS before
        FROM cand c
        WINDOW o AS (ORDER BY c.ts DESC, c.pid, c.last_offset DESC ROWS UNBOUNDED PRECEDING)
    ),
    page AS MATERIALIZED (SELECT * FROM win WHERE win.before < p_skip + p_take AND win.before + win.cnt > p_skip)
    SELECT * FROM (
    SELECT 0, 0::bigint, p.id, p.uuid, p.name, p.qname, p.namespace, p.task, p.prio, p.start_offset, p.done,
           p.live_end, p.lease_exp, p.has_qm::int::bigint, NULL::bytea
    FROM parts p WHERE p.id IN (SELECT pg.pid FROM page pg)
    UNION ALL
    SELECT DISTINCT 2, 0::bigint, d.partition_id, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::text,
           NULL::bigint, d.off, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea
    FROM page pg JOIN queen.dead_letters d ON d.partition_id = pg.pid AND d.off >= pg.base_offset
                                           AND d.off <= pg.last_offset
    UNION ALL
    SELECT 3, 0::bigint, c.partition_id, NULL::uuid, c.consumer_group, NULL::text, NULL::text, NULL::text,
           NULL::bigint, c.next_offset, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea
    FROM queen.cursors c
    WHERE c.partition_id IN (SELECT pg.pid FROM page pg) AND c.consumer_group <> '__QUEUE_MODE__'
    UNION ALL
    SELECT 1, pg.rn, pg.pid, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::text, NULL::bigint,
           pg.base_offset, pg.last_offset, pg.ts, pg.before, pg.record_count::bigint, s.data
    FROM page pg JOIN queen.segments s ON s.partition_id = pg.pid AND s.last_offset = pg.last_offset
    ) u (kind, ord, pid, puuid, pname, qname, ns, task, prio, i1, i2, i3, i4, i5, seg_data)
    ORDER BY u.kind = 1, u.ord
$$;
