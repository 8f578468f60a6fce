-- 003_consume — consumer groups over dense offsets: cursors with leases, subscriptions,
-- dead letters; and the pop, lease, ack and extend functions.
--
-- A cursor is one row per (partition, consumer group): next_offset is the first record the
-- group has not finished (everything below is acked or dead-lettered). A pop leases the run
-- [lease_start, lease_end) to one consumer until lease_expires_at; acks mark records of the
-- lease done and the cursor advances over the done prefix. Queue mode is the reserved group
-- '__QUEUE_MODE__'.
CREATE TABLE queen.cursors (
    partition_id      bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    consumer_group    text NOT NULL,
    queue_id          bigint NOT NULL,
    next_offset       bigint NOT NULL,
    lease_id          uuid,
    lease_expires_at  bigint,            -- µs; NULL = no lease
    lease_start       bigint,
    lease_end         bigint,            -- exclusive
    lease_txns        text[],            -- transactionIds of lease_start .. lease_end-1
    lease_done        boolean[],
    lease_failed      boolean NOT NULL DEFAULT false, -- this delivery already counted a failure
    retry_count       integer NOT NULL DEFAULT 0,     -- failed deliveries of the batch at next_offset
    total_consumed    bigint NOT NULL DEFAULT 0,
    last_consumed_at  timestamptz,
    claimed_at        bigint NOT NULL DEFAULT 0,      -- µs of the last claim: least recent first
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, consumer_group)
) WITH (fillfactor = 50);
CREATE INDEX cursors_queue_group ON queen.cursors (queue_id, consumer_group);
CREATE INDEX cursors_lease ON queen.cursors (lease_id) WHERE lease_id IS NOT NULL;

-- Where a consumer group starts on a partition it has no cursor for yet. No row = from the
-- beginning of the log.
CREATE TABLE queen.subscriptions (
    queue_id        bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    consumer_group  text NOT NULL,
    mode            text NOT NULL,         -- 'new' or 'timestamp'
    start_ts        bigint NOT NULL,       -- µs: records stamped before it are skipped
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, consumer_group)
);

-- A dead letter keeps its own copy of the record, so it outlives the log's retention.
CREATE TABLE queen.dead_letters (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue_id        bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    partition_id    bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    consumer_group  text NOT NULL,
    off             bigint NOT NULL,
    txn_id          text NOT NULL,
    ts              bigint NOT NULL,
    error           text,
    retry_count     integer NOT NULL DEFAULT 0,
    record          bytea,
    failed_at       timestamptz NOT NULL DEFAULT now(),
    requeued_at     timestamptz
);
CREATE INDEX dead_letters_queue ON queen.dead_letters (queue_id, failed_at DESC);
CREATE INDEX dead_letters_partition ON queen.dead_letters (partition_id, txn_id);

CREATE INDEX segments_ts ON queen.segments (partition_id, ts);

-- The first offset stamped at or after p_ts (the partition's end when none is).
CREATE FUNCTION queen.offset_at_ts_v1(p_pid bigint, p_ts bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT s.base_offset FROM queen.segments s
          WHERE s.partition_id = p_pid AND s.ts >= p_ts ORDER BY s.ts, s.last_offset LIMIT 1),
        (SELECT p.next_offset FROM queen.partitions p WHERE p.id = p_pid))
$$;

-- Reads a LEB128 varint from a bytea at 0-based position p_pos.
CREATE FUNCTION queen.varint_v1(p_data bytea, p_pos integer, OUT val bigint, OUT next integer)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    b integer;
    shift integer := 0;
BEGIN
    val := 0;
    next := p_pos;
    LOOP
        b := get_byte(p_data, next);
        next := next + 1;
        val := val | ((b & 127)::bigint << shift);
        EXIT WHEN b < 128;
        shift := shift + 7;
    END LOOP;
END
$$;

-- The encoded bytes of the record at offset p_off (see src/storage/record.h), with its stamp.
CREATE FUNCTION queen.record_at_v1(p_pid bigint, p_off bigint, OUT ts bigint, OUT rec bytea)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_base bigint;
    v_data bytea;
    pos integer := 1;
    start integer;
    flags integer;
    v record;
