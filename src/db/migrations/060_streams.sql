-- 060_streams — streaming queries (docs/streams.md): the registered queries and their state
-- rows, keyed by (query, source partition, key). A state row lives in the same PostgreSQL as
-- the log, so a cycle commits its state writes, its sink pushes and its source ack in one
-- transaction (queen.streams_cycle_v1).
--
-- The partition is the source partition's uuid (the API's partitionId) with no foreign key,
-- as in the earlier release: a state row outlives nothing by accident, because maintenance
-- (partition_cleanup_v1) never deletes a partition a state row names, and retention never
-- touches these tables. State is reclaimed by a closed window deleting its row, by dropping
-- the query (the cascade) or by registering it again with reset.
CREATE TABLE queen.stream_queries (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES queen.tenants (id) ON DELETE CASCADE,
    name          text NOT NULL,
    source_queue  text NOT NULL,
    sink_queue    text,
    config_hash   text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

CREATE TABLE queen.stream_state (
    query_id       uuid NOT NULL REFERENCES queen.stream_queries (id) ON DELETE CASCADE,
    partition_uuid uuid NOT NULL,
    key            text COLLATE "C" NOT NULL,
    value          jsonb NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (query_id, partition_uuid, key)
);
CREATE INDEX stream_state_partition ON queen.stream_state (partition_uuid);

-- The partitions each query has committed cycles on, with the last one: the idle-flush sweep
-- (state/get "touched_within_ms") and the query's read route.
CREATE TABLE queen.stream_partitions (
    query_id       uuid NOT NULL REFERENCES queen.stream_queries (id) ON DELETE CASCADE,
    partition_uuid uuid NOT NULL,
    last_cycle_at  bigint NOT NULL,       -- µs, the database's clock
    cycles         bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (query_id, partition_uuid)
);
