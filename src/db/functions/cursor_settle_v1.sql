-- cursor_settle_v1: stores a lease's done flags and moves the cursor over their done prefix,
-- in one write. A lease all done is released and the retry count starts again.
CREATE OR REPLACE FUNCTION queen.cursor_settle_v1(p_pid bigint, p_group text, p_done boolean[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cur record;
    n integer;
    k integer;
    v_next bigint;
BEGIN
    SELECT * INTO cur FROM queen.cursors x WHERE x.partition_id = p_pid AND x.consumer_group = p_group;
    IF NOT FOUND OR p_done IS NULL OR cur.lease_start IS NULL THEN
        RETURN;
    END IF;
    n := cardinality(p_done);
    k := greatest(cur.next_offset - cur.lease_start, 0)::integer;
    WHILE k < n AND p_done[k + 1] LOOP
        k := k + 1;
    END LOOP;
    v_next := greatest(cur.lease_start + k, cur.next_offset);
    IF k = n THEN
        UPDATE queen.cursors x
           SET next_offset = v_next, total_consumed = x.total_consumed + (v_next - cur.next_offset),
               last_consumed_at = now(), lease_id = NULL, lease_expires_at = NULL, lease_start = NULL,
               lease_end = NULL, lease_txns = NULL, lease_done = NULL, lease_failed = false, retry_count = 0
         WHERE x.partition_id = p_pid AND x.consumer_group = p_group;
    ELSE
        UPDATE queen.cursors x
           SET lease_done = p_done, next_offset = v_next,
               total_consumed = x.total_consumed + (v_next - cur.next_offset),
               last_consumed_at = CASE WHEN v_next > cur.next_offset THEN now() ELSE x.last_consumed_at END
         WHERE x.partition_id = p_pid AND x.consumer_group = p_group;
    END IF;
END
$$;
