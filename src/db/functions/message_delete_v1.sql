-- message_delete_v1: deletes the record at p_off of a partition (DELETE /api/v1/messages).
-- The segment is rewritten with the record's flags set to deleted (0x20, see
-- src/storage/record.h): its trace, producer and payload dropped, its transactionId kept, every
-- other record byte for byte. Readers skip it; a pop leases its slot as done already, so a
-- consumer walks past it; no cursor moves here. Its dead letters go too, and its dedup row (the
-- transactionId may be pushed again). Locks: the dedup row (space 5), the segment row (6), the
-- dead letters (8). A codec-1 segment (producer zstd frames, first byte 2) cannot be marked
-- record by record: the node re-encodes it as codec 0 first (src/api/api_messages.c); meeting
-- one here raises QC001 and deletes nothing. Returns whether anything was deleted (false: no live record at that offset
-- and no dead letter of it).
CREATE OR REPLACE FUNCTION queen.message_delete_v1(p_tenant uuid, p_part uuid, p_off bigint, p_txn text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_pid     bigint;
    v_last    bigint;
    v_base    bigint;
    v_data    bytea;
    pos       integer := 1;
    start     integer;
    txn_end   integer;
    flags     integer;
    v_plen    bigint;
    v         record;
    v_deleted boolean := false;
BEGIN
    SELECT p.id INTO v_pid FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE p.uuid = p_part AND q.tenant_id = p_tenant;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM queen.dedup x WHERE x.partition_id = v_pid AND x.txn_id = p_txn AND x.off = p_off;
    SELECT s.last_offset, s.base_offset, s.data INTO v_last, v_base, v_data
      FROM queen.segments s WHERE s.partition_id = v_pid AND s.last_offset >= p_off AND s.base_offset <= p_off
       FOR UPDATE;
    IF FOUND AND get_byte(v_data, 0) = 2 THEN
        RAISE EXCEPTION 'message_delete_v1: the segment holding offset % is codec 1', p_off USING ERRCODE = 'QC001';
    END IF;
    IF FOUND THEN
        FOR k IN 0 .. (p_off - v_base) LOOP
            start := pos;
            flags := get_byte(v_data, pos);
            pos := pos + 1;
            IF flags & 1 = 1 THEN
                pos := pos + 16;
            ELSE
                v := queen.varint_v1(v_data, pos);
                pos := v.next + v.val::integer;
            END IF;
            txn_end := pos;
            IF flags & 2 = 2 THEN
                pos := pos + 16;
            END IF;
            IF flags & 4 = 4 THEN
                v := queen.varint_v1(v_data, pos);
                pos := v.next + v.val::integer;
            END IF;
            v := queen.varint_v1(v_data, pos);
            v_plen := v.val;
            pos := v.next + v.val::integer;
        END LOOP;
        IF flags & 32 = 0 THEN
            UPDATE queen.segments s
               SET data = substring(v_data FROM 1 FOR start)
                          || set_byte('\x00'::bytea, 0, 32 | (flags & 17))
                          || substring(v_data FROM start + 2 FOR txn_end - start - 1)
                          || '\x00'::bytea
                          || substring(v_data FROM pos + 1),
                   payload_bytes = greatest(s.payload_bytes - v_plen, 0)
             WHERE s.partition_id = v_pid AND s.last_offset = v_last;
            v_deleted := true;
        END IF;
    END IF;
    DELETE FROM queen.dead_letters d WHERE d.partition_id = v_pid AND d.off = p_off;
    RETURN v_deleted OR FOUND;
END
$$;
