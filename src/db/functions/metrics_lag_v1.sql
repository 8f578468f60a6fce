-- metrics_lag_v1: per (queue, group) lag for /metrics/prometheus (kind 0: lag records and
-- seconds), and per queue the dead letters not requeued (kind 1). Bounded: the first
-- p_limit pairs and the first p_limit queues in (tenant, name) order. C names the columns and kinds in
-- src/admin/admin_results.h.
CREATE OR REPLACE FUNCTION queen.metrics_lag_v1(p_limit integer)
RETURNS TABLE (kind integer, tenant_id uuid, queue_name text, consumer_group text, val bigint, lag_us bigint)
LANGUAGE sql VOLATILE AS $$
    SELECT 0, g.tenant_id, g.queue_name, g.consumer_group, coalesce(sum(g.offset_lag), 0)::bigint,
           coalesce(max(g.time_lag_us), 0)::bigint
    FROM queen.group_lag_v1(NULL, NULL, NULL, p_limit) g
    GROUP BY g.tenant_id, g.queue_name, g.consumer_group
    UNION ALL
    SELECT 1, q.tenant_id, q.name, NULL::text,
           (SELECT count(*) FROM queen.dead_letters d WHERE d.queue_id = q.id AND d.requeued_at IS NULL), 0::bigint
    FROM (SELECT * FROM queen.queues x ORDER BY x.tenant_id, x.name LIMIT p_limit) q
    ORDER BY 1, 2, 3, 4
$$;
