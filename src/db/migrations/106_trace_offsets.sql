-- 106_trace_offsets — the offset of the record a trace names (docs/http-api.md, "Traces"): a
-- trace is now stored only for a record that exists (POST /api/v1/traces checks), so its offset
-- is known, and the by-name read answers the record's payload (`message_payload`) from it.
-- NULL for the traces stored before (their payload reads as null).
ALTER TABLE queen.message_traces ADD COLUMN off bigint;
