-- ack_v1: acks of one consumer group, processed in (partition id, request order); each
-- partition's cursor row is locked once, in partition-id order, and written once.
--   completed/success: the record is done
--   failed:  with retries left, the lease is released (the batch comes back from the first
--            record not done) and the retry count grows once per delivery; the partition then
--            waits retryDelay ms. With none left the record goes to the dead letters (or is
--            dropped when the queue keeps none) and is done
--   dlq:     straight to the dead letters (or dropped when the queue keeps none)
--   retry:   the lease is released, nothing counted
-- Then the cursor advances over the lease's done prefix; a lease all done is released.
CREATE OR REPLACE FUNCTION queen.ack_v1(p_tenant uuid, p_group text, p_parts uuid[], p_txns text[], p_status text[],
                             p_leases uuid[], p_errors text[])
RETURNS TABLE (idx integer, success boolean, error text, queue_name text, partition_name text,
               lease_released boolean, dlq boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now      bigint := queen.now_us();
    it         record;
    cur        record;
    v_pid      bigint := NULL;
    v_have     boolean := false;
    v_done     boolean[];
    v_dirty    boolean := false;
    v_pos      integer;
    v_rec      record;
    v_keep_dlq boolean;
BEGIN
    FOR it IN
        SELECT u.i::integer AS i, u.txn, coalesce(nullif(u.st, ''), 'completed') AS st, u.lease, u.err,
               p.id AS part_id, p.name AS part_name, q.name AS q_name, q.id AS q_id, queen.queue_options_v1(q.options) AS opts
        FROM unnest(p_parts, p_txns, p_status, p_leases, p_errors) WITH ORDINALITY AS u(puuid, txn, st, lease, err, i)
        -- a partition by its uuid, or by its u64 id (the framed pop's partitionId), which the
        -- API passes as the uuid 00000000-0000-0000-<id as 16 hex digits> (docs/http-api.md)
        LEFT JOIN LATERAL (
            SELECT x.id, x.name, x.queue_id FROM queen.partitions x WHERE x.uuid = u.puuid
            UNION ALL
            SELECT x.id, x.name, x.queue_id FROM queen.partitions x
             WHERE substring(uuid_send(u.puuid) FROM 1 FOR 8) = '\x0000000000000000'::bytea
               AND x.id = ('x' || encode(substring(uuid_send(u.puuid) FROM 9), 'hex'))::bit(64)::bigint
            LIMIT 1) p ON true
        LEFT JOIN queen.queues q ON q.id = p.queue_id AND q.tenant_id = p_tenant
        ORDER BY p.id NULLS LAST, u.i
    LOOP
        IF it.q_id IS NULL THEN
            RETURN QUERY SELECT it.i, false, 'Message not found'::text, NULL::text, NULL::text, false, false;
            CONTINUE;
        END IF;
        IF v_pid IS DISTINCT FROM it.part_id THEN
            IF v_dirty THEN
                PERFORM queen.cursor_settle_v1(v_pid, p_group, v_done);
            END IF;
            v_pid := it.part_id;
            v_dirty := false;
            SELECT * INTO cur FROM queen.cursors x
             WHERE x.partition_id = v_pid AND x.consumer_group = p_group FOR UPDATE;
            v_have := FOUND;
            v_done := CASE WHEN v_have THEN cur.lease_done END;
        END IF;
        IF NOT v_have THEN
            RETURN QUERY SELECT it.i, false, 'Message not found'::text, it.q_name, it.part_name, false, false;
            CONTINUE;
        END IF;
        IF it.lease IS NOT NULL AND (cur.lease_id IS DISTINCT FROM it.lease OR cur.lease_expires_at < v_now) THEN
            RETURN QUERY SELECT it.i, false, 'Invalid or expired lease'::text, it.q_name, it.part_name, false, false;
            CONTINUE;
        END IF;
        v_pos := array_position(cur.lease_txns, it.txn);
        IF v_pos IS NULL THEN
            RETURN QUERY SELECT it.i, false, 'Message not found'::text, it.q_name, it.part_name, false, false;
            CONTINUE;
        END IF;
        v_dirty := true;
        IF it.st IN ('completed', 'success') THEN
            v_done[v_pos] := true;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, false, false;
        ELSIF it.st = 'retry' THEN
            UPDATE queen.cursors x SET lease_id = NULL, lease_expires_at = NULL
             WHERE x.partition_id = v_pid AND x.consumer_group = p_group
             RETURNING * INTO cur;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, true, false;
        ELSIF it.st = 'failed' AND (cur.retry_count < (it.opts->>'retryLimit')::integer
                                    OR cur.lease_failed) THEN
            -- a retry: counted once per delivery (lease_failed), however many records fail in it.
            -- The partition stays unavailable for retryDelay ms: an ownerless lease until then.
            IF NOT cur.lease_failed THEN
                UPDATE queen.cursors x SET retry_count = x.retry_count + 1, lease_failed = true, lease_id = NULL,
                       lease_expires_at = CASE WHEN (it.opts->>'retryDelay')::bigint > 0
                                               THEN v_now + (it.opts->>'retryDelay')::bigint * 1000 END
                 WHERE x.partition_id = v_pid AND x.consumer_group = p_group
                 RETURNING * INTO cur;
            END IF;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, true, false;
        ELSIF it.st IN ('failed', 'dlq') THEN
            -- a queue that keeps no dead letters (deadLetterQueue false), or none for exhausted
            -- retries (dlqAfterMaxRetries false), drops the record; the partition moves on either way
            v_keep_dlq := (it.opts->>'deadLetterQueue')::boolean
                          AND (it.st = 'dlq' OR (it.opts->>'dlqAfterMaxRetries')::boolean);
            IF v_keep_dlq THEN
                SELECT r.ts, r.rec INTO v_rec FROM queen.record_at_v1(v_pid, cur.lease_start + v_pos - 1) r;
                INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, off, txn_id, ts, error,
                                                retry_count, record)
                VALUES (it.q_id, v_pid, p_group, cur.lease_start + v_pos - 1, it.txn, coalesce(v_rec.ts, 0),
                        coalesce(nullif(it.err, ''), CASE WHEN it.st = 'dlq' THEN 'Moved to the dead letters'
                                                         ELSE 'Retries exhausted' END),
                        cur.retry_count, v_rec.rec);
            END IF;
            v_done[v_pos] := true;
            RETURN QUERY SELECT it.i, true, NULL::text, it.q_name, it.part_name, false, v_keep_dlq;
        ELSE
            RETURN QUERY SELECT it.i, false, ('Unknown status: ' || it.st)::text, it.q_name, it.part_name, false, false;
        END IF;
    END LOOP;
    IF v_dirty THEN
        PERFORM queen.cursor_settle_v1(v_pid, p_group, v_done);
    END IF;
END
$$;
