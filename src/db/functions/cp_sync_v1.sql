-- cp_sync_v1: one node's once-a-second round trip for the control plane's quotas. Writes the
-- node's request counts of second p_window (one per cluster tenant that had traffic) and
-- returns, per cluster tenant, what the OTHER nodes counted in their latest second that is at
-- most two seconds older than p_window, and how many such nodes there are.
--
-- Two, not one: every node's round runs 100 ms into the second, so a node often reads before
-- another wrote the second that just ended, and then sees that node's previous row. When that
-- node had no traffic in the second before (a row two seconds old), a one-second look-back
-- counted it absent, so the reader took the whole limit while the other took its share: 1.5
-- times the limit across two nodes (tests/integration/cp.test.mjs, "request rate"). A node
-- that stopped is still counted for one more second, which only lowers what the others admit
-- down to their even share.
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
         WHERE u.node_id <> p_node AND u.window_s >= p_window - 2
         GROUP BY u.tenant_id;
END
$$;
