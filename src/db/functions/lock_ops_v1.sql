-- lock_ops_v1: POST /api/v1/locks — locks and semaphores as KV rows (docs/kv.md, "Locks and
-- semaphores"). A permit is the row `<name>#<slot>` of namespace `queen-locks` (slot 0 for a
-- lock, 0..limit-1 for a semaphore) whose value is {"owner", "since"}; its version is the
-- fencing token, so a renew (a new version) retires the token before it. The ops are
-- independent (not all-or-nothing), applied in request order. One element per op:
--   p_kind   0 acquire, 1 renew, 2 release, 3 get
--   p_name   the lock's name (no '#'); p_owner acquire, renew (NULL: minted on acquire)
--   p_ttl_s  acquire, renew: the lifetime; p_limit acquire: permits (1 = a lock)
--   p_token  renew, release: the token the holder has; p_slot renew, release (NULL: found by token)
-- Lock order (docs/lock-order.md, space 0): an acquire never waits — it looks at the slots
-- without locks, then takes a free one with FOR UPDATE SKIP LOCKED (an existing expired row) or
-- by inserting it (ON CONFLICT DO NOTHING: a slot a concurrent acquirer is creating is skipped);
-- renew and release lock the one permit row they name.
-- Every lookup is bounded by the lock's own keys: the permits an owner may hold already are
-- probed key by key (`<name>#<slot>`; a join there was planned as a scan of every lock of the
-- tenant, parsing each value, dead rows included: the lock loop's latency grew with the
-- namespace), and a permit found by its token is a range of the "C"-ordered keys
-- `<name>#` .. `<name>$` ('$' follows '#'; names hold no '#').
-- One row per op: o_index from 0, o_result the op's result object (JSON text).
-- plan_cache_mode: every statement here is a primary-key lookup, so its generic plan is the
-- plan; without the setting PL/pgSQL re-planned them at every call (the generic plan's row
-- estimate for an array parameter's unnest looked dearer than a custom plan's), and planning
-- was most of the call's time (docs/kv.md, "Cost").
CREATE OR REPLACE FUNCTION queen.lock_ops_v1(
    p_tenant uuid, p_kind int[], p_name text[], p_owner text[], p_ttl_s bigint[], p_limit int[], p_token bigint[],
    p_slot int[])
