-- 003_consume — consumer groups over dense offsets: cursors with leases, subscriptions,
-- dead letters.
--
-- A cursor is one row per (partition, consumer group): next_offset is the first record the
-- group has not finished (everything below is acked or dead-lettered). A pop leases the run
-- [lease_start, lease_end) to one consumer until lease_expires_at; acks mark records of the
-- lease done and the cursor advances over the done prefix. Queue mode is the reserved group
-- '__QUEUE_MODE__'.
-- (Until issue 10 this file also created functions; they moved to src/db/functions/, the one
-- edit a landed migration ever had: docs/storage.md, "Migrations and functions".)
CREATE TABLE queen.cursors (
    partition_id      bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    consumer_group    text NOT NULL,
    queue_id          bigint NOT NULL,
    next_offset       bigint NOT NULL,
    lease_id          uuid,
    lease_expires_at  bigint,            -- µs; NULL = no lease
    lease_start       bigint,
    lease_end         bigint,            -- exclusive
    lease_txns        text[],            -- transactionIds of lease_start .. lease_end-1
    lease_done        boolean[],
    lease_failed      boolean NOT NULL DEFAULT false, -- this delivery already counted a failure
    retry_count       integer NOT NULL DEFAULT 0,     -- failed deliveries of the batch at next_offset
    total_consumed    bigint NOT NULL DEFAULT 0,
    last_consumed_at  timestamptz,
    claimed_at        bigint NOT NULL DEFAULT 0,      -- µs of the last claim: least recent first
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, consumer_group)
) WITH (fillfactor = 50);
CREATE INDEX cursors_queue_group ON queen.cursors (queue_id, consumer_group);
CREATE INDEX cursors_lease ON queen.cursors (lease_id) WHERE lease_id IS NOT NULL;

-- Where a consumer group starts on a partition it has no cursor for yet. No row = from the
-- beginning of the log.
CREATE TABLE queen.subscriptions (
    queue_id        bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    consumer_group  text NOT NULL,
    mode            text NOT NULL,         -- 'new' or 'timestamp'
    start_ts        bigint NOT NULL,       -- µs: records stamped before it are skipped
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, consumer_group)
);

-- A dead letter keeps its own copy of the record, so it outlives the log's retention.
CREATE TABLE queen.dead_letters (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue_id        bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    partition_id    bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    consumer_group  text NOT NULL,
    off             bigint NOT NULL,
    txn_id          text NOT NULL,
    ts              bigint NOT NULL,
    error           text,
    retry_count     integer NOT NULL DEFAULT 0,
    record          bytea,
    failed_at       timestamptz NOT NULL DEFAULT now(),
    requeued_at     timestamptz
);
CREATE INDEX dead_letters_queue ON queen.dead_letters (queue_id, failed_at DESC);
CREATE INDEX dead_letters_partition ON queen.dead_letters (partition_id, txn_id);

CREATE INDEX segments_ts ON queen.segments (partition_id, ts);
