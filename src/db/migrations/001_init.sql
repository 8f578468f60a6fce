-- 001_init — tenants, queues, the per-queue clock, partitions, segments, deduplication.
--
-- The log is stored as segments: one row per run of consecutive records of one partition
-- (the records one group commit wrote to it). Offsets are dense from 0 per partition; a
-- segment covers [base_offset, last_offset]. Every record of a segment carries the segment's
-- stamp `ts` (µs since the epoch, from the queue clock), so records are never re-stamped.
CREATE SCHEMA IF NOT EXISTS queen;

CREATE FUNCTION queen.now_us() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;

CREATE TABLE queen.tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'active',
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO queen.tenants (id, name) VALUES ('00000000-0000-0000-0000-000000000001', 'default');

CREATE TABLE queen.queues (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    tenant_id   uuid NOT NULL REFERENCES queen.tenants (id) ON DELETE CASCADE,
    name        text NOT NULL,
    namespace   text NOT NULL DEFAULT '',
    task        text NOT NULL DEFAULT '',
    options     jsonb NOT NULL DEFAULT '{}',
    configured  boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- The queue clock: last_ts is the newest stamp handed out for the queue. A push takes this
-- row's lock, stamps its records above last_ts and at or after the database's now, and
-- commits; so the committed value is a safeTime: every later commit is stamped above it.
CREATE TABLE queen.queue_clocks (
    queue_id    bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    last_ts     bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 50);

CREATE TABLE queen.partitions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid          uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    queue_id      bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name          text NOT NULL,
    start_offset  bigint NOT NULL DEFAULT 0,  -- first offset still stored (retention moves it)
    next_offset   bigint NOT NULL DEFAULT 0,  -- offset the next record gets
    last_ts       bigint NOT NULL DEFAULT 0,  -- stamp of the newest record
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
) WITH (fillfactor = 50);

CREATE TABLE queen.segments (
    partition_id   bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    last_offset    bigint NOT NULL,
    base_offset    bigint NOT NULL,
    ts             bigint NOT NULL,
    record_count   integer NOT NULL,
    payload_bytes  integer NOT NULL,
    data           bytea NOT NULL,
    PRIMARY KEY (partition_id, last_offset)
);
-- lz4 where the server has it: JSON compresses well and lz4 costs the server little CPU.
DO $$ BEGIN
    ALTER TABLE queen.segments ALTER COLUMN data SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
END $$;

-- Producer transactionIds seen within the dedup window, per partition.
CREATE TABLE queen.dedup (
    partition_id  bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    txn_id        text NOT NULL,
    off           bigint NOT NULL,
    ts            bigint NOT NULL,
    PRIMARY KEY (partition_id, txn_id)
);
CREATE INDEX dedup_ts ON queen.dedup (ts);

-- push_v1: one group commit. Arrays are per group (one group = one partition's new segment),
-- plus the producer transactionIds to deduplicate. Lock order (docs/lock-order.md):
-- queue/partition creation in (tenant, queue, partition) name order, then queue clocks by
-- queue id, then partitions by id, then dedup rows, then new segment rows.
-- Returns one row per group (kind 0: base offset, stamp); or, writing no records, one row per
-- duplicate when some transactionIds were already seen (kind 1: the original offset and
-- stamp), or one row per group of a queue the commit would fill past its maxSize (kind 2);
-- the caller then resubmits without them.
CREATE FUNCTION queen.push_v1(
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

-- tick_v1: advance idle queue clocks to the database's now, so safeTime moves on a quiet
-- queue. A clock row locked by a push in flight is skipped: that push will move it anyway.
-- Runs with synchronous_commit off: a tick lost in a crash only means the clock restarts
-- from the last durable value, and every later stamp comes from clock_timestamp(), which
-- is past any tick a reader could have seen (unless the database host's clock goes back).
CREATE FUNCTION queen.tick_v1(p_queue_ids bigint[], p_min_age_us bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now bigint := queen.now_us();
    v_n   integer;
BEGIN
    SET LOCAL synchronous_commit = off;
    UPDATE queen.queue_clocks c SET last_ts = v_now
    WHERE c.queue_id IN (
        SELECT x.queue_id FROM queen.queue_clocks x
        WHERE (p_queue_ids IS NULL OR x.queue_id = ANY (p_queue_ids)) AND x.last_ts < v_now - p_min_age_us
        ORDER BY x.queue_id FOR UPDATE SKIP LOCKED)
      AND c.last_ts < v_now;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
