/**
 * The Lua scripts of the Redis limiter store: each operation of `LimiterStore` is one script, so that it is atomic
 * across every process on the server. They keep the memory store's rules (src/layers/LimiterStore.ts) to the
 * letter; test/helpers/storeConformance.ts holds both to one model.
 *
 * Keys of a bucket (one hash tag, so that they live on one Cluster slot):
 *   KEYS[1] log   sorted set: entry id -> the time it counts from (ms)
 *   KEYS[2] val   hash: entry id -> "requests:tokens"
 *   KEYS[3] line  sorted set: waiter -> its arrival order
 *   KEYS[4] due   hash: waiter -> when it was told to come back (ms)
 *   KEYS[5] seq   the last id given out (entry ids and arrival orders)
 *   KEYS[6] sum   hash: r -> the requests of the log, t -> its tokens (kept with every change, so that a bucket's
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

local function fmt(n) return string.format('%.0f', n) end

-- every key lives as long as its longest possible use: an entry a window, a waiter a wait (at most a window) and
-- its grace; all are refreshed together (one expiry time), so they go together and the id counter never restarts
-- while an id is in use
local function keep()
  local ttl = 2 * window + grace + 1000
  for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
end

local function parse(v)
  if not v then return 0, 0 end
  local r, t = string.match(v, '^(%d+):(%d+)$')
  return tonumber(r), tonumber(t)
end

local function count(r, t)
  if r ~= 0 then redis.call('HINCRBY', sum, 'r', r) end
  if t ~= 0 then redis.call('HINCRBY', sum, 't', t) end
end

local function add(id, at, r, t)
  redis.call('ZADD', log, fmt(at), id)
  redis.call('HSET', val, id, fmt(r) .. ':' .. fmt(t))
  count(r, t)
end

local function drop(ids)
  if #ids == 0 then return end
  local vals = redis.call('HMGET', val, unpack(ids))
  local r, t = 0, 0
  for i = 1, #ids do
    local vr, vt = parse(vals[i])
    r, t = r + vr, t + vt
  end
  redis.call('ZREM', log, unpack(ids))
  redis.call('HDEL', val, unpack(ids))
  count(-r, -t)
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

local function usage()
  local totals = redis.call('HMGET', sum, 'r', 't')
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  local next = 0
  if oldest[2] then next = tonumber(oldest[2]) + window - now end
  return tonumber(totals[1] or '0'), tonumber(totals[2] or '0'), next
end

-- how long until the oldest entries that must leave have left: requests beyond the limit with one more, tokens
-- beyond it with these (read oldest first, a page at a time, only as far as needed)
local function waits(requestsOver, tokensOver)
  local requestsWait, tokensWait = 0, 0
  local from = 0
  while requestsOver > 0 or tokensOver > 0 do
    local page = redis.call('ZRANGE', log, from, from + 99, 'WITHSCORES')
    if #page == 0 then break end
    local ids = {}
    for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
    local vals = redis.call('HMGET', val, unpack(ids))
    for i = 1, #ids do
      local r, t = parse(vals[i])
      local leaves = tonumber(page[2 * i]) + window - now
      if requestsOver > 0 then
        requestsOver = requestsOver - r
        if requestsOver <= 0 then requestsWait = leaves end
      end
      if tokensOver > 0 then
        tokensOver = tokensOver - t
        if tokensOver <= 0 then tokensWait = leaves end
      end
    end
    from = from + 100
  end
  return requestsWait, tokensWait
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

local function answer(...)
  local requests, tokens, next = usage()
  local out = { ... }
  out[#out + 1] = requests
  out[#out + 1] = tokens
  out[#out + 1] = next
  return out
end
`

/**
 * ARGV[5] tokens, ARGV[6] request limit, ARGV[7] token limit, ARGV[8] waiter ("" for none), ARGV[9] "1" when the
 * waiter has more to send (an admitted one keeps a place at the back of the line when others wait).
 */
export const reserve = `${prelude}
local tokens, maxRequests, maxTokens, waiter = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local more = ARGV[9] == '1' 
prune()
if tokens > maxTokens then
  if waiter ~= '' then leaveLine(waiter) end
  return { 'TooLarge' }
end
local requests, used = usage()
local requestsWait, tokensWait = waits(requests + 1 - maxRequests, used + tokens - maxTokens)
local wait = math.max(0, requestsWait, tokensWait)
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
add(id, now, 1, tokens)
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

/** ARGV[5] id, ARGV[6] tokens. */
export const adjust = `${prelude}
local id, tokens = ARGV[5], tonumber(ARGV[6])
prune()
if redis.call('ZSCORE', log, id) then
  local r, t = parse(redis.call('HGET', val, id))
  redis.call('HSET', val, id, fmt(r) .. ':' .. fmt(tokens))
  count(0, tokens - t)
  if tokens < t then released() end
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

/** ARGV[5] requests, ARGV[6] their age in ms, ARGV[7] tokens, ARGV[8] their age in ms. */
export const topUp = `${prelude}
local requests, requestsAge, tokens, tokensAge = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
prune()
local counted, used = usage()
local function learnt(at, r, t)
  -- usage dated a whole window ago or more has already left it; usage learnt from the server is no request of
  -- this store's: its id is never one a caller settles
  if at + window > now then add('u' .. fmt(nextId()), at, r, t) end
end
if requests > counted then learnt(now - requestsAge, requests - counted, 0) end
if tokens > used then learnt(now - tokensAge, 0, tokens - used) end
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
