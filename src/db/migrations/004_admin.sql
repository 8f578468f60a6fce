-- 004_admin — the indexes of the read-mostly admin surface (consumer-group lag, seeks, group and
-- queue deletion, per-partition counts, message browsing, dead-letter paging and requeue).
--
-- Every count here comes from offsets, so it is exact and needs no stats job: a partition
-- holds [start_offset, next_offset); a consumer group has done everything below its cursor's
-- next_offset. The time lag of a group on a partition is the age of the first record it has
-- not done, i.e. the stamp of the segment holding that offset.
-- (Until issue 10 this file also created functions; they moved to src/db/functions/, the one
-- edit a landed migration ever had: docs/storage.md, "Migrations and functions".)

-- Dead letters by position (message status, browsing) and newest first per tenant (paging).
CREATE INDEX dead_letters_offset ON queen.dead_letters (partition_id, off);
CREATE INDEX dead_letters_failed ON queen.dead_letters (failed_at DESC, id DESC);
