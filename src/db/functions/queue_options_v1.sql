-- queue_options_v1: a queue's effective options, its stored ones over the defaults. The defaults
-- are the option table of src/queue/options.c, which every node writes into queen.option_defaults
-- at boot (src/db/migrate.c); the SQL has no default of its own, so a queue created by its first
-- push (stored options '{}') and one configured with no options behave the same, and an option
-- added later applies its default to queues stored before it. Every function reads options
-- through this one.
-- PL/pgSQL rather than SQL: its statement's plan is kept for the session (about 7 µs a call; a
-- SQL function that is not inlined, and one with a subquery is not, is planned again at every
-- execution of the statement calling it, about 26 µs), and it can refuse to answer without
-- defaults instead of returning NULL.
CREATE OR REPLACE FUNCTION queen.queue_options_v1(p_stored jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    v_defaults jsonb;
BEGIN
    SELECT d.options INTO v_defaults FROM queen.option_defaults d;
    IF v_defaults IS NULL THEN
        RAISE EXCEPTION 'queen.option_defaults is empty: a node writes it at boot' USING ERRCODE = 'QO001';
    END IF;
    RETURN v_defaults || coalesce(p_stored, '{}'::jsonb);
END
$$;
