-- 010_kv — the per-tenant KV store: (tenant, namespace, key) → a JSON value stored as the text
-- the client sent (byte for byte), a version, and an optional expiry.
--
-- Versions come from one sequence, so every write of any key gets a number no earlier write of
-- any key had. A key that is deleted (or expires) and is created again therefore never shows a
-- version it had before: a holder that remembers "version 41" can never be fooled by a new row
-- that happens to count up to 41 again. That is what makes a version usable as a fence.
--
-- Lock order (docs/lock-order.md): the KV rows are space 0, the outermost. A batch locks every
-- key it touches, in (namespace, key) order under the "C" collation, before it writes anything.
-- (Until issue 10 this file also created functions; they moved to src/db/functions/, the one
-- edit a landed migration ever had: docs/storage.md, "Migrations and functions".)
CREATE SEQUENCE queen.kv_version_seq AS bigint;

CREATE TABLE queen.kv (
    tenant_id   uuid NOT NULL REFERENCES queen.tenants (id) ON DELETE CASCADE,
    namespace   text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    value       text NOT NULL,       -- the JSON text as sent
    version     bigint NOT NULL,     -- from kv_version_seq; 0 only on a row a batch is creating
    expires_at  bigint,              -- µs since the epoch on the database's clock; NULL = never
    updated_at  bigint NOT NULL,
    PRIMARY KEY (tenant_id, namespace, key)
) WITH (fillfactor = 70);
-- the reclaim job walks expired rows oldest first
CREATE INDEX kv_expires_at ON queen.kv (expires_at) WHERE expires_at IS NOT NULL;
