-- sink_positions_v1: for each partition with a record stamped at or after p_from, the
-- greatest offset stamped in [p_from, p_to) (NULL when none): how a restarted sink moves the
-- positions of its last checkpoint up to its commit pointer without reading payloads.
CREATE OR REPLACE FUNCTION queen.sink_positions_v1(p_qid bigint, p_from bigint, p_to bigint)
RETURNS TABLE (name text, puuid uuid, start_offset bigint, next_offset bigint, last_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.name, p.uuid, p.start_offset, p.next_offset,
           (SELECT max(s.last_offset) FROM queen.segments s
             WHERE s.partition_id = p.id AND s.ts >= p_from AND s.ts < p_to)
      FROM queen.partitions p WHERE p.queue_id = p_qid AND p.last_ts >= p_from
$$;
