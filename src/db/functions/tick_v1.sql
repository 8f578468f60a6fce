-- tick_v1: advance idle queue clocks to the database's now, so safeTime moves on a quiet
-- queue. A clock row locked by a push in flight is skipped: that push will move it anyway.
-- Runs with synchronous_commit off: a tick lost in a crash only means the clock restarts
-- from the last durable value, and every later stamp comes from clock_timestamp(), which
-- is past any tick a reader could have seen (unless the database host's clock goes back).
CREATE OR REPLACE FUNCTION queen.tick_v1(p_queue_ids bigint[], p_min_age_us bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now bigint := queen.now_us();
    v_n   integer;
BEGIN
    SET LOCAL synchronous_commit = off;
    UPDATE queen.queue_clocks c SET last_ts = v_now
    WHERE c.queue_id IN (
        SELECT x.queue_id FROM queen.queue_clocks x
        WHERE (p_queue_ids IS NULL OR x.queue_id = ANY (p_queue_ids)) AND x.last_ts < v_now - p_min_age_us
        ORDER BY x.queue_id FOR UPDATE SKIP LOCKED)
      AND c.last_ts < v_now;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
