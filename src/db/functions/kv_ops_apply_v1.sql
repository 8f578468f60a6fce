-- kv_ops_apply_v1: the body of kv_ops_v1 (which see: the same parameters and rows), without
-- the subtransaction: a lost required op raises QK001 ('kv_ops_v1: op <i>: <reason>', detail the
-- verdict) and leaves the rollback to the caller. Lifetimes are in milliseconds (p_ttl_ms; the
-- wire's ttlSeconds times 1000). Called by kv_ops_v1, and directly by the S3 sink's blocking
-- connection (kv_batch_sync: every fenced op required, so a lost fence fails the statement).
-- plan_cache_mode: every statement here is a primary-key lookup, so its generic plan is the
-- plan; without the setting PL/pgSQL re-planned them at every call (the generic plan's row
-- estimate for an array parameter's unnest looked dearer than a custom plan's), and planning
-- was most of the call's time (docs/kv.md, "Cost").
CREATE OR REPLACE FUNCTION queen.kv_ops_apply_v1(
    p_tenant uuid, p_raise boolean, p_kind int[], p_ns text[], p_key text[], p_value text[], p_expect bigint[],
    p_required boolean[], p_ttl_ms bigint[], p_delta bigint[], p_min bigint[], p_max bigint[], p_after text[],
    p_limit int[], p_keys_only boolean[], p_many_op int[], p_many_key text[])
RETURNS TABLE (o_index int, o_result text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    n        int := coalesce(cardinality(p_kind), 0);
    v_now    bigint := queen.now_us();
    k_ns     text[];
    k_key    text[];
    res      text[];
    i        int;
    j        int;
    found_   boolean;
    live     boolean;
    v_ver    bigint;
    v_val    text;
    v_exp    bigint;
    v_upd    bigint;
    v_cur    numeric;
    v_next   numeric;
    v_newver bigint;
    v_newexp bigint;
    reason   text;
    v_answer bigint := 0;
    rows_    text;
    missing  text;
    v_trunc  boolean;
    v_cnt    int;
    v_last   text;
    v_lim    int;
    r        record;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    res := array_fill(NULL::text, ARRAY[n]);
    BEGIN
        -- 1. lock every key a write or a check names, in order
        SELECT array_agg(d.ns ORDER BY d.ns COLLATE "C", d.k COLLATE "C"),
               array_agg(d.k ORDER BY d.ns COLLATE "C", d.k COLLATE "C")
          INTO k_ns, k_key
          FROM (SELECT DISTINCT u.ns, u.k FROM unnest(p_kind, p_ns, p_key) AS u(kind, ns, k)
                 WHERE u.kind BETWEEN 1 AND 5) d;
        FOR j IN 1..coalesce(cardinality(k_ns), 0) LOOP
            LOOP
                PERFORM 1 FROM queen.kv x
                 WHERE x.tenant_id = p_tenant AND x.namespace = k_ns[j] AND x.key = k_key[j]
                   FOR UPDATE;
                EXIT WHEN FOUND;
                INSERT INTO queen.kv (tenant_id, namespace, key, value, version, expires_at, updated_at)
                VALUES (p_tenant, k_ns[j], k_key[j], 'null', 0, NULL, v_now)
                ON CONFLICT (tenant_id, namespace, key) DO NOTHING;
                EXIT WHEN FOUND;
                -- another transaction created the key between the two statements: lock its row
            END LOOP;
        END LOOP;

        -- 2. the ops, in request order
        FOR i IN 1..n LOOP
            reason := NULL;
            IF p_kind[i] BETWEEN 0 AND 5 THEN
                SELECT x.version, x.value, x.expires_at, x.updated_at INTO v_ver, v_val, v_exp, v_upd
                  FROM queen.kv x
                 WHERE x.tenant_id = p_tenant AND x.namespace = p_ns[i] AND x.key = p_key[i];
                found_ := FOUND;
                live := found_ AND v_ver > 0 AND (v_exp IS NULL OR v_exp > v_now);
                IF NOT live THEN
                    v_ver := NULL;
                    v_val := NULL;
                    v_exp := NULL;
                    v_upd := NULL;
                END IF;
                -- the precondition of put, delete and check (putIfAbsent's is expect 0)
                IF p_expect[i] IS NOT NULL THEN
                    IF p_expect[i] = 0 AND live THEN
                        reason := 'exists';
                    ELSIF p_expect[i] > 0 AND NOT live THEN
                        reason := 'absent';
                    ELSIF p_expect[i] > 0 AND v_ver <> p_expect[i] THEN
                        reason := 'version';
                    END IF;
                END IF;
            END IF;
            CASE p_kind[i]
            WHEN 0 THEN
                IF live THEN
                    res[i] := json_build_object('found', true, 'key', p_key[i], 'value', v_val::json,
                        'version', v_ver, 'expiresAt', queen.kv_iso(v_exp), 'updatedAt', queen.kv_iso(v_upd))::text;
                    v_answer := v_answer + octet_length(v_val);
                ELSE
                    res[i] := json_build_object('found', false, 'key', p_key[i])::text;
                END IF;
            WHEN 1, 2 THEN
                IF reason IS NULL THEN
                    v_newver := nextval('queen.kv_version_seq');
                    v_newexp := CASE WHEN p_ttl_ms[i] IS NOT NULL THEN v_now + p_ttl_ms[i] * 1000 END;
                    UPDATE queen.kv x SET value = p_value[i], version = v_newver, expires_at = v_newexp,
                           updated_at = v_now
                     WHERE x.tenant_id = p_tenant AND x.namespace = p_ns[i] AND x.key = p_key[i];
                    res[i] := json_build_object('applied', true, 'key', p_key[i], 'version', v_newver,
                        'created', NOT live, 'expiresAt', queen.kv_iso(v_newexp))::text;
                END IF;
            WHEN 3 THEN
                IF reason IS NULL AND NOT live THEN
                    reason := 'absent';
                END IF;
                IF reason IS NULL THEN
                    UPDATE queen.kv x SET value = 'null', version = 0, expires_at = NULL, updated_at = v_now
                     WHERE x.tenant_id = p_tenant AND x.namespace = p_ns[i] AND x.key = p_key[i];
                    res[i] := json_build_object('applied', true, 'key', p_key[i], 'version', v_ver)::text;
                END IF;
            WHEN 4 THEN
                v_cur := 0;
                IF live THEN
                    IF v_val !~ '^-?(0|[1-9][0-9]{0,18})$' THEN
                        reason := 'not_integer';
                    ELSE
                        v_cur := v_val::numeric;
                    END IF;
                END IF;
                IF reason IS NULL THEN
                    v_next := v_cur + p_delta[i];
                    IF v_next > 9223372036854775807 OR v_next < -9223372036854775808 THEN
                        reason := 'overflow';
                    ELSIF p_max[i] IS NOT NULL AND p_delta[i] > 0 AND v_next > p_max[i] THEN
                        reason := 'max_exceeded';
                    ELSIF p_min[i] IS NOT NULL AND p_delta[i] < 0 AND v_next < p_min[i] THEN
                        reason := 'min_exceeded';
                    END IF;
                END IF;
                IF reason IS NULL THEN
                    v_newver := nextval('queen.kv_version_seq');
                    -- the TTL is create-only: a live counter keeps its window
                    v_newexp := CASE WHEN live THEN v_exp
                                     WHEN p_ttl_ms[i] IS NOT NULL THEN v_now + p_ttl_ms[i] * 1000 END;
                    UPDATE queen.kv x SET value = v_next::text, version = v_newver, expires_at = v_newexp,
                           updated_at = v_now
                     WHERE x.tenant_id = p_tenant AND x.namespace = p_ns[i] AND x.key = p_key[i];
                    res[i] := json_build_object('applied', true, 'key', p_key[i], 'value', v_next::bigint,
                        'version', v_newver, 'created', NOT live, 'expiresAt', queen.kv_iso(v_newexp))::text;
                END IF;
            WHEN 5 THEN
                IF reason IS NULL THEN
                    res[i] := json_build_object('applied', true, 'key', p_key[i], 'version', coalesce(v_ver, 0))::text;
                END IF;
            WHEN 6 THEN
                rows_ := '';
                missing := '';
                v_trunc := false;
                FOR r IN
                    SELECT m.k, x.version, x.value, x.expires_at, x.updated_at,
                           (x.version > 0 AND (x.expires_at IS NULL OR x.expires_at > v_now)) AS live
                      FROM (SELECT DISTINCT ON (u.k) u.k, u.ord
                              FROM unnest(p_many_op, p_many_key) WITH ORDINALITY AS u(op, k, ord)
                             WHERE u.op = i ORDER BY u.k, u.ord) m
                      LEFT JOIN queen.kv x ON x.tenant_id = p_tenant AND x.namespace = p_ns[i] AND x.key = m.k
                     ORDER BY m.ord
                LOOP
                    IF coalesce(r.live, false) THEN
                        IF v_answer + octet_length(r.value) > 67108864 THEN
                            v_trunc := true;
                            CONTINUE;
                        END IF;
                        v_answer := v_answer + octet_length(r.value);
                        rows_ := rows_ || CASE WHEN rows_ = '' THEN '' ELSE ',' END
                            || json_build_object('key', r.k, 'value', r.value::json, 'version', r.version,
                                   'expiresAt', queen.kv_iso(r.expires_at), 'updatedAt', queen.kv_iso(r.updated_at))::text;
                    ELSE
                        missing := missing || CASE WHEN missing = '' THEN '' ELSE ',' END || to_json(r.k)::text;
                    END IF;
                END LOOP;
                res[i] := '{"rows":[' || rows_ || '],"missing":[' || missing || ']'
                    || CASE WHEN v_trunc THEN ',"truncated":true' ELSE '' END || '}';
            WHEN 7 THEN
                rows_ := '';
                v_trunc := false;
                v_cnt := 0;
                v_last := NULL;
                v_lim := least(greatest(coalesce(p_limit[i], 100), 1), 1000);
                -- a constant LIKE pattern under the "C" collation is an index range
                FOR r IN EXECUTE format(
                    'SELECT x.key, x.version, x.value, x.expires_at, x.updated_at FROM queen.kv x '
                    'WHERE x.tenant_id = $1 AND x.namespace = $2 AND x.key LIKE %L AND x.key > $3 '
                    'AND x.version > 0 AND (x.expires_at IS NULL OR x.expires_at > $4) ORDER BY x.key LIMIT $5',
                    replace(replace(replace(p_key[i], '\', '\\'), '%', '\%'), '_', '\_') || '%')
                    USING p_tenant, p_ns[i], coalesce(p_after[i], ''), v_now, v_lim + 1
                LOOP
                    IF v_cnt = v_lim
                       OR (v_cnt > 0 AND NOT coalesce(p_keys_only[i], false)
                           AND v_answer + octet_length(r.value) > 67108864) THEN
                        v_trunc := true;
                        EXIT;
                    END IF;
                    v_cnt := v_cnt + 1;
                    v_last := r.key;
                    IF coalesce(p_keys_only[i], false) THEN
                        rows_ := rows_ || CASE WHEN rows_ = '' THEN '' ELSE ',' END
                            || json_build_object('key', r.key, 'version', r.version,
                                   'expiresAt', queen.kv_iso(r.expires_at), 'updatedAt', queen.kv_iso(r.updated_at))::text;
                    ELSE
                        v_answer := v_answer + octet_length(r.value);
                        rows_ := rows_ || CASE WHEN rows_ = '' THEN '' ELSE ',' END
                            || json_build_object('key', r.key, 'value', r.value::json, 'version', r.version,
                                   'expiresAt', queen.kv_iso(r.expires_at), 'updatedAt', queen.kv_iso(r.updated_at))::text;
                    END IF;
                END LOOP;
                res[i] := '{"rows":[' || rows_ || '],"truncated":' || v_trunc::text || ',"nextAfter":'
                    || CASE WHEN v_trunc THEN to_json(v_last)::text ELSE 'null' END || '}';
            ELSE
                RAISE EXCEPTION 'kv_ops_v1: unknown op kind %', p_kind[i] USING ERRCODE = '22023';
            END CASE;
            IF reason IS NOT NULL THEN
                -- not applied: the key as this op saw it (advisory)
                IF live THEN
                    res[i] := json_build_object('applied', false, 'key', p_key[i], 'reason', reason,
                        'version', v_ver, 'value', v_val::json, 'expiresAt', queen.kv_iso(v_exp))::text;
                    v_answer := v_answer + octet_length(v_val);
                ELSE
                    res[i] := json_build_object('applied', false, 'key', p_key[i], 'reason', reason,
                        'version', 0, 'value', NULL)::text;
                END IF;
                IF p_required[i] THEN
                    -- the caller's transaction (or kv_ops_v1's subtransaction) takes it all back;
                    -- the detail is bounded for a caller that reads it through the pool
                    -- (db_req.errdetail): past 3800 bytes the verdict drops its value
                    RAISE EXCEPTION 'kv_ops_v1: op %: %', i, reason USING ERRCODE = 'QK001',
                        DETAIL = CASE WHEN NOT p_raise OR octet_length(res[i]) <= 3800 THEN res[i]
                                      -- built again without the value, not through res[i]::jsonb:
                                      -- a value kept with a \u0000 is no jsonb
                                      ELSE json_build_object('applied', false, 'key', p_key[i], 'reason', reason,
                                               'version', CASE WHEN live THEN v_ver ELSE 0 END,
                                               'expiresAt', CASE WHEN live THEN queen.kv_iso(v_exp) END,
                                               'valueOmitted', true)::text END;
                END IF;
            END IF;
            -- kv.h KV_ANSWER_MAX_BYTES: reads of big values are bounded per answer
            IF v_answer > 67108864 THEN
                RAISE EXCEPTION 'the answer of this batch would carry more than 67108864 bytes of values; split the batch'
                    USING ERRCODE = '54000';
            END IF;
        END LOOP;

        -- 3. keys that end absent leave no row
        DELETE FROM queen.kv x
         USING unnest(k_ns, k_key) AS u(ns, k)
         WHERE x.tenant_id = p_tenant AND x.namespace = u.ns AND x.key = u.k AND x.version = 0;
    END;
    RETURN QUERY SELECT (g.i - 1)::int, res[g.i] FROM generate_series(1, n) AS g(i);
END
$$;
