-- retention_v1: one round of deleting old records, whole segments at a time, on one node at a
-- time (try-lock 737001). Per queue (its effective options, queue_options_v1):
--   retentionSeconds (with retentionEnabled): segments stamped before now - retentionSeconds
--   completedRetentionSeconds (with retentionEnabled): segments stamped before the cutoff that
--       every consumer group of the partition has passed (a partition no group reads keeps all)
--   maxWaitTimeSeconds (eviction, whatever retentionEnabled says): segments stamped before
--       now - maxWaitTimeSeconds, consumed or not
-- retentionSinkHold: the two retention cutoffs never pass the named sink's commit pointer minus
-- 60 s (sink_hold_ts_v1), nor reach back further than retentionSinkHoldMaxSeconds; eviction
-- ignores the hold. After deleting, a partition's start_offset moves to its first remaining
-- record (partition_start_v1); cursors below it skip the removed range (pop reads from
-- greatest(cursor, start_offset)). At most p_limit segments per round, in three steps:
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
-- waits for the commit, so no cycle can form (docs/lock-order.md).
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
        SELECT x.id, x.tenant_id, x.name, x.o
          FROM (SELECT y.id, y.tenant_id, y.name, queen.queue_options_v1(y.options) AS o FROM queen.queues y
                OFFSET 0) x -- OFFSET 0: the options are merged once per queue, not once per use
        WHERE (p_retention AND (x.o->>'retentionEnabled')::boolean
               AND ((x.o->>'retentionSeconds')::bigint > 0 OR (x.o->>'completedRetentionSeconds')::bigint > 0))
           OR (p_eviction AND (x.o->>'maxWaitTimeSeconds')::bigint > 0)
        ORDER BY x.id
    LOOP
        EXIT WHEN cardinality(v_cands) >= p_limit;
        v_hold := NULL;
        IF coalesce(q.o->>'retentionSinkHold', '') <> '' THEN
            -- never delete what the sink may not have read: at most up to its pointer - 60 s,
            -- and (when it has not committed) only what is older than the cap
            v_hold := greatest(v_now - (q.o->>'retentionSinkHoldMaxSeconds')::bigint * 1000000,
                               coalesce(queen.sink_hold_ts_v1(q.tenant_id, q.name, q.o->>'retentionSinkHold') - 60000000,
                                        -9223372036854775807));
        END IF;
        v_ce := NULL;
        v_cr := NULL;
        v_cc := NULL;
        -- eviction ignores the hold
        IF p_eviction AND (q.o->>'maxWaitTimeSeconds')::bigint > 0 THEN
            v_ce := v_now - (q.o->>'maxWaitTimeSeconds')::bigint * 1000000;
        END IF;
        IF p_retention AND (q.o->>'retentionEnabled')::boolean AND (q.o->>'retentionSeconds')::bigint > 0 THEN
            v_cr := v_now - (q.o->>'retentionSeconds')::bigint * 1000000;
            IF v_hold IS NOT NULL THEN
                v_cr := least(v_cr, v_hold);
            END IF;
        END IF;
        IF p_retention AND (q.o->>'retentionEnabled')::boolean
           AND (q.o->>'completedRetentionSeconds')::bigint > 0 THEN
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
