-- streams_state_get_v1: the state rows of one (query, source partition) shard, ordered by key
-- (byte order). Filters, all ANDed: p_keys (empty or NULL = every key), p_prefix (a literal
-- prefix: compared with left(), so % and _ are plain characters), p_ripe (rows whose
-- value->'windowEnd' is a number at or before it, epoch ms). Only the tenant's queries are read:
-- another tenant's query id gives no rows. Writes nothing; it takes the shard's advisory lock
-- shared (docs/lock-order.md, space 1s) and reads after it, so a cycle or flush in flight on the
-- shard has committed before the read or starts after it: a close the read did not see has a
-- tombstone stamped after the read, hence after the claim of the lease of the batch the runner
-- folds, and the fence of streams_cycle_v1 refuses that batch's upsert of the key.
CREATE OR REPLACE FUNCTION queen.streams_state_get_v1(p_tenant uuid, p_query uuid, p_partition uuid, p_keys text[],
                                                      p_prefix text, p_ripe numeric)
RETURNS TABLE (key text, value text, updated_at bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_p uuid := queen.partition_uuid_v1(p_partition);  -- NULL: a framed pop's id of no partition
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended(
        'queen.streams:' || p_query::text || ':' || coalesce(v_p, p_partition)::text, 0));
    -- a new statement: a snapshot taken after the lock
    RETURN QUERY SELECT s.key, s.value::text, (extract(epoch FROM s.updated_at) * 1000000)::bigint
      FROM queen.stream_state s
      JOIN queen.stream_queries q ON q.id = s.query_id AND q.tenant_id = p_tenant
     WHERE s.query_id = p_query AND s.partition_uuid = v_p
       AND (coalesce(cardinality(p_keys), 0) = 0 OR s.key = ANY (p_keys))
       AND (p_prefix IS NULL OR left(s.key, char_length(p_prefix)) = p_prefix)
       AND (p_ripe IS NULL OR (jsonb_typeof(s.value->'windowEnd') = 'number'
                               AND (s.value->>'windowEnd')::numeric <= p_ripe))
     ORDER BY s.key;
END
$$;
