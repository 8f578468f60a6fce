-- wrk script: consumers. MODE=autoack pops with autoAck; MODE=ack pops and then acks every
-- message it got (the ack goes out on the next request any connection makes); MODE=fanout
-- pops with autoAck for GROUPS consumer groups in turn. Counts delivered messages.
local mode = os.getenv("MODE") or "autoack"
local queue = os.getenv("QUEUE") or "bench"
local batch = os.getenv("BATCH") or "100"
local groups = tonumber(os.getenv("GROUPS") or "10")
local threads = {}
messages = 0
empty = 0
local acks = {}
local turn = 0

setup = function(thread)
  table.insert(threads, thread)
end

local function pop_path(group)
  local p = "/api/v1/pop/queue/" .. queue .. "?batch=" .. batch
  if mode ~= "ack" then p = p .. "&autoAck=true" end
  if group then p = p .. "&consumerGroup=" .. group end
  return p
end

request = function()
  if mode == "ack" and #acks > 0 then
    local body = table.remove(acks, 1)
    return wrk.format("POST", "/api/v1/ack/batch", { ["Content-Type"] = "application/json" }, body)
  end
  if mode == "fanout" then
    turn = turn + 1
    return wrk.format("GET", pop_path("g" .. (turn % groups)))
  end
  return wrk.format("GET", pop_path(nil))
end

response = function(status, headers, body)
  if status == 204 then empty = empty + 1; return end
  if status ~= 200 or body:sub(1, 12) ~= '{"success":t' then return end
  local items = {}
  for txn, part, lease in body:gmatch('"transactionId":"([^"]*)","traceId":[^,]*,"data":.-,"producerSub":[^,]*,"createdAt":"[^"]*","partitionId":"([^"]*)","partition":"[^"]*","leaseId":"([^"]*)"') do
    messages = messages + 1
    if mode == "ack" then
      items[#items + 1] = string.format('{"transactionId":"%s","partitionId":"%s","leaseId":"%s"}', txn, part, lease)
    end
  end
  if mode == "ack" and #items > 0 then
    acks[#acks + 1] = '{"acknowledgments":[' .. table.concat(items, ",") .. ']}'
  end
end

done = function(summary, latency, requests)
  local total, empties = 0, 0
  for _, t in ipairs(threads) do
    total = total + (t:get("messages") or 0)
    empties = empties + (t:get("empty") or 0)
  end
  local e = summary.errors
  io.stderr:write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d messages=%d empty=%d p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status, total, empties,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
