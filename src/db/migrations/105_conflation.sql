-- 105_conflation — a consumer group's delivery policy per queue (docs/consume.md,
-- "Conflation"): conflation = last-value delivery, a pop of a partition delivers only its
-- newest visible record and retires the ones behind it. Stored the first time the group pops
-- the queue (from what that pop declares, `conflation=true` or not) and never changed by a
-- later pop: the stored value wins, a pop declaring the other one is answered with
-- `conflationConflict: true`. Forgotten with the group's metadata (DELETE
-- /api/v1/consumer-groups/:group?deleteMetadata=true) or with the queue.
CREATE TABLE queen.group_policies (
    queue_id        bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    consumer_group  text NOT NULL,
    conflation      boolean NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, consumer_group)
);
-- the groups that already consume a queue registered before policies existed: they deliver
-- every record, so that is their stored policy (a later conflating pop is a conflict, not a
-- silent change of what every consumer of the group gets)
INSERT INTO queen.group_policies (queue_id, consumer_group, conflation)
SELECT DISTINCT c.queue_id, c.consumer_group, false FROM queen.cursors c WHERE c.consumer_group <> '__QUEUE_MODE__'
UNION
SELECT s.queue_id, s.consumer_group, false FROM queen.subscriptions s WHERE s.consumer_group <> '__QUEUE_MODE__'
ON CONFLICT DO NOTHING;
-- records a conflating pop retired without delivering them (skipped behind the newest)
ALTER TABLE queen.cursors ADD COLUMN conflated bigint NOT NULL DEFAULT 0;
