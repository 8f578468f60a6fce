-- partition_counts_v1 (a view): per-partition counts relative to queue mode ('__QUEUE_MODE__'):
--   total      = records stored (end - start)
--   completed  = records below the queue-mode cursor (acked or dead-lettered)
--   processing = records from the cursor to the end of a live queue-mode lease
--   pending    = the rest
CREATE OR REPLACE VIEW queen.partition_counts_v1 AS
    SELECT p.id AS partition_id, p.queue_id, p.uuid, p.name, p.start_offset, p.next_offset, p.last_ts,
           (extract(epoch FROM p.created_at) * 1000000)::bigint AS created_us,
           p.next_offset - p.start_offset AS total,
           e.done - p.start_offset AS completed,
           e.live_end - e.done AS processing,
           p.next_offset - e.live_end AS pending,
           c.partition_id IS NOT NULL AS has_queue_cursor,
           c.total_consumed AS queue_consumed,
           CASE WHEN e.live_end > e.done THEN c.lease_expires_at END AS lease_expires_at
    FROM queen.partitions p
    LEFT JOIN queen.cursors c ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    CROSS JOIN LATERAL (SELECT least(greatest(coalesce(c.next_offset, p.start_offset), p.start_offset),
                                     p.next_offset) AS done) d
    CROSS JOIN LATERAL (SELECT d.done,
                               CASE WHEN c.lease_expires_at >= queen.now_us()
                                    THEN least(greatest(c.lease_end, d.done), p.next_offset)
                                    ELSE d.done END AS live_end) e;
