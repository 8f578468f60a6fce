-- delete_group_v1: forgets a consumer group's cursors on every queue of the tenant (or one
-- queue), and with p_metadata its subscriptions and delivery policies (queen.group_policies:
-- conflation) too; the group then starts again as on its first pop (from its subscription if
-- kept; its next pop stores its policy again). Cursor rows are locked in partition-id order.
CREATE OR REPLACE FUNCTION queen.delete_group_v1(p_tenant uuid, p_group text, p_queue text, p_metadata boolean,
                                      OUT status text, OUT n_cursors bigint, OUT n_subscriptions bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_qids bigint[];
BEGIN
    SELECT array_agg(q.id) INTO v_qids FROM queen.queues q
     WHERE q.tenant_id = p_tenant AND (p_queue IS NULL OR q.name = p_queue);
    IF p_queue IS NOT NULL AND v_qids IS NULL THEN
        status := 'queue_not_found';
        n_cursors := 0;
        n_subscriptions := 0;
        RETURN;
    END IF;
    PERFORM 1 FROM queen.cursors x WHERE x.queue_id = ANY (v_qids) AND x.consumer_group = p_group
     ORDER BY x.partition_id FOR UPDATE;
    DELETE FROM queen.cursors x WHERE x.queue_id = ANY (v_qids) AND x.consumer_group = p_group;
    GET DIAGNOSTICS n_cursors = ROW_COUNT;
    n_subscriptions := 0;
    IF p_metadata THEN
        DELETE FROM queen.subscriptions s WHERE s.queue_id = ANY (v_qids) AND s.consumer_group = p_group;
        GET DIAGNOSTICS n_subscriptions = ROW_COUNT;
        DELETE FROM queen.group_policies gp WHERE gp.queue_id = ANY (v_qids) AND gp.consumer_group = p_group;
    END IF;
    status := 'ok';
END
$$;
