-- streams_state_rows_v1: every streaming query of a tenant (p_tenant NULL: of every tenant, for
-- /metrics/prometheus) with its number of state rows, by tenant then name. /status and the
-- queen_stream_state_rows gauge.
CREATE OR REPLACE FUNCTION queen.streams_state_rows_v1(p_tenant uuid)
RETURNS TABLE (query_id uuid, tenant_id uuid, name text, state_rows bigint)
LANGUAGE sql STABLE AS $$
    SELECT q.id, q.tenant_id, q.name, (SELECT count(*) FROM queen.stream_state s WHERE s.query_id = q.id)
      FROM queen.stream_queries q
     WHERE p_tenant IS NULL OR q.tenant_id = p_tenant
     ORDER BY q.tenant_id, q.name COLLATE "C"
$$;
