-- kv_ops_v1: one batch of the 2.x KV wire (POST /api/v1/kv, the transaction's kv rider), in
-- the caller's transaction. docs/kv.md, "The 2.x batch". One element per op in every array:
--   p_kind      0 get, 1 put, 2 putIfAbsent, 3 delete, 4 incr, 5 check, 6 getMany, 7 getPrefix
--   p_ns        the namespace
--   p_key       the key (getPrefix: the prefix; getMany: NULL, its keys are p_many_key)
--   p_value     put, putIfAbsent: the JSON text as sent
--   p_expect    NULL none; 0 the key must not be live; N > 0 the key must be live at version N
--   p_required  a lost precondition rolls back the whole batch
--   p_ttl_s     put, putIfAbsent, incr: seconds to live (NULL = forever; incr: create-only)
--   p_delta, p_min, p_max   incr
--   p_after, p_limit, p_keys_only   getPrefix
--   p_many_op, p_many_key   getMany's keys, flattened: p_many_op names the op (from 1)
-- Every key a write or check names is locked first, in (namespace, key) order under the "C"
-- collation (lock space 0, docs/lock-order.md): an existing row FOR UPDATE, an absent one by a
-- placeholder row at version 0 that only this transaction sees. Absent = no row, version 0, or
-- expired. Then the ops run in request order against the table, so a read sees the writes
-- before it. Placeholders and deleted keys are removed at the end.
-- A failed op whose p_required is set rolls back everything this call wrote (a subtransaction);
-- then with p_raise the call raises SQLSTATE QK001 (the caller's transaction is lost: the
-- transaction rider), message 'kv_ops_v1: op <i from 1>: <reason>', detail the failed op's
-- verdict JSON (without its value past 3800 bytes: valueOmitted); without p_raise it returns one row, o_index = -(i), o_result the verdict.
-- Otherwise one row per op: o_index from 0, o_result the op's result object (JSON text).
-- plan_cache_mode: every statement here is a primary-key lookup, so its generic plan is the
-- plan; without the setting PL/pgSQL re-planned them at every call (the generic plan's row
-- estimate for an array parameter's unnest looked dearer than a custom plan's), and planning
-- was most of the call's time (docs/kv.md, "Cost").
CREATE OR REPLACE FUNCTION queen.kv_ops_v1(
    p_tenant uuid, p_raise boolean, p_kind int[], p_ns text[], p_key text[], p_value text[], p_expect bigint[],
    p_required boolean[], p_ttl_s bigint[], p_delta bigint[], p_min bigint[], p_max bigint[], p_after text[],
    p_limit int[], p_keys_only boolean[], p_many_op int[], p_many_key text[])
RETURNS TABLE (o_index int, o_result text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_msg text;
    v_det text;
    v_ttl_ms bigint[] := ARRAY(SELECT u.t * 1000 FROM unnest(p_ttl_s) WITH ORDINALITY AS u(t, o) ORDER BY u.o);
BEGIN
    -- the body is queen.kv_ops_apply_v1. A subtransaction is paid for only where a lost required
    -- op must be answered instead of raised: without p_raise, and with an op that is required
    IF p_raise OR NOT (true = ANY (p_required)) THEN
        RETURN QUERY SELECT * FROM queen.kv_ops_apply_v1(p_tenant, p_raise, p_kind, p_ns, p_key, p_value, p_expect,
            p_required, v_ttl_ms, p_delta, p_min, p_max, p_after, p_limit, p_keys_only, p_many_op, p_many_key);
        RETURN;
    END IF;
    BEGIN
        RETURN QUERY SELECT * FROM queen.kv_ops_apply_v1(p_tenant, p_raise, p_kind, p_ns, p_key, p_value, p_expect,
            p_required, v_ttl_ms, p_delta, p_min, p_max, p_after, p_limit, p_keys_only, p_many_op, p_many_key);
    EXCEPTION WHEN SQLSTATE 'QK001' THEN
        -- everything the call wrote is rolled back with the block
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT, v_det = PG_EXCEPTION_DETAIL;
        RETURN QUERY SELECT -(substring(v_msg FROM '^kv_ops_v1: op ([0-9]+):')::int), v_det;
    END;
END
$$;
