-- queue_options_v1: a queue's effective options, its stored ones over the defaults. The defaults
-- are the option table of src/queue/options.c, which every node writes into queen.option_defaults
-- at boot (src/db/migrate.c); the SQL has no default of its own, so a queue created by its first
-- push (stored options '{}') and one configured with no options behave the same, and an option
-- added later applies its default to queues stored before it. Every function reads options
-- through this one.
CREATE OR REPLACE FUNCTION queen.queue_options_v1(p_stored jsonb) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT (SELECT d.options FROM queen.option_defaults d) || coalesce(p_stored, '{}'::jsonb)
$$;
