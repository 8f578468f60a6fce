-- sink_clock_v1: ticks the queue's clock to the database's now (unless a push holds its row:
-- that push moves it anyway) and returns the clock, which is a safeTime: every record that
-- commits after this call returns is stamped above it. No row when the queue does not exist.
CREATE OR REPLACE FUNCTION queen.sink_clock_v1(p_tenant uuid, p_queue text)
RETURNS TABLE (queue_id bigint, safe_time bigint, now_us bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
    v_now bigint := queen.now_us();
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;
    PERFORM queen.tick_v1(ARRAY[v_qid], 0);
    RETURN QUERY SELECT v_qid, c.last_ts, v_now FROM queen.queue_clocks c WHERE c.queue_id = v_qid;
END
$$;
