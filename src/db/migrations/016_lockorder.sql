-- 016_lockorder — retention, the lease store, partition cleanup and seek brought inside the lock
-- order of docs/lock-order.md (partitions by id before segments; a group's cursors by partition
-- id; admin writes and jobs give way to producers and consumers). Same signatures as before
-- (003_consume, 004_admin, 006_retention); callers are unchanged except that the retention job
-- also reads the rows of kind 'busy' (src/storage/retention.c).

-- retention_v1: as in 006_retention (the same three rules, the same budget of p_limit segments
-- per round), but the partitions come first:
--   1. per queue (id order) the cutoffs, and the partitions with something to delete (a
--      segment older than a cutoff), at most p_limit of them in all;
--   2. those partitions locked in id order, FOR NO KEY UPDATE SKIP LOCKED: a partition a group
--      commit (or an admin deletion) holds is skipped, never waited for, and reported as a row
--      of kind 'busy' (segments = how many partitions of the queue were skipped) so the job
--      comes back to it soon;
--   3. per queue, the segment deletes restricted to the locked partitions, then their
--      start_offset (partition_start_v1, on rows already held).
-- So a round takes partitions (space 4) in one pass in id order without waiting, then segments
-- (6); it takes no queue clock and never waits for a producer. A commit may wait for a round
-- that holds one of its partitions, for the length of the round's deletes; the round never
-- waits for the commit, so no cycle can form.
CREATE OR REPLACE FUNCTION queen.retention_v1(p_limit integer, p_retention boolean, p_eviction boolean)
RETURNS TABLE (queue_id bigint, tenant_id uuid, queue_name text, kind text, segments integer, records bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now     bigint := queen.now_us();
    q         record;
    v_hold    bigint;
    v_budget  integer := p_limit;
    v_segs    integer;
    v_recs    bigint;
    v_parts   bigint[];
    -- per queue, in id order: id, tenant, name, cutoffs (NULL: the rule does not apply)
    v_qid     bigint[] := '{}';
    v_qten    uuid[] := '{}';
    v_qname   text[] := '{}';
    v_cut_e   bigint[] := '{}';
    v_cut_r   bigint[] := '{}';
    v_cut_c   bigint[] := '{}';
    v_ce      bigint;
    v_cr      bigint;
    v_cc      bigint;
    v_cands   bigint[] := '{}';
    v_found   bigint[];
    v_locked  bigint[];
    v_mine    bigint[];
    v_busy    integer;
    k         integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(737001) THEN
        RETURN;
    END IF;

    -- 1. cutoffs and candidate partitions
    FOR q IN
        SELECT x.id, x.tenant_id, x.name, x.options AS o FROM queen.queues x
        WHERE (p_retention AND coalesce((x.options->>'retentionEnabled')::boolean, false)
               AND (coalesce((x.options->>'retentionSeconds')::bigint, 0) > 0
                    OR coalesce((x.options->>'completedRetentionSeconds')::bigint, 0) > 0))
           OR (p_eviction AND coalesce((x.options->>'maxWaitTimeSeconds')::bigint, 0) > 0)
        ORDER BY x.id
    LOOP
        EXIT WHEN cardinality(v_cands) >= p_limit;
        v_hold := NULL;
        IF coalesce(q.o->>'retentionSinkHold', '') <> '' THEN
            -- never delete what the sink may not have read: at most up to its pointer - 60 s,
            -- and (when it has not committed) only what is older than the cap
            v_hold := greatest(v_now - coalesce((q.o->>'retentionSinkHoldMaxSeconds')::bigint, 604800) * 1000000,
                               coalesce(queen.sink_hold_ts_v1(q.tenant_id, q.name, q.o->>'retentionSinkHold') - 60000000,
                                        -9223372036854775807));
        END IF;
        v_ce := NULL;
        v_cr := NULL;
        v_cc := NULL;
        -- eviction ignores the hold
        IF p_eviction AND coalesce((q.o->>'maxWaitTimeSeconds')::bigint, 0) > 0 THEN
            v_ce := v_now - (q.o->>'maxWaitTimeSeconds')::bigint * 1000000;
        END IF;
        IF p_retention AND coalesce((q.o->>'retentionEnabled')::boolean, false)
           AND coalesce((q.o->>'retentionSeconds')::bigint, 0) > 0 THEN
            v_cr := v_now - (q.o->>'retentionSeconds')::bigint * 1000000;
            IF v_hold IS NOT NULL THEN
                v_cr := least(v_cr, v_hold);
            END IF;
        END IF;
        IF p_retention AND coalesce((q.o->>'retentionEnabled')::boolean, false)
           AND coalesce((q.o->>'completedRetentionSeconds')::bigint, 0) > 0 THEN
            v_cc := v_now - (q.o->>'completedRetentionSeconds')::bigint * 1000000;
            IF v_hold IS NOT NULL THEN
                v_cc := least(v_cc, v_hold);
            END IF;
        END IF;
        -- a probe of segments_ts (partition_id, ts) per partition; a partition no group reads
        -- keeps everything from completedRetentionSeconds
        v_found := ARRAY(
            SELECT p.id FROM queen.partitions p
             WHERE p.queue_id = q.id
               AND (EXISTS (SELECT 1 FROM queen.segments s
                             WHERE s.partition_id = p.id AND s.ts < greatest(v_ce, v_cr))
                    OR (v_cc IS NOT NULL
                        AND EXISTS (SELECT 1 FROM queen.segments s
                                     WHERE s.partition_id = p.id AND s.ts < v_cc
                                       AND s.last_offset < (SELECT min(c.next_offset) FROM queen.cursors c
                                                             WHERE c.partition_id = p.id))))
             ORDER BY p.id LIMIT p_limit - cardinality(v_cands));
        CONTINUE WHEN cardinality(v_found) = 0;
        v_qid := array_append(v_qid, q.id);
        v_qten := array_append(v_qten, q.tenant_id);
        v_qname := array_append(v_qname, q.name);
        v_cut_e := array_append(v_cut_e, v_ce);
        v_cut_r := array_append(v_cut_r, v_cr);
        v_cut_c := array_append(v_cut_c, v_cc);
        v_cands := v_cands || v_found;
    END LOOP;
    IF cardinality(v_cands) = 0 THEN
        RETURN;
    END IF;

    -- 2. the partitions, in id order, skipping busy ones
    v_locked := ARRAY(SELECT x.id FROM (SELECT p.id FROM queen.partitions p WHERE p.id = ANY (v_cands)
                                         ORDER BY p.id FOR NO KEY UPDATE SKIP LOCKED) x);

    -- 3. per queue: eviction first, then retention, then completed retention
    FOR k IN 1 .. cardinality(v_qid) LOOP
        EXIT WHEN v_budget <= 0;
        v_mine := ARRAY(SELECT p.id FROM queen.partitions p WHERE p.id = ANY (v_locked) AND p.queue_id = v_qid[k]
                         ORDER BY p.id);
        v_busy := (SELECT count(*) FROM queen.partitions p WHERE p.id = ANY (v_cands) AND p.queue_id = v_qid[k])
                  - cardinality(v_mine);
        IF v_busy > 0 THEN
            queue_id := v_qid[k]; tenant_id := v_qten[k]; queue_name := v_qname[k]; kind := 'busy';
            segments := v_busy; records := 0;
            RETURN NEXT;
        END IF;
        CONTINUE WHEN cardinality(v_mine) = 0;

        IF v_cut_e[k] IS NOT NULL THEN
            WITH d AS (
                DELETE FROM queen.segments s
                 WHERE (s.partition_id, s.last_offset) IN (
                       SELECT t.partition_id, t.last_offset FROM queen.segments t
                        WHERE t.partition_id = ANY (v_mine) AND t.ts < v_cut_e[k]
                        ORDER BY t.partition_id, t.last_offset LIMIT v_budget)
                RETURNING s.partition_id, s.record_count)
            SELECT count(*), coalesce(sum(record_count), 0), array_agg(DISTINCT partition_id)
              INTO v_segs, v_recs, v_parts FROM d;
            IF v_segs > 0 THEN
                PERFORM queen.partition_start_v1(v_parts);
                v_budget := v_budget - v_segs;
                queue_id := v_qid[k]; tenant_id := v_qten[k]; queue_name := v_qname[k]; kind := 'eviction';
                segments := v_segs; records := v_recs;
                RETURN NEXT;
            END IF;
        END IF;

        IF v_cut_r[k] IS NOT NULL AND v_budget > 0 THEN
            WITH d AS (
                DELETE FROM queen.segments s
                 WHERE (s.partition_id, s.last_offset) IN (
                       SELECT t.partition_id, t.last_offset FROM queen.segments t
                        WHERE t.partition_id = ANY (v_mine) AND t.ts < v_cut_r[k]
                        ORDER BY t.partition_id, t.last_offset LIMIT v_budget)
                RETURNING s.partition_id, s.record_count)
            SELECT count(*), coalesce(sum(record_count), 0), array_agg(DISTINCT partition_id)
              INTO v_segs, v_recs, v_parts FROM d;
            IF v_segs > 0 THEN
                PERFORM queen.partition_start_v1(v_parts);
                v_budget := v_budget - v_segs;
                queue_id := v_qid[k]; tenant_id := v_qten[k]; queue_name := v_qname[k]; kind := 'retention';
                segments := v_segs; records := v_recs;
                RETURN NEXT;
            END IF;
        END IF;

        IF v_cut_c[k] IS NOT NULL AND v_budget > 0 THEN
            WITH done AS (
                SELECT c.partition_id, min(c.next_offset) AS upto
                  FROM queen.cursors c WHERE c.partition_id = ANY (v_mine) GROUP BY c.partition_id),
            d AS (
                DELETE FROM queen.segments s
                 WHERE (s.partition_id, s.last_offset) IN (
                       SELECT t.partition_id, t.last_offset FROM queen.segments t
                         JOIN done ON done.partition_id = t.partition_id
                        WHERE t.ts < v_cut_c[k] AND t.last_offset < done.upto
                        ORDER BY t.partition_id, t.last_offset LIMIT v_budget)
                RETURNING s.partition_id, s.record_count)
            SELECT count(*), coalesce(sum(record_count), 0), array_agg(DISTINCT partition_id)
              INTO v_segs, v_recs, v_parts FROM d;
            IF v_segs > 0 THEN
                PERFORM queen.partition_start_v1(v_parts);
                v_budget := v_budget - v_segs;
                queue_id := v_qid[k]; tenant_id := v_qten[k]; queue_name := v_qname[k]; kind := 'completed';
                segments := v_segs; records := v_recs;
                RETURN NEXT;
            END IF;
        END IF;
    END LOOP;
END
$$;

-- lease_store_v1: as in 003_consume, but the entries are written in partition-id order (the
-- order ack_v1, lease_extend_v2 and seek_v1 lock a group's cursors in), not in the order the
-- pop claimed them: a late ack of the same group over the same partitions, which locks them in
-- id order, then queues up behind the store (or the store behind it) instead of deadlocking.
-- Entry i's transactionIds are still read from the request-order position (the counts of the
-- entries before it).
CREATE OR REPLACE FUNCTION queen.lease_store_v1(p_group text, p_leases uuid[], p_pids bigint[], p_counts integer[],
                                               p_txns text[])
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    e      record;
    n      integer := 0;
    v_done boolean[];
BEGIN
    SET LOCAL synchronous_commit = off;
    FOR e IN
        SELECT u.pid, u.lease, u.cnt, (sum(u.cnt) OVER (ORDER BY u.i) - u.cnt + 1)::integer AS at
          FROM unnest(p_pids, p_leases, p_counts) WITH ORDINALITY AS u(pid, lease, cnt, i)
         ORDER BY u.pid, u.i
    LOOP
        -- a NULL transactionId is a deleted record: not delivered, so done from the start
        v_done := ARRAY(SELECT t IS NULL FROM unnest(p_txns[e.at : e.at + e.cnt - 1]) WITH ORDINALITY AS x(t, j)
                        ORDER BY x.j);
        UPDATE queen.cursors x
           SET lease_txns = p_txns[e.at : e.at + e.cnt - 1], lease_done = v_done
         WHERE x.partition_id = e.pid AND x.consumer_group = p_group AND x.lease_id = e.lease;
        IF FOUND AND v_done[1] THEN
            PERFORM queen.cursor_settle_v1(e.pid, p_group, v_done);
        END IF;
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- partition_cleanup_v1: as in 006_retention, and now it never waits at all. Besides the
-- partition's cursors and its row (NOWAIT, as before; the row only if it still has no dead
-- letter, checked under the lock, which a new dead letter's foreign key would need), it locks
-- what the delete cascades into — the partition's dedup rows and (normally none) segments —
-- NOWAIT before deleting. The cascade used to delete the dedup rows waiting for whoever held
-- them: the dedup GC deletes rows of many partitions in stamp order, so a cleanup holding one
-- partition's dedup rows and waiting for the GC could meet the GC waiting for those rows.
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
         ORDER BY p.id LIMIT p_limit
    LOOP
        BEGIN
            PERFORM 1 FROM queen.cursors c WHERE c.partition_id = v_id ORDER BY c.consumer_group FOR UPDATE NOWAIT;
            PERFORM 1 FROM queen.partitions p
              WHERE p.id = v_id AND p.next_offset = p.start_offset AND p.last_ts < v_cut
                AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = p.id)
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

-- seek_v1: as in 004_admin, but it waits for any lock at most 200 ms, as the deletions do. Its
-- upsert creates the group's missing cursors in partition-id order, and a pop of the same group
-- creating cursors of its own does so in claim order (its hints, or least recent claim first):
-- each then waits on the unique index for the cursor the other inserted. The pop waits first,
-- so PostgreSQL's deadlock check (after 1 s) would abort the pop; with the timeout the seek
-- gives way (lock_not_available, retried by the caller: src/api/api_common.c) and the pop goes
-- on.
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
