-- pop_ns_v1: a pop over every queue of a namespace (and task, when given): queues are tried in
-- priority order (highest first, ties in random order so none starves), and the first that
-- yields records answers. Rows as pop_v1's, plus the queue's name.
CREATE OR REPLACE FUNCTION queen.pop_ns_v1(
    p_tenant uuid, p_namespace text, p_task text, p_group text, p_batch integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from bigint, p_max_partitions integer, p_lease_ids uuid[], p_lease_seconds integer)
RETURNS TABLE (kind integer, pid bigint, puuid uuid, pname text, a bigint, b bigint, c bigint,
               seg_ts bigint, seg_count integer, seg_data bytea, qname text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    q        record;
    r        record;
    v_got    boolean := false;
    v_retry  bigint := NULL;
BEGIN
    FOR q IN
        SELECT x.name FROM queen.queues x
         WHERE x.tenant_id = p_tenant AND x.namespace = p_namespace AND (p_task IS NULL OR x.task = p_task)
         ORDER BY (queen.queue_options_v1(x.options)->>'priority')::integer DESC, random()
    LOOP
        FOR r IN SELECT * FROM queen.pop_v1(p_tenant, q.name, NULL, p_group, p_batch, p_auto_ack, p_sub_mode,
                                            p_sub_from, p_max_partitions, p_lease_ids, p_lease_seconds, false,
                                            NULL) LOOP
            IF r.kind = 4 THEN
                CONTINUE;
            ELSIF r.kind = 2 THEN
                IF r.c IS NOT NULL THEN
                    v_retry := least(coalesce(v_retry, r.c), r.c);
                END IF;
                CONTINUE;
            END IF;
            v_got := true;
            kind := r.kind; pid := r.pid; puuid := r.puuid; pname := r.pname; a := r.a; b := r.b; c := r.c;
            seg_ts := r.seg_ts; seg_count := r.seg_count; seg_data := r.seg_data; qname := q.name;
            RETURN NEXT;
        END LOOP;
        EXIT WHEN v_got;
    END LOOP;
    IF NOT v_got THEN
        kind := 2; pname := 'empty'; c := v_retry; qname := NULL;
        RETURN NEXT;
    END IF;
END
$$;
