-- wrk script: a lock loop on POST /api/v1/locks. Run with as many threads as connections
-- (-tN -cN): each thread owns one connection and one lock (bench-<RUN>-<thread>) and cycles
-- acquire (ttlSeconds 30) → renew (with the token the acquire answered) → release (with the
-- renewed token). A verdict that did not hold (acquired/renewed/released false) starts the
-- cycle again with an acquire. One op per request. Prints one RESULT line (bench/run.sh).
local run = os.getenv("RUN") or "r"
local thread_id = 0
local phase = 0
local token = nil
local name = nil

setup = function(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end

init = function(args)
  name = string.format("bench-%s-%d", run, tid or 0)
end

local hdr = { ["Content-Type"] = "application/json" }

request = function()
  if phase == 1 and token then
    return wrk.format("POST", "/api/v1/locks", hdr, string.format(
      '{"operations":[{"op":"renew","name":"%s","token":%s,"ttlSeconds":30,"slot":0}]}', name, token))
  elseif phase == 2 and token then
    return wrk.format("POST", "/api/v1/locks", hdr, string.format(
      '{"operations":[{"op":"release","name":"%s","token":%s,"slot":0}]}', name, token))
  end
  return wrk.format("POST", "/api/v1/locks", hdr, string.format(
    '{"operations":[{"op":"acquire","name":"%s","ttlSeconds":30,"owner":"%s"}]}', name, name))
end

response = function(status, headers, body)
  local t = body:match('"token"%s*:%s*(%d+)')
  if status == 200 and (body:find('"acquired":true', 1, true) or body:find('"renewed":true', 1, true)) and t then
    token = t
    phase = phase + 1
  else
    token = nil
    phase = 0
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.stderr:write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
