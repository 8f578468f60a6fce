-- streams_register_v1: registers a streaming query by name (POST /streams/v1/queries).
-- outcome: 'fresh' (created), 'resumed' (same config_hash: the source and sink are updated),
-- 'reset' (a different hash with p_reset: the query's state rows and tombstones are deleted, its id and
-- therefore its consumer group's cursor are kept, the hash is replaced), 'conflict' (a
-- different hash without p_reset: nothing changes). The query row is locked (FOR UPDATE), so
-- two first registrations of one name with different hashes cannot both win: the second one
-- sees the first's row and gets 'conflict' (the earlier release let the last writer win).
CREATE OR REPLACE FUNCTION queen.streams_register_v1(p_tenant uuid, p_id uuid, p_name text, p_source text,
                                                     p_sink text, p_hash text, p_reset boolean)
RETURNS TABLE (query_id uuid, outcome text, config_hash text, state_rows bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    q record;
    n bigint := 0;
BEGIN
    INSERT INTO queen.stream_queries (id, tenant_id, name, source_queue, sink_queue, config_hash)
    VALUES (p_id, p_tenant, p_name, p_source, nullif(p_sink, ''), p_hash)
    ON CONFLICT (tenant_id, name) DO NOTHING;
    IF FOUND THEN
        RETURN QUERY SELECT p_id, 'fresh'::text, p_hash, 0::bigint;
        RETURN;
    END IF;
    SELECT * INTO q FROM queen.stream_queries x WHERE x.tenant_id = p_tenant AND x.name = p_name FOR UPDATE;
    IF q.config_hash = p_hash THEN
        UPDATE queen.stream_queries x SET source_queue = p_source, sink_queue = nullif(p_sink, ''), updated_at = now()
         WHERE x.id = q.id;
        RETURN QUERY SELECT q.id, 'resumed'::text, p_hash, 0::bigint;
    ELSIF p_reset THEN
        DELETE FROM queen.stream_state s WHERE s.query_id = q.id;
        GET DIAGNOSTICS n = ROW_COUNT;
        DELETE FROM queen.stream_tombstones t WHERE t.query_id = q.id;
        UPDATE queen.stream_queries x
           SET source_queue = p_source, sink_queue = nullif(p_sink, ''), config_hash = p_hash, updated_at = now()
         WHERE x.id = q.id;
        RETURN QUERY SELECT q.id, 'reset'::text, p_hash, n;
    ELSE
        RETURN QUERY SELECT q.id, 'conflict'::text, q.config_hash, 0::bigint;
    END IF;
END
$$;
