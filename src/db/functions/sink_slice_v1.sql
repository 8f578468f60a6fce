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
-- STABLE: the queries read one snapshot, the calling statement's. C names the columns and kinds in
-- src/sink/sinkdb_results.h.
CREATE OR REPLACE FUNCTION queen.sink_slice_v1(p_qid bigint, p_from bigint, p_to bigint, p_budget bigint, p_align bigint)
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
