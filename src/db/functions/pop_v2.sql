-- pop_v2: claims up to p_max_partitions partitions of a queue (or the one named) for a
-- consumer group and returns the segments holding the claimed records. pop_v1 with the group's
-- delivery policy (queen.group_policies, docs/consume.md "Conflation"): p_conflation is what the
-- pop declares; the policy stored at the group's first pop of the queue wins. A conflating
-- group's claim of a partition is its newest visible record only: the cursor moves over the
-- records behind it at once (counted in queen.cursors.conflated, never delivered) and the lease
-- holds that one record, so ack, failure, retries, the dead letter queue and lease expiry work
-- on it as on any lease of one record. Such a claim spends 1 of the call's budget. Claim k (from 1) gets
-- lease p_lease_ids[k] (the last one when the array is shorter). With p_split each claim may
-- take p_batch records (a node merges the pops of several consumers into one call, one claim
-- each); without it p_batch is the budget of the whole call (one consumer's multi-partition pop).
--
-- Candidates: first the partitions in p_hints (ids the node believes have records: pushed
-- there, or left over by an earlier scan), in that order; then, when those do not fill the
-- call, a scan of the queue's partitions with records for the group, least recently claimed
-- first (fairness). With p_hints NULL the scan comes first. Partitions whose advisory lock
-- (another pop) or cursor row (an ack) is busy are skipped, never waited for.
--   kind 0: a claimed partition: pid, puuid, pname, a = first offset, b = end offset (excl.),
--           c = lease expiry (µs), seg_count = 1 when the partition holds records past b,
--           seg_ts = the delivery attempt (the cursor's retry count + 1: failed acks counted)
--   kind 1: a segment of the partition pid: a = base offset, b = last offset, seg_*
--   kind 2: why nothing was claimed: pname = 'queue_not_found' | 'partition_not_found' |
--           'lease_held' | 'window_buffer' | 'empty'; c = when records may become available
--   kind 3: the group's policy (named groups only, first row): a = 1 when it conflates,
--           b = 1 when p_conflation differs from it (the conflict the answer echoes)
--   kind 4: pid = a scanned candidate that was not claimed (for the node's hints)
--   kind 5: after the claims, when a conflating claim retired records: a = how many (in all)
-- kind 2's pname is also 'conflation_with_auto_ack': the group conflates and the pop is autoAck
-- (refused; nothing is claimed).
-- (C names the columns and kinds in src/consume/consume_results.h.)
CREATE OR REPLACE FUNCTION queen.pop_v2(
    p_tenant uuid, p_queue text, p_partition text, p_group text, p_batch integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from bigint, p_max_partitions integer, p_lease_ids uuid[], p_lease_seconds integer,
    p_split boolean, p_hints bigint[], p_conflation boolean)
RETURNS TABLE (kind integer, pid bigint, puuid uuid, pname text, a bigint, b bigint, c bigint,
               seg_ts bigint, seg_count integer, seg_data bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now      bigint := queen.now_us();
    v_qid      bigint;
    v_opts     jsonb;
    v_lease_us bigint;
    v_delay_us bigint;
    v_wb_us    bigint;
    v_sub_ts   bigint;
    v_claimed  integer := 0;
    v_skipped  bigint := 0;
    v_budget   bigint := greatest(p_batch, 1) * CASE WHEN p_split THEN p_max_partitions ELSE 1 END;
    v_lease    uuid;
    v_start    bigint;
    v_end      bigint;
    v_limit    bigint;
    v_why      text := 'empty';
    v_cands    bigint[];
    v_i        integer := 1;
    v_scanned  boolean := false;
    v_scan_from integer := 0;
    v_id       bigint;
    v_conf     boolean := false;
    v_skip     bigint;
    cand       record;
    cur        record;
BEGIN
    SELECT q.id, queen.queue_options_v1(q.options) INTO v_qid, v_opts FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 2, NULL::bigint, NULL::uuid, 'queue_not_found'::text, NULL::bigint, NULL::bigint,
                            NULL::bigint, NULL::bigint, NULL::integer, NULL::bytea;
        RETURN;
    END IF;
    -- the pop's own leaseTime, else the queue's; a leaseTime of 0 means 60 s, as in the earlier
    -- release (docs/http-api.md)
    v_lease_us := coalesce(nullif(p_lease_seconds, 0), nullif((v_opts->>'leaseTime')::bigint, 0), 60) * 1000000;
    IF NOT p_auto_ack THEN
        -- a lease is not consumption: if a crash loses it, its records are delivered again, as
        -- when it expires. Only autoAck pops (which move the cursor) wait for the WAL flush.
        SET LOCAL synchronous_commit = off;
    END IF;
    v_delay_us := (v_opts->>'delayedProcessing')::bigint * 1000000;
    v_wb_us := (v_opts->>'windowBuffer')::bigint * 1000000;

    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT s.start_ts INTO v_sub_ts FROM queen.subscriptions s WHERE s.queue_id = v_qid AND s.consumer_group = p_group;
        IF NOT FOUND AND (p_sub_from IS NOT NULL OR p_sub_mode = 'new') THEN
            INSERT INTO queen.subscriptions (queue_id, consumer_group, mode, start_ts)
            VALUES (v_qid, p_group, CASE WHEN p_sub_from IS NULL THEN 'new' ELSE 'timestamp' END, coalesce(p_sub_from, v_now))
            ON CONFLICT DO NOTHING;
            SELECT s.start_ts INTO v_sub_ts FROM queen.subscriptions s WHERE s.queue_id = v_qid AND s.consumer_group = p_group;
        END IF;
        -- the group's delivery policy: stored by its first pop of the queue, then it wins
        SELECT gp.conflation INTO v_conf FROM queen.group_policies gp
         WHERE gp.queue_id = v_qid AND gp.consumer_group = p_group;
        IF NOT FOUND THEN
            INSERT INTO queen.group_policies (queue_id, consumer_group, conflation)
            VALUES (v_qid, p_group, coalesce(p_conflation, false)) ON CONFLICT DO NOTHING;
            SELECT gp.conflation INTO v_conf FROM queen.group_policies gp
             WHERE gp.queue_id = v_qid AND gp.consumer_group = p_group;
        END IF;
        RETURN QUERY SELECT 3, NULL::bigint, NULL::uuid, NULL::text, v_conf::integer::bigint,
                            (v_conf IS DISTINCT FROM coalesce(p_conflation, false))::integer::bigint,
                            NULL::bigint, NULL::bigint, NULL::integer, NULL::bytea;
        IF v_conf AND p_auto_ack THEN
            RETURN QUERY SELECT 2, NULL::bigint, NULL::uuid, 'conflation_with_auto_ack'::text, NULL::bigint,
                                NULL::bigint, NULL::bigint, NULL::bigint, NULL::integer, NULL::bytea;
            RETURN;
        END IF;
    END IF;

    IF p_partition IS NOT NULL THEN
        SELECT ARRAY[p.id] INTO v_cands FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = p_partition;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 2, NULL::bigint, NULL::uuid, 'partition_not_found'::text, NULL::bigint, NULL::bigint,
                                NULL::bigint, NULL::bigint, NULL::integer, NULL::bytea;
            RETURN;
        END IF;
        v_scanned := true;
    ELSE
        v_cands := coalesce(p_hints, '{}');
    END IF;

    LOOP
        EXIT WHEN v_claimed >= p_max_partitions OR v_budget <= 0;
        IF v_i > coalesce(cardinality(v_cands), 0) THEN
            EXIT WHEN v_scanned;
            -- the scan: partitions with records for the group and no live lease, least recently
            -- claimed first; the cursors of the group are read once and hash-joined
            v_scan_from := coalesce(cardinality(v_cands), 0);
            -- with the generic plan PL/pgSQL caches, the planner would otherwise loop over one
            -- side per row of the other: quadratic in the partitions of the queue
            SET LOCAL enable_nestloop = off;
            v_cands := v_cands || ARRAY(
                WITH cur AS MATERIALIZED (
                    SELECT x.partition_id, x.next_offset, x.lease_expires_at, x.claimed_at FROM queen.cursors x
                     WHERE x.queue_id = v_qid AND x.consumer_group = p_group)
                SELECT p.id FROM queen.partitions p LEFT JOIN cur x ON x.partition_id = p.id
                 WHERE p.queue_id = v_qid
                   AND p.next_offset > greatest(coalesce(x.next_offset, p.start_offset), p.start_offset)
                   AND (x.lease_expires_at IS NULL OR x.lease_expires_at < v_now)
                   AND (v_wb_us = 0 OR p.last_ts <= v_now - v_wb_us)
                 ORDER BY coalesce(x.claimed_at, 0), p.id
                 LIMIT 2048);
            SET LOCAL enable_nestloop = on;
            v_scanned := true;
            CONTINUE;
        END IF;
        v_id := v_cands[v_i];
        v_i := v_i + 1;
        SELECT p.id, p.uuid, p.name, p.next_offset AS p_next, p.start_offset AS p_start, p.last_ts,
               x.next_offset AS cur_next, x.lease_expires_at AS lease_exp, x.partition_id IS NOT NULL AS has_cursor
          INTO cand
          FROM queen.partitions p LEFT JOIN queen.cursors x ON x.partition_id = p.id AND x.consumer_group = p_group
         WHERE p.id = v_id AND p.queue_id = v_qid;
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN cand.p_next <= greatest(coalesce(cand.cur_next, cand.p_start), cand.p_start);
        IF cand.lease_exp IS NOT NULL AND cand.lease_exp >= v_now THEN
            v_why := 'lease_held';
            CONTINUE;
        END IF;
        IF v_wb_us > 0 AND cand.last_ts > v_now - v_wb_us THEN
            v_why := 'window_buffer';
            CONTINUE;
        END IF;
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_group, cand.id)) THEN
            v_why := 'lease_held';
            CONTINUE;
        END IF;
        IF NOT cand.has_cursor THEN
            -- the cursor's foreign key takes this lock anyway; taking it first tells a partition
            -- deleted since the candidates were read (skipped) from one that is still there
            PERFORM 1 FROM queen.partitions p WHERE p.id = cand.id FOR KEY SHARE;
            IF NOT FOUND THEN
                CONTINUE;
            END IF;
            INSERT INTO queen.cursors (partition_id, consumer_group, queue_id, next_offset)
            VALUES (cand.id, p_group, v_qid,
                    CASE WHEN v_sub_ts IS NULL THEN cand.p_start ELSE queen.offset_at_ts_v1(cand.id, v_sub_ts) END)
            ON CONFLICT DO NOTHING;
        END IF;
        SELECT * INTO cur FROM queen.cursors x WHERE x.partition_id = cand.id AND x.consumer_group = p_group
        FOR UPDATE SKIP LOCKED;
        IF NOT FOUND OR (cur.lease_expires_at IS NOT NULL AND cur.lease_expires_at >= v_now) THEN
            v_why := 'lease_held';
            CONTINUE;
        END IF;
        v_start := greatest(cur.next_offset, cand.p_start);
        -- conflating: the whole visible backlog, of which only the newest record is delivered
        v_end := CASE WHEN v_conf THEN cand.p_next
                      ELSE least(v_start + CASE WHEN p_split THEN greatest(p_batch, 1) ELSE v_budget END, cand.p_next) END;
        IF v_delay_us > 0 THEN
            SELECT s.base_offset INTO v_limit FROM queen.segments s
             WHERE s.partition_id = cand.id AND s.last_offset >= v_start AND s.ts > v_now - v_delay_us
             ORDER BY s.last_offset LIMIT 1;
            IF FOUND THEN
                v_end := least(v_end, v_limit);
            END IF;
        END IF;
        IF v_end <= v_start THEN
            CONTINUE;
        END IF;
        v_skip := 0;
        IF v_conf THEN
            -- last value: the records before the newest are retired now, never delivered; a
            -- newer value is a new delivery (its retry count starts again)
            v_skip := v_end - 1 - v_start;
            v_start := v_end - 1;
        END IF;
        IF p_auto_ack THEN
            UPDATE queen.cursors x SET next_offset = v_end, claimed_at = v_now, retry_count = 0,
                   total_consumed = x.total_consumed + (v_end - v_start), last_consumed_at = now(),
                   lease_id = NULL, lease_expires_at = NULL, lease_start = NULL, lease_end = NULL,
                   lease_txns = NULL, lease_done = NULL, lease_failed = false
             WHERE x.partition_id = cand.id AND x.consumer_group = p_group;
        ELSE
            v_lease := p_lease_ids[least(v_claimed + 1, cardinality(p_lease_ids))];
            UPDATE queen.cursors x SET next_offset = v_start, claimed_at = v_now,
                   lease_id = v_lease, lease_expires_at = v_now + v_lease_us, lease_start = v_start,
                   lease_end = v_end, lease_txns = NULL, lease_done = NULL, lease_failed = false,
                   conflated = x.conflated + v_skip,
                   retry_count = CASE WHEN v_skip > 0 THEN 0 ELSE x.retry_count END,
                   last_consumed_at = CASE WHEN v_skip > 0 THEN now() ELSE x.last_consumed_at END
             WHERE x.partition_id = cand.id AND x.consumer_group = p_group;
        END IF;
        RETURN QUERY SELECT 0, cand.id, cand.uuid, cand.name, v_start, v_end, v_now + v_lease_us,
                            CASE WHEN v_skip > 0 THEN 1 ELSE cur.retry_count::bigint + 1 END,
                            CASE WHEN v_end < cand.p_next THEN 1 ELSE 0 END, NULL::bytea;
        RETURN QUERY SELECT 1, cand.id, NULL::uuid, NULL::text, s.base_offset, s.last_offset, NULL::bigint,
                            s.ts, s.record_count, s.data
                       FROM queen.segments s
                      WHERE s.partition_id = cand.id AND s.last_offset >= v_start
                        -- bounded above by the segment holding v_end - 1, so the index scan
                        -- stops there instead of filtering every later segment
                        AND s.last_offset <= (SELECT min(t.last_offset) FROM queen.segments t
                                               WHERE t.partition_id = cand.id AND t.last_offset >= v_end - 1)
                      ORDER BY s.last_offset;
        v_claimed := v_claimed + 1;
        v_skipped := v_skipped + v_skip;
        v_budget := v_budget - (v_end - v_start);  -- 1 for a conflating claim
    END LOOP;
    IF v_skipped > 0 THEN
        RETURN QUERY SELECT 5, NULL::bigint, NULL::uuid, NULL::text, v_skipped, NULL::bigint, NULL::bigint,
                            NULL::bigint, NULL::integer, NULL::bytea;
    END IF;
    -- scanned candidates not tried (or not claimable now) go back to the node as hints
    IF v_scanned AND p_partition IS NULL THEN
        RETURN QUERY SELECT 4, v_cands[j], NULL::uuid, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint,
                            NULL::bigint, NULL::integer, NULL::bytea
                       FROM generate_series(greatest(v_i, v_scan_from + 1), coalesce(cardinality(v_cands), 0)) AS j;
    END IF;
    IF v_claimed = 0 THEN
        -- when records could become available without a push: a lease over records expiring,
        -- or records held back by delayedProcessing / windowBuffer (looked at again in 1 s)
        SELECT min(x.lease_expires_at) INTO v_limit
          FROM queen.cursors x JOIN queen.partitions p ON p.id = x.partition_id
         WHERE x.queue_id = v_qid AND x.consumer_group = p_group AND x.lease_expires_at >= v_now
           AND p.next_offset > x.next_offset AND (p_partition IS NULL OR p.name = p_partition);
        IF v_delay_us > 0 OR v_wb_us > 0 THEN
            v_limit := least(coalesce(v_limit, v_now + 1000000), v_now + 1000000);
        END IF;
        RETURN QUERY SELECT 2, NULL::bigint, NULL::uuid, v_why, NULL::bigint, NULL::bigint, v_limit,
                            NULL::bigint, NULL::integer, NULL::bytea;
    END IF;
END
$$;
