-- pop_ns_v2: a pop over every queue of a namespace (and task, when given): queues are tried in
-- priority order (highest first, ties in random order so none starves), and the first that
-- yields records answers. Rows as pop_v2's, plus the queue's name. p_conflation is what the pop
-- declares; each queue applies its own stored policy for the group (pop_v2). The policy row
-- (kind 3) is the answering queue's; when no queue answers, one row sums them up: a = 1 when
-- every queue tried conflates for the group, b = 1 when any of them conflicts with p_conflation
-- (none tried: p_conflation, no conflict).
CREATE OR REPLACE FUNCTION queen.pop_ns_v2(
    p_tenant uuid, p_namespace text, p_task text, p_group text, p_batch integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from bigint, p_max_partitions integer, p_lease_ids uuid[], p_lease_seconds integer,
    p_conflation boolean)
RETURNS TABLE (kind integer, pid bigint, puuid uuid, pname text, a bigint, b bigint, c bigint,
               seg_ts bigint, seg_count integer, seg_data bytea, qname text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    q        record;
    r        record;
    v_got    boolean := false;
    v_retry  bigint := NULL;
    v_pol_a  bigint;
    v_pol_b  bigint;
    v_all    boolean := NULL;
    v_any    boolean := false;
BEGIN
    FOR q IN
        SELECT x.name FROM queen.queues x
         WHERE x.tenant_id = p_tenant AND x.namespace = p_namespace AND (p_task IS NULL OR x.task = p_task)
         ORDER BY (queen.queue_options_v1(x.options)->>'priority')::integer DESC, random()
    LOOP
        v_pol_a := NULL;
        FOR r IN SELECT * FROM queen.pop_v2(p_tenant, q.name, NULL, p_group, p_batch, p_auto_ack, p_sub_mode,
                                            p_sub_from, p_max_partitions, p_lease_ids, p_lease_seconds, false,
                                            NULL, p_conflation) LOOP
            IF r.kind = 4 THEN
                CONTINUE;
            ELSIF r.kind = 3 THEN
                v_pol_a := r.a;
                v_pol_b := r.b;
                v_all := coalesce(v_all, true) AND r.a = 1;
                v_any := v_any OR r.b = 1;
                CONTINUE;
            ELSIF r.kind = 2 THEN
                IF r.c IS NOT NULL THEN
                    v_retry := least(coalesce(v_retry, r.c), r.c);
                END IF;
                CONTINUE;
            END IF;
            IF NOT v_got AND v_pol_a IS NOT NULL THEN
                kind := 3; pid := NULL; puuid := NULL; pname := NULL; a := v_pol_a; b := v_pol_b; c := NULL;
                seg_ts := NULL; seg_count := NULL; seg_data := NULL; qname := q.name;
                RETURN NEXT;
            END IF;
            v_got := true;
            kind := r.kind; pid := r.pid; puuid := r.puuid; pname := r.pname; a := r.a; b := r.b; c := r.c;
            seg_ts := r.seg_ts; seg_count := r.seg_count; seg_data := r.seg_data; qname := q.name;
            RETURN NEXT;
        END LOOP;
        EXIT WHEN v_got;
    END LOOP;
    IF NOT v_got THEN
        IF p_group <> '__QUEUE_MODE__' THEN
            kind := 3; a := coalesce(v_all, coalesce(p_conflation, false))::integer; b := v_any::integer;
            c := NULL; qname := NULL;
            RETURN NEXT;
        END IF;
        kind := 2; pname := 'empty'; a := NULL; b := NULL; c := v_retry; qname := NULL;
        RETURN NEXT;
    END IF;
END
$$;
