-- delete_partition_v1: one partition with its segments, dedup rows, cursors and dead letters.
-- A push racing with it either commits first (and its records go too) or finds the partition
-- gone and creates it again, empty, from offset 0. Locks: the partition's cursors, then the
-- partition, each waiting at most 200 ms (see delete_queue_v1.sql: deletions and acks).
CREATE OR REPLACE FUNCTION queen.delete_partition_v1(p_tenant uuid, p_queue text, p_partition text,
                                          OUT status text, OUT partition_uuid uuid, OUT n_records bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_qid bigint;
    v_pid bigint;
BEGIN
    n_records := 0;
    SET LOCAL lock_timeout = '200ms'; -- give way to consumers: see above
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        status := 'queue_not_found';
        RETURN;
    END IF;
    -- the cursors first (see above), then the partition
    PERFORM 1 FROM queen.cursors x JOIN queen.partitions p ON p.id = x.partition_id
     WHERE p.queue_id = v_qid AND p.name = p_partition ORDER BY x.consumer_group FOR UPDATE OF x;
    SELECT p.id, p.uuid, p.next_offset - p.start_offset INTO v_pid, partition_uuid, n_records
      FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        status := 'partition_not_found';
        n_records := 0;
        RETURN;
    END IF;
    DELETE FROM queen.partitions p WHERE p.id = v_pid;
    status := 'ok';
END
$$;
