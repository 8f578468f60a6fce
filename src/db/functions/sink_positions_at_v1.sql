-- sink_positions_at_v1: every partition's first offset stamped at or after p_t (its next
-- offset when none is): the positions of a queue restored without a usable checkpoint.
CREATE OR REPLACE FUNCTION queen.sink_positions_at_v1(p_qid bigint, p_t bigint)
RETURNS TABLE (name text, puuid uuid, start_offset bigint, next_offset bigint, first_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.name, p.uuid, p.start_offset, p.next_offset,
           coalesce((SELECT s.base_offset FROM queen.segments s
                      WHERE s.partition_id = p.id AND s.ts >= p_t ORDER BY s.ts, s.base_offset LIMIT 1), p.next_offset)
      FROM queen.partitions p WHERE p.queue_id = p_qid
$$;
