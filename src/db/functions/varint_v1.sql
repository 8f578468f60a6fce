-- varint_v1: reads a LEB128 varint from a bytea at 0-based position p_pos.
CREATE OR REPLACE FUNCTION queen.varint_v1(p_data bytea, p_pos integer, OUT val bigint, OUT next integer)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    b integer;
    shift integer := 0;
BEGIN
    val := 0;
    next := p_pos;
    LOOP
        b := get_byte(p_data, next);
        next := next + 1;
        val := val | ((b & 127)::bigint << shift);
        EXIT WHEN b < 128;
        shift := shift + 7;
    END LOOP;
END
$$;
