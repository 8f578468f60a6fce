-- 045_timer_keys — timers keyed by (queue, timerKey), as the 2.x wire names them
-- (docs/timers.md). A schedule is an upsert on the key, a cancel deletes by the key, the list
-- pages a queue's keys in byte order: the unique index below serves all three (its collation
-- is "C", so the keyset order is the bytes' order and the index serves it).
-- Timers stored before this migration had only their server id: their key is that id's text.
-- A node of the previous build that inserts during a rolling upgrade names no key: the
-- default gives its timer a random one (it still has its id for that build's routes).
-- attempts counts the firing rounds that took the timer and could not deliver it (a full
-- queue, a payload waiting to be sealed); a reschedule sets it back to 0.
ALTER TABLE queen.log_timers ADD COLUMN timer_key text COLLATE "C";
UPDATE queen.log_timers SET timer_key = id::text;
ALTER TABLE queen.log_timers ALTER COLUMN timer_key SET DEFAULT gen_random_uuid()::text,
    ALTER COLUMN timer_key SET NOT NULL;
ALTER TABLE queen.log_timers ADD COLUMN attempts integer NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX log_timers_key ON queen.log_timers (tenant_id, queue, timer_key);
-- the listings by server id are retired with their routes (docs/http-api.md, "Retired routes")
DROP INDEX queen.log_timers_queue;
DROP INDEX queen.log_timers_tenant;
