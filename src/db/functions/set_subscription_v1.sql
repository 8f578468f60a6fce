-- set_subscription_v1: a consumer group starts at p_ts on every partition it has no cursor on
-- yet, on every queue of the tenant it reads (has a cursor or a subscription on).
CREATE OR REPLACE FUNCTION queen.set_subscription_v1(p_tenant uuid, p_group text, p_ts bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO queen.subscriptions AS s (queue_id, consumer_group, mode, start_ts)
    SELECT q.id, p_group, 'timestamp', p_ts FROM queen.queues q
     WHERE q.tenant_id = p_tenant
       AND (EXISTS (SELECT 1 FROM queen.cursors c WHERE c.queue_id = q.id AND c.consumer_group = p_group)
            OR EXISTS (SELECT 1 FROM queen.subscriptions x WHERE x.queue_id = q.id AND x.consumer_group = p_group))
     ORDER BY q.id
       FOR KEY SHARE OF q
    ON CONFLICT (queue_id, consumer_group) DO UPDATE SET mode = 'timestamp', start_ts = excluded.start_ts;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
