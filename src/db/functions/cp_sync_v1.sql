-- cp_sync_v1: one node's once-a-second round trip for the control plane's quotas. Writes the
-- node's request counts of second p_window (one per cluster tenant that had traffic) and
-- returns, per cluster tenant, what the OTHER nodes counted in their latest second that is at
-- most one second older than p_window, and how many such nodes there are.
CREATE OR REPLACE FUNCTION queen.cp_sync_v1(p_node text, p_window bigint, p_tenants uuid[], p_counts bigint[])
RETURNS TABLE (tenant_id uuid, others bigint, other_nodes integer)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queen.cp_usage AS u (tenant_id, node_id, window_s, requests)
    SELECT t, p_node, p_window, c FROM unnest(p_tenants, p_counts) AS x(t, c)
    ON CONFLICT ON CONSTRAINT cp_usage_pkey
    DO UPDATE SET window_s = EXCLUDED.window_s, requests = EXCLUDED.requests;
    RETURN QUERY
        SELECT u.tenant_id, sum(u.requests)::bigint, count(*)::integer
          FROM queen.cp_usage u
         WHERE u.node_id <> p_node AND u.window_s >= p_window - 1
         GROUP BY u.tenant_id;
END
$$;
