-- kv_batch_v1: an atomic batch. One element per op in every array:
--   p_kind    0 get, 1 put, 2 delete, 3 incr
--   p_expect  0 nothing, 1 the key must be live with version p_version, 2 the key must be absent
--   p_value   put: the JSON text; p_ttl_ms put/incr: > 0 sets an expiry (incr only when it creates)
--   p_by, p_max incr: the step, and the bound an increase must not pass (NULL = none)
-- Every key is locked first, in (namespace, key) order: an existing row with FOR UPDATE, an
-- absent one by inserting a placeholder row (version 0) that this transaction either turns into
-- the real row or deletes again, so a concurrent batch on the same absent key waits on the
-- unique index instead of racing. Then the ops are applied in memory in request order; the
-- first that fails its precondition ends the call with one row (o_status > 0) and nothing
-- written. Otherwise each key's final state is written once and one row per op comes back.
-- o_status: 0 ok, 1 version mismatch, 2 exists (absence required), 3 absent (version
-- required), 4 incr would pass max, 5 incr on a value that is not an integer, 6 incr overflow.
-- o_flag: get found / put, incr created / delete deleted; on failure whether the key is live.
-- A batch whose answer would carry more than 64 MiB of values fails with SQLSTATE 54000.
-- plan_cache_mode: every statement here is a primary-key lookup, so its generic plan is the
-- plan; without the setting PL/pgSQL re-planned them at every call (the generic plan's row
-- estimate for an array parameter's unnest looked dearer than a custom plan's), and planning
-- was most of the call's time (docs/kv.md, "Cost").
CREATE OR REPLACE FUNCTION queen.kv_batch_v1(
    p_tenant uuid, p_kind int[], p_ns text[], p_key text[], p_value text[], p_expect int[],
    p_version bigint[], p_ttl_ms bigint[], p_by bigint[], p_max bigint[])
