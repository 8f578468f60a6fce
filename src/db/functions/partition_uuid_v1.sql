-- partition_uuid_v1: the partition uuid an API partitionId names. A uuid is itself; the uuid
-- 00000000-0000-0000-<16 hex digits> is how the API passes a framed pop's u64 partition id
-- (api_partition_ref, src/api/api_common.c; docs/http-api.md, "The framed answer"), and names
-- the partition with that id (NULL when none). Used where a statement joins queen.partitions on
-- the uuid: the join stays an index lookup either way.
CREATE OR REPLACE FUNCTION queen.partition_uuid_v1(p uuid) RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN substring(uuid_send(p) FROM 1 FOR 8) <> '\x0000000000000000'::bytea THEN p
                ELSE (SELECT x.uuid FROM queen.partitions x
                       WHERE x.id = ('x' || encode(substring(uuid_send(p) FROM 9), 'hex'))::bit(64)::bigint) END
$$;
