-- streams_drop_v1: drops a streaming query of the tenant by name (DELETE
-- /streams/v1/queries/:name); its state rows and partition list go with it (the cascade).
-- No row when there is no such query.
CREATE OR REPLACE FUNCTION queen.streams_drop_v1(p_tenant uuid, p_name text)
RETURNS TABLE (query_id uuid, state_rows bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_id uuid;
    n    bigint;
BEGIN
    SELECT x.id INTO v_id FROM queen.stream_queries x WHERE x.tenant_id = p_tenant AND x.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    DELETE FROM queen.stream_state s WHERE s.query_id = v_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM queen.stream_queries x WHERE x.id = v_id;
    RETURN QUERY SELECT v_id, n;
END
$$;
