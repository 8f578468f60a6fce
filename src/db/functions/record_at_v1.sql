-- record_at_v1: the encoded bytes of the record at offset p_off (see src/storage/record.h), with its stamp.
-- In a codec-1 segment (first byte 2) the record may sit inside a producer's zstd frame, which SQL
-- cannot inflate: then rec is a reference, 0x40 (REC_ZREF) | varint index in the chunk | the
-- chunk as stored, which admin_record_decode (src/admin/admin.c) reads back as the record.
CREATE OR REPLACE FUNCTION queen.record_at_v1(p_pid bigint, p_off bigint, OUT ts bigint, OUT rec bytea)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_base bigint;
    v_data bytea;
    pos integer := 1;
    start integer;
    flags integer;
    v record;
    kind integer;
    cnt bigint;
    body integer;
    idx bigint;
    enc bytea := ''::bytea;
BEGIN
    SELECT s.base_offset, s.ts, s.data INTO v_base, ts, v_data
      FROM queen.segments s WHERE s.partition_id = p_pid AND s.last_offset >= p_off AND s.base_offset <= p_off;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF get_byte(v_data, 0) = 2 THEN
        -- codec 1: find the chunk (kind | count | [producer] | len | body) that holds p_off
        LOOP
            start := pos;
            kind := get_byte(v_data, pos);
            v := queen.varint_v1(v_data, pos + 1);
            cnt := v.val;
            pos := v.next;
            IF kind >= 1 THEN
                v := queen.varint_v1(v_data, pos);
                pos := v.next + v.val::integer;
            END IF;
            v := queen.varint_v1(v_data, pos);
            body := v.next;
            pos := v.next + v.val::integer;
            EXIT WHEN p_off < v_base + cnt;
            v_base := v_base + cnt;
        END LOOP;
        IF kind >= 1 THEN
            idx := p_off - v_base;
            LOOP
                IF idx < 128 THEN
                    enc := enc || set_byte('\x00'::bytea, 0, idx::integer);
                    EXIT;
                END IF;
                enc := enc || set_byte('\x00'::bytea, 0, ((idx & 127) | 128)::integer);
                idx := idx >> 7;
            END LOOP;
            rec := '\x40'::bytea || enc || substring(v_data FROM start + 1 FOR pos - start);
            RETURN;
        END IF;
        pos := body; -- a chunk of our records: walked as in codec 0, from its first record
    END IF;
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
        IF flags & 2 = 2 THEN
            pos := pos + 16;
        END IF;
        IF flags & 4 = 4 THEN
            v := queen.varint_v1(v_data, pos);
            pos := v.next + v.val::integer;
        END IF;
        v := queen.varint_v1(v_data, pos);
        pos := v.next + v.val::integer;
    END LOOP;
    rec := substring(v_data FROM start + 1 FOR pos - start);
END
$$;
