-- 011_timers — pushes scheduled for a later time, fired exactly once by whichever node gets
-- there first.
--
-- A timer row carries its record already encoded (src/storage/record.h, without the segment's
-- version byte), made by the node that accepted it, so firing needs no C at all: the firing
-- transaction concatenates the records of one partition behind the version byte and hands the
-- segments to queen.push_v1, the same function POST /api/v1/push commits through. Locking the
-- due rows, pushing their records and deleting the rows happen in one transaction: a node that
-- dies mid-fire rolls all of it back and another node fires the same timers later.
--
-- Lock order (docs/lock-order.md): timer rows are space 1, after the KV store (space 0) and
-- before everything push_v1 takes. The firing round takes them with SKIP LOCKED, so it never
-- waits for another node's round.
CREATE TABLE queen.log_timers (
    id             uuid PRIMARY KEY,          -- UUIDv7 made by the accepting node
    tenant_id      uuid NOT NULL REFERENCES queen.tenants (id) ON DELETE CASCADE,
    queue          text NOT NULL,
    partition      text NOT NULL,
    fire_at        bigint NOT NULL,           -- µs since the epoch, on the database's clock
    txn_id         text NOT NULL,             -- the record's transactionId (also inside record)
    txn_producer   boolean NOT NULL,          -- given by the producer: deduplicated when fired
    trace_id       uuid,
    payload_bytes  integer NOT NULL,
    record         bytea NOT NULL,            -- one encoded record
    created_at     bigint NOT NULL
);
CREATE INDEX log_timers_due ON queen.log_timers (fire_at, id);
CREATE INDEX log_timers_tenant ON queen.log_timers (tenant_id, id);
CREATE INDEX log_timers_queue ON queen.log_timers (tenant_id, queue, id);

-- timers_fire_v1: one firing round. Locks up to p_limit due timers (oldest first, skipping rows
-- another round holds) and at most about p_max_bytes of records, pushes them through push_v1
-- as one segment per (tenant, queue, partition), and deletes them.
-- A producer transactionId that push_v1 reports as already seen (kind 1 rows: it then writes
-- nothing at all) marks that timer a duplicate; the others are pushed again in the same
-- transaction. The partitions stay locked from the first call, so the second call cannot meet
-- new duplicates. Timers repeating one transactionId on one partition within the round fire
-- the earliest only. A duplicate still counts as fired: its row is deleted.
-- Returns what fired, whether more were due than this round took, the largest delay past
-- fire_at, and how far away the next timer is (NULL when there is none; <= 0 when it is due
-- but held by another round).
CREATE FUNCTION queen.timers_fire_v1(p_limit integer, p_max_bytes bigint, p_dd_window bigint)
RETURNS TABLE (o_fired integer, o_duplicates integer, o_more boolean, o_max_lag_us bigint, o_next_in_us bigint)
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
        RETURN QUERY SELECT 0, 0, false, 0::bigint, (SELECT min(x.fire_at) FROM queen.log_timers x) - queen.now_us();
        RETURN;
    END IF;

    -- 2. repeats of a producer transactionId on one partition within this round
    SELECT array_agg(w.dup ORDER BY w.i) INTO v_dup
      FROM (SELECT u.i, u.prod AND row_number() OVER (PARTITION BY u.t, u.q, u.p, u.txn, u.prod ORDER BY u.i) > 1 AS dup
              FROM unnest(v_t, v_q, v_p, v_txn, v_prod) WITH ORDINALITY AS u(t, q, p, txn, prod, i)) w;

    -- a queue that is full (maxSize) takes nothing: its timers wait a second and try again
    v_full := array_fill(false, ARRAY[n]);

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
        (SELECT min(x.fire_at) FROM queen.log_timers x) - queen.now_us();
END
$$;
