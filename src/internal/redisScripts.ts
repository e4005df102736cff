/**
 * The Lua scripts of the Redis limiter store: each operation of `LimiterStore` is one script, so that it is atomic
 * across every process on the server. They keep the memory store's rules (src/layers/LimiterStore.ts) to the
 * letter; test/helpers/storeConformance.ts holds both to one model.
 *
 * A bucket counts four budgets, in this order everywhere (arguments, values, answers): requests (r), input tokens
 * (i), output tokens (o) and combined tokens (t).
 *
 * Keys of a bucket (one hash tag, so that they live on one Cluster slot):
 *   KEYS[1] log   sorted set: entry id -> the time it counts from (ms)
 *   KEYS[2] val   hash: entry id -> "r:i:o:t", what the entry counts of each budget
 *   KEYS[3] line  sorted set: waiter -> its arrival order
 *   KEYS[4] due   hash: waiter -> when it was told to come back (ms)
 *   KEYS[5] seq   the last id given out (entry ids and arrival orders)
 *   KEYS[6] sum   hash: r, i, o, t -> what the log counts of each budget (kept with every change, so that a bucket's
 *                 usage costs the same with ten entries or ten thousand)
 * ARGV[1] is the time in ms, or "" for the server's (`TIME`); ARGV[2] the window in ms; ARGV[3] the waiters' grace
 * in ms; ARGV[4] the channel that hears of capacity coming back (its message: the waiter now first in line, the
 * only one that can use it); the operation's own arguments follow.
 *
 * Costs: an admission with nobody waiting is O(log n) in the entries of the window; a wait reads the oldest entries
 * in pages until enough of them would have left.
 * @internal
 */

const prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local log, val, line, due, seq, sum = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local window = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local channel = ARGV[4]
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local fields = { 'r', 'i', 'o', 't' }

local function fmt(n) return string.format('%.0f', n) end

-- every key lives as long as its longest possible use: an entry a window, a waiter a wait (at most a window) and
-- its grace; all are refreshed together (one expiry time), so they go together and the id counter never restarts
-- while an id is in use
local function keep()
  local ttl = 2 * window + grace + 1000
  for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
end

-- four budgets from ARGV, the first at ARGV[from]
local function budgets(from)
  return { tonumber(ARGV[from]), tonumber(ARGV[from + 1]), tonumber(ARGV[from + 2]), tonumber(ARGV[from + 3]) }
end

local function parse(v)
  local r, i, o, t = string.match(v or '', '^(%d+):(%d+):(%d+):(%d+)$')
  if not r then return { 0, 0, 0, 0 } end
  return { tonumber(r), tonumber(i), tonumber(o), tonumber(t) }
end

local function encode(a) return fmt(a[1]) .. ':' .. fmt(a[2]) .. ':' .. fmt(a[3]) .. ':' .. fmt(a[4]) end

local function count(a, sign)
  for d = 1, 4 do
    if a[d] ~= 0 then redis.call('HINCRBY', sum, fields[d], sign * a[d]) end
  end
end

local function add(id, at, a)
  redis.call('ZADD', log, fmt(at), id)
  redis.call('HSET', val, id, encode(a))
  count(a, 1)
end

local function drop(ids)
  if #ids == 0 then return end
  local vals = redis.call('HMGET', val, unpack(ids))
  local total = { 0, 0, 0, 0 }
  for k = 1, #ids do
    local a = parse(vals[k])
    for d = 1, 4 do total[d] = total[d] + a[d] end
  end
  redis.call('ZREM', log, unpack(ids))
  redis.call('HDEL', val, unpack(ids))
  count(total, -1)
end

-- the waiter first in line, once those past their time and grace (gone without saying so) have left it
local function head()
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then return nil end
    local back = tonumber(redis.call('HGET', due, first) or '0')
    if back + grace >= now then return first end
    redis.call('ZREM', line, first)
    redis.call('HDEL', due, first)
  end
end

local function prune()
  while true do
    local gone = redis.call('ZRANGEBYSCORE', log, '-inf', fmt(now - window), 'LIMIT', 0, 1000)
    if #gone == 0 then break end
    drop(gone)
  end
  head()
end

-- what the log counts of each budget, and how long until its oldest entry leaves
local function usage()
  local totals = redis.call('HMGET', sum, 'r', 'i', 'o', 't')
  local used = {}
  for d = 1, 4 do used[d] = tonumber(totals[d] or '0') end
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  local next = 0
  if oldest[2] then next = tonumber(oldest[2]) + window - now end
  return used, next
end

-- per budget, how long until the oldest entries that must leave have left: over[d] is how much of budget d must
-- leave (nothing when it is 0 or less); read oldest first, a page at a time, only as far as needed
local function waits(over)
  local wait = { 0, 0, 0, 0 }
  local from = 0
  while over[1] > 0 or over[2] > 0 or over[3] > 0 or over[4] > 0 do
    local page = redis.call('ZRANGE', log, from, from + 99, 'WITHSCORES')
    if #page == 0 then break end
    local ids = {}
    for k = 1, #page, 2 do ids[#ids + 1] = page[k] end
    local vals = redis.call('HMGET', val, unpack(ids))
    for k = 1, #ids do
      local a = parse(vals[k])
      local leaves = tonumber(page[2 * k]) + window - now
      for d = 1, 4 do
        if over[d] > 0 then
          over[d] = over[d] - a[d]
          if over[d] <= 0 then wait[d] = leaves end
        end
      end
    end
    from = from + 100
  end
  return wait
