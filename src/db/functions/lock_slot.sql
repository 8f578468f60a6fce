-- lock_slot: the slot of permit key p_key of lock p_name (`<name>#<slot>`, lock_ops_v1), or NULL
-- when the rest of the key is no slot: the KV API can write any key into queen-locks
-- (`<name>#x`, `<name>#`, `<name>#007`, a number past int), and such a row is no permit —
-- casting its suffix to int failed the whole lock call (22P02, 22003).
CREATE OR REPLACE FUNCTION queen.lock_slot(p_name text, p_key text) RETURNS int LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN substr(p_key, length(p_name) + 2) ~ '^(0|[1-9][0-9]{0,8})$'
               THEN substr(p_key, length(p_name) + 2)::int END $$;
