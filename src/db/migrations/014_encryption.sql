-- 014_encryption — encryption at rest (docs/encryption.md).
--
-- Payloads of a queue with encryptionEnabled are sealed by the node (AES-256-GCM under
-- QUEEN_ENCRYPTION_KEY, which the database never sees) and marked REC_ENCRYPTED (0x08) in the
-- record's flags. The database cannot seal, but it can refuse: push_v1 now raises QE001 for a
-- group of plaintext records headed for such a queue, and the firing round leaves plaintext
-- timers of such a queue for a node to seal (timers_fire_v2).

-- push_v1: as in 001_init, plus step 2a.
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
     WHERE q.id = ANY (v_qid) AND coalesce((q.options->>'encryptionEnabled')::boolean, false);
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
    SELECT array_agg(q.id) INTO v_full FROM queen.queues q
     WHERE q.id = ANY (v_qid) AND coalesce((q.options->>'maxSize')::bigint, 0) > 0
       AND (SELECT coalesce(sum(x.next_offset - x.start_offset), 0) FROM queen.partitions x WHERE x.queue_id = q.id)
           + (SELECT sum(c) FROM unnest(v_qid, p_count) AS u(qid, c) WHERE u.qid = q.id)
           > (q.options->>'maxSize')::bigint;
    IF v_full IS NOT NULL THEN
        RETURN QUERY
            SELECT 2, g.i::int, v_pid[g.i], v_puuid[g.i], v_qid[g.i],
                   (SELECT (q.options->>'maxSize')::bigint FROM queen.queues q WHERE q.id = v_qid[g.i]), v_stamp
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

