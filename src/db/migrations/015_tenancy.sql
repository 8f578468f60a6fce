-- 015_tenancy — nothing reaches another tenant's rows.
--
-- Two statements found a row by an id alone: extending a lease (lease_extend_v1 took any lease
-- id) and the requiredLeases check of a transaction (it answered whether any tenant's lease was
-- held). Both now look only at cursors of the caller's tenant's queues. The tenant row a queue,
-- KV key or timer references is created by the HTTP layer on a tenant's first request
-- (src/api/api_auth.c), so no function here creates tenants.

-- lease_extend_v2: lease_extend_v1 for one tenant. The lease's cursor rows (one per partition a
-- multi-partition pop claimed) are locked in partition-id order first, as ack_v1 takes them,
-- instead of the physical order a multi-row UPDATE would take. A lease of another tenant reads
-- as 'Lease not found'.
CREATE FUNCTION queen.lease_extend_v2(p_tenant uuid, p_lease uuid, p_seconds integer,
                                      OUT expires_at bigint, OUT error text)
LANGUAGE plpgsql AS $$
DECLARE
    v_now bigint := queen.now_us();
    v_pids bigint[];
    n integer;
BEGIN
    SELECT array_agg(x.partition_id ORDER BY x.partition_id) INTO v_pids
      FROM (SELECT c.partition_id FROM queen.cursors c JOIN queen.queues q ON q.id = c.queue_id
             WHERE c.lease_id = p_lease AND q.tenant_id = p_tenant
             ORDER BY c.partition_id FOR UPDATE OF c) x;
    IF v_pids IS NULL THEN
        error := 'Lease not found';
        RETURN;
    END IF;
    UPDATE queen.cursors x SET lease_expires_at = greatest(x.lease_expires_at, v_now + p_seconds::bigint * 1000000)
     WHERE x.partition_id = ANY (v_pids) AND x.lease_id = p_lease AND x.lease_expires_at >= v_now;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        error := 'Lease already expired';
        RETURN;
    END IF;
    SELECT min(x.lease_expires_at) INTO expires_at FROM queen.cursors x
     WHERE x.partition_id = ANY (v_pids) AND x.lease_id = p_lease;
END
$$;

-- transaction_v1 again, with the requiredLeases check limited to the caller's tenant: a
-- transaction cannot depend on, or learn about, another tenant's lease.
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