BEGIN
    SELECT s.base_offset, s.ts, s.data INTO v_base, ts, v_data
      FROM queen.segments s WHERE s.partition_id = p_pid AND s.last_offset >= p_off AND s.base_offset <= p_off;
    IF NOT FOUND THEN
        RETURN;
    END IF;
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
        IF flags & 2 = 2 THEN
            pos := pos + 16;
        END IF;
        IF flags & 4 = 4 THEN
            v := queen.varint_v1(v_data, pos);
            pos := v.next + v.val::integer;
        END IF;
        v := queen.varint_v1(v_data, pos);
        pos := v.next + v.val::integer;
    END LOOP;
    rec := substring(v_data FROM start + 1 FOR pos - start);
END
$$;

-- pop_v1: claims up to p_max_partitions partitions of a queue (or the one named) for a
-- consumer group and returns the segments holding the claimed records. Claim k (from 1) gets
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
--           c = lease expiry (µs), seg_count = 1 when the partition holds records past b
--   kind 1: a segment of the partition pid: a = base offset, b = last offset, seg_*
--   kind 2: why nothing was claimed: pname = 'queue_not_found' | 'partition_not_found' |
--           'lease_held' | 'window_buffer' | 'empty'; c = when records may become available
--   kind 4: pid = a scanned candidate that was not claimed (for the node's hints)
CREATE FUNCTION queen.pop_v1(
    p_tenant uuid, p_queue text, p_partition text, p_group text, p_batch integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from bigint, p_max_partitions integer, p_lease_ids uuid[], p_lease_seconds integer,
    p_split boolean, p_hints bigint[])
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
    cand       record;
    cur        record;
BEGIN
    SELECT q.id, q.options INTO v_qid, v_opts FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 2, NULL::bigint, NULL::uuid, 'queue_not_found'::text, NULL::bigint, NULL::bigint,
                            NULL::bigint, NULL::bigint, NULL::integer, NULL::bytea;
        RETURN;
    END IF;
    v_lease_us := coalesce(nullif(p_lease_seconds, 0), nullif((v_opts->>'leaseTime')::bigint, 0), 60) * 1000000;
    IF NOT p_auto_ack THEN
        -- a lease is not consumption: if a crash loses it, its records are delivered again, as
        -- when it expires. Only autoAck pops (which move the cursor) wait for the WAL flush.
        SET LOCAL synchronous_commit = off;
    END IF;
    v_delay_us := coalesce((v_opts->>'delayedProcessing')::bigint, 0) * 1000000;
    v_wb_us := coalesce((v_opts->>'windowBuffer')::bigint, 0) * 1000000;

    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT s.start_ts INTO v_sub_ts FROM queen.subscriptions s WHERE s.queue_id = v_qid AND s.consumer_group = p_group;
        IF NOT FOUND AND (p_sub_from IS NOT NULL OR p_sub_mode = 'new') THEN
            INSERT INTO queen.subscriptions (queue_id, consumer_group, mode, start_ts)
            VALUES (v_qid, p_group, CASE WHEN p_sub_from IS NULL THEN 'new' ELSE 'timestamp' END, coalesce(p_sub_from, v_now))
            ON CONFLICT DO NOTHING;
            SELECT s.start_ts INTO v_sub_ts FROM queen.subscriptions s WHERE s.queue_id = v_qid AND s.consumer_group = p_group;
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
        v_end := least(v_start + CASE WHEN p_split THEN greatest(p_batch, 1) ELSE v_budget END, cand.p_next);
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
                   lease_end = v_end, lease_txns = NULL, lease_done = NULL, lease_failed = false
             WHERE x.partition_id = cand.id AND x.consumer_group = p_group;
        END IF;
        RETURN QUERY SELECT 0, cand.id, cand.uuid, cand.name, v_start, v_end, v_now + v_lease_us,
                            NULL::bigint, CASE WHEN v_end < cand.p_next THEN 1 ELSE 0 END, NULL::bytea;
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
        v_budget := v_budget - (v_end - v_start);
    END LOOP;
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

-- lease_store_v1: records which transactionIds each lease delivered (offsets lease_start ..), so
-- an ack by transactionId finds its offset. Committed asynchronously: if it is lost in a
-- crash the lease cannot be acked and simply expires, and the records are delivered again.
CREATE FUNCTION queen.lease_store_v1(p_group text, p_leases uuid[], p_pids bigint[], p_counts integer[],
                                    p_txns text[])
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    v_at integer := 1;
    n integer := 0;
    v_done boolean[];
BEGIN
    SET LOCAL synchronous_commit = off;
    FOR i IN 1 .. coalesce(cardinality(p_pids), 0) LOOP
        -- a NULL transactionId is a deleted record: not delivered, so done from the start
        v_done := ARRAY(SELECT t IS NULL FROM unnest(p_txns[v_at : v_at + p_counts[i] - 1]) AS t);
        UPDATE queen.cursors x
           SET lease_txns = p_txns[v_at : v_at + p_counts[i] - 1], lease_done = v_done
         WHERE x.partition_id = p_pids[i] AND x.consumer_group = p_group AND x.lease_id = p_leases[i];
        IF FOUND AND v_done[1] THEN
            PERFORM queen.cursor_settle_v1(p_pids[i], p_group, v_done);
        END IF;
        v_at := v_at + p_counts[i];
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- ack_v1: acks of one consumer group, processed in (partition id, request order); each
-- partition's cursor row is locked once, in partition-id order, and written once.
--   completed/success: the record is done
--   failed:  with retries left, the lease is released (the batch comes back from the first
--            record not done) and the retry count grows once per delivery; the partition then
--            waits retryDelay ms. With none left the record goes to the dead letters (or is
--            dropped when the queue keeps none) and is done
--   dlq:     straight to the dead letters (or dropped when the queue keeps none)
--   retry:   the lease is released, nothing counted
-- Then the cursor advances over the lease's done prefix; a lease all done is released.
CREATE FUNCTION queen.ack_v1(p_tenant uuid, p_group text, p_parts uuid[], p_txns text[], p_status text[],
                             p_leases uuid[], p_errors text[])
RETURNS TABLE (idx integer, success boolean, error text, queue_name text, partition_name text,
               lease_released boolean, dlq boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now      bigint := queen.now_us();
    it         record;
    cur        record;
    v_pid      bigint := NULL;
    v_have     boolean := false;
    v_done     boolean[];
    v_dirty    boolean := false;
    v_pos      integer;
    v_rec      record;
    v_keep_dlq boolean;
BEGIN
    FOR it IN
        SELECT u.i::integer AS i, u.txn, coalesce(nullif(u.st, ''), 'completed') AS st, u.lease, u.err,
               p.id AS part_id, p.name AS part_name, q.name AS q_name, q.id AS q_id, q.options AS opts
        FROM unnest(p_parts, p_txns, p_status, p_leases, p_errors) WITH ORDINALITY AS u(puuid, txn, st, lease, err, i)
        LEFT JOIN queen.partitions p ON p.uuid = u.puuid
        LEFT JOIN queen.queues q ON q.id = p.queue_id AND q.tenant_id = p_tenant
        ORDER BY p.id NULLS LAST, u.i
    LOOP
        IF it.q_id IS NULL THEN
            RETURN QUERY SELECT it.i, false, 'Message not found'::text, NULL::text, NULL::text, false, false;
            CONTINUE;
        END IF;
        IF v_pid IS DISTINCT FROM it.part_id THEN
            IF v_dirty THEN
                PERFORM queen.cursor_settle_v1(v_pid, p_group, v_done);
            END IF;
            v_pid := it.part_id;
            v_dirty := false;
            SELECT * INTO cur FROM queen.cursors x
             WHERE x.partition_id = v_pid AND x.consumer_group = p_group FOR UPDATE;
            v_have := FOUND;
            v_done := CASE WHEN v_have THEN cur.lease_done END;
        END IF;
        IF NOT v_have THEN
            RETURN QUERY SELECT it.i, false, 'Message not found'::text, it.q_name, it.part_name, false, false;
            CONTINUE;
        END IF;
        IF it.lease IS NOT NULL AND (cur.lease_id IS DISTINCT FROM it.lease OR cur.lease_expires_at < v_now) THEN
            RETURN QUERY SELECT it.i, false, 'Invalid or expired lease'::text, it.q_name, it.part_name, false, false;
            CONTINUE;
        END IF;
        v_pos := array_position(cur.lease_txns, it.txn);
        IF v_pos IS NULL THEN
            RETURN QUERY SELECT it.i, false, 'Message not found'::text, it.q_name, it.part_name, false, false;
            CONTINUE;
        END IF;
        v_dirty := true;
        IF it.st IN ('completed', 'success') THEN
            v_done[v_pos] := true;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, false, false;
        ELSIF it.st = 'retry' THEN
            UPDATE queen.cursors x SET lease_id = NULL, lease_expires_at = NULL
             WHERE x.partition_id = v_pid AND x.consumer_group = p_group
             RETURNING * INTO cur;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, true, false;
        ELSIF it.st = 'failed' AND (cur.retry_count < coalesce((it.opts->>'retryLimit')::integer, 3)
                                    OR cur.lease_failed) THEN
            -- a retry: counted once per delivery (lease_failed), however many records fail in it.
            -- The partition stays unavailable for retryDelay ms: an ownerless lease until then.
            IF NOT cur.lease_failed THEN
                UPDATE queen.cursors x SET retry_count = x.retry_count + 1, lease_failed = true, lease_id = NULL,
                       lease_expires_at = CASE WHEN coalesce((it.opts->>'retryDelay')::bigint, 0) > 0
                                               THEN v_now + (it.opts->>'retryDelay')::bigint * 1000 END
                 WHERE x.partition_id = v_pid AND x.consumer_group = p_group
                 RETURNING * INTO cur;
            END IF;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, true, false;
        ELSIF it.st IN ('failed', 'dlq') THEN
            -- a queue that keeps no dead letters (deadLetterQueue false), or none for exhausted
            -- retries (dlqAfterMaxRetries false), drops the record; the partition moves on either way
            v_keep_dlq := coalesce((it.opts->>'deadLetterQueue')::boolean, true)
                          AND (it.st = 'dlq' OR coalesce((it.opts->>'dlqAfterMaxRetries')::boolean, true));
            IF v_keep_dlq THEN
                SELECT r.ts, r.rec INTO v_rec FROM queen.record_at_v1(v_pid, cur.lease_start + v_pos - 1) r;
                INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, off, txn_id, ts, error,
                                                retry_count, record)
                VALUES (it.q_id, v_pid, p_group, cur.lease_start + v_pos - 1, it.txn, coalesce(v_rec.ts, 0),
                        coalesce(nullif(it.err, ''), CASE WHEN it.st = 'dlq' THEN 'Moved to the dead letters'
                                                         ELSE 'Retries exhausted' END),
                        cur.retry_count, v_rec.rec);
            END IF;
            v_done[v_pos] := true;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, false, v_keep_dlq;
        ELSE
            RETURN QUERY SELECT it.i, false, ('Unknown status: ' || it.st)::text, it.q_name, it.part_name, false, false;
        END IF;
    END LOOP;
    IF v_dirty THEN
        PERFORM queen.cursor_settle_v1(v_pid, p_group, v_done);
    END IF;
END
$$;

-- cursor_settle_v1: stores a lease's done flags and moves the cursor over their done prefix,
-- in one write. A lease all done is released and the retry count starts again.
CREATE FUNCTION queen.cursor_settle_v1(p_pid bigint, p_group text, p_done boolean[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cur record;
    n integer;
    k integer;
    v_next bigint;
BEGIN
    SELECT * INTO cur FROM queen.cursors x WHERE x.partition_id = p_pid AND x.consumer_group = p_group;
    IF NOT FOUND OR p_done IS NULL OR cur.lease_start IS NULL THEN
        RETURN;
    END IF;
    n := cardinality(p_done);
    k := greatest(cur.next_offset - cur.lease_start, 0)::integer;
    WHILE k < n AND p_done[k + 1] LOOP
        k := k + 1;
    END LOOP;
    v_next := greatest(cur.lease_start + k, cur.next_offset);
    IF k = n THEN
        UPDATE queen.cursors x
           SET next_offset = v_next, total_consumed = x.total_consumed + (v_next - cur.next_offset),
               last_consumed_at = now(), lease_id = NULL, lease_expires_at = NULL, lease_start = NULL,
               lease_end = NULL, lease_txns = NULL, lease_done = NULL, lease_failed = false, retry_count = 0
         WHERE x.partition_id = p_pid AND x.consumer_group = p_group;
    ELSE
        UPDATE queen.cursors x
           SET lease_done = p_done, next_offset = v_next,
               total_consumed = x.total_consumed + (v_next - cur.next_offset),
               last_consumed_at = CASE WHEN v_next > cur.next_offset THEN now() ELSE x.last_consumed_at END
         WHERE x.partition_id = p_pid AND x.consumer_group = p_group;
    END IF;
END
$$;

-- lease_extend_v1: pushes the expiry of every cursor a lease holds to at least now + seconds.
-- Returns the earliest new expiry, or why not ('Lease not found', 'Lease already expired').
CREATE FUNCTION queen.lease_extend_v1(p_lease uuid, p_seconds integer, OUT expires_at bigint, OUT error text)
LANGUAGE plpgsql AS $$
DECLARE
    v_now bigint := queen.now_us();
    n integer;
BEGIN
    UPDATE queen.cursors x SET lease_expires_at = greatest(x.lease_expires_at, v_now + p_seconds::bigint * 1000000)
     WHERE x.lease_id = p_lease AND x.lease_expires_at >= v_now;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        SELECT min(x.lease_expires_at) INTO expires_at FROM queen.cursors x WHERE x.lease_id = p_lease;
        RETURN;
    END IF;
    PERFORM 1 FROM queen.cursors x WHERE x.lease_id = p_lease;
    error := CASE WHEN FOUND THEN 'Lease already expired' ELSE 'Lease not found' END;
END
$$;

-- pop_ns_v1: a pop over every queue of a namespace (and task, when given): queues are tried in
-- priority order (highest first, ties in random order so none starves), and the first that
-- yields records answers. Rows as pop_v1's, plus the queue's name.
CREATE FUNCTION queen.pop_ns_v1(
    p_tenant uuid, p_namespace text, p_task text, p_group text, p_batch integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from bigint, p_max_partitions integer, p_lease_ids uuid[], p_lease_seconds integer)
RETURNS TABLE (kind integer, pid bigint, puuid uuid, pname text, a bigint, b bigint, c bigint,
               seg_ts bigint, seg_count integer, seg_data bytea, qname text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    q        record;
    r        record;
    v_got    boolean := false;
    v_retry  bigint := NULL;
BEGIN
    FOR q IN
        SELECT x.name FROM queen.queues x
         WHERE x.tenant_id = p_tenant AND x.namespace = p_namespace AND (p_task IS NULL OR x.task = p_task)
         ORDER BY coalesce((x.options->>'priority')::integer, 0) DESC, random()
    LOOP
        FOR r IN SELECT * FROM queen.pop_v1(p_tenant, q.name, NULL, p_group, p_batch, p_auto_ack, p_sub_mode,
                                            p_sub_from, p_max_partitions, p_lease_ids, p_lease_seconds, false,
                                            NULL) LOOP
            IF r.kind = 4 THEN
                CONTINUE;
            ELSIF r.kind = 2 THEN
                IF r.c IS NOT NULL THEN
                    v_retry := least(coalesce(v_retry, r.c), r.c);
                END IF;
                CONTINUE;
            END IF;
            v_got := true;
            kind := r.kind; pid := r.pid; puuid := r.puuid; pname := r.pname; a := r.a; b := r.b; c := r.c;
            seg_ts := r.seg_ts; seg_count := r.seg_count; seg_data := r.seg_data; qname := q.name;
            RETURN NEXT;
        END LOOP;
        EXIT WHEN v_got;
    END LOOP;
    IF NOT v_got THEN
        kind := 2; pname := 'empty'; c := v_retry; qname := NULL;
        RETURN NEXT;
    END IF;
END
$$;
