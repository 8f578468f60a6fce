-- dlq_claim_v1: marks a dead letter requeued and hands back what a push needs to append its
-- record again. Claiming first means two concurrent requeues cannot both push; the caller
-- clears the mark (dlq_unclaim) when its push fails.
--   status: 'ok' | 'not_found' | 'already_requeued' (requeued_us set) | 'no_record'
CREATE OR REPLACE FUNCTION queen.dlq_claim_v1(p_tenant uuid, p_id bigint,
                                   OUT status text, OUT queue_name text, OUT partition_name text, OUT txn_id text,
                                   OUT rec bytea, OUT requeued_us bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v record;
BEGIN
    SELECT d.id, d.record, d.txn_id, d.requeued_at, q.name AS qname, p.name AS pname INTO v
      FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id JOIN queen.partitions p ON p.id = d.partition_id
     WHERE d.id = p_id AND q.tenant_id = p_tenant
       FOR UPDATE OF d;
    IF NOT FOUND THEN
        status := 'not_found';
        RETURN;
    END IF;
    queue_name := v.qname;
    partition_name := v.pname;
    txn_id := v.txn_id;
    IF v.requeued_at IS NOT NULL THEN
        status := 'already_requeued';
        requeued_us := (extract(epoch FROM v.requeued_at) * 1000000)::bigint;
        RETURN;
    END IF;
    IF v.record IS NULL THEN
        status := 'no_record';
        RETURN;
    END IF;
    UPDATE queen.dead_letters d SET requeued_at = now() WHERE d.id = p_id;
    rec := v.record;
    status := 'ok';
END
$$;
