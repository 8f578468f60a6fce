-- pop_ns_v1: pop_ns_v2 for a pop that declares no delivery policy, without the policy and
-- conflated-count rows (kinds 3 and 5), which the callers of pop_ns_v1 do not know. Kept for the nodes of the previous build
-- during a rolling upgrade (docs/storage.md, the _vN rule); rows as pop_ns_v2's.
CREATE OR REPLACE FUNCTION queen.pop_ns_v1(
    p_tenant uuid, p_namespace text, p_task text, p_group text, p_batch integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from bigint, p_max_partitions integer, p_lease_ids uuid[], p_lease_seconds integer)
RETURNS TABLE (kind integer, pid bigint, puuid uuid, pname text, a bigint, b bigint, c bigint,
               seg_ts bigint, seg_count integer, seg_data bytea, qname text)
LANGUAGE sql AS $$
    SELECT * FROM queen.pop_ns_v2(p_tenant, p_namespace, p_task, p_group, p_batch, p_auto_ack, p_sub_mode,
                                  p_sub_from, p_max_partitions, p_lease_ids, p_lease_seconds, false) x
     WHERE x.kind NOT IN (3, 5)
$$;
