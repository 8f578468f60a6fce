-- 006_retention — deleting old records, whole segments at a time, on one node at a time.
--
-- Per queue (options):
--   retentionSeconds (with retentionEnabled): segments stamped before now - retentionSeconds
--   completedRetentionSeconds (with retentionEnabled): segments stamped before the cutoff that
--       every consumer group of the partition has passed (a partition no group reads keeps all)
--   maxWaitTimeSeconds (eviction, whatever retentionEnabled says): segments stamped before
--       now - maxWaitTimeSeconds, consumed or not
-- retentionSinkHold: the two retention cutoffs never pass the named sink's commit pointer minus
-- 60 s, nor reach back further than retentionSinkHoldMaxSeconds; eviction ignores the hold.
-- After deleting, a partition's start_offset moves to its first remaining record; cursors
-- below it skip the removed range (pop reads from greatest(cursor, start_offset)).
-- Locks: partitions rows in id order (the same order push takes them), no queue clocks.

-- The stamp up to which the named sink has committed the queue, or NULL when it has not
-- committed yet. The S3 sink replaces this function when it provides its commit pointer.
CREATE FUNCTION queen.sink_hold_ts_v1(p_tenant uuid, p_queue text, p_sink text) RETURNS bigint
LANGUAGE sql STABLE AS $$ SELECT NULL::bigint $$;

