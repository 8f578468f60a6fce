-- 030_option_defaults — the one home of the queue option defaults, as the database sees them.
--
-- The defaults are src/queue/options.c's option table: every node writes it here at boot, in
-- the transaction that (re)creates the stored functions (src/db/migrate.c), and the functions
-- read a queue's options through queen.queue_options_v1 (stored options over these). So a
-- queue created by its first push, whose stored options are '{}', behaves as one configured
-- with no options, and the SQL carries no default of its own. One row.
CREATE TABLE queen.option_defaults (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    options  jsonb NOT NULL
);
