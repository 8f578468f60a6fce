-- lock_holders: the live permits of a lock or semaphore (lock_ops_v1), by slot:
-- [{slot, owner, token, since, expiresAt, renewedAt}]. Names hold no '#', so `<name>#` is
-- exactly the lock's own slots: the range `<name>#` .. `<name>$` of the "C"-ordered keys, which
-- the index bounds (the LIKE, whose pattern is no constant, bounds nothing on its own).
-- PL/pgSQL, not SQL: a SQL function called from lock_ops_v1's expressions was planned again at
-- every call; a PL/pgSQL body keeps its plan for the session.
-- plan_cache_mode: every statement here is a primary-key lookup, so its generic plan is the
-- plan; without the setting PL/pgSQL re-planned them at every call (the generic plan's row
-- estimate for an array parameter's unnest looked dearer than a custom plan's), and planning
-- was most of the call's time (docs/kv.md, "Cost").
CREATE OR REPLACE FUNCTION queen.lock_holders(p_tenant uuid, p_name text, p_now bigint) RETURNS json
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS
$$ BEGIN RETURN (SELECT coalesce(json_agg(json_build_object(
              'slot', h.slot, 'owner', h.v ->> 'owner', 'token', h.version, 'since', h.v ->> 'since',
              'expiresAt', queen.kv_iso(h.expires_at), 'renewedAt', queen.kv_iso(h.updated_at)) ORDER BY h.slot), '[]'::json)
     FROM (SELECT queen.lock_slot(p_name, x.key) AS slot, queen.kv_jsonb(x.value) AS v, x.version, x.expires_at,
                  x.updated_at
             FROM queen.kv x
            WHERE x.tenant_id = p_tenant AND x.namespace = 'queen-locks'
              AND x.key >= p_name || '#' AND x.key < p_name || '$'
              AND x.key LIKE replace(replace(replace(p_name, '\', '\\'), '%', '\%'), '_', '\_') || '#%'
              AND x.version > 0 AND (x.expires_at IS NULL OR x.expires_at > p_now)
              AND queen.lock_slot(p_name, x.key) IS NOT NULL) h); END $$;
