-- partition_start_v1: moves start_offset of each partition to its first remaining record (its end when none
-- remains). Rows are updated one at a time in id order: the order push locks them in.
CREATE OR REPLACE FUNCTION queen.partition_start_v1(p_parts bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    FOR v_id IN SELECT DISTINCT u FROM unnest(p_parts) AS u ORDER BY 1 LOOP
        UPDATE queen.partitions p
           SET start_offset = coalesce((SELECT s.base_offset FROM queen.segments s WHERE s.partition_id = p.id
                                         ORDER BY s.last_offset LIMIT 1), p.next_offset)
         WHERE p.id = v_id;
    END LOOP;
END
$$;
