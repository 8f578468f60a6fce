-- record_at_v1: the encoded bytes of the record at offset p_off (see src/storage/record.h), with its stamp.
CREATE OR REPLACE FUNCTION queen.record_at_v1(p_pid bigint, p_off bigint, OUT ts bigint, OUT rec bytea)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_base bigint;
    v_data bytea;
    pos integer := 1;
    start integer;
    flags integer;
    v record;
BEGIN
    SELECT s.base_offset, s.ts, s.data INTO v_base, ts, v_data
      FROM queen.segments s WHERE s.partition_id = p_pid AND s.last_offset >= p_off AND s.base_offset <= p_off;
    IF NOT FOUND THEN
        RETURN;
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
