-- streams_queries_v1: the tenant's streaming queries (p_name NULL: all, by name; else that one)
-- with their state row count, the partitions they have state or cycles on, and the last cycle
-- (µs, NULL before the first). GET /streams/v1/queries[/:name].
CREATE OR REPLACE FUNCTION queen.streams_queries_v1(p_tenant uuid, p_name text)
RETURNS TABLE (query_id uuid, name text, source_queue text, sink_queue text, config_hash text,
               created_at bigint, updated_at bigint, state_rows bigint, partitions bigint, last_cycle_at bigint)
LANGUAGE sql STABLE AS $$
    SELECT q.id, q.name, q.source_queue, q.sink_queue, q.config_hash,
           (extract(epoch FROM q.created_at) * 1000000)::bigint, (extract(epoch FROM q.updated_at) * 1000000)::bigint,
           (SELECT count(*) FROM queen.stream_state s WHERE s.query_id = q.id),
           (SELECT count(*) FROM (SELECT s.partition_uuid FROM queen.stream_state s WHERE s.query_id = q.id
                                  UNION SELECT p.partition_uuid FROM queen.stream_partitions p WHERE p.query_id = q.id) u),
           (SELECT max(p.last_cycle_at) FROM queen.stream_partitions p WHERE p.query_id = q.id)
      FROM queen.stream_queries q
     WHERE q.tenant_id = p_tenant AND (p_name IS NULL OR q.name = p_name)
     ORDER BY q.name COLLATE "C"
$$;
