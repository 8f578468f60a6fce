-- 020_sink — what the S3 sink reads (docs/s3-sink.md): the queue clock, ticked and read
-- (safeTime), the log in time slices, per-partition positions, and the commit pointer the
-- retention hold honours.

-- sink_clock_v1: ticks the queue's clock to the database's now (unless a push holds its row:
-- that push moves it anyway) and returns the clock, which is a safeTime: every record that
-- commits after this call returns is stamped above it. No row when the queue does not exist.
CREATE FUNCTION queen.sink_clock_v1(p_tenant uuid, p_queue text)
RETURNS TABLE (queue_id bigint, safe_time bigint, now_us bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
    v_now bigint := queen.now_us();
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;
    PERFORM queen.tick_v1(ARRAY[v_qid], 0);
    RETURN QUERY SELECT v_qid, c.last_ts, v_now FROM queen.queue_clocks c WHERE c.queue_id = v_qid;
END
$$;

-- sink_slice_v1: the records of queue p_qid stamped in [p_from, p_to), as whole segments.
-- When they would pass p_budget bytes (payload plus 64 per record), the slice is cut after the
-- stamp at which the running total reaches the budget: every segment of that stamp is still
-- included, so the slice is complete for [p_from, end). Rows:
--   kind 0  one row: ts = end
--   kind 2  one per partition that has a record stamped at or after p_from (its offsets), so
--           the sink can tell records retention removed before it read them
--   kind 1  one per segment in the slice
-- With p_align > 0 (an hour or a day in µs) the slice also ends at the first boundary above
-- its first record, so a slice never holds records of two Hive buckets.
-- STABLE: the queries read one snapshot, the calling statement's.
CREATE FUNCTION queen.sink_slice_v1(p_qid bigint, p_from bigint, p_to bigint, p_budget bigint, p_align bigint)
RETURNS TABLE (kind integer, name text, puuid uuid, start_offset bigint, next_offset bigint, base_offset bigint,
               ts bigint, record_count integer, data bytea)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_end bigint := p_to;
    v_cut bigint;
    v_min bigint;
BEGIN
    IF p_align > 0 THEN
        SELECT min(s.ts) INTO v_min
          FROM queen.partitions p JOIN queen.segments s ON s.partition_id = p.id
         WHERE p.queue_id = p_qid AND p.last_ts >= p_from AND s.ts >= p_from AND s.ts < p_to;
        IF v_min IS NOT NULL AND v_min >= 0 THEN
            p_to := least(p_to, (v_min / p_align) * p_align + p_align);
            v_end := p_to;
        END IF;
    END IF;
    SELECT x.ts INTO v_cut FROM (
        SELECT s.ts, sum(s.payload_bytes::bigint + 64 * s.record_count) OVER (ORDER BY s.ts) AS cum
          FROM queen.partitions p JOIN queen.segments s ON s.partition_id = p.id
         WHERE p.queue_id = p_qid AND p.last_ts >= p_from AND s.ts >= p_from AND s.ts < p_to) x
     WHERE x.cum >= p_budget ORDER BY x.ts LIMIT 1;
    IF v_cut IS NOT NULL AND v_cut + 1 < p_to THEN
        v_end := v_cut + 1;
    END IF;
    RETURN QUERY SELECT 0, NULL::text, NULL::uuid, NULL::bigint, NULL::bigint, NULL::bigint, v_end, NULL::integer,
                        NULL::bytea;
    RETURN QUERY SELECT 2, p.name, p.uuid, p.start_offset, p.next_offset, NULL::bigint, p.last_ts, NULL::integer,
                        NULL::bytea
                   FROM queen.partitions p WHERE p.queue_id = p_qid AND p.last_ts >= p_from;
    RETURN QUERY SELECT 1, p.name, p.uuid, p.start_offset, p.next_offset, s.base_offset, s.ts, s.record_count, s.data
                   FROM queen.partitions p JOIN queen.segments s ON s.partition_id = p.id
                  WHERE p.queue_id = p_qid AND p.last_ts >= p_from AND s.ts >= p_from AND s.ts < v_end
                  ORDER BY p.id, s.base_offset;
END
$$;

-- sink_positions_v1: for each partition with a record stamped at or after p_from, the
-- greatest offset stamped in [p_from, p_to) (NULL when none): how a restarted sink moves the
-- positions of its last checkpoint up to its commit pointer without reading payloads.
CREATE FUNCTION queen.sink_positions_v1(p_qid bigint, p_from bigint, p_to bigint)
RETURNS TABLE (name text, puuid uuid, start_offset bigint, next_offset bigint, last_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.name, p.uuid, p.start_offset, p.next_offset,
           (SELECT max(s.last_offset) FROM queen.segments s
             WHERE s.partition_id = p.id AND s.ts >= p_from AND s.ts < p_to)
      FROM queen.partitions p WHERE p.queue_id = p_qid AND p.last_ts >= p_from
$$;

-- sink_positions_at_v1: every partition's first offset stamped at or after p_t (its next
-- offset when none is): the positions of a queue restored without a usable checkpoint.
CREATE FUNCTION queen.sink_positions_at_v1(p_qid bigint, p_t bigint)
RETURNS TABLE (name text, puuid uuid, start_offset bigint, next_offset bigint, first_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.name, p.uuid, p.start_offset, p.next_offset,
           coalesce((SELECT s.base_offset FROM queen.segments s
                      WHERE s.partition_id = p.id AND s.ts >= p_t ORDER BY s.ts, s.base_offset LIMIT 1), p.next_offset)
      FROM queen.partitions p WHERE p.queue_id = p_qid
$$;

-- s3_escape: a name percent-encoded outside A-Z a-z 0-9 . _ - (uppercase hex, byte by byte
-- of its UTF-8), the way the sink spells a queue in its KV keys and object keys.
CREATE FUNCTION queen.s3_escape(p text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    b   bytea := convert_to(p, 'UTF8');
    out text := '';
    c   integer;
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        c := get_byte(b, i);
        IF (c BETWEEN 48 AND 57) OR (c BETWEEN 65 AND 90) OR (c BETWEEN 97 AND 122) OR c IN (45, 46, 95) THEN
            out := out || chr(c);
        ELSE
            out := out || '%' || upper(lpad(to_hex(c), 2, '0'));
        END IF;
    END LOOP;
    RETURN out;
END
$$;

-- The retention hold (006_retention): the stamp up to which sink p_sink has committed the
-- queue, from its commit pointer s3:<sink>:<queue>:committed in namespace queen-s3 of the
-- queue's tenant (tEndUs, or the ISO tEnd an older writer left). NULL when nothing was
-- committed yet, or the pointer is the starting point written at the first claim (k 0).
CREATE OR REPLACE FUNCTION queen.sink_hold_ts_v1(p_tenant uuid, p_queue text, p_sink text) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v jsonb;
BEGIN
    IF p_sink IS NULL OR p_sink = '' THEN
        RETURN NULL;
    END IF;
    SELECT k.value::jsonb INTO v FROM queen.kv k
     WHERE k.tenant_id = p_tenant AND k.namespace = 'queen-s3'
       AND k.key = 's3:' || p_sink || ':' || queen.s3_escape(p_queue) || ':committed'
       AND (k.expires_at IS NULL OR k.expires_at > queen.now_us());
    IF v IS NULL OR coalesce((v->>'k')::bigint, 0) < 1 THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v->'tEndUs') = 'number' THEN
        RETURN (v->>'tEndUs')::bigint;
    END IF;
    IF jsonb_typeof(v->'tEnd') = 'number' THEN
        RETURN (v->>'tEnd')::bigint;
    END IF;
    RETURN (extract(epoch FROM (v->>'tEnd')::timestamptz) * 1000000)::bigint;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
