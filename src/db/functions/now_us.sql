-- now_us: the database's clock in µs since the epoch, the unit of every stamp and expiry.
CREATE OR REPLACE FUNCTION queen.now_us() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;
