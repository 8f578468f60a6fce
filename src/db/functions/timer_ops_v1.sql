-- timer_ops_v1: timer ops keyed by (queue, timerKey), applied in the caller's transaction: the
-- body of POST /api/v1/timers and DELETE /api/v1/timers/:queue/*timerKey, and the transaction's
-- `timers` rider (docs/timers.md, "Keyed timers"). One element per op in every array:
--   p_op         0 schedule, 1 reschedule (the same upsert: both create or replace), 2 cancel
--   p_queue, p_key  the timer
--   p_partition  schedule: the partition it fires into (cancel: NULL)
--   p_txn        schedule: the record's transactionId (inside p_record too); cancel: the
--                caller's, echoed when the key is absent (may be NULL)
--   p_delay_us   schedule: µs after the database's now, >= 0
--   p_id         schedule: the row id if it creates (a UUIDv7 the node made)
--   p_bytes, p_record  schedule: the payload's size and the encoded record (storage/record.h)
-- Contract:
--  * The keys are locked in (queue, timerKey) byte order, each once, whatever the order of the
--    ops: lock space 1 (docs/lock-order.md). A larger transaction calls this after its KV ops
--    (space 0) and before push_v1 (spaces 2-6). The ops of one key apply in request order.
--  * A plaintext record for a queue with encryptionEnabled raises QE002 "timer_ops_v1: op N
--    ..." before anything is written: the node seals that queue's payloads and calls again.
--  * One row per op, in key order (o_index, from 1, maps it back): o_status 0 scheduled (the
--    key was not pending: created), 1 rescheduled (the pending timer replaced: it will not
--    fire; attempts back to 0), 2 cancelled, 3 absent (a cancel of a key not pending), 4
--    too_late (the op met the timer held by a firing round, which delivered it: nothing is
--    written for that op; a later op of the same key in the batch finds it absent);
--    o_txn: the op's transactionId (cancelled / too_late: the stored timer's; absent: the
--    caller's); o_deliver_at: µs on the database's clock (absent: NULL); o_in_us: how far
--    from now a scheduled timer is due (NULL for the others), for the node's firing job.
--  * too_late is told from a concurrent cancel by the delivered timer's transactionId in the
--    partition's dedup rows (keyed timers always carry a producer transactionId). A timer of
--    the server-id era without one reads as absent instead.
--  * 40001 when a concurrent creation of the same key keeps winning the race (callers retry).
CREATE OR REPLACE FUNCTION queen.timer_ops_v1(
    p_tenant uuid, p_op integer[], p_queue text[], p_key text[], p_partition text[], p_txn text[],
    p_delay_us bigint[], p_id uuid[], p_bytes integer[], p_record bytea[])
RETURNS TABLE (o_index integer, o_status integer, o_txn text, o_deliver_at bigint, o_in_us bigint)
LANGUAGE plpgsql AS $$
DECLARE
    n       integer := coalesce(cardinality(p_op), 0);
    v_now   bigint := queen.now_us();
    v_bad   integer;
    k       record;
    i       integer;
    v_seen  record;
    v_id    uuid;
    v_have  boolean;
    v_fired boolean;
    v_first boolean;
    v_fire  bigint;
    v_try   integer;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_queue) <> n OR cardinality(p_key) <> n OR cardinality(p_partition) <> n
       OR cardinality(p_txn) <> n OR cardinality(p_delay_us) <> n OR cardinality(p_id) <> n
       OR cardinality(p_bytes) <> n OR cardinality(p_record) <> n THEN
        RAISE EXCEPTION 'timer_ops_v1: the arrays differ in length' USING ERRCODE = '22023';
    END IF;

    -- plaintext for a queue with encryptionEnabled: nothing is written (a record's first byte
    -- is its flags; 8 = sealed)
    SELECT min(u.i) INTO v_bad
      FROM unnest(p_op, p_queue, p_record) WITH ORDINALITY AS u(op, q, rec, i)
      JOIN queen.queues x ON x.tenant_id = p_tenant AND x.name = u.q
     WHERE u.op < 2 AND (queen.queue_options_v1(x.options)->>'encryptionEnabled')::boolean
       AND get_byte(u.rec, 0) & 8 = 0;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'timer_ops_v1: op % (queue "%") needs its payload sealed: the queue has encryptionEnabled',
            v_bad, p_queue[v_bad] USING ERRCODE = 'QE002';
    END IF;

    FOR k IN SELECT u.q, u.k, array_agg(u.i::integer ORDER BY u.i) AS ops
               FROM unnest(p_queue, p_key) WITH ORDINALITY AS u(q, k, i)
              GROUP BY u.q, u.k
              ORDER BY u.q COLLATE "C", u.k COLLATE "C" LOOP
        -- the pending timer as this statement's snapshot has it, then its row lock: waiting for
        -- a firing round (or another writer) that holds it
        v_have := false;
        v_fired := false;
        SELECT x.id, x.partition, x.txn_id, x.fire_at INTO v_seen
          FROM queen.log_timers x
         WHERE x.tenant_id = p_tenant AND x.queue = k.q AND x.timer_key = k.k;
        IF FOUND THEN
            SELECT x.id INTO v_id FROM queen.log_timers x WHERE x.id = v_seen.id FOR UPDATE;
            IF FOUND THEN
                v_have := true;
            ELSE
                -- gone while this waited: a firing round delivered it (its transactionId is in
                -- the partition's dedup rows now), or another request cancelled it
                v_fired := EXISTS (
                    SELECT 1 FROM queen.queues q
                      JOIN queen.partitions p ON p.queue_id = q.id AND p.name = v_seen.partition
                      JOIN queen.dedup d ON d.partition_id = p.id AND d.txn_id = v_seen.txn_id
                     WHERE q.tenant_id = p_tenant AND q.name = k.q);
            END IF;
        END IF;

        v_first := true;
        FOREACH i IN ARRAY k.ops LOOP
            o_index := i;
            o_in_us := NULL;
            IF v_first AND v_fired THEN
                o_status := 4;
                o_txn := v_seen.txn_id;
                o_deliver_at := v_seen.fire_at;
            ELSIF p_op[i] < 2 THEN
                v_fire := v_now + greatest(p_delay_us[i], 0);
                v_try := 0;
                LOOP
                    IF v_have THEN
                        UPDATE queen.log_timers x
                           SET partition = p_partition[i], fire_at = v_fire, txn_id = p_txn[i], txn_producer = true,
                               trace_id = NULL, payload_bytes = p_bytes[i], record = p_record[i], created_at = v_now,
                               attempts = 0
                         WHERE x.id = v_id;
                        o_status := 1;
                        EXIT;
                    END IF;
                    INSERT INTO queen.log_timers (id, tenant_id, queue, timer_key, partition, fire_at, txn_id,
                                                  txn_producer, trace_id, payload_bytes, record, created_at)
                    VALUES (p_id[i], p_tenant, k.q, k.k, p_partition[i], v_fire, p_txn[i], true, NULL, p_bytes[i],
                            p_record[i], v_now)
                    ON CONFLICT (tenant_id, queue, timer_key) DO NOTHING;
                    IF FOUND THEN
                        v_have := true;
                        v_id := p_id[i];
                        o_status := 0;
                        EXIT;
                    END IF;
                    -- another transaction created the key after this one looked: its row is the
                    -- pending timer now
                    SELECT x.id INTO v_id FROM queen.log_timers x
                     WHERE x.tenant_id = p_tenant AND x.queue = k.q AND x.timer_key = k.k FOR UPDATE;
                    v_have := FOUND;
                    v_try := v_try + 1;
                    IF v_try > 3 THEN
                        RAISE EXCEPTION 'timer_ops_v1: the key kept being created and deleted meanwhile'
                            USING ERRCODE = '40001';
                    END IF;
                END LOOP;
                o_txn := p_txn[i];
                o_deliver_at := v_fire;
                o_in_us := v_fire - v_now;
            ELSIF v_have THEN
                DELETE FROM queen.log_timers x WHERE x.id = v_id RETURNING x.txn_id, x.fire_at INTO o_txn, o_deliver_at;
                v_have := false;
                o_status := 2;
            ELSE
                o_status := 3;
                o_txn := p_txn[i];
                o_deliver_at := NULL;
            END IF;
            v_first := false;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$$;
