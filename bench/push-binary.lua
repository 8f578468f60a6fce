-- wrk script: POST /api/v1/push with the QPB1 body in BODY_FILE (made by bench/qpb_body.py),
-- BATCH messages per request. Prints one RESULT line (parsed by bench/run.sh) when done.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
local body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.path = "/api/v1/push"
wrk.body = body
wrk.headers["Content-Type"] = "application/x-queen-push"

done = function(summary, latency, requests)
  local e = summary.errors
  io.stderr:write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
