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
 * ARGV[1] is the time in ms, or "" for the server's (`TIME`); ARGV[2] the window in ms; ARGV[3] the waiters' grace
 * in ms; ARGV[4] the channel that hears of capacity coming back; the operation's own arguments follow.
 * @internal
 */

const prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local log, val, line, due, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
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
-- its grace; all are refreshed together, so the id counter never restarts while an id is in use
local function keep()
  local ttl = 2 * window + grace + 1000
  for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
end

local function valueOf(id)
  local v = redis.call('HGET', val, id)
  if not v then return 0, 0 end
  local r, t = string.match(v, '^(%d+):(%d+)$')
  return tonumber(r), tonumber(t)
end

local function prune()
  local gone = redis.call('ZRANGEBYSCORE', log, '-inf', fmt(now - window))
  for i = 1, #gone, 1000 do
    redis.call('ZREM', log, unpack(gone, i, math.min(i + 999, #gone)))
    redis.call('HDEL', val, unpack(gone, i, math.min(i + 999, #gone)))
  end
  -- a waiter past its time and grace has left without saying so
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then break end
    local back = tonumber(redis.call('HGET', due, first) or '0')
    if back + grace >= now then break end
    redis.call('ZREM', line, first)
    redis.call('HDEL', due, first)
  end
end

-- the entries in time order, with their counts
local function entries()
  local ids = redis.call('ZRANGE', log, 0, -1, 'WITHSCORES')
  local out = {}
  for i = 1, #ids, 2 do
    local r, t = valueOf(ids[i])
    out[#out + 1] = { at = tonumber(ids[i + 1]), requests = r, tokens = t }
  end
  return out
end

local function usage()
  local requests, tokens = 0, 0
  for _, v in ipairs(redis.call('HVALS', val)) do
    local r, t = string.match(v, '^(%d+):(%d+)$')
    requests = requests + tonumber(r)
    tokens = tokens + tonumber(t)
  end
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  local next = 0
  if oldest[2] then next = tonumber(oldest[2]) + window - now end
  return requests, tokens, next
end

local function nextId()
  local id = math.max(now * 1000, tonumber(redis.call('GET', seq) or '0') + 1)
  redis.call('SET', seq, fmt(id))
  return id
end

local function released() redis.call('PUBLISH', channel, '') end

local function answer(...)
  local requests, tokens, next = usage()
  local out = { ... }
  out[#out + 1] = requests
  out[#out + 1] = tokens
  out[#out + 1] = next
  return out
end
`

/** ARGV[5] tokens, ARGV[6] request limit, ARGV[7] token limit, ARGV[8] waiter ("" for none). */
export const reserve = `${prelude}
local tokens, maxRequests, maxTokens, waiter = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
prune()
local inLine = waiter ~= '' and redis.call('ZSCORE', line, waiter) ~= false
local first = redis.call('ZRANGE', line, 0, 0)[1]
if tokens > maxTokens then
  if inLine then
    redis.call('ZREM', line, waiter)
    redis.call('HDEL', due, waiter)
    if first == waiter and redis.call('ZCARD', line) > 0 then released() end
  end
  return { 'TooLarge' }
end
local requests, used = usage()
local requestsWait, tokensWait = 0, 0
if requests + 1 > maxRequests or used + tokens > maxTokens then
  local all = entries()
  if requests + 1 > maxRequests then
    local excess = requests + 1 - maxRequests
    for _, e in ipairs(all) do
      excess = excess - e.requests
      if excess <= 0 then requestsWait = e.at + window - now; break end
    end
  end
  if used + tokens > maxTokens then
    local left = used
    for _, e in ipairs(all) do
      left = left - e.tokens
      if left + tokens <= maxTokens then tokensWait = e.at + window - now; break end
    end
  end
end
local wait = math.max(0, requestsWait, tokensWait)
if waiter ~= '' and first and first ~= waiter then
  wait = math.max(wait, tonumber(redis.call('HGET', due, first)) - now, 1)
end
if wait > 0 then
  if waiter ~= '' then
    if not inLine then redis.call('ZADD', line, fmt(nextId()), waiter) end
    redis.call('HSET', due, waiter, fmt(now + wait))
  end
  keep()
  return answer('Wait', wait)
end
if inLine then
  redis.call('ZREM', line, waiter)
  redis.call('HDEL', due, waiter)
end
local id = nextId()
redis.call('ZADD', log, fmt(now), fmt(id))
redis.call('HSET', val, fmt(id), '1:' .. fmt(tokens))
keep()
if inLine and redis.call('ZCARD', line) > 0 then released() end
return answer('Admitted', id)
`

/** ARGV[5] id, ARGV[6] tokens. */
export const adjust = `${prelude}
local id, tokens = ARGV[5], tonumber(ARGV[6])
prune()
if redis.call('ZSCORE', log, id) then
  local r, t = valueOf(id)
  redis.call('HSET', val, id, fmt(r) .. ':' .. fmt(tokens))
  if tokens < t then released() end
end
return answer()
`

/** ARGV[5] id. */
export const remove = `${prelude}
local id = ARGV[5]
prune()
if redis.call('ZREM', log, id) == 1 then
  redis.call('HDEL', val, id)
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
local function add(at, r, t)
  -- usage dated a whole window ago or more has already left it
  if at + window <= now then return end
  -- usage learnt from the server is no request of this store's: its id is never one a caller settles
  local id = 'u' .. fmt(nextId())
  redis.call('ZADD', log, fmt(at), id)
  redis.call('HSET', val, id, fmt(r) .. ':' .. fmt(t))
end
if requests > counted then add(now - requestsAge, requests - counted, 0) end
if tokens > used then add(now - tokensAge, 0, tokens - used) end
keep()
return answer()
`

export const usage = `${prelude}
prune()
return answer()
`

/** ARGV[5] waiter. */
export const leave = `${prelude}
local waiter = ARGV[5]
local first = redis.call('ZRANGE', line, 0, 0)[1]
if redis.call('ZREM', line, waiter) == 1 then
  redis.call('HDEL', due, waiter)
  if first == waiter and redis.call('ZCARD', line) > 0 then released() end
end
return {}
`
