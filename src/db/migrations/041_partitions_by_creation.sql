-- 041: partitions of a queue in creation order. POST /api/v1/partitions/changed pages a
-- queue's partitions by id (the 2.x client's "in the order they were created"; the cursor is
-- the last id of a page), so partitions created while a reader pages land on a later page of
-- the same pass instead of before its cursor. Without this index that page is a scan of the
-- queue's partitions and a sort.
CREATE INDEX partitions_queue_created ON queen.partitions (queue_id, id);
