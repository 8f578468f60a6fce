-- wrk script: POST /api/v1/push with BATCH items of ~200-byte payloads spread over PARTS
-- partitions of QUEUE. Prints one RESULT line (parsed by bench/run.sh) when done.
-- RANDOM_PAYLOAD=1 fills the payloads with random letters instead of "xxx…": text PostgreSQL's lz4 cannot
-- shrink either, so a plain queue stores as many bytes as a sealed one.
local batch = tonumber(os.getenv("BATCH") or "1")
local queue = os.getenv("QUEUE") or "bench"
local parts = tonumber(os.getenv("PARTS") or "10")
local pad = string.rep("x", 170)
local pads = nil
if os.getenv("RANDOM_PAYLOAD") == "1" then
  pads = {}
  math.randomseed(7)
  for j = 1, 512 do
    local t = {}
    for i = 1, 170 do t[i] = string.char(97 + math.random(0, 25)) end
    pads[j] = table.concat(t)
  end
end
local counter = 0
local thread_id = 0

setup = function(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end

init = function(args)
  counter = (tid or 0) * 1000000000
end

request = function()
  local items = {}
  for i = 1, batch do
    counter = counter + 1
    items[i] = string.format('{"queue":"%s","partition":"p%d","payload":{"n":%d,"data":"%s"}}',
      queue, counter % parts, counter, pads and pads[counter % 512 + 1] or pad)
  end
  return wrk.format("POST", "/api/v1/push", { ["Content-Type"] = "application/json" },
    '{"items":[' .. table.concat(items, ",") .. ']}')
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.stderr:write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
