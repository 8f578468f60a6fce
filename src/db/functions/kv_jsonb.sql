-- kv_jsonb: a stored KV value (JSON text, kept as sent: docs/kv.md) as jsonb, or NULL when the
-- text holds the escape \u0000, which jsonb cannot hold (the cast would fail the statement:
-- 22P05). The escape is there when an odd run of backslashes precedes "u0000" (JSON has
-- backslashes only inside strings, each escape starting with one). Only the lock rows read
-- values as jsonb; a value the KV API stored with a NUL is then no permit (no owner, no since).
CREATE OR REPLACE FUNCTION queen.kv_jsonb(p_value text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN p_value ~ '(^|[^\\])(\\\\)*\\u0000' THEN NULL ELSE p_value::jsonb END $$;
