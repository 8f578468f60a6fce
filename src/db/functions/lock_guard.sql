-- lock_guard: the KV op that holds while a permit is its holder's (lock_ops_v1): a required
-- check of the permit's row at its token, for a transaction's kv rider.
CREATE OR REPLACE FUNCTION queen.lock_guard(p_key text, p_token bigint) RETURNS json LANGUAGE sql IMMUTABLE AS
$$ SELECT json_build_object('op', 'check', 'ns', 'queen-locks', 'key', p_key, 'expect', p_token, 'required', true) $$;
