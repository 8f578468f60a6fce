-- 004_admin — the read-mostly admin surface: consumer-group lag, seeks, group and queue
-- deletion, per-partition counts, message browsing, dead-letter paging and requeue, lag metrics.
--
-- Every count here comes from offsets, so it is exact and needs no stats job: a partition
-- holds [start_offset, next_offset); a consumer group has done everything below its cursor's
-- next_offset. The time lag of a group on a partition is the age of the first record it has
-- not done, i.e. the stamp of the segment holding that offset.

-- Dead letters by position (message status, browsing) and newest first per tenant (paging).
CREATE INDEX dead_letters_offset ON queen.dead_letters (partition_id, off);
CREATE INDEX dead_letters_failed ON queen.dead_letters (failed_at DESC, id DESC);

-- Where a consumer group stands on every partition of the queues it reads: one row per
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
CREATE FUNCTION queen.group_lag_v1(p_tenant uuid, p_queue text, p_group text, p_pairs integer)
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

-- Per-partition counts relative to queue mode ('__QUEUE_MODE__'):
--   total      = records stored (end - start)
--   completed  = records below the queue-mode cursor (acked or dead-lettered)
--   processing = records from the cursor to the end of a live queue-mode lease
--   pending    = the rest
CREATE VIEW queen.partition_counts_v1 AS
    SELECT p.id AS partition_id, p.queue_id, p.uuid, p.name, p.start_offset, p.next_offset, p.last_ts,
           (extract(epoch FROM p.created_at) * 1000000)::bigint AS created_us,
           p.next_offset - p.start_offset AS total,
           e.done - p.start_offset AS completed,
           e.live_end - e.done AS processing,
           p.next_offset - e.live_end AS pending,
           c.partition_id IS NOT NULL AS has_queue_cursor,
           c.total_consumed AS queue_consumed,
           CASE WHEN e.live_end > e.done THEN c.lease_expires_at END AS lease_expires_at
    FROM queen.partitions p
    LEFT JOIN queen.cursors c ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    CROSS JOIN LATERAL (SELECT least(greatest(coalesce(c.next_offset, p.start_offset), p.start_offset),
                                     p.next_offset) AS done) d
    CROSS JOIN LATERAL (SELECT d.done,
                               CASE WHEN c.lease_expires_at >= queen.now_us()
                                    THEN least(greatest(c.lease_end, d.done), p.next_offset)
                                    ELSE d.done END AS live_end) e;

-- seek_v1: moves a consumer group's cursor on every partition of a queue (or the one named):
--   p_mode 'end'    → the partition's end (nothing left to read)
--          'start'  → the first record still stored
--          'ts'     → the first record stamped at or after p_ts
--          'offset' → p_offset, clamped to the stored range
-- Partitions the group has no cursor on get one, so a seek is never a no-op for them. Leases
-- are cleared (their acks are refused from now on) and the retry count starts again.
-- Lock order: the queue's partitions (key share, in id order), then the group's cursor rows in
-- partition-id order, as ack_v1 takes them.
-- Returns one row per partition moved (status 'ok'), or one row 'queue_not_found' /
-- 'partition_not_found'.
CREATE FUNCTION queen.seek_v1(p_tenant uuid, p_group text, p_queue text, p_partition text, p_mode text,
                              p_ts bigint, p_offset bigint)
