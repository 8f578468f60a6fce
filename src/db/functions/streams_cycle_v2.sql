-- streams_cycle_v2 (v1 plus the fences of 095_stream_fence: tombstones, incarnations, op
-- versions): one stream cycle (POST /streams/v1/cycle) — the state ops, the sink pushes
-- and the source ack of one (query, source partition) in the caller's transaction, all or
-- nothing. Order (docs/lock-order.md, space 1s), after a key-share lock on the query row:
--   1. the shard's advisory lock, blocking: hashtextextended('queen.streams:<query>:<partition>', 0).
--      Cycles and idle flushes of one shard serialise here; two shards never meet.
--   2. the sink pushes through queen.push_v1, the allocator of POST /api/v1/push (real offsets,
--      the dedup probe, partition order, the stamp). When push_v1 finds known transactionIds
--      (kind 1) or a full queue (kind 2) it wrote nothing: those rows are returned and nothing
--      else is done; the node drops the duplicates and calls again (a full queue fails the cycle).
--   3. the state ops, in order (upsert, delete). The fence against a stale upsert: a cycle with an
--      ack may not upsert a key that another cycle or flush closed (queen.stream_tombstones) at or
--      after the claim of the lease it acks under: it may have read that row before the close and
--      would re-create the window with records already emitted (QS005 'stale state'; the node then
--      releases the lease, so the batch comes back at once and is folded again). Every delete
--      that finds its row records the close there (the clock under the shard lock, the lease).
--      An op with a version (p_op_versions[i], sent by SDKs that read state with versions: the
--      row's updated_at in µs as state/get gave it, 0 = read as absent) applies only to the row
--      as it was read: otherwise it raises QS005 (unless p_replay). Upserts stamp updated_at with
--      the clock under the shard lock, so a shard's versions never repeat.
--      A cycle or flush (p_fence: no ack) that deletes
--      a row which is no longer there read stale state: another flush or cycle closed that window
--      first, and what it emits for it would count the window's records twice. It raises QS005
--      unless p_replay (the node found every one of its pushes already written: the same cycle
--      committed before, its answer was lost) — then the delete is a no-op. (For a cycle with an
--      ack the node then releases the lease, so the batch comes back at once.)
--   4. the ack (p_ack_txn not NULL), on the group's cursor of the source partition, under its
--      row lock: the lease must be live and, when p_ack_lease is given, that lease (QS001
--      'Invalid or expired lease'); the transactionId must be one the lease delivered (QS002
--      'Message not found'). Every record of the lease up to and including it is done.
--      p_release: the lease is released and the cursor moves past it (the tail, if any, comes
--      back). Not p_release (the gate's partial ack): the cursor moves over the done prefix and
--      the lease is kept. The count of source records acked (records deleted or removed by
--      retention are skipped, not counted) is returned; p_ack_count is the client's own count,
--      checked against it (flag 4 when they differ; the transactionId decides).
--      failed/dlq: the named record goes to the dead letters through queen.ack_v1.
--   0. (before any write) a flush with p_replay whose deletes find their rows: its derived sink
--      ids were all known, yet the windows are open — a later incarnation of them (a seek back
--      replayed the source) with the same result. Nothing is written; one row of kind 7 per
--      delete (idx = the op's index, off = the row's created_us, -1 when absent) tells the node
--      to derive the ids again with those incarnations and run it as a new flush.
-- Errors raise QS00x with the earlier release's sentence; the node answers them as a cycle
-- failure (200, success false) and the transaction rolls back whole.
-- Rows: push_v1's (kinds 0..2), the incarnations (kind 7, step 0) or one summary (kind 5: idx = state ops applied, off = source
-- records acked, ts = flags 1 lease released, 2 dead-lettered, 4 count differed, 8 replay;
-- partition_id = the requested count or NULL; qname = the source queue). C names them in
-- src/streams/streams_results.h.
CREATE OR REPLACE FUNCTION queen.streams_cycle_v2(
    p_tenant uuid, p_query uuid, p_source uuid, p_group text,
    p_op_types text[], p_op_keys text[], p_op_values text[], p_op_versions bigint[],
    p_g_tenant uuid[], p_queue text[], p_partition text[], p_count int[], p_bytes int[], p_data bytea[],
    p_dd_group int[], p_dd_pos int[], p_dd_txn text[], p_dd_window bigint,
    p_ack_txn text, p_ack_lease uuid, p_ack_status text, p_ack_count integer, p_release boolean, p_ack_error text,
    p_fence boolean, p_replay boolean)
RETURNS TABLE (kind int, idx int, partition_id bigint, partition_uuid uuid, queue_id bigint, off bigint, ts bigint,
               qname text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now    bigint := queen.now_us();
    r        record;
    cur      record;
    v_stop   boolean := false;
    v_pid    bigint;
    v_qname  text;
    v_start  bigint;
    v_applied integer := 0;
    v_n      integer;
    v_pos    integer;
    v_first  integer;
    v_k      bigint := 0;
    v_flags  bigint := 0;
    v_done   boolean[];
    v_found  boolean;
    v_replayed boolean := false;
    v_claim  bigint;
    v_lease  uuid;
    v_inc    bigint;
    v_ver    bigint;
    v_open   boolean := false;
    i        integer;
BEGIN
    -- the query row, key share (what the state rows' foreign key takes anyway), before anything:
    -- a drop or reset (FOR UPDATE on it) waits for the cycles in flight, and a cycle never
    -- waits for it while holding state rows
    -- a framed pop's u64 partition id, as the API passes it (queen.partition_uuid_v1)
    p_source := coalesce(queen.partition_uuid_v1(p_source), p_source);
    PERFORM 1 FROM queen.stream_queries x WHERE x.id = p_query AND x.tenant_id = p_tenant FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Unknown query_id: %', p_query USING ERRCODE = 'QS003';
    END IF;

    -- 1. the shard lock
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.streams:' || p_query::text || ':' || p_source::text, 0));

    SELECT p.id, q.name, p.start_offset INTO v_pid, v_qname, v_start
      FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id AND q.tenant_id = p_tenant
     WHERE p.uuid = p_source;

    -- the lease this cycle acks under, as it is now (the ack reads it again under its row lock)
    IF p_ack_txn IS NOT NULL AND v_pid IS NOT NULL THEN
        SELECT x.claimed_at, x.lease_id INTO v_claim, v_lease FROM queen.cursors x
         WHERE x.partition_id = v_pid AND x.consumer_group = p_group AND x.lease_id IS NOT NULL;
    END IF;

    -- 0. a replayed flush whose windows are open again: a later incarnation
    IF p_fence AND p_replay THEN
        FOR i IN 1 .. coalesce(cardinality(p_op_types), 0) LOOP
            IF p_op_types[i] = 'delete' THEN
                SELECT s.created_us INTO v_inc FROM queen.stream_state s
                 WHERE s.query_id = p_query AND s.partition_uuid = p_source AND s.key = p_op_keys[i];
                IF FOUND THEN
                    v_open := true;
                END IF;
            END IF;
        END LOOP;
        IF v_open THEN
            FOR i IN 1 .. cardinality(p_op_types) LOOP
                IF p_op_types[i] = 'delete' THEN
                    SELECT s.created_us INTO v_inc FROM queen.stream_state s
                     WHERE s.query_id = p_query AND s.partition_uuid = p_source AND s.key = p_op_keys[i];
                    kind := 7; idx := i; partition_id := NULL; partition_uuid := p_source; queue_id := NULL;
                    off := CASE WHEN FOUND THEN v_inc ELSE -1 END; ts := NULL; qname := NULL;
                    RETURN NEXT;
                END IF;
            END LOOP;
            RETURN;
        END IF;
    END IF;

    -- 2. the sink pushes
    IF coalesce(cardinality(p_queue), 0) > 0 THEN
        FOR r IN SELECT * FROM queen.push_v1(p_g_tenant, p_queue, p_partition, p_count, p_bytes, p_data,
                                             p_dd_group, p_dd_pos, p_dd_txn, p_dd_window) LOOP
            kind := r.kind; idx := r.idx; partition_id := r.partition_id; partition_uuid := r.partition_uuid;
            queue_id := r.queue_id; off := r.off; ts := r.ts; qname := NULL;
            IF r.kind <> 0 THEN
                v_stop := true;
            END IF;
            RETURN NEXT;
        END LOOP;
        IF v_stop THEN
            RETURN;
        END IF;
    END IF;

    -- 3. the state ops
    FOR i IN 1 .. coalesce(cardinality(p_op_types), 0) LOOP
        IF p_op_versions[i] IS NOT NULL AND NOT p_replay THEN
            SELECT (extract(epoch FROM s.updated_at) * 1000000)::bigint INTO v_ver FROM queen.stream_state s
             WHERE s.query_id = p_query AND s.partition_uuid = p_source AND s.key = p_op_keys[i];
            IF coalesce(v_ver, 0) <> p_op_versions[i] THEN
                IF p_fence THEN
                    RAISE EXCEPTION 'stale flush: state row "%" changed since it was read (version % is %)', p_op_keys[i],
                        p_op_versions[i], coalesce(v_ver, 0) USING ERRCODE = 'QS005';
                END IF;
                RAISE EXCEPTION 'stale state: state row "%" changed since it was read (version % is %); the batch comes back and is folded again',
                    p_op_keys[i], p_op_versions[i], coalesce(v_ver, 0) USING ERRCODE = 'QS005';
            END IF;
            v_ver := NULL;
        END IF;
        IF p_op_types[i] = 'upsert' THEN
            IF v_claim IS NOT NULL THEN
                PERFORM 1 FROM queen.stream_tombstones t
                 WHERE t.query_id = p_query AND t.partition_uuid = p_source AND t.key = p_op_keys[i]
                   AND t.closed_us >= v_claim AND t.lease_id IS DISTINCT FROM v_lease;
                IF FOUND THEN
                    RAISE EXCEPTION 'stale state: state row "%" was closed by another cycle or flush after this batch was leased; the batch comes back and is folded again', p_op_keys[i]
                        USING ERRCODE = 'QS005';
                END IF;
            END IF;
            INSERT INTO queen.stream_state AS s (query_id, partition_uuid, key, value, updated_at, created_us)
            VALUES (p_query, p_source, p_op_keys[i], p_op_values[i]::jsonb, clock_timestamp(), queen.now_us())
            ON CONFLICT (query_id, partition_uuid, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at;
        ELSE
            DELETE FROM queen.stream_state s
             WHERE s.query_id = p_query AND s.partition_uuid = p_source AND s.key = p_op_keys[i];
            v_found := FOUND;
            IF v_found THEN
                INSERT INTO queen.stream_tombstones AS t (query_id, partition_uuid, key, closed_us, lease_id)
                VALUES (p_query, p_source, p_op_keys[i], queen.now_us(), v_lease)
                ON CONFLICT (query_id, partition_uuid, key)
                DO UPDATE SET closed_us = excluded.closed_us, lease_id = excluded.lease_id;
            END IF;
            IF NOT v_found THEN
                IF NOT p_replay THEN
                    IF p_fence THEN
                        RAISE EXCEPTION 'stale flush: state row "%" was already closed by another cycle or flush', p_op_keys[i]
                            USING ERRCODE = 'QS005';
                    END IF;
                    RAISE EXCEPTION 'stale state: state row "%" was already closed by another cycle or flush; the batch comes back and is folded again', p_op_keys[i]
                        USING ERRCODE = 'QS005';
                END IF;
                v_replayed := true;
            END IF;
        END IF;
        v_applied := v_applied + 1;
    END LOOP;
    IF v_replayed THEN
        v_flags := v_flags | 8;
    END IF;
    IF v_pid IS NOT NULL AND v_applied > 0 THEN
        -- a state row names this partition: maintenance (partition_cleanup_v1) must not delete
        -- it under us; its delete takes the row FOR UPDATE NOWAIT and skips it while we hold this
        PERFORM 1 FROM queen.partitions p WHERE p.id = v_pid FOR KEY SHARE;
    END IF;

    -- 4. the ack
    IF p_ack_txn IS NOT NULL THEN
        IF v_pid IS NULL THEN
            RAISE EXCEPTION 'Message not found' USING ERRCODE = 'QS002';
        END IF;
        SELECT * INTO cur FROM queen.cursors x WHERE x.partition_id = v_pid AND x.consumer_group = p_group FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'Message not found' USING ERRCODE = 'QS002';
        END IF;
        IF cur.lease_id IS NULL OR cur.lease_expires_at IS NULL OR cur.lease_expires_at < v_now
           OR (p_ack_lease IS NOT NULL AND cur.lease_id <> p_ack_lease) THEN
            RAISE EXCEPTION 'Invalid or expired lease' USING ERRCODE = 'QS001';
        END IF;
        -- the tombstones of this shard closed before this lease's claim fence nothing any more
        -- (every live or later lease was claimed after them)
        DELETE FROM queen.stream_tombstones t
         WHERE t.query_id = p_query AND t.partition_uuid = p_source AND t.closed_us < cur.claimed_at;
        v_pos := array_position(cur.lease_txns, p_ack_txn);
        IF v_pos IS NULL THEN
            RAISE EXCEPTION 'Message not found' USING ERRCODE = 'QS002';
        END IF;
        v_n := cardinality(cur.lease_txns);
        v_done := cur.lease_done;
        v_first := greatest(cur.next_offset - cur.lease_start, 0)::integer + 1;
        -- the source records this ack covers that exist: not deleted (a NULL transactionId),
        -- not removed by retention since the pop (below the partition's start offset), not done
        FOR i IN v_first .. v_pos LOOP
            IF cur.lease_txns[i] IS NOT NULL AND cur.lease_start + i - 1 >= v_start AND NOT coalesce(v_done[i], false) THEN
                v_k := v_k + 1;
            END IF;
        END LOOP;
        IF p_ack_count IS NOT NULL AND p_ack_count <> v_k THEN
            v_flags := v_flags | 4;
        END IF;
        IF p_ack_status IN ('failed', 'dlq') THEN
            FOR i IN 1 .. v_pos - 1 LOOP
                v_done[i] := true;
            END LOOP;
            UPDATE queen.cursors x SET lease_done = v_done WHERE x.partition_id = v_pid AND x.consumer_group = p_group;
            FOR r IN SELECT * FROM queen.ack_v1(p_tenant, p_group, ARRAY[p_source], ARRAY[p_ack_txn], ARRAY['dlq'],
                                                ARRAY[p_ack_lease], ARRAY[p_ack_error]) LOOP
                IF NOT r.success THEN
                    RAISE EXCEPTION '%', r.error USING ERRCODE = 'QS002';
                END IF;
                IF r.dlq THEN
                    v_flags := v_flags | 2;
                END IF;
            END LOOP;
            v_k := greatest(v_k - 1, 0);
        ELSE
            FOR i IN 1 .. v_pos LOOP
                v_done[i] := true;
            END LOOP;
            IF p_release AND v_pos < v_n THEN
                UPDATE queen.cursors x
                   SET next_offset = greatest(cur.lease_start + v_pos, cur.next_offset),
                       total_consumed = x.total_consumed + greatest(cur.lease_start + v_pos - cur.next_offset, 0),
                       last_consumed_at = now(), lease_id = NULL, lease_expires_at = NULL, lease_start = NULL,
                       lease_end = NULL, lease_txns = NULL, lease_done = NULL, lease_failed = false, retry_count = 0
                 WHERE x.partition_id = v_pid AND x.consumer_group = p_group;
            ELSE
                PERFORM queen.cursor_settle_v1(v_pid, p_group, v_done);
            END IF;
            IF p_release OR v_pos = v_n THEN
                v_flags := v_flags | 1;
            END IF;
        END IF;
    END IF;

    INSERT INTO queen.stream_partitions AS sp (query_id, partition_uuid, last_cycle_at, cycles)
    VALUES (p_query, p_source, v_now, 1)
    ON CONFLICT (query_id, partition_uuid) DO UPDATE SET last_cycle_at = excluded.last_cycle_at, cycles = sp.cycles + 1;

    kind := 5; idx := v_applied; partition_id := p_ack_count; partition_uuid := p_source; queue_id := v_pid;
    off := v_k; ts := v_flags; qname := v_qname;
    RETURN NEXT;
END
$$;
