-- wrk script: consumers. MODE=autoack pops with autoAck; MODE=ack pops and then acks every
-- message it got (the ack goes out on the next request any connection makes); MODE=fanout
-- pops with autoAck for GROUPS consumer groups in turn. Counts delivered messages.
--
-- Any Queen-compatible broker: the answer is read as JSON, not matched against one broker's key
-- order. A small scanner (wrk's Lua has no JSON library) walks the top-level object to its
-- "messages" array and counts the array's objects; for acks it takes each one's own
-- transactionId, partitionId and leaseId members (keys inside a payload never count, being
-- deeper). The ack answers (an array of {"success": ...}) count acks refused.
-- FRAMES=1 asks for the framed answer (frames=true, QPF1, docs/http-api.md) and reads it as the
-- 2.x client does: claims, records, frames; messages are the offsets inside each claim.
local mode = os.getenv("MODE") or "autoack"
local queue = os.getenv("QUEUE") or "bench"
local batch = os.getenv("BATCH") or "100"
local groups = tonumber(os.getenv("GROUPS") or "10")
local frames = os.getenv("FRAMES") == "1"
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
-- One pass over the answer, byte by byte: a loop LuaJIT compiles (a string.find per token
-- made this script, not the broker, the bottleneck). Depth 1 is inside the top-level object,
-- 2 inside its "messages" array, 3 inside one message. Returns the number of objects in the
-- top-level "messages" array (0 without one) and, with want_fields, each one's transactionId,
-- partitionId and leaseId string members as raw JSON text (escapes kept, so they go back into
-- a JSON body as they are); nil when the answer is not a JSON object.
local byte, sub = string.byte, string.sub

local function scan(s, want_fields)
  local len = #s
  local i = 1
  local b = byte(s, i)
  while b == 32 or b == 9 or b == 10 or b == 13 do i = i + 1; b = byte(s, i) end
  if b ~= 123 then return nil end
  local is_object = {}    -- is_object[d]: depth d is inside an object (else an array)
  local depth = 0
  local expect_key = false
  local key = nil         -- the last key read at depth 1, or at depth 3 of a message
  local in_messages = false
  local n = 0
  local items = want_fields and {} or nil
  local cur, field = nil, nil
  while i <= len do
    b = byte(s, i)
    if b == 34 then -- a string: to its closing quote, over escapes
      local j = i + 1
      while true do
        local c = byte(s, j)
        if c == nil then return nil end
        if c == 92 then j = j + 2 elseif c == 34 then break else j = j + 1 end
      end
      if expect_key then
        if depth == 1 or (cur and depth == 3) then key = sub(s, i + 1, j - 1) end
        expect_key = false
      elseif field then
        cur[field] = sub(s, i + 1, j - 1)
        field = nil
      end
      i = j + 1
    elseif b == 58 then -- ':'
      if cur and depth == 3 and (key == "transactionId" or key == "partitionId" or key == "leaseId") then
        field = key
      else
        field = nil
      end
      i = i + 1
    elseif b == 44 then -- ','
      expect_key = is_object[depth]
      field = nil
      i = i + 1
    elseif b == 123 or b == 91 then -- '{' '['
      local obj = b == 123
      if depth == 1 and not obj and key == "messages" then in_messages = true end
      depth = depth + 1
      is_object[depth] = obj
      expect_key = obj
      field = nil
      if in_messages and depth == 3 and obj then
        n = n + 1
        if want_fields then cur = {} end
      end
      i = i + 1
    elseif b == 125 or b == 93 then -- '}' ']'
      if in_messages and depth == 3 and cur then items[#items + 1] = cur; cur = nil end
      if in_messages and depth == 2 then in_messages = false end
      depth = depth - 1
      expect_key = false
      field = nil
      if depth == 0 then return n, items end
      i = i + 1
    else
      i = i + 1
    end
  end
  return nil
end

-- ------------------------------------------------------------------ QPF1

local function u16(s, i) local a, b = byte(s, i, i + 1); return a + b * 256 end
local function u32(s, i) local a, b, c, d = byte(s, i, i + 3); return a + b * 256 + c * 65536 + d * 16777216 end
local function u64(s, i) return u32(s, i) + u32(s, i + 4) * 4294967296 end

-- The number of messages of a QPF1 answer and, with want_fields, each one's transactionId,
-- partitionId (the u64 as decimal text) and leaseId. Errors (a short answer) are the caller's.
local function scan_qpf(s, want_fields)
  local i = 5
  local version = byte(s, i); i = i + 1
  if version == 1 then i = i + 4 + u32(s, i) end
  i = i + 2 + u16(s, i)
  local ll = u16(s, i)
  local lease = sub(s, i + 2, i + 1 + ll)
  i = i + 2 + ll
  i = i + 2 + u16(s, i)
  local claims = u32(s, i); i = i + 4
  local n = 0
  local items = want_fields and {} or nil
  for _ = 1, claims do
    local pid = u64(s, i); i = i + 8
    i = i + 2 + u16(s, i)
    local first = u64(s, i); local last = u64(s, i + 8); i = i + 20
    local records = u32(s, i); i = i + 4
    for _ = 1, records do
      local base = u64(s, i)
      local count = u32(s, i + 16)
      local len = u32(s, i + 21)
      i = i + 25
      if want_fields then
        local j = i
        for k = 0, count - 1 do
          local blen = u32(s, j)
          local flags = byte(s, j + 4)
          local p = j + 21
          if flags % 2 == 1 then p = p + 16 end
          local tl = u16(s, p)
          local off = base + k
          if off >= first and off <= last then
            n = n + 1
            items[#items + 1] = { transactionId = sub(s, p + 2, p + 1 + tl), partitionId = string.format("%.0f", pid), leaseId = lease }
          end
          j = j + 4 + blen
        end
      else
        local lo, hi = math.max(first, base), math.min(last, base + count - 1)
        if hi >= lo then n = n + (hi - lo + 1) end
      end
      i = i + len
    end
  end
  return n, items
end

-- ------------------------------------------------------------------ requests

local function pop_path(group)
  local p = "/api/v1/pop/queue/" .. queue .. "?batch=" .. batch
  if mode ~= "ack" then p = p .. "&autoAck=true" end
  if group then p = p .. "&consumerGroup=" .. group end
  if frames then p = p .. "&frames=true" end
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
  if status ~= 200 or not body or #body == 0 then return end
  local first = body:match("^%s*(.)")
  if first == "[" then
    -- an ack's answer: an array of {"index":..,"success":..}; a refused ack says false
    for _ in body:gmatch('"success"%s*:%s*false') do ackfail = ackfail + 1 end
    return
  end
  local got, items
  if sub(body, 1, 4) == "QPF1" then
    local ok, a, b = pcall(scan_qpf, body, mode == "ack")
    if ok then got, items = a, b end
  else
    got, items = scan(body, mode == "ack")
  end
  if not got then unreadable = unreadable + 1; return end
  if got == 0 then empty = empty + 1; return end
  messages = messages + got
  if mode == "ack" then
    local acks_out = {}
    for _, m in ipairs(items) do
      if m.transactionId and m.partitionId then
        acks_out[#acks_out + 1] = string.format('{"transactionId":"%s","partitionId":"%s"%s}', m.transactionId, m.partitionId,
          (m.leaseId and #m.leaseId > 0) and string.format(',"leaseId":"%s"', m.leaseId) or "")
      end
    end
    if #acks_out > 0 then acks[#acks + 1] = '{"acknowledgments":[' .. table.concat(acks_out, ",") .. ']}' end
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
