-- 095_stream_fence — what the cycle needs to fence the last double emit and to tell a window
-- re-created after a seek back from a retried flush (docs/streams.md, "No double emit").
--
-- queen.stream_tombstones: the last close (delete) of each state key of a (query, partition)
-- shard, with the database clock at the close (µs, taken under the shard lock) and the lease
-- of the cycle that closed it (NULL: an ack-less flush). A cycle with an ack may not upsert a
-- key closed by someone else after its lease was claimed: it may have read the row before that
-- close and would re-create the window with records already emitted. A cycle drops the
-- tombstones of its shard older than its lease's claim (no live lease can be older).
--
-- stream_state.created_us: when the row was inserted (an update keeps it): the identity of
-- one incarnation of a window. A flush whose derived sink ids were all found written but whose
-- rows are there is closing a later incarnation with the same result (a seek back replayed
-- the source): its ids are derived again with the incarnations, and it emits.
CREATE TABLE queen.stream_tombstones (
    query_id       uuid NOT NULL REFERENCES queen.stream_queries (id) ON DELETE CASCADE,
    partition_uuid uuid NOT NULL,
    key            text COLLATE "C" NOT NULL,
    closed_us      bigint NOT NULL,
    lease_id       uuid,
    PRIMARY KEY (query_id, partition_uuid, key)
);

ALTER TABLE queen.stream_state ADD COLUMN created_us bigint NOT NULL DEFAULT 0;
