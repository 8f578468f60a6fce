-- offset_at_ts_v1: the first offset stamped at or after p_ts (the partition's end when none is).
CREATE OR REPLACE FUNCTION queen.offset_at_ts_v1(p_pid bigint, p_ts bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT s.base_offset FROM queen.segments s
          WHERE s.partition_id = p_pid AND s.ts >= p_ts ORDER BY s.ts, s.last_offset LIMIT 1),
        (SELECT p.next_offset FROM queen.partitions p WHERE p.id = p_pid))
$$;