RETURNS TABLE (o_index int, o_result text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    n        int := coalesce(cardinality(p_kind), 0);
    v_now    bigint := queen.now_us();
    res      text[];
    i        int;
    s        int;
    v_owner  text;
    v_key    text;
    v_ver    bigint;
    v_val    text;
    v_exp    bigint;
    v_slot   int;
    v_got    boolean;
    v_skip   boolean;
    v_row    boolean;
    r        record;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    res := array_fill(NULL::text, ARRAY[n]);
    FOR i IN 1..n LOOP
        CASE p_kind[i]
        WHEN 0 THEN
            v_owner := coalesce(p_owner[i], 'queen:' || substr(md5(random()::text || clock_timestamp()::text), 1, 12));
            -- the same owner again (an answer lost on the way): the permit it already has
            -- (one key probe per slot: OFFSET 0 keeps the subquery from being flattened into a
            -- join the planner may run as a scan of the namespace)
            SELECT x.key, x.version INTO v_key, v_ver
              FROM generate_series(0, p_limit[i] - 1) g,
                   LATERAL (SELECT y.key, y.version FROM queen.kv y
                             WHERE y.tenant_id = p_tenant AND y.namespace = 'queen-locks'
                               AND y.key = p_name[i] || '#' || g
                               AND y.version > 0 AND (y.expires_at IS NULL OR y.expires_at > v_now)
                               AND queen.kv_jsonb(y.value) ->> 'owner' = v_owner
                            OFFSET 0) x
             ORDER BY x.key LIMIT 1;
            IF FOUND THEN
                v_slot := queen.lock_slot(p_name[i], v_key);
                res[i] := json_build_object('acquired', true, 'already', true, 'slot', v_slot, 'token', v_ver,
                    'owner', v_owner, 'guard', queen.lock_guard(v_key, v_ver))::text;
                CONTINUE;
            END IF;
            v_got := false;
            v_skip := false;
            FOR s IN 0..p_limit[i] - 1 LOOP
                v_key := p_name[i] || '#' || s;
                SELECT x.version, x.expires_at INTO v_ver, v_exp FROM queen.kv x
                 WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks' AND x.key = v_key;
                v_row := FOUND;
                IF v_row AND v_ver > 0 AND (v_exp IS NULL OR v_exp > v_now) THEN
                    CONTINUE; -- held
                END IF;
                v_ver := nextval('queen.kv_version_seq');
                v_val := json_build_object('owner', v_owner, 'since', queen.kv_iso(v_now))::text;
                IF v_row THEN
                    -- an expired (or placeholder) row: take it unless somebody is at it now
                    UPDATE queen.kv x SET value = v_val, version = v_ver, expires_at = v_now + p_ttl_s[i] * 1000000,
                           updated_at = v_now
                     WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks' AND x.key = v_key
                       AND x.ctid = (SELECT y.ctid FROM queen.kv y
                                      WHERE y.tenant_id = p_tenant AND y.namespace = 'queen-locks' AND y.key = v_key
                                        AND (y.version = 0 OR y.expires_at <= v_now)
                                        FOR UPDATE SKIP LOCKED);
                ELSE
                    INSERT INTO queen.kv (tenant_id, namespace, key, value, version, expires_at, updated_at)
                    VALUES (p_tenant, 'queen-locks', v_key, v_val, v_ver, v_now + p_ttl_s[i] * 1000000, v_now)
                    ON CONFLICT (tenant_id, namespace, key) DO NOTHING;
                END IF;
                IF FOUND THEN
                    v_got := true;
                    res[i] := json_build_object('acquired', true, 'slot', s, 'token', v_ver, 'owner', v_owner,
                        'guard', queen.lock_guard(v_key, v_ver))::text;
                    EXIT;
                END IF;
                v_skip := true;
            END LOOP;
            IF NOT v_got THEN
                res[i] := json_build_object('acquired', false, 'reason', CASE WHEN v_skip THEN 'contended' ELSE 'held' END,
                    'holders', queen.lock_holders(p_tenant, p_name[i], v_now))::text;
            END IF;
        WHEN 1, 2 THEN
            v_key := NULL;
            IF p_slot[i] IS NOT NULL THEN
                v_key := p_name[i] || '#' || p_slot[i];
            ELSE
                SELECT x.key INTO v_key FROM queen.kv x
                 WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks' AND x.version = p_token[i]
                   AND x.key >= p_name[i] || '#' AND x.key < p_name[i] || '$'
                   AND queen.lock_slot(p_name[i], x.key) IS NOT NULL;
            END IF;
            v_got := false;
            IF v_key IS NOT NULL THEN
                SELECT x.version, x.value, x.expires_at INTO v_ver, v_val, v_exp FROM queen.kv x
                 WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks' AND x.key = v_key
                   FOR UPDATE;
                v_got := FOUND AND v_ver = p_token[i] AND (v_exp IS NULL OR v_exp > v_now);
            END IF;
            v_slot := queen.lock_slot(p_name[i], v_key);
            IF p_kind[i] = 1 AND v_got THEN
                v_ver := nextval('queen.kv_version_seq');
                UPDATE queen.kv x SET version = v_ver, expires_at = v_now + p_ttl_s[i] * 1000000, updated_at = v_now
                 WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks' AND x.key = v_key;
                res[i] := json_build_object('renewed', true, 'slot', v_slot, 'token', v_ver,
                    'guard', queen.lock_guard(v_key, v_ver))::text;
            ELSIF p_kind[i] = 1 THEN
                res[i] := json_build_object('renewed', false, 'reason', 'lost',
                    'holders', queen.lock_holders(p_tenant, p_name[i], v_now))::text;
            ELSIF v_got THEN
                DELETE FROM queen.kv x WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks' AND x.key = v_key;
                res[i] := json_build_object('released', true, 'slot', v_slot)::text;
            ELSE
                res[i] := json_build_object('released', false, 'reason', 'lost')::text;
            END IF;
        WHEN 3 THEN
            res[i] := json_build_object('held', EXISTS (
                        SELECT 1 FROM json_array_elements(queen.lock_holders(p_tenant, p_name[i], v_now))),
                    'holders', queen.lock_holders(p_tenant, p_name[i], v_now))::text;
        ELSE
            RAISE EXCEPTION 'lock_ops_v1: unknown op kind %', p_kind[i] USING ERRCODE = '22023';
        END CASE;
    END LOOP;
    RETURN QUERY SELECT (g.i - 1)::int, res[g.i] FROM generate_series(1, n) AS g(i);
END
$$;
