-- 001_init — tenants, queues, the per-queue clock, partitions, segments, deduplication.
--
-- The log is stored as segments: one row per run of consecutive records of one partition
-- (the records one group commit wrote to it). Offsets are dense from 0 per partition; a
-- segment covers [base_offset, last_offset]. Every record of a segment carries the segment's
-- stamp `ts` (µs since the epoch, from the queue clock), so records are never re-stamped.
-- (Until issue 10 this file also created functions; they moved to src/db/functions/, the one
-- edit a landed migration ever had: docs/storage.md, "Migrations and functions".)
CREATE SCHEMA IF NOT EXISTS queen;

CREATE TABLE queen.tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'active',
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO queen.tenants (id, name) VALUES ('00000000-0000-0000-0000-000000000001', 'default');

CREATE TABLE queen.queues (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    tenant_id   uuid NOT NULL REFERENCES queen.tenants (id) ON DELETE CASCADE,
    name        text NOT NULL,
    namespace   text NOT NULL DEFAULT '',
    task        text NOT NULL DEFAULT '',
    options     jsonb NOT NULL DEFAULT '{}',
    configured  boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- The queue clock: last_ts is the newest stamp handed out for the queue. A push takes this
-- row's lock, stamps its records above last_ts and at or after the database's now, and
-- commits; so the committed value is a safeTime: every later commit is stamped above it.
CREATE TABLE queen.queue_clocks (
    queue_id    bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    last_ts     bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 50);

CREATE TABLE queen.partitions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid          uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    queue_id      bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name          text NOT NULL,
    start_offset  bigint NOT NULL DEFAULT 0,  -- first offset still stored (retention moves it)
    next_offset   bigint NOT NULL DEFAULT 0,  -- offset the next record gets
    last_ts       bigint NOT NULL DEFAULT 0,  -- stamp of the newest record
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
) WITH (fillfactor = 50);

CREATE TABLE queen.segments (
    partition_id   bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    last_offset    bigint NOT NULL,
    base_offset    bigint NOT NULL,
    ts             bigint NOT NULL,
    record_count   integer NOT NULL,
    payload_bytes  integer NOT NULL,
    data           bytea NOT NULL,
    PRIMARY KEY (partition_id, last_offset)
);
-- lz4 where the server has it: JSON compresses well and lz4 costs the server little CPU.
DO $$ BEGIN
    ALTER TABLE queen.segments ALTER COLUMN data SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
END $$;

-- Producer transactionIds seen within the dedup window, per partition.
CREATE TABLE queen.dedup (
    partition_id  bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    txn_id        text NOT NULL,
    off           bigint NOT NULL,
    ts            bigint NOT NULL,
    PRIMARY KEY (partition_id, txn_id)
);
CREATE INDEX dedup_ts ON queen.dedup (ts);
