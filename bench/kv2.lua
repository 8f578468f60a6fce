-- wrk script: the KV workload on the 2.x wire, everything through POST /api/v1/kv. Requests
-- rotate through three kinds:
--   putIfAbsent of a fresh key (ttlSeconds)                                   (1 op)
--   get of a seeded key                                                       (1 op)
--   a 3-op batch: putIfAbsent of a fresh key with required (the once gate), incr of one of 100
--   shared counters, get of a seeded key                                      (3 ops)
-- Values are ~200-byte JSON documents. RUN makes the fresh keys of each wrk run distinct;
-- bench/run.sh seeds seed-0..SEEDS-1 (namespace bench2) first. Prints one RESULT line.
local run = os.getenv("RUN") or "r"
local seeds = tonumber(os.getenv("SEEDS") or "1000")
local pad = string.rep("x", 170)
local counter = 0
local thread_id = 0

setup = function(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end

init = function(args)
  counter = (tid or 0) * 1000000000
end

local hdr = { ["Content-Type"] = "application/json" }

request = function()
  counter = counter + 1
  local kind = counter % 3
  if kind == 0 then
    return wrk.format("POST", "/api/v1/kv", hdr, string.format(
      '{"operations":[{"op":"putIfAbsent","ns":"bench2","key":"%s-%d","value":{"n":%d,"data":"%s"},"ttlSeconds":600}]}',
      run, counter, counter, pad))
  elseif kind == 1 then
    return wrk.format("POST", "/api/v1/kv", hdr, string.format(
      '{"operations":[{"op":"get","ns":"bench2","key":"seed-%d"}]}', counter % seeds))
  else
    return wrk.format("POST", "/api/v1/kv", hdr, string.format(
      '{"operations":[{"op":"putIfAbsent","ns":"bench2","key":"%s-b-%d","value":{"n":%d,"data":"%s"},"ttlSeconds":600,"required":true},' ..
      '{"op":"incr","ns":"bench2","key":"ctr-%d","forever":true},{"op":"get","ns":"bench2","key":"seed-%d"}]}',
      run, counter, counter, pad, counter % 100, (counter * 7) % seeds))
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.stderr:write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