CREATE FUNCTION queen.retention_v1(p_limit integer, p_retention boolean, p_eviction boolean)
RETURNS TABLE (queue_id bigint, tenant_id uuid, queue_name text, kind text, segments integer, records bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now     bigint := queen.now_us();
    q         record;
    v_hold    bigint;
    v_cut     bigint;
    v_budget  integer := p_limit;
    v_segs    integer;
    v_recs    bigint;
    v_parts   bigint[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(737001) THEN
        RETURN;
    END IF;
    FOR q IN
        SELECT x.id, x.tenant_id, x.name, x.options AS o FROM queen.queues x
        WHERE (p_retention AND coalesce((x.options->>'retentionEnabled')::boolean, false)
               AND (coalesce((x.options->>'retentionSeconds')::bigint, 0) > 0
                    OR coalesce((x.options->>'completedRetentionSeconds')::bigint, 0) > 0))
           OR (p_eviction AND coalesce((x.options->>'maxWaitTimeSeconds')::bigint, 0) > 0)
        ORDER BY x.id
    LOOP
        EXIT WHEN v_budget <= 0;
        v_hold := NULL;
        IF coalesce(q.o->>'retentionSinkHold', '') <> '' THEN
            -- never delete what the sink may not have read: at most up to its pointer - 60 s,
            -- and (when it has not committed) only what is older than the cap
            v_hold := greatest(v_now - coalesce((q.o->>'retentionSinkHoldMaxSeconds')::bigint, 604800) * 1000000,
                               coalesce(queen.sink_hold_ts_v1(q.tenant_id, q.name, q.o->>'retentionSinkHold') - 60000000,
                                        -9223372036854775807));
        END IF;

        -- eviction first: it ignores the hold
        IF p_eviction AND coalesce((q.o->>'maxWaitTimeSeconds')::bigint, 0) > 0 THEN
            v_cut := v_now - (q.o->>'maxWaitTimeSeconds')::bigint * 1000000;
            WITH d AS (
                DELETE FROM queen.segments s
                 WHERE (s.partition_id, s.last_offset) IN (
                       SELECT t.partition_id, t.last_offset FROM queen.segments t
                         JOIN queen.partitions p ON p.id = t.partition_id
                        WHERE p.queue_id = q.id AND t.ts < v_cut
                        ORDER BY t.partition_id, t.last_offset LIMIT v_budget)
                RETURNING s.partition_id, s.record_count)
            SELECT count(*), coalesce(sum(record_count), 0), array_agg(DISTINCT partition_id)
              INTO v_segs, v_recs, v_parts FROM d;
            IF v_segs > 0 THEN
                PERFORM queen.partition_start_v1(v_parts);
                v_budget := v_budget - v_segs;
                queue_id := q.id; tenant_id := q.tenant_id; queue_name := q.name; kind := 'eviction';
                segments := v_segs; records := v_recs;
                RETURN NEXT;
            END IF;
        END IF;

        IF p_retention AND coalesce((q.o->>'retentionEnabled')::boolean, false)
           AND coalesce((q.o->>'retentionSeconds')::bigint, 0) > 0 AND v_budget > 0 THEN
            v_cut := v_now - (q.o->>'retentionSeconds')::bigint * 1000000;
            IF v_hold IS NOT NULL THEN
                v_cut := least(v_cut, v_hold);
            END IF;
            WITH d AS (
                DELETE FROM queen.segments s
                 WHERE (s.partition_id, s.last_offset) IN (
                       SELECT t.partition_id, t.last_offset FROM queen.segments t
                         JOIN queen.partitions p ON p.id = t.partition_id
                        WHERE p.queue_id = q.id AND t.ts < v_cut
                        ORDER BY t.partition_id, t.last_offset LIMIT v_budget)
                RETURNING s.partition_id, s.record_count)
            SELECT count(*), coalesce(sum(record_count), 0), array_agg(DISTINCT partition_id)
              INTO v_segs, v_recs, v_parts FROM d;
            IF v_segs > 0 THEN
                PERFORM queen.partition_start_v1(v_parts);
                v_budget := v_budget - v_segs;
                queue_id := q.id; tenant_id := q.tenant_id; queue_name := q.name; kind := 'retention';
                segments := v_segs; records := v_recs;
                RETURN NEXT;
            END IF;
        END IF;

        IF p_retention AND coalesce((q.o->>'retentionEnabled')::boolean, false)
           AND coalesce((q.o->>'completedRetentionSeconds')::bigint, 0) > 0 AND v_budget > 0 THEN
            v_cut := v_now - (q.o->>'completedRetentionSeconds')::bigint * 1000000;
            IF v_hold IS NOT NULL THEN
                v_cut := least(v_cut, v_hold);
            END IF;
            WITH done AS (
                SELECT c.partition_id, min(c.next_offset) AS upto
                  FROM queen.cursors c WHERE c.queue_id = q.id GROUP BY c.partition_id),
            d AS (
                DELETE FROM queen.segments s
                 WHERE (s.partition_id, s.last_offset) IN (
                       SELECT t.partition_id, t.last_offset FROM queen.segments t
                         JOIN done ON done.partition_id = t.partition_id
                        WHERE t.ts < v_cut AND t.last_offset < done.upto
                        ORDER BY t.partition_id, t.last_offset LIMIT v_budget)
                RETURNING s.partition_id, s.record_count)
            SELECT count(*), coalesce(sum(record_count), 0), array_agg(DISTINCT partition_id)
              INTO v_segs, v_recs, v_parts FROM d;
            IF v_segs > 0 THEN
                PERFORM queen.partition_start_v1(v_parts);
                v_budget := v_budget - v_segs;
                queue_id := q.id; tenant_id := q.tenant_id; queue_name := q.name; kind := 'completed';
                segments := v_segs; records := v_recs;
                RETURN NEXT;
            END IF;
        END IF;
    END LOOP;
END
$$;

-- Moves start_offset of each partition to its first remaining record (its end when none
-- remains). Rows are updated one at a time in id order: the order push locks them in.
CREATE FUNCTION queen.partition_start_v1(p_parts bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    FOR v_id IN SELECT DISTINCT u FROM unnest(p_parts) AS u ORDER BY 1 LOOP
        UPDATE queen.partitions p
           SET start_offset = coalesce((SELECT s.base_offset FROM queen.segments s WHERE s.partition_id = p.id
                                         ORDER BY s.last_offset LIMIT 1), p.next_offset)
         WHERE p.id = v_id;
    END LOOP;
END
$$;

-- partition_cleanup_v1: deletes up to p_limit partitions that hold no record and have had none
-- (nor been created) for p_idle_us, with their cursors and dedup rows (PARTITION_CLEANUP_DAYS);
-- a partition with dead letters is kept.
-- A later push creates the partition again: a new id and uuid, offsets from 0 again. One node
-- at a time (try-lock 737002). Locks as the admin deletion does — the partition's cursors, then
-- the partition — but never waits: a partition whose rows are busy (a push, an ack) is left for
-- a later round, and the state is checked again once locked. Returns how many were deleted.
CREATE FUNCTION queen.partition_cleanup_v1(p_limit integer, p_idle_us bigint) RETURNS integer
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
              WHERE p.id = v_id AND p.next_offset = p.start_offset AND p.last_ts < v_cut FOR UPDATE NOWAIT;
            IF FOUND THEN
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
