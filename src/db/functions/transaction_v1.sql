-- transaction_v1: acks and pushes in one transaction, all or nothing (POST /api/v1/transaction).
--
-- The pushes go through queen.push_v1 (the same allocator as POST /api/v1/push), then the acks
-- through queen.ack_v1, one consumer group at a time in group order: lock spaces are taken in
-- the documented order (queue clocks, partitions, then cursors by (group, partition)). A push
-- that finds a known transactionId or a full queue, an ack that is refused, or a required lease
-- that is no longer held aborts the whole transaction. Inside a transaction a failed ack goes
-- straight to the dead letters (no retry), as in the earlier release. The requiredLeases check
-- looks only at the caller's tenant: a transaction cannot depend on, or learn about, another
-- tenant's lease.
--   kind 0: a push group (pid, puuid, qid, off = base offset, ts = stamp)
--   kind 3: an ack (idx = its index among the acks, from 1; dlq)
-- (C names the columns and kinds in src/api/txn_results.h.)
CREATE OR REPLACE FUNCTION queen.transaction_v1(
    p_tenant uuid,
    p_g_tenant uuid[], p_queue text[], p_partition text[], p_count int[], p_bytes int[], p_data bytea[],
    p_dd_group int[], p_dd_pos int[], p_dd_txn text[], p_dd_window bigint,
    p_ack_groups text[], p_ack_parts uuid[], p_ack_txns text[], p_ack_status text[], p_ack_leases uuid[],
    p_ack_errors text[], p_required uuid[])
RETURNS TABLE (kind integer, idx integer, pid bigint, puuid uuid, qid bigint, off bigint, ts bigint, dlq boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now   bigint := queen.now_us();
    v_lease uuid;
    r       record;
    v_g     text;
    v_idx   integer[];
    v_parts uuid[];
    v_txns  text[];
    v_st    text[];
    v_lz    uuid[];
    v_err   text[];
BEGIN
    FOR v_lease IN SELECT l FROM unnest(p_required) AS l LOOP
        PERFORM 1 FROM queen.cursors x JOIN queen.queues q ON q.id = x.queue_id
         WHERE x.lease_id = v_lease AND x.lease_expires_at >= v_now AND q.tenant_id = p_tenant;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'Lease % is not held (expired or released)', v_lease USING ERRCODE = 'QT001';
        END IF;
    END LOOP;

    IF coalesce(cardinality(p_queue), 0) > 0 THEN
        FOR r IN SELECT * FROM queen.push_v1(p_g_tenant, p_queue, p_partition, p_count, p_bytes, p_data,
                                             p_dd_group, p_dd_pos, p_dd_txn, p_dd_window) LOOP
            IF r.kind = 1 THEN
                RAISE EXCEPTION 'PUSH operation failed: transactionId "%" was already pushed to partition "%"',
                    p_dd_txn[r.idx], p_partition[p_dd_group[r.idx]] USING ERRCODE = 'QT002';
            ELSIF r.kind = 2 THEN
                RAISE EXCEPTION 'PUSH operation failed: queue "%" is full (maxSize %)', p_queue[r.idx], r.off
                    USING ERRCODE = 'QT003';
            END IF;
            kind := 0; idx := r.idx; pid := r.partition_id; puuid := r.partition_uuid; qid := r.queue_id;
            off := r.off; ts := r.ts; dlq := false;
            RETURN NEXT;
        END LOOP;
    END IF;

    FOR v_g IN SELECT DISTINCT g FROM unnest(p_ack_groups) AS g ORDER BY 1 LOOP
        SELECT array_agg(u.i::integer ORDER BY u.i), array_agg(u.part ORDER BY u.i), array_agg(u.txn ORDER BY u.i),
               array_agg(CASE WHEN u.st = 'failed' THEN 'dlq' ELSE u.st END ORDER BY u.i),
               array_agg(u.lease ORDER BY u.i), array_agg(coalesce(u.err, 'Unknown error') ORDER BY u.i)
          INTO v_idx, v_parts, v_txns, v_st, v_lz, v_err
          FROM unnest(p_ack_groups, p_ack_parts, p_ack_txns, p_ack_status, p_ack_leases, p_ack_errors)
               WITH ORDINALITY AS u(g, part, txn, st, lease, err, i)
         WHERE u.g = v_g;
        FOR r IN SELECT * FROM queen.ack_v1(p_tenant, v_g, v_parts, v_txns, v_st, v_lz, v_err) LOOP
            IF NOT r.success THEN
                RAISE EXCEPTION 'ACK operation failed: %', r.error USING ERRCODE = 'QT004';
            END IF;
            kind := 3; idx := v_idx[r.idx]; pid := NULL; puuid := NULL; qid := NULL; off := NULL; ts := NULL;
            dlq := r.dlq;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$$;
