-- Stored functions a later one superseded, dropped at every boot (src/db/migrate.c), before the
-- functions of src/db/functions/ are (re)created. A function whose meaning or signature changes
-- gets a new _vN name; the old one keeps its file for one release, so the nodes of the previous
-- build still find it during a rolling upgrade, and then moves here (docs/storage.md). Only
-- DROP FUNCTION IF EXISTS / DROP VIEW IF EXISTS lines, with the full signature.

-- lease_extend_v2 (015_tenancy) took over: v1 extended any tenant's lease (docs/auth.md).
DROP FUNCTION IF EXISTS queen.lease_extend_v1(uuid, integer);
-- timers_fire_v2 (014_encryption) took over: v1 fired plaintext timers of encrypted queues.
DROP FUNCTION IF EXISTS queen.timers_fire_v1(integer, bigint, bigint);
