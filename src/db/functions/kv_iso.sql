-- kv_iso: a µs stamp as the 2.x wire writes instants (ISO 8601, UTC, microseconds:
-- 2026-12-02T01:53:56.123456Z, as format_iso_us in src/core/timeutil.c); NULL stays NULL.
CREATE OR REPLACE FUNCTION queen.kv_iso(p_us bigint) RETURNS text LANGUAGE sql STABLE AS
$$ SELECT to_char((timestamp '1970-01-01 00:00:00' + p_us * interval '1 microsecond'),
                  'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;
