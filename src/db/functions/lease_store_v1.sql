-- lease_store_v1: records which transactionIds each lease delivered (offsets lease_start ..), so
-- an ack by transactionId finds its offset. Committed asynchronously: if it is lost in a crash
-- the lease cannot be acked and simply expires, and the records are delivered again.
-- The entries are written in partition-id order (the order ack_v1, lease_extend_v2 and seek_v1
-- lock a group's cursors in), not in the order the pop claimed them: a late ack of the same
-- group over the same partitions, which locks them in id order, then queues up behind the store
-- (or the store behind it) instead of deadlocking (docs/lock-order.md). Entry i's
-- transactionIds are read from the request-order position (the counts of the entries before it).
CREATE OR REPLACE FUNCTION queen.lease_store_v1(p_group text, p_leases uuid[], p_pids bigint[], p_counts integer[],
                                               p_txns text[])
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    e      record;
    n      integer := 0;
    v_done boolean[];
BEGIN
    SET LOCAL synchronous_commit = off;
    FOR e IN
        SELECT u.pid, u.lease, u.cnt, (sum(u.cnt) OVER (ORDER BY u.i) - u.cnt + 1)::integer AS at
          FROM unnest(p_pids, p_leases, p_counts) WITH ORDINALITY AS u(pid, lease, cnt, i)
         ORDER BY u.pid, u.i
    LOOP
        -- a NULL transactionId is a deleted record: not delivered, so done from the start
        v_done := ARRAY(SELECT t IS NULL FROM unnest(p_txns[e.at : e.at + e.cnt - 1]) WITH ORDINALITY AS x(t, j)
                        ORDER BY x.j);
        UPDATE queen.cursors x
           SET lease_txns = p_txns[e.at : e.at + e.cnt - 1], lease_done = v_done
         WHERE x.partition_id = e.pid AND x.consumer_group = p_group AND x.lease_id = e.lease;
        IF FOUND AND v_done[1] THEN
            PERFORM queen.cursor_settle_v1(e.pid, p_group, v_done);
        END IF;
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
