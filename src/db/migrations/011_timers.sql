-- 011_timers — pushes scheduled for a later time, fired exactly once by whichever node gets
-- there first.
--
-- A timer row carries its record already encoded (src/storage/record.h, without the segment's
-- version byte), made by the node that accepted it, so firing needs no C at all: the firing
-- transaction concatenates the records of one partition behind the version byte and hands the
-- segments to queen.push_v1, the same function POST /api/v1/push commits through. Locking the
-- due rows, pushing their records and deleting the rows happen in one transaction: a node that
-- dies mid-fire rolls all of it back and another node fires the same timers later.
--
-- Lock order (docs/lock-order.md): timer rows are space 1, after the KV store (space 0) and
-- before everything push_v1 takes. The firing round takes them with SKIP LOCKED, so it never
-- waits for another node's round.
-- (Until issue 10 this file also created functions; they moved to src/db/functions/, the one
-- edit a landed migration ever had: docs/storage.md, "Migrations and functions".)
CREATE TABLE queen.log_timers (
    id             uuid PRIMARY KEY,          -- UUIDv7 made by the accepting node
    tenant_id      uuid NOT NULL REFERENCES queen.tenants (id) ON DELETE CASCADE,
    queue          text NOT NULL,
    partition      text NOT NULL,
    fire_at        bigint NOT NULL,           -- µs since the epoch, on the database's clock
    txn_id         text NOT NULL,             -- the record's transactionId (also inside record)
    txn_producer   boolean NOT NULL,          -- given by the producer: deduplicated when fired
    trace_id       uuid,
    payload_bytes  integer NOT NULL,
    record         bytea NOT NULL,            -- one encoded record
    created_at     bigint NOT NULL
);
CREATE INDEX log_timers_due ON queen.log_timers (fire_at, id);
CREATE INDEX log_timers_tenant ON queen.log_timers (tenant_id, id);
CREATE INDEX log_timers_queue ON queen.log_timers (tenant_id, queue, id);