RETURNS TABLE (o_index int, o_status int, o_version bigint, o_value text, o_expires_at bigint, o_flag boolean)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    n        int := coalesce(cardinality(p_kind), 0);
    v_now    bigint := queen.now_us();
    m        int;
    k_ns     text[];
    k_key    text[];
    op_slot  int[];
    -- each distinct key while the ops are applied
    s_live   boolean[];
    s_ver    bigint[];
    s_val    text[];
    s_exp    bigint[];
    s_new    boolean[];
    s_dirty  boolean[];
    -- each op's result
    r_ver    bigint[];
    r_val    text[];
    r_exp    bigint[];
    r_flag   boolean[];
    f_idx    int := 0;
    f_code   int := 0;
    i        int;
    j        int;
    v_ver    bigint;
    v_val    text;
    v_exp    bigint;
    v_cur    numeric;
    v_next   numeric;
    v_answer bigint := 0;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF n = 1 THEN
        -- one op (every single-op route): one key, nothing to sort
        k_ns := p_ns;
        k_key := p_key;
        op_slot := ARRAY[1];
    ELSE
        SELECT array_agg(d.ns ORDER BY d.ns COLLATE "C", d.k COLLATE "C"),
               array_agg(d.k ORDER BY d.ns COLLATE "C", d.k COLLATE "C")
          INTO k_ns, k_key
          FROM (SELECT DISTINCT u.ns, u.k FROM unnest(p_ns, p_key) AS u(ns, k)) d;
        SELECT array_agg(s.i ORDER BY o.i) INTO op_slot
          FROM unnest(p_ns, p_key) WITH ORDINALITY AS o(ns, k, i)
          JOIN unnest(k_ns, k_key) WITH ORDINALITY AS s(ns, k, i) ON s.ns = o.ns AND s.k = o.k;
    END IF;
    m := cardinality(k_ns);
    s_live := array_fill(false, ARRAY[m]);
    s_ver := array_fill(NULL::bigint, ARRAY[m]);
    s_val := array_fill(NULL::text, ARRAY[m]);
    s_exp := array_fill(NULL::bigint, ARRAY[m]);
    s_new := array_fill(false, ARRAY[m]);
    s_dirty := array_fill(false, ARRAY[m]);
    r_ver := array_fill(NULL::bigint, ARRAY[n]);
    r_val := array_fill(NULL::text, ARRAY[n]);
    r_exp := array_fill(NULL::bigint, ARRAY[n]);
    r_flag := array_fill(false, ARRAY[n]);

    -- 1. lock every key, in order
    FOR j IN 1..m LOOP
        LOOP
            SELECT x.version, x.value, x.expires_at INTO v_ver, v_val, v_exp
              FROM queen.kv x
             WHERE x.tenant_id = p_tenant AND x.namespace = k_ns[j] AND x.key = k_key[j]
               FOR UPDATE;
            IF FOUND THEN
                s_live[j] := v_exp IS NULL OR v_exp > v_now;
                s_ver[j] := v_ver;
                s_val[j] := v_val;
                s_exp[j] := v_exp;
                EXIT;
            END IF;
            INSERT INTO queen.kv (tenant_id, namespace, key, value, version, expires_at, updated_at)
            VALUES (p_tenant, k_ns[j], k_key[j], 'null', 0, NULL, v_now)
            ON CONFLICT (tenant_id, namespace, key) DO NOTHING;
            IF FOUND THEN
                s_new[j] := true;
                EXIT;
            END IF;
            -- another batch created the key between our two statements: lock its row
        END LOOP;
    END LOOP;

    -- 2. apply the ops in request order, in memory
    FOR i IN 1..n LOOP
        j := op_slot[i];
        IF p_expect[i] = 1 THEN
            IF NOT s_live[j] THEN
                f_code := 3;
            ELSIF s_ver[j] <> p_version[i] THEN
                f_code := 1;
            END IF;
        ELSIF p_expect[i] = 2 AND s_live[j] THEN
            f_code := 2;
        END IF;
        IF f_code = 0 THEN
            CASE p_kind[i]
            WHEN 0 THEN
                r_flag[i] := s_live[j];
                IF s_live[j] THEN
                    r_ver[i] := s_ver[j];
                    r_val[i] := s_val[j];
                    r_exp[i] := s_exp[j];
                END IF;
            WHEN 1 THEN
                r_flag[i] := NOT s_live[j];
                s_live[j] := true;
                s_ver[j] := nextval('queen.kv_version_seq');
                s_val[j] := p_value[i];
                s_exp[j] := CASE WHEN p_ttl_ms[i] > 0 THEN v_now + p_ttl_ms[i] * 1000 END;
                s_dirty[j] := true;
                r_ver[i] := s_ver[j];
                r_exp[i] := s_exp[j];
            WHEN 2 THEN
                r_flag[i] := s_live[j];
                s_live[j] := false;
                s_dirty[j] := true;
            WHEN 3 THEN
                v_cur := 0;
                IF s_live[j] THEN
                    IF s_val[j] !~ '^-?(0|[1-9][0-9]{0,18})$' THEN
                        f_code := 5;
                    ELSE
                        v_cur := s_val[j]::numeric;
                    END IF;
                END IF;
                IF f_code = 0 THEN
                    v_next := v_cur + p_by[i];
                    IF v_next > 9223372036854775807 OR v_next < -9223372036854775808 THEN
                        f_code := 6;
                    ELSIF p_max[i] IS NOT NULL AND p_by[i] > 0 AND v_next > p_max[i] THEN
                        f_code := 4;
                    ELSE
                        r_flag[i] := NOT s_live[j];
                        IF NOT s_live[j] THEN
                            s_exp[j] := CASE WHEN p_ttl_ms[i] > 0 THEN v_now + p_ttl_ms[i] * 1000 END;
                        END IF;
                        s_live[j] := true;
                        s_ver[j] := nextval('queen.kv_version_seq');
                        s_val[j] := v_next::text;
                        s_dirty[j] := true;
                        r_ver[i] := s_ver[j];
                        r_val[i] := s_val[j];
                        r_exp[i] := s_exp[j];
                    END IF;
                END IF;
            ELSE
                RAISE EXCEPTION 'kv_batch_v1: unknown op kind %', p_kind[i] USING ERRCODE = '22023';
            END CASE;
        END IF;
        IF f_code <> 0 THEN
            f_idx := i;
            EXIT;
        END IF;
        -- the values this answer carries are bounded (kv.h KV_ANSWER_MAX_BYTES): 1000 gets of
        -- 1 MiB values would otherwise be a gigabyte held by both ends
        v_answer := v_answer + coalesce(octet_length(r_val[i]), 0);
        IF v_answer > 67108864 THEN
            RAISE EXCEPTION 'the answer of this batch would carry more than 67108864 bytes of values; split the batch'
                USING ERRCODE = '54000';
        END IF;
    END LOOP;

    IF f_idx > 0 THEN
        -- nothing was written; take back the placeholders
        FOR j IN 1..m LOOP
            IF s_new[j] THEN
                DELETE FROM queen.kv x
                 WHERE x.tenant_id = p_tenant AND x.namespace = k_ns[j] AND x.key = k_key[j];
            END IF;
        END LOOP;
        j := op_slot[f_idx];
        RETURN QUERY SELECT f_idx - 1, f_code,
            CASE WHEN s_live[j] THEN s_ver[j] END, CASE WHEN s_live[j] THEN s_val[j] END,
            CASE WHEN s_live[j] THEN s_exp[j] END, s_live[j];
        RETURN;
    END IF;

    -- 3. write each key's final state once
    FOR j IN 1..m LOOP
        IF s_dirty[j] AND s_live[j] THEN
            UPDATE queen.kv x SET value = s_val[j], version = s_ver[j], expires_at = s_exp[j], updated_at = v_now
             WHERE x.tenant_id = p_tenant AND x.namespace = k_ns[j] AND x.key = k_key[j];
        ELSIF s_dirty[j] OR s_new[j] THEN
            DELETE FROM queen.kv x
             WHERE x.tenant_id = p_tenant AND x.namespace = k_ns[j] AND x.key = k_key[j];
        END IF;
    END LOOP;
    RETURN QUERY SELECT (g.i - 1)::int, 0, r_ver[g.i], r_val[g.i], r_exp[g.i], r_flag[g.i]
                   FROM generate_series(1, n) AS g(i);
END
$$;
