-- streams_partitions_v1: the source partitions of one query (of the tenant) with their state
-- row count and last cycle (µs; NULL when no cycle committed there since migration 060), the
-- source partition's name when it still exists. p_since_us NULL: every partition with state or
-- a cycle; else only those with a cycle at or after it (the idle-flush sweep of state/get).
CREATE OR REPLACE FUNCTION queen.streams_partitions_v1(p_tenant uuid, p_query uuid, p_since_us bigint)
RETURNS TABLE (partition_uuid uuid, partition_name text, state_rows bigint, last_cycle_at bigint)
LANGUAGE sql STABLE AS $$
    WITH q AS (SELECT x.id FROM queen.stream_queries x WHERE x.id = p_query AND x.tenant_id = p_tenant),
    u AS (
        SELECT s.partition_uuid FROM queen.stream_state s, q WHERE s.query_id = q.id
        UNION
        SELECT p.partition_uuid FROM queen.stream_partitions p, q WHERE p.query_id = q.id
    )
    SELECT u.partition_uuid, (SELECT pp.name FROM queen.partitions pp WHERE pp.uuid = u.partition_uuid),
           (SELECT count(*) FROM queen.stream_state s WHERE s.query_id = p_query AND s.partition_uuid = u.partition_uuid),
           sp.last_cycle_at
      FROM u LEFT JOIN queen.stream_partitions sp ON sp.query_id = p_query AND sp.partition_uuid = u.partition_uuid
     WHERE p_since_us IS NULL OR sp.last_cycle_at >= p_since_us
     ORDER BY sp.last_cycle_at DESC NULLS LAST, u.partition_uuid
$$;
