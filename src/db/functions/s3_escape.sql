-- s3_escape: a name percent-encoded outside A-Z a-z 0-9 . _ - (uppercase hex, byte by byte
-- of its UTF-8), the way the sink spells a queue in its KV keys and object keys.
CREATE OR REPLACE FUNCTION queen.s3_escape(p text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    b   bytea := convert_to(p, 'UTF8');
    out text := '';
    c   integer;
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        c := get_byte(b, i);
        IF (c BETWEEN 48 AND 57) OR (c BETWEEN 65 AND 90) OR (c BETWEEN 97 AND 122) OR c IN (45, 46, 95) THEN
            out := out || chr(c);
        ELSE
            out := out || '%' || upper(lpad(to_hex(c), 2, '0'));
        END IF;
    END LOOP;
    RETURN out;
END
$$;