end

local function nextId()
  local id = math.max(now * 1000, tonumber(redis.call('GET', seq) or '0') + 1)
  -- KEEPTTL: the counter expires with the bucket's other keys, whatever runs after keep()
  redis.call('SET', seq, fmt(id), 'KEEPTTL')
  return id
end

-- capacity came back: the waiter first in line (if any) looks again
local function released()
  local first = head()
  if first then redis.call('PUBLISH', channel, first) end
end

local function leaveLine(waiter)
  local first = head()
  if redis.call('ZREM', line, waiter) == 1 then
    redis.call('HDEL', due, waiter)
    if first == waiter then released() end
  end
end

-- the operation's own values, then the usage: r, i, o, t and the time until the oldest entry leaves
local function answer(...)
  local used, next = usage()
  local out = { ... }
  for d = 1, 4 do out[#out + 1] = used[d] end
  out[#out + 1] = next
  return out
end
`

/**
 * ARGV[5..8] what the request costs of each budget, ARGV[9..12] the limits, ARGV[13] waiter ("" for none), ARGV[14]
 * "1" when the waiter has more to send (an admitted one keeps a place at the back of the line when others wait).
 */
export const reserve = `${prelude}
local request, limits, waiter, more = budgets(5), budgets(9), ARGV[13], ARGV[14] == '1'
prune()
for d = 1, 4 do
  if request[d] > limits[d] then
    if waiter ~= '' then leaveLine(waiter) end
    return { 'TooLarge' }
  end
end
local used = usage()
-- a budget the request costs nothing of never makes it wait
local over = {}
for d = 1, 4 do over[d] = request[d] > 0 and used[d] + request[d] - limits[d] or 0 end
local each = waits(over)
local wait = math.max(0, each[1], each[2], each[3], each[4])
local first = head()
if waiter ~= '' and first and first ~= waiter then
  -- behind another: until that one is surely gone (woken sooner, by name, as soon as this one is first)
  wait = math.max(wait, tonumber(redis.call('HGET', due, first)) + grace + 1 - now)
end
if wait > 0 then
  if waiter ~= '' then
    if not redis.call('ZSCORE', line, waiter) then redis.call('ZADD', line, fmt(nextId()), waiter) end
    redis.call('HSET', due, waiter, fmt(now + wait))
  end
  keep()
  return answer('Wait', wait)
end
local id = fmt(nextId())
add(id, now, request)
local queued = -1
if waiter ~= '' then
  leaveLine(waiter)
  local next = head()
  if more and next then
    queued = math.max(0, tonumber(redis.call('HGET', due, next)) + grace + 1 - now)
    redis.call('ZADD', line, fmt(nextId()), waiter)
    redis.call('HSET', due, waiter, fmt(now + queued))
  end
end
keep()
return answer('Admitted', id, queued)
`

/** ARGV[5] id, ARGV[6..8] its input, output and combined tokens (its request stays counted). */
export const adjust = `${prelude}
local id = ARGV[5]
prune()
if redis.call('ZSCORE', log, id) then
  local before = parse(redis.call('HGET', val, id))
  local after = { before[1], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]) }
  local change, lowered = {}, false
  for d = 1, 4 do
    change[d] = after[d] - before[d]
    if change[d] < 0 then lowered = true end
  end
  redis.call('HSET', val, id, encode(after))
  count(change, 1)
  if lowered then released() end
end
return answer()
`

/** ARGV[5] id. */
export const remove = `${prelude}
local id = ARGV[5]
prune()
if redis.call('ZSCORE', log, id) then
  drop({ id })
  released()
end
return answer()
`

/** ARGV[5] id. */
export const restamp = `${prelude}
local id = ARGV[5]
prune()
local at = redis.call('ZSCORE', log, id)
if at and tonumber(at) < now then
  redis.call('ZADD', log, fmt(now), id)
  keep()
end
return answer()
`

/** ARGV[5] requests, ARGV[6] their age in ms, ARGV[7] combined tokens, ARGV[8] their age in ms. */
export const topUp = `${prelude}
local requests, requestsAge, tokens, tokensAge = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
prune()
local used = usage()
local function learnt(at, a)
  -- usage dated a whole window ago or more has already left it; usage learnt from the server is no request of
  -- this store's: its id is never one a caller settles
  if at + window > now then add('u' .. fmt(nextId()), at, a) end
end
if requests > used[1] then learnt(now - requestsAge, { requests - used[1], 0, 0, 0 }) end
if tokens > used[4] then learnt(now - tokensAge, { 0, 0, 0, tokens - used[4] }) end
keep()
return answer()
`

export const usage = `${prelude}
prune()
return answer()
`

/** ARGV[5] waiter. */
export const leave = `${prelude}
leaveLine(ARGV[5])
return {}
`
