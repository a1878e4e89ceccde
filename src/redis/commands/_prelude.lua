#!lua name=idpool
--[[
  idpool's Redis function library. Built at load time from this prelude and
  one file per function (`<name>-<numKeys>.lua`), loaded by every instance
  with FUNCTION LOAD REPLACE.

  Every pool function first checks that the pool was filled in the epoch of
  the Redis server answering now, `run_id:master_replid` (docs/design.md
  invariant 4; idpool_rate_limit and idpool_store_answer touch no pool): a
  restarted server (AOF that lost its last second, an older RDB snapshot)
  has a new run_id; a promoted server has a new master_replid, and
  one that resynced from another server before its promotion holds that
  server's older copy of every pool. Either way the pool may hold ids
  already handed out.

  The run_id is read once per loaded library and kept in a library-level
  local: it is fixed for the life of the process and the local dies with it.
  master_replid changes without a restart (REPLICAOF NO ONE), and nothing
  tells a library about it, so it is read on every call: `INFO replication`
  is a short section (~0.5 KB with one replica). Measured here
  (redis-benchmark, `FCALL idpool_pop … 1`, INFO commandstats): 3.7–4.5 µs
  of Redis CPU per call with run_id alone, 6.8–7.0 µs with master_replid
  read each call. Caching it is not sound: a promotion changes it while the
  library, and any local it keeps, lives on.
]]
-- redis.call exists only while a function runs, not while the library loads.
local function rcall(...)
  return redis.call(...)
end
local currentRunId

-- The epoch of the server answering now: `run_id:master_replid`.
local function epoch()
  if not currentRunId then
    currentRunId = string.match(rcall('INFO', 'server'), 'run_id:(%x+)')
  end
  return currentRunId .. ':' .. string.match(rcall('INFO', 'replication'), 'master_replid:(%x+)')
end

-- The per-second counter (`prefix` .. the Redis server's current second) if
-- `count` more ids fit under `limit`; otherwise nil and the ms left in this
-- second. The Redis clock, so every instance counts the same second.
local function rateWindow(prefix, count, limit)
  local now = rcall('TIME')
  local key = prefix .. now[1]
  local used = tonumber(rcall('GET', key) or '0')
  if used + count > limit then
    return nil, 1000 - math.floor(tonumber(now[2]) / 1000)
  end
  return key
end

-- Counts `count` ids in a counter of rateWindow. Two seconds: the counter
-- outlives its second, and nobody reads it after.
local function countRate(key, count)
  rcall('INCRBY', key, count)
  rcall('PEXPIRE', key, 2000)
end

-- The checks every take makes before it pops `count` ids: the pool
-- (`ids`) belongs to the server answering now's epoch (`epochKey`), `count`
-- more fit under this second's `limit` (0 = none), and the pool holds them.
-- Returns the refusal ({-2}, {-3, retryAfterMs} or {-1, size}), or nil, the
-- rate counter to count the take in (nil when unlimited) and the pool's size.
local function refuseTake(ids, epochKey, ratePrefix, count, limit)
  if rcall('GET', epochKey) ~= epoch() then
    return {-2}
  end
  local rateKey
  if limit > 0 then
    local retryAfterMs
    rateKey, retryAfterMs = rateWindow(ratePrefix, count, limit)
    if not rateKey then
      return {-3, retryAfterMs}
    end
  end
  local size = rcall('LLEN', ids)
  if size < count then
    return {-1, size}
  end
  return nil, rateKey, size
end

-- Ids may exceed 2^53, so they stay decimal strings: longer is larger.
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

-- The checks every push makes before writing: the pool belongs to the server
-- answering now's epoch (KEYS[3]), and the segment's lowest id is above the fence
-- (KEYS[2]). Returns -2 (epoch changed) or -4 (fenced) when refused.
local function refusePush(KEYS, lowest)
  if rcall('GET', KEYS[3]) ~= epoch() then
    return -2
  end
  local fence = rcall('GET', KEYS[2])
  if fence and not greater(lowest, fence) then
    return -4
  end
end
