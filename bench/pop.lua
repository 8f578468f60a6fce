-- wrk script: consumers. MODE=autoack pops with autoAck; MODE=ack pops and then acks every
-- message it got (the ack goes out on the next request any connection makes); MODE=fanout
-- pops with autoAck for GROUPS consumer groups in turn. Counts delivered messages.
--
-- Any Queen-compatible broker: the answer is read as JSON, not matched against one broker's key
-- order. A small scanner (wrk's Lua has no JSON library) walks the top-level object to its
-- "messages" array and counts the array's elements; for acks it takes each element's own
-- transactionId, partitionId and leaseId members (strings inside a payload never count, being
-- one level deeper). The ack answers (an array of {"success": ...}) count acks refused.
local mode = os.getenv("MODE") or "autoack"
local queue = os.getenv("QUEUE") or "bench"
local batch = os.getenv("BATCH") or "100"
local groups = tonumber(os.getenv("GROUPS") or "10")
local threads = {}
messages = 0
empty = 0
unreadable = 0
ackfail = 0
local acks = {}
local turn = 0

setup = function(thread)
  table.insert(threads, thread)
end

-- ------------------------------------------------------------------ JSON scanning
-- Each function takes the body and the index of a value's first byte and returns the index just
-- past that value, or nil when the text is not JSON.
local function skip_ws(s, i)
  return s:find("[^ \t\r\n]", i)
end

local function skip_string(s, i)
  local j = i + 1
  while true do
    local k = s:find('["\\]', j)
    if not k then return nil end
    if s:byte(k) == 92 then j = k + 2 else return k + 1 end
  end
end

local function skip_value(s, i)
  local c = s:byte(i)
  if c == 34 then return skip_string(s, i) end
  if c == 123 or c == 91 then -- { [
    local depth, j = 0, i
    while true do
      local k = s:find('[%[%]{}"]', j)
      if not k then return nil end
      local b = s:byte(k)
      if b == 34 then
        j = skip_string(s, k)
        if not j then return nil end
      else
        if b == 123 or b == 91 then depth = depth + 1 else depth = depth - 1 end
        j = k + 1
        if depth == 0 then return j end
      end
    end
  end
  local k = s:find("[,%]} \t\r\n]", i) -- a number, true, false or null
  return k or (#s + 1)
end

-- Calls fn(key, value_start, value_end) for each member of the object at i; returns the index
-- past the object, or nil.
local function each_member(s, i, fn)
  if s:byte(i) ~= 123 then return nil end
  local j = i + 1
  while true do
    j = skip_ws(s, j)
    if not j then return nil end
    local b = s:byte(j)
    if b == 125 then return j + 1 end
    if b == 44 then
      j = j + 1
    else
      if b ~= 34 then return nil end
      local kend = skip_string(s, j)
      if not kend then return nil end
      local key = s:sub(j + 1, kend - 2)
      local colon = skip_ws(s, kend)
      if not colon or s:byte(colon) ~= 58 then return nil end
      local v = skip_ws(s, colon + 1)
      if not v then return nil end
      local vend = skip_value(s, v)
      if not vend then return nil end
      fn(key, v, vend)
      j = vend
    end
  end
end

-- Calls fn(value_start, value_end) for each element of the array at i; returns the count, or nil.
local function each_element(s, i, fn)
  if s:byte(i) ~= 91 then return nil end
  local j, n = i + 1, 0
  while true do
    j = skip_ws(s, j)
    if not j then return nil end
    local b = s:byte(j)
    if b == 93 then return n end
    if b == 44 then
      j = j + 1
    else
      local vend = skip_value(s, j)
      if not vend then return nil end
      n = n + 1
      fn(j, vend)
      j = vend
    end
  end
end

-- A string member's raw text (escapes kept, so it can go back into JSON as it is).
local function raw_string(s, a, b)
  if s:byte(a) ~= 34 then return nil end
  return s:sub(a + 1, b - 2)
end

-- ------------------------------------------------------------------ requests

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

local function read_ack_answer(body)
  local s = skip_ws(body, 1)
  if not s then return end
  each_element(body, s, function(a)
    each_member(body, a, function(key, v, vend)
      if key == "success" and body:sub(v, vend - 1) ~= "true" then ackfail = ackfail + 1 end
    end)
  end)
end

response = function(status, headers, body)
  if status == 204 then empty = empty + 1; return end
  if status ~= 200 or not body or #body == 0 then return end
  local s = skip_ws(body, 1)
  if not s then unreadable = unreadable + 1; return end
  if body:byte(s) == 91 then read_ack_answer(body); return end -- an ack's answer
  local got, items = 0, {}
  local ok = each_member(body, s, function(key, v)
    if key ~= "messages" then return end
    got = each_element(body, v, function(a)
      if mode ~= "ack" then return end
      local txn, part, lease
      each_member(body, a, function(k, mv, mvend)
        if k == "transactionId" then txn = raw_string(body, mv, mvend)
        elseif k == "partitionId" then part = raw_string(body, mv, mvend)
        elseif k == "leaseId" then lease = raw_string(body, mv, mvend) end
      end)
      if txn and part then
        items[#items + 1] = string.format('{"transactionId":"%s","partitionId":"%s"%s}', txn, part,
          (lease and #lease > 0) and string.format(',"leaseId":"%s"', lease) or "")
      end
    end) or 0
  end)
  if not ok then unreadable = unreadable + 1; return end
  if got == 0 then empty = empty + 1; return end
  messages = messages + got
  if mode == "ack" and #items > 0 then
    acks[#acks + 1] = '{"acknowledgments":[' .. table.concat(items, ",") .. ']}'
  end
end

done = function(summary, latency, requests)
  local total, empties, bad, nacks = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    total = total + (t:get("messages") or 0)
    empties = empties + (t:get("empty") or 0)
    bad = bad + (t:get("unreadable") or 0)
    nacks = nacks + (t:get("ackfail") or 0)
  end
  local e = summary.errors
  io.stderr:write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d messages=%d empty=%d unreadable=%d ackfail=%d p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status, total, empties, bad, nacks,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