RETURNS TABLE (status text, partition_id bigint, partition_uuid uuid, partition_name text, next_offset bigint,
               previous_offset bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
BEGIN
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

-- delete_group_v1: forgets a consumer group's cursors on every queue of the tenant (or one
-- queue), and with p_metadata its subscriptions too; the group then starts again as on its
-- first pop (from its subscription if kept). Cursor rows are locked in partition-id order.
CREATE FUNCTION queen.delete_group_v1(p_tenant uuid, p_group text, p_queue text, p_metadata boolean,
                                      OUT status text, OUT n_cursors bigint, OUT n_subscriptions bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_qids bigint[];
BEGIN
    SELECT array_agg(q.id) INTO v_qids FROM queen.queues q
     WHERE q.tenant_id = p_tenant AND (p_queue IS NULL OR q.name = p_queue);
    IF p_queue IS NOT NULL AND v_qids IS NULL THEN
        status := 'queue_not_found';
        n_cursors := 0;
        n_subscriptions := 0;
        RETURN;
    END IF;
    PERFORM 1 FROM queen.cursors x WHERE x.queue_id = ANY (v_qids) AND x.consumer_group = p_group
     ORDER BY x.partition_id FOR UPDATE;
    DELETE FROM queen.cursors x WHERE x.queue_id = ANY (v_qids) AND x.consumer_group = p_group;
    GET DIAGNOSTICS n_cursors = ROW_COUNT;
    n_subscriptions := 0;
    IF p_metadata THEN
        DELETE FROM queen.subscriptions s WHERE s.queue_id = ANY (v_qids) AND s.consumer_group = p_group;
        GET DIAGNOSTICS n_subscriptions = ROW_COUNT;
    END IF;
    status := 'ok';
END
$$;

-- set_subscription_v1: a consumer group starts at p_ts on every partition it has no cursor on
-- yet, on every queue of the tenant it reads (has a cursor or a subscription on).
CREATE FUNCTION queen.set_subscription_v1(p_tenant uuid, p_group text, p_ts bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO queen.subscriptions AS s (queue_id, consumer_group, mode, start_ts)
    SELECT q.id, p_group, 'timestamp', p_ts FROM queen.queues q
     WHERE q.tenant_id = p_tenant
       AND (EXISTS (SELECT 1 FROM queen.cursors c WHERE c.queue_id = q.id AND c.consumer_group = p_group)
            OR EXISTS (SELECT 1 FROM queen.subscriptions x WHERE x.queue_id = q.id AND x.consumer_group = p_group))
     ORDER BY q.id
       FOR KEY SHARE OF q
    ON CONFLICT (queue_id, consumer_group) DO UPDATE SET mode = 'timestamp', start_ts = excluded.start_ts;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Deletions and acks. An ack that updates a cursor row twice in one transaction makes
-- PostgreSQL re-check the cursor's foreign key on the second update (the row version is its
-- own), which takes a key-share lock on the partition while the ack holds the cursor: the
-- reverse of a deletion's order (partition, then its cursors by cascade). So deletions lock the
-- cursors they will delete before the partitions, and wait for any lock at most 200 ms
-- (lock_timeout): when a cycle forms anyway, the deletion gives way (lock_not_available,
-- retried by the caller) long before PostgreSQL's deadlock check would pick a victim, so the
-- consumer's ack never fails because of an admin request.

-- delete_queue_v1: a queue with everything under it (partitions, segments, dedup rows,
-- cursors, subscriptions, dead letters: all by cascade). Lock order as push_v1: the queue row
-- (creation space), its clock; then the queue's cursors (partition-id order), its partitions
-- in id order; then the cascade.
CREATE FUNCTION queen.delete_queue_v1(p_tenant uuid, p_queue text,
                                      OUT existed boolean, OUT n_partitions bigint, OUT n_records bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_qid bigint;
BEGIN
    SET LOCAL lock_timeout = '200ms'; -- give way to consumers: see above
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue FOR UPDATE;
    existed := FOUND;
    n_partitions := 0;
    n_records := 0;
    IF NOT existed THEN
        RETURN;
    END IF;
    PERFORM 1 FROM queen.queue_clocks c WHERE c.queue_id = v_qid FOR UPDATE;
    PERFORM 1 FROM queen.cursors x WHERE x.queue_id = v_qid ORDER BY x.partition_id, x.consumer_group FOR UPDATE;
    SELECT count(*), coalesce(sum(x.next_offset - x.start_offset), 0)::bigint INTO n_partitions, n_records
      FROM (SELECT p.next_offset, p.start_offset FROM queen.partitions p WHERE p.queue_id = v_qid
            ORDER BY p.id FOR UPDATE) x;
    DELETE FROM queen.queues q WHERE q.id = v_qid;
END
$$;

-- delete_partition_v1: one partition with its segments, dedup rows, cursors and dead letters.
-- A push racing with it either commits first (and its records go too) or finds the partition
-- gone and creates it again, empty, from offset 0.
CREATE FUNCTION queen.delete_partition_v1(p_tenant uuid, p_queue text, p_partition text,
                                          OUT status text, OUT partition_uuid uuid, OUT n_records bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_qid bigint;
    v_pid bigint;
BEGIN
    n_records := 0;
    SET LOCAL lock_timeout = '200ms'; -- give way to consumers: see above
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        status := 'queue_not_found';
        RETURN;
    END IF;
    -- the cursors first (see above), then the partition
    PERFORM 1 FROM queen.cursors x JOIN queen.partitions p ON p.id = x.partition_id
     WHERE p.queue_id = v_qid AND p.name = p_partition ORDER BY x.consumer_group FOR UPDATE OF x;
    SELECT p.id, p.uuid, p.next_offset - p.start_offset INTO v_pid, partition_uuid, n_records
      FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        status := 'partition_not_found';
        n_records := 0;
        RETURN;
    END IF;
    DELETE FROM queen.partitions p WHERE p.id = v_pid;
    status := 'ok';
END
$$;

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
CREATE FUNCTION queen.list_messages_v1(p_tenant uuid, p_queue text, p_partition text, p_ns text, p_task text,
                                       p_status text, p_from bigint, p_to bigint, p_skip bigint, p_take bigint)
RETURNS TABLE (kind integer, ord bigint, pid bigint, puuid uuid, pname text, qname text, ns text, task text,
               prio bigint, i1 bigint, i2 bigint, i3 bigint, i4 bigint, i5 bigint, seg_data bytea)
LANGUAGE sql VOLATILE AS $$
    WITH clock AS (SELECT queen.now_us() AS now),
    parts AS MATERIALIZED (
        SELECT p.id, p.uuid, p.name, p.start_offset, p.next_offset, q.name AS qname, q.namespace, q.task,
               coalesce((q.options->>'priority')::bigint, 0) AS prio, qm.partition_id IS NOT NULL AS has_qm,
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

-- message_find_v1: the segments that may hold one record of a partition, for the decoder.
-- Cheapest first: a message id names the offset (p_msg_off, when the id's partition p_msg_pid
-- is this partition); a producer transactionId within the
-- dedup window, a dead letter or the live lease of a cursor names it too. Otherwise the
-- partition's segments are scanned, bounded by p_max_segments and p_max_bytes: from p_after_ts
-- upwards when the transactionId is a server UUIDv7 (it carries the time it was made, just
-- before its push committed), else newest first. hit = true: the row's target offset is
-- known (the decoder checks that offset only).
CREATE FUNCTION queen.message_find_v1(p_tenant uuid, p_puuid uuid, p_txn text, p_msg_pid bigint, p_msg_off bigint,
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

-- dlq_claim_v1: marks a dead letter requeued and hands back what a push needs to append its
-- record again. Claiming first means two concurrent requeues cannot both push; the caller
-- clears the mark (dlq_unclaim) when its push fails.
--   status: 'ok' | 'not_found' | 'already_requeued' (requeued_us set) | 'no_record'
CREATE FUNCTION queen.dlq_claim_v1(p_tenant uuid, p_id bigint,
                                   OUT status text, OUT queue_name text, OUT partition_name text, OUT txn_id text,
                                   OUT rec bytea, OUT requeued_us bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v record;
BEGIN
    SELECT d.id, d.record, d.txn_id, d.requeued_at, q.name AS qname, p.name AS pname INTO v
      FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id JOIN queen.partitions p ON p.id = d.partition_id
     WHERE d.id = p_id AND q.tenant_id = p_tenant
       FOR UPDATE OF d;
    IF NOT FOUND THEN
        status := 'not_found';
        RETURN;
    END IF;
    queue_name := v.qname;
    partition_name := v.pname;
    txn_id := v.txn_id;
    IF v.requeued_at IS NOT NULL THEN
        status := 'already_requeued';
        requeued_us := (extract(epoch FROM v.requeued_at) * 1000000)::bigint;
        RETURN;
    END IF;
    IF v.record IS NULL THEN
        status := 'no_record';
        RETURN;
    END IF;
    UPDATE queen.dead_letters d SET requeued_at = now() WHERE d.id = p_id;
    rec := v.record;
    status := 'ok';
END
$$;

-- metrics_lag_v1: per (queue, group) lag for /metrics/prometheus (kind 0: lag records and
-- seconds), and per queue the dead letters not requeued (kind 1). Bounded: the first
-- p_limit pairs and the first p_limit queues in (tenant, name) order.
CREATE FUNCTION queen.metrics_lag_v1(p_limit integer)
RETURNS TABLE (kind integer, tenant_id uuid, queue_name text, consumer_group text, val bigint, lag_us bigint)
LANGUAGE sql VOLATILE AS $$
    SELECT 0, g.tenant_id, g.queue_name, g.consumer_group, coalesce(sum(g.offset_lag), 0)::bigint,
           coalesce(max(g.time_lag_us), 0)::bigint
    FROM queen.group_lag_v1(NULL, NULL, NULL, p_limit) g
    GROUP BY g.tenant_id, g.queue_name, g.consumer_group
    UNION ALL
    SELECT 1, q.tenant_id, q.name, NULL::text,
           (SELECT count(*) FROM queen.dead_letters d WHERE d.queue_id = q.id AND d.requeued_at IS NULL), 0::bigint
    FROM (SELECT * FROM queen.queues x ORDER BY x.tenant_id, x.name LIMIT p_limit) q
    ORDER BY 1, 2, 3, 4
$$;

-- message_delete_v1: deletes the record at p_off of a partition (DELETE /api/v1/messages).
-- The segment is rewritten with the record's flags set to deleted (0x20, see
-- src/storage/record.h): its trace, producer and payload dropped, its transactionId kept, every
-- other record byte for byte. Readers skip it; a pop leases its slot as done already, so a
-- consumer walks past it; no cursor moves here. Its dead letters go too, and its dedup row (the
-- transactionId may be pushed again). Locks: the dedup row (space 5), the segment row (6), the
-- dead letters (8). Returns whether anything was deleted (false: no live record at that offset
-- and no dead letter of it).
CREATE FUNCTION queen.message_delete_v1(p_tenant uuid, p_part uuid, p_off bigint, p_txn text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_pid     bigint;
    v_last    bigint;
    v_base    bigint;
    v_data    bytea;
    pos       integer := 1;
    start     integer;
    txn_end   integer;
    flags     integer;
    v_plen    bigint;
    v         record;
    v_deleted boolean := false;
BEGIN
    SELECT p.id INTO v_pid FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE p.uuid = p_part AND q.tenant_id = p_tenant;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM queen.dedup x WHERE x.partition_id = v_pid AND x.txn_id = p_txn AND x.off = p_off;
    SELECT s.last_offset, s.base_offset, s.data INTO v_last, v_base, v_data
      FROM queen.segments s WHERE s.partition_id = v_pid AND s.last_offset >= p_off AND s.base_offset <= p_off
       FOR UPDATE;
    IF FOUND THEN
        FOR k IN 0 .. (p_off - v_base) LOOP
            start := pos;
            flags := get_byte(v_data, pos);
            pos := pos + 1;
            IF flags & 1 = 1 THEN
                pos := pos + 16;
            ELSE
                v := queen.varint_v1(v_data, pos);
                pos := v.next + v.val::integer;
            END IF;
            txn_end := pos;
            IF flags & 2 = 2 THEN
                pos := pos + 16;
            END IF;
            IF flags & 4 = 4 THEN
                v := queen.varint_v1(v_data, pos);
                pos := v.next + v.val::integer;
            END IF;
            v := queen.varint_v1(v_data, pos);
            v_plen := v.val;
            pos := v.next + v.val::integer;
        END LOOP;
        IF flags & 32 = 0 THEN
            UPDATE queen.segments s
               SET data = substring(v_data FROM 1 FOR start)
                          || set_byte('\x00'::bytea, 0, 32 | (flags & 17))
                          || substring(v_data FROM start + 2 FOR txn_end - start - 1)
                          || '\x00'::bytea
                          || substring(v_data FROM pos + 1),
                   payload_bytes = greatest(s.payload_bytes - v_plen, 0)
             WHERE s.partition_id = v_pid AND s.last_offset = v_last;
            v_deleted := true;
        END IF;
    END IF;
    DELETE FROM queen.dead_letters d WHERE d.partition_id = v_pid AND d.off = p_off;
    RETURN v_deleted OR FOUND;
END
$$;
