-- streams_cycles_v2: several stream cycles (POST /streams/v1/cycle with an array body) in one
-- transaction, each element in its own savepoint (a PL/pgSQL exception block): an element that
-- fails rolls back alone and reports its error, the others commit together. Element i's
-- arguments are those of queen.streams_cycle_v2, its slices of the flattened arrays given by the
-- per-element counts p_op_n (state ops), p_g_n (push groups) and p_dd_n (dedup entries).
-- Lock order (docs/lock-order.md): before any element, the key-share locks of every query row
-- (id order) and every shard's advisory lock ((query, partition) order), so no element takes a
-- lock of an earlier space after another element pushed. A serialization failure or deadlock
-- aborts the whole call (the node retries it).
-- An element refused as stale state (QS005) with an ack and a leaseId has its lease released
-- (ack_v1 'retry', nothing counted), as a single cycle's is: its batch comes back at once.
-- Rows: streams_cycle_v2's, tagged with the element's p_elem; a failed element gives one row of
-- kind 6 (qname = the error's message, errstate = its SQLSTATE). C names them in
-- src/streams/streams_results.h.
CREATE OR REPLACE FUNCTION queen.streams_cycles_v2(
    p_tenant uuid, p_elem int[], p_query uuid[], p_source uuid[], p_group text[],
    p_op_n int[], p_op_types text[], p_op_keys text[], p_op_values text[], p_op_versions bigint[],
    p_g_n int[], p_g_tenant uuid[], p_queue text[], p_partition text[], p_count int[], p_bytes int[], p_data bytea[],
    p_dd_n int[], p_dd_group int[], p_dd_pos int[], p_dd_txn text[], p_dd_window bigint,
    p_ack_txn text[], p_ack_lease uuid[], p_ack_status text[], p_ack_count int[], p_release boolean[],
    p_ack_error text[], p_fence boolean[], p_replay boolean[])
RETURNS TABLE (kind int, idx int, partition_id bigint, partition_uuid uuid, queue_id bigint, off bigint, ts bigint,
               qname text, elem int, errstate text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n   int := coalesce(cardinality(p_elem), 0);
    o   int := 0;
    g   int := 0;
    dd  int := 0;
    i   int;
    r   record;
    v_state text;
    v_msg   text;
BEGIN
    PERFORM 1 FROM queen.stream_queries x
     WHERE x.id IN (SELECT DISTINCT u FROM unnest(p_query) AS u) AND x.tenant_id = p_tenant
     ORDER BY x.id FOR KEY SHARE;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.streams:' || s.q::text || ':' || s.p::text, 0))
      FROM (SELECT DISTINCT u.q, coalesce(queen.partition_uuid_v1(u.p), u.p) AS p
              FROM unnest(p_query, p_source) AS u(q, p) ORDER BY 1, 2) s;  -- u64 ids as their uuid
    FOR i IN 1 .. n LOOP
        BEGIN
            FOR r IN SELECT * FROM queen.streams_cycle_v2(
                    p_tenant, p_query[i], p_source[i], p_group[i],
                    p_op_types[o + 1 : o + p_op_n[i]], p_op_keys[o + 1 : o + p_op_n[i]], p_op_values[o + 1 : o + p_op_n[i]],
                    p_op_versions[o + 1 : o + p_op_n[i]],
                    p_g_tenant[g + 1 : g + p_g_n[i]], p_queue[g + 1 : g + p_g_n[i]], p_partition[g + 1 : g + p_g_n[i]],
                    p_count[g + 1 : g + p_g_n[i]], p_bytes[g + 1 : g + p_g_n[i]], p_data[g + 1 : g + p_g_n[i]],
                    p_dd_group[dd + 1 : dd + p_dd_n[i]], p_dd_pos[dd + 1 : dd + p_dd_n[i]], p_dd_txn[dd + 1 : dd + p_dd_n[i]],
                    p_dd_window, p_ack_txn[i], p_ack_lease[i], p_ack_status[i], p_ack_count[i], p_release[i],
                    p_ack_error[i], p_fence[i], p_replay[i]) LOOP
                kind := r.kind; idx := r.idx; partition_id := r.partition_id; partition_uuid := r.partition_uuid;
                queue_id := r.queue_id; off := r.off; ts := r.ts; qname := r.qname; elem := p_elem[i]; errstate := NULL;
                RETURN NEXT;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            IF SQLSTATE IN ('40001', '40P01') THEN
                RAISE;
            END IF;
            v_state := SQLSTATE;
            v_msg := SQLERRM;
            IF v_state = 'QS005' AND p_ack_txn[i] IS NOT NULL AND p_ack_lease[i] IS NOT NULL THEN
                -- stale state: as for a single cycle, the lease is released (a retry, nothing
                -- counted) so the batch comes back at once to be folded again
                PERFORM 1 FROM queen.ack_v1(p_tenant, p_group[i], ARRAY[p_source[i]], ARRAY[p_ack_txn[i]],
                                            ARRAY['retry'], ARRAY[p_ack_lease[i]], ARRAY[NULL::text]);
            END IF;
            kind := 6; idx := 0; partition_id := NULL; partition_uuid := NULL; queue_id := NULL; off := NULL;
            ts := NULL; qname := v_msg; elem := p_elem[i]; errstate := v_state;
            RETURN NEXT;
        END;
        o := o + p_op_n[i];
        g := g + p_g_n[i];
        dd := dd + p_dd_n[i];
    END LOOP;
END
$$;
