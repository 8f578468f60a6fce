-- timers_fire_v2: one firing round (src/timers). Locks up to p_limit due timers (oldest first,
-- skipping rows another round holds) and at most about p_max_bytes of records, pushes them
-- through push_v1 as one segment per (tenant, queue, partition), and deletes them. Locking the
-- due rows, pushing their records and deleting the rows happen in one transaction: a node that
-- dies mid-fire rolls all of it back and another node fires the same timers later.
-- A producer transactionId that push_v1 reports as already seen (kind 1 rows: it then writes
-- nothing at all) marks that timer a duplicate; the others are pushed again in the same
-- transaction. The partitions stay locked from the first call, so the second call cannot meet
-- new duplicates. Timers repeating one transactionId on one partition within the round fire
-- the earliest only. A duplicate still counts as fired: its row is deleted. Timers of a full
-- queue (maxSize) wait a second; plaintext timers of a queue with encryptionEnabled wait for a
-- node to seal them (step 2b, counted in o_unsealed); either way the timer's attempts grows by one.
-- Returns what fired, whether more were due than this round took, the largest delay past
-- fire_at, and how far away the next timer is (NULL when there is none; <= 0 when it is due
-- but held by another round). (v1, without o_unsealed, was for nodes that could not seal.)
CREATE OR REPLACE FUNCTION queen.timers_fire_v2(p_limit integer, p_max_bytes bigint, p_dd_window bigint)
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
      LEFT JOIN LATERAL (SELECT (queen.queue_options_v1(x.options)->>'encryptionEnabled')::boolean AS enc
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
            RAISE EXCEPTION 'timers_fire_v2: duplicates reported twice for one round' USING ERRCODE = '40001';
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
    --    (and count an attempt)
    UPDATE queen.log_timers x SET fire_at = v_now + 1000000, attempts = x.attempts + 1
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
