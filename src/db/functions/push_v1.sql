-- push_v1: one group commit. Arrays are per group (one group = one partition's new segment),
-- plus the producer transactionIds to deduplicate. Lock order (docs/lock-order.md):
-- queue/partition creation in (tenant, queue, partition) name order, then queue clocks by
-- queue id, then partitions by id, then dedup rows, then new segment rows.
-- Returns one row per group (kind 0: base offset, stamp); or, writing no records, one row per
-- duplicate when some transactionIds were already seen (kind 1: the original offset and
-- stamp), or one row per group of a queue the commit would fill past its maxSize (kind 2);
-- the caller then resubmits without them. A group of plaintext records for a queue with
-- encryptionEnabled raises QE001 and writes nothing (step 2a): the node seals and sends again
-- (docs/encryption.md). C names the columns and kinds in src/storage/storage_results.h.
CREATE OR REPLACE FUNCTION queen.push_v1(
    p_tenant uuid[], p_queue text[], p_partition text[], p_count int[], p_bytes int[], p_data bytea[],
    p_dd_group int[], p_dd_pos int[], p_dd_txn text[], p_dd_window bigint)
RETURNS TABLE (kind int, idx int, partition_id bigint, partition_uuid uuid, queue_id bigint, off bigint, ts bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n       int := cardinality(p_queue);
    v_qid   bigint[];
    v_pid   bigint[];
    v_puuid uuid[];
    v_stamp bigint;
    v_base  bigint[];
    v_locked bigint;
    v_full  bigint[];
    v_sealed bigint[];
    v_plain int;
BEGIN
    -- 1. create missing queues and partitions, in name order. Lookups go element by element
    --    (LATERAL) so each one is a probe of the (tenant, name) / (queue_id, name) unique index;
    --    joining the unnested arrays through queues instead makes the planner scan every
    --    partition of the queue per element.
    WITH want AS (
        SELECT DISTINCT t, q FROM unnest(p_tenant, p_queue) AS u(t, q)
        WHERE NOT EXISTS (SELECT 1 FROM queen.queues x WHERE x.tenant_id = u.t AND x.name = u.q)
        ORDER BY t, q
    ), ins AS (
        INSERT INTO queen.queues (tenant_id, name, namespace, task)
        SELECT t, q, split_part(q, '.', 1), split_part(q, '.', 2) FROM want
        ON CONFLICT (tenant_id, name) DO NOTHING
        RETURNING id
    )
    INSERT INTO queen.queue_clocks (queue_id) SELECT id FROM ins;

    SELECT array_agg(q.id ORDER BY u.i) INTO v_qid
      FROM unnest(p_tenant, p_queue) WITH ORDINALITY AS u(t, qn, i)
      CROSS JOIN LATERAL (SELECT x.id FROM queen.queues x WHERE x.tenant_id = u.t AND x.name = u.qn) q;
    IF coalesce(cardinality(v_qid), 0) <> n THEN
        RAISE EXCEPTION 'a queue was deleted during the push' USING ERRCODE = '40001';
    END IF;

    WITH want AS (
        SELECT DISTINCT u.qid, u.p FROM unnest(v_qid, p_partition) AS u(qid, p)
        WHERE NOT EXISTS (SELECT 1 FROM queen.partitions x WHERE x.queue_id = u.qid AND x.name = u.p)
        ORDER BY 1, 2
    )
    INSERT INTO queen.partitions (queue_id, name) SELECT qid, p FROM want
    ON CONFLICT (queue_id, name) DO NOTHING;

    SELECT array_agg(p.id ORDER BY u.i), array_agg(p.uuid ORDER BY u.i) INTO v_pid, v_puuid
      FROM unnest(v_qid, p_partition) WITH ORDINALITY AS u(qid, pn, i)
      CROSS JOIN LATERAL (SELECT x.id, x.uuid FROM queen.partitions x WHERE x.queue_id = u.qid AND x.name = u.pn) p;
    IF coalesce(cardinality(v_pid), 0) <> n THEN
        RAISE EXCEPTION 'a partition was deleted during the push' USING ERRCODE = '40001';
    END IF;

    -- 2. the queue clocks, in id order: one stamp for the whole commit
    SELECT greatest(max(c.last_ts) + 1, queen.now_us()) INTO v_stamp
      FROM (SELECT x.last_ts FROM queen.queue_clocks x WHERE x.queue_id = ANY (v_qid)
            ORDER BY x.queue_id FOR UPDATE) c;
    UPDATE queen.queue_clocks x SET last_ts = v_stamp WHERE x.queue_id = ANY (v_qid);

    -- 2a. a queue with encryptionEnabled takes sealed records only (docs/encryption.md). Read
    --     under the clock lock, which configure takes as well: a commit ordered after the
    --     configure that enabled encryption sees its options. The writer seals all of a
    --     group's records or none, so the first record's flags (the byte after the segment's
    --     version) speak for the segment. The error names the group; the node seals and resends.
    SELECT array_agg(q.id) INTO v_sealed FROM queen.queues q
     WHERE q.id = ANY (v_qid) AND (queen.queue_options_v1(q.options)->>'encryptionEnabled')::boolean;
    IF v_sealed IS NOT NULL THEN
        SELECT min(g.i) INTO v_plain FROM generate_subscripts(v_qid, 1) AS g(i)
         WHERE v_qid[g.i] = ANY (v_sealed)
           AND (octet_length(p_data[g.i]) < 2 OR get_byte(p_data[g.i], 1) & 8 = 0);
        IF v_plain IS NOT NULL THEN
            RAISE EXCEPTION 'push_v1: group % (queue "%") has encryptionEnabled and its records are not sealed',
                v_plain, p_queue[v_plain] USING ERRCODE = 'QE001';
        END IF;
    END IF;

    -- 2b. queues with a maxSize: a commit that would pass it writes nothing, and names the
    --     groups of each full queue (kind 2, off = the limit). Checked under the clock lock, so
    --     the count includes every earlier commit to the queue.
    SELECT array_agg(q.id) INTO v_full
      FROM queen.queues q CROSS JOIN LATERAL (SELECT (queen.queue_options_v1(q.options)->>'maxSize')::bigint AS lim) o
     WHERE q.id = ANY (v_qid) AND o.lim > 0
       AND (SELECT coalesce(sum(x.next_offset - x.start_offset), 0) FROM queen.partitions x WHERE x.queue_id = q.id)
           + (SELECT sum(c) FROM unnest(v_qid, p_count) AS u(qid, c) WHERE u.qid = q.id)
           > o.lim;
    IF v_full IS NOT NULL THEN
        RETURN QUERY
            SELECT 2, g.i::int, v_pid[g.i], v_puuid[g.i], v_qid[g.i],
                   (SELECT (queen.queue_options_v1(q.options)->>'maxSize')::bigint FROM queen.queues q WHERE q.id = v_qid[g.i]), v_stamp
            FROM generate_subscripts(v_qid, 1) AS g(i) WHERE v_qid[g.i] = ANY (v_full);
        RETURN;
    END IF;

    -- 3. the partitions, in id order. A partition (or queue) deleted by the admin routes since
    --    step 1 found it is skipped by the lock: raise a serialization failure; the group commit
    --    retries, and the retry creates it again
    PERFORM 1 FROM queen.partitions x WHERE x.id = ANY (v_pid) ORDER BY x.id FOR NO KEY UPDATE;
    GET DIAGNOSTICS v_locked = ROW_COUNT;
    IF v_locked <> (SELECT count(DISTINCT u.pid) FROM unnest(v_pid) AS u(pid)) THEN
        RAISE EXCEPTION 'a partition was deleted during the push' USING ERRCODE = '40001';
    END IF;

    -- 4. duplicates: report them and write nothing
    IF cardinality(p_dd_txn) > 0 THEN
        RETURN QUERY
            SELECT 1, d.i::int, x.partition_id, v_puuid[d.g], v_qid[d.g], x.off, x.ts
            FROM unnest(p_dd_group, p_dd_txn) WITH ORDINALITY AS d(g, txn, i)
            JOIN queen.dedup x ON x.partition_id = v_pid[d.g] AND x.txn_id = d.txn
            WHERE x.ts > v_stamp - p_dd_window;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;

    -- 5. offsets, segments, dedup rows
    WITH u AS (SELECT * FROM unnest(v_pid, p_count) WITH ORDINALITY AS u(pid, c, i)),
    upd AS (
        UPDATE queen.partitions x SET next_offset = x.next_offset + u.c, last_ts = v_stamp
        FROM u WHERE x.id = u.pid
        RETURNING u.i, x.next_offset - u.c AS base
    )
    SELECT array_agg(base ORDER BY i) INTO v_base FROM upd;

    INSERT INTO queen.segments (partition_id, last_offset, base_offset, ts, record_count, payload_bytes, data)
    SELECT v_pid[g.i], v_base[g.i] + g.c - 1, v_base[g.i], v_stamp, g.c, g.b, g.d
    FROM unnest(p_count, p_bytes, p_data) WITH ORDINALITY AS g(c, b, d, i);

    IF cardinality(p_dd_txn) > 0 THEN
        INSERT INTO queen.dedup AS x (partition_id, txn_id, off, ts)
        SELECT v_pid[d.g], d.txn, v_base[d.g] + d.pos, v_stamp
        FROM unnest(p_dd_group, p_dd_pos, p_dd_txn) AS d(g, pos, txn)
        ORDER BY 1, 2
        ON CONFLICT (partition_id, txn_id) DO UPDATE SET off = excluded.off, ts = excluded.ts;
    END IF;

    RETURN QUERY
        SELECT 0, g.i::int, v_pid[g.i], v_puuid[g.i], v_qid[g.i], v_base[g.i], v_stamp
        FROM generate_subscripts(v_pid, 1) AS g(i);
END
$$;