-- timers_fire_v2: timers_fire_v1 (011_timers) plus step 2b and o_unsealed. v1 stays for nodes of
-- the previous build during a rolling upgrade (they cannot seal; push_v1 now refuses their
-- plaintext for an encrypted queue, which fails their round rather than storing it).
CREATE FUNCTION queen.timers_fire_v2(p_limit integer, p_max_bytes bigint, p_dd_window bigint)
RETURNS TABLE (o_fired integer, o_duplicates integer, o_more boolean, o_max_lag_us bigint, o_next_in_us bigint,
               o_unsealed integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_now     bigint := queen.now_us();
    v_id      uuid[];
    v_t       uuid[];
    v_q       text[];
    v_p       text[];
    v_txn     text[];
    v_prod    boolean[];
    v_bytes   integer[];
    v_rec     bytea[];
    v_fire    bigint[];
    v_dup     boolean[];
    v_locked  bigint;
    n         integer;
    g_t       uuid[];
    g_q       text[];
    g_p       text[];
    g_c       integer[];
    g_b       integer[];
    g_d       bytea[];
    d_g       integer[];
    d_pos     integer[];
    d_txn     text[];
    d_i       integer[];
    r         record;
    v_again   boolean;
    v_attempt integer := 0;
    v_dups    integer;
    v_full    boolean[];
    v_nfull   integer;
    v_unsealed boolean[];
    v_nunsealed integer;
BEGIN
    -- 1. the due timers this round takes (space 1, never waiting)
    SELECT array_agg(t.id ORDER BY t.fire_at, t.id), array_agg(t.tenant_id ORDER BY t.fire_at, t.id),
           array_agg(t.queue ORDER BY t.fire_at, t.id), array_agg(t.partition ORDER BY t.fire_at, t.id),
           array_agg(t.txn_id ORDER BY t.fire_at, t.id), array_agg(t.txn_producer ORDER BY t.fire_at, t.id),
           array_agg(t.payload_bytes ORDER BY t.fire_at, t.id), array_agg(t.record ORDER BY t.fire_at, t.id),
           array_agg(t.fire_at ORDER BY t.fire_at, t.id), max(t.locked)
      INTO v_id, v_t, v_q, v_p, v_txn, v_prod, v_bytes, v_rec, v_fire, v_locked
      FROM (SELECT l.*, sum(length(l.record)) OVER (ORDER BY l.fire_at, l.id) AS cum, count(*) OVER () AS locked
              FROM (SELECT x.id, x.tenant_id, x.queue, x.partition, x.fire_at, x.txn_id, x.txn_producer,
                           x.payload_bytes, x.record
                      FROM queen.log_timers x
                     WHERE x.fire_at <= v_now
                     ORDER BY x.fire_at, x.id
                     LIMIT p_limit
                       FOR UPDATE SKIP LOCKED) l) t
     WHERE t.cum - length(t.record) < p_max_bytes;
    n := coalesce(cardinality(v_id), 0);
    IF n = 0 THEN
        RETURN QUERY SELECT 0, 0, false, 0::bigint, (SELECT min(x.fire_at) FROM queen.log_timers x) - queen.now_us(), 0;
        RETURN;
    END IF;

    -- 2. repeats of a producer transactionId on one partition within this round
    SELECT array_agg(w.dup ORDER BY w.i) INTO v_dup
      FROM (SELECT u.i, u.prod AND row_number() OVER (PARTITION BY u.t, u.q, u.p, u.txn, u.prod ORDER BY u.i) > 1 AS dup
              FROM unnest(v_t, v_q, v_p, v_txn, v_prod) WITH ORDINALITY AS u(t, q, p, txn, prod, i)) w;

    -- 2b. plaintext timers of a queue with encryptionEnabled (made before it was configured
    --     so, or by a node that had not learnt it yet): push_v1 would refuse them. They wait
    --     like a full queue's, and the round counts them (o_unsealed), so the node seals them
    --     in place (src/timers/timer_job.c) and the next round fires them. A record's first
    --     byte is its flags; 8 = sealed.
    SELECT array_agg(coalesce(s.enc, false) AND get_byte(u.rec, 0) & 8 = 0 ORDER BY u.i) INTO v_unsealed
      FROM unnest(v_t, v_q, v_rec) WITH ORDINALITY AS u(t, q, rec, i)
      LEFT JOIN LATERAL (SELECT coalesce((x.options->>'encryptionEnabled')::boolean, false) AS enc
                           FROM queen.queues x WHERE x.tenant_id = u.t AND x.name = u.q) s ON true;
    SELECT count(*) FILTER (WHERE f) INTO v_nunsealed FROM unnest(v_unsealed) AS f;

    -- a queue that is full (maxSize) takes nothing: its timers wait a second and try again
    v_full := v_unsealed;

    -- 3. push: one segment per (tenant, queue, partition), records in fire order
    LOOP
        v_attempt := v_attempt + 1;
        SELECT array_agg(g.t ORDER BY g.t, g.q, g.p), array_agg(g.q ORDER BY g.t, g.q, g.p),
               array_agg(g.p ORDER BY g.t, g.q, g.p), array_agg(g.c ORDER BY g.t, g.q, g.p),
               array_agg(g.b ORDER BY g.t, g.q, g.p), array_agg(g.d ORDER BY g.t, g.q, g.p)
          INTO g_t, g_q, g_p, g_c, g_b, g_d
          FROM (SELECT u.t, u.q, u.p, count(*)::int AS c, least(sum(u.b), 2147483647)::int AS b,
                       '\x01'::bytea || string_agg(u.rec, ''::bytea ORDER BY u.i) AS d
                  FROM unnest(v_t, v_q, v_p, v_bytes, v_rec, v_dup, v_full)
                       WITH ORDINALITY AS u(t, q, p, b, rec, dup, full_, i)
                 WHERE NOT u.dup AND NOT u.full_
                 GROUP BY u.t, u.q, u.p) g;
        EXIT WHEN g_t IS NULL;
        -- the producer transactionIds to check: group number (1-based, same order as above)
        -- and position within the group
        SELECT coalesce(array_agg(x.gi ORDER BY x.i), '{}'), coalesce(array_agg(x.pos ORDER BY x.i), '{}'),
               coalesce(array_agg(x.txn ORDER BY x.i), '{}'), coalesce(array_agg(x.i ORDER BY x.i), '{}')
          INTO d_g, d_pos, d_txn, d_i
          FROM (SELECT u.i::int AS i, u.txn, u.prod,
                       dense_rank() OVER (ORDER BY u.t, u.q, u.p)::int AS gi,
                       (row_number() OVER (PARTITION BY u.t, u.q, u.p ORDER BY u.i) - 1)::int AS pos
                  FROM unnest(v_t, v_q, v_p, v_txn, v_prod, v_dup, v_full)
                       WITH ORDINALITY AS u(t, q, p, txn, prod, dup, full_, i)
                 WHERE NOT u.dup AND NOT u.full_) x
         WHERE x.prod;
        v_again := false;
        FOR r IN SELECT * FROM queen.push_v1(g_t, g_q, g_p, g_c, g_b, g_d, d_g, d_pos, d_txn, p_dd_window) LOOP
            IF r.kind = 1 THEN
                v_dup[d_i[r.idx]] := true;
                v_again := true;
            ELSIF r.kind = 2 THEN
                -- nothing was written: leave every timer of that queue for a later round
                FOR i IN 1 .. n LOOP
                    IF v_t[i] = g_t[r.idx] AND v_q[i] = g_q[r.idx] THEN
                        v_full[i] := true;
                    END IF;
                END LOOP;
                v_again := true;
            END IF;
        END LOOP;
        EXIT WHEN NOT v_again;
        IF v_attempt >= 3 + n THEN
            RAISE EXCEPTION 'timers_fire_v1: duplicates reported twice for one round' USING ERRCODE = '40001';
        END IF;
    END LOOP;

    -- 3b. wake the long-polls waiting on these queues, on every node: src/consume/notify.c's
    --     payload, "<node>\t<tenant>\t<queue>" lines (an empty node name is no node's own, so
    --     this node's waiters wake too). Twenty lines stay under NOTIFY's 8000-byte limit.
    IF g_t IS NOT NULL THEN
        FOR r IN SELECT string_agg(E'\t' || w.t::text || E'\t' || w.q, E'\n') AS payload
                   FROM (SELECT x.t, x.q, (row_number() OVER (ORDER BY x.t, x.q) - 1) / 20 AS chunk
                           FROM (SELECT DISTINCT u.t, u.q FROM unnest(g_t, g_q) AS u(t, q)) x) w
                  GROUP BY w.chunk LOOP
            PERFORM pg_notify('queen_wake', r.payload);
        END LOOP;
    END IF;

    -- 4. the round's timers are done, fired or duplicate; those of full queues wait a second
    UPDATE queen.log_timers x SET fire_at = v_now + 1000000
     WHERE x.id IN (SELECT u.id FROM unnest(v_id, v_full) AS u(id, f) WHERE u.f);
    DELETE FROM queen.log_timers x
     WHERE x.id IN (SELECT u.id FROM unnest(v_id, v_full) AS u(id, f) WHERE NOT u.f);
    SELECT count(*) FILTER (WHERE d) INTO v_dups FROM unnest(v_dup) AS d;
    SELECT count(*) FILTER (WHERE f) INTO v_nfull FROM unnest(v_full) AS f;
    RETURN QUERY SELECT n - v_dups - v_nfull, v_dups, v_locked > n OR v_locked >= p_limit,
        (SELECT max(v_now - f) FROM unnest(v_fire) AS f),
        (SELECT min(x.fire_at) FROM queen.log_timers x) - queen.now_us(), v_nunsealed;
END
$$;
