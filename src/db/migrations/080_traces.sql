-- 080_traces — message traces (POST /api/v1/traces, docs/http-api.md "Traces"): events a
-- consumer attaches to a record it handles, read back per record, per trace name, and as the
-- list of names. `data` is the JSON text exactly as the client sent it (text, not jsonb, so
-- key order, duplicates, number spelling and escapes are kept byte for byte). The record is
-- named by its partition and its transactionId (or message id) as the client knows it; the
-- broker does not look the record up in its segments. A trace goes with its partition
-- (ON DELETE CASCADE: queue or partition deletion, partition cleanup). log_end is the
-- partition's next_offset when the trace was stored: the record it names is below it, so once
-- retention has moved the partition's start_offset to log_end or past it, the record is gone
-- and queen.trace_gc_v1 deletes the trace.
CREATE TABLE queen.message_traces (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq             bigint GENERATED ALWAYS AS IDENTITY,
    partition_id    bigint NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
    transaction_id  text NOT NULL,
    consumer_group  text NOT NULL,
    event_type      text NOT NULL,
    trace_names     text[] NOT NULL DEFAULT '{}',
    data            text NOT NULL,
    worker_id       text,
    log_end         bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX message_traces_record ON queen.message_traces (partition_id, transaction_id, seq);
CREATE INDEX message_traces_names ON queen.message_traces USING gin (trace_names);
CREATE INDEX message_traces_gc ON queen.message_traces (partition_id, log_end);
