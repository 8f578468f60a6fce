-- delete_queue_v1: a queue with everything under it (partitions, segments, dedup rows,
-- cursors, subscriptions, dead letters: all by cascade). Lock order as push_v1: the queue row
-- (creation space), its clock; then the queue's cursors (partition-id order), its partitions
-- in id order; then the cascade.
--
-- Deletions and acks. An ack that updates a cursor row twice in one transaction makes
-- PostgreSQL re-check the cursor's foreign key on the second update (the row version is its
-- own), which takes a key-share lock on the partition while the ack holds the cursor: the
-- reverse of a deletion's order (partition, then its cursors by cascade). So deletions
-- (delete_queue_v1, delete_partition_v1) lock the cursors they will delete before the
-- partitions, and wait for any lock at most 200 ms (lock_timeout): when a cycle forms anyway,
-- the deletion gives way (lock_not_available, retried by the caller) long before PostgreSQL's
-- deadlock check would pick a victim, so the consumer's ack never fails because of an admin
-- request.
CREATE OR REPLACE FUNCTION queen.delete_queue_v1(p_tenant uuid, p_queue text,
                                      OUT existed boolean, OUT n_partitions bigint, OUT n_records bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_qid bigint;
BEGIN
    SET LOCAL lock_timeout = '200ms'; -- give way to consumers: see above
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue FOR UPDATE;
    existed := FOUND;
    n_partitions := 0;
    n_records := 0;
    IF NOT existed THEN
        RETURN;
    END IF;
    PERFORM 1 FROM queen.queue_clocks c WHERE c.queue_id = v_qid FOR UPDATE;
    PERFORM 1 FROM queen.cursors x WHERE x.queue_id = v_qid ORDER BY x.partition_id, x.consumer_group FOR UPDATE;
    SELECT count(*), coalesce(sum(x.next_offset - x.start_offset), 0)::bigint INTO n_partitions, n_records
      FROM (SELECT p.next_offset, p.start_offset FROM queen.partitions p WHERE p.queue_id = v_qid
            ORDER BY p.id FOR UPDATE) x;
    DELETE FROM queen.queues q WHERE q.id = v_qid;
END
$$;
