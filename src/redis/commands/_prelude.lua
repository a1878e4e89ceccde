--[[
  idpool's Redis function library. Built at load time from this prelude and
  one file per function (`<name>-<numKeys>.lua`), as two libraries: this
  release's own, named by a hash of its source, and the public one
  (`idpool`, with `idpool_pop`) whose names never change (src/redis/functions.ts).

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

-- Business numbers (docs/numbers.md). The numbers of the period the Redis
-- clock is in wait formatted in the entity's `ids` list, the list a plain
-- pool uses, so idpool_pop, the service's take and a raw LPOP all pop them;
-- the list expires (PEXPIREAT) at the period's last millisecond, so once
-- the Redis clock passes the boundary nothing pops its leftovers. The next
-- period's numbers wait in a staged list until the period begins, when a
-- number function makes them the `ids` list (numberPromote).
-- KEYS[1] of every number function is the period table, a hash: `p0 s0 e0
-- x0` the live period's id, first instant, first instant after (Unix ms)
-- and 1 when its counter is full; `p1 s1 e1 x1` the staged period's; and
-- `latest` the start of the newest period that went live: no older period
-- goes live again (a failover to a server whose clock is behind), so no
-- old-period number is handed out after a new-period one.

-- The Redis server's clock, Unix ms: one clock decides the period for every instance.
local function redisNow()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Makes the staged period live once the Redis clock (`now`) is in it, the
-- live list then holding its numbers and expiring at its end; drops a staged
-- period that is already over. The live list's pushed counter starts again
-- with it (a new baseline for demand, as a reset's: the old period's
-- leftovers went with their list, and were not taken). Returns the period
-- table's fields after it, HMGET's order: p0 s0 e0 x0 p1 s1 e1 x1 latest.
local function numberPromote(periodsKey, liveKey, nextKey, pushedKey, now)
  local h = rcall('HMGET', periodsKey, 'p0', 's0', 'e0', 'x0', 'p1', 's1', 'e1', 'x1', 'latest')
  local s1, e1 = tonumber(h[6]), tonumber(h[7])
  if not s1 or now < s1 then
    return h
  end
  if now < e1 and s1 >= tonumber(h[9] or '0') then
    rcall('DEL', liveKey)
    if rcall('EXISTS', nextKey) == 1 then
      rcall('RENAME', nextKey, liveKey)
      rcall('PEXPIREAT', liveKey, e1 - 1)
    end
    rcall('SET', pushedKey, rcall('LLEN', liveKey))
    rcall('HSET', periodsKey, 'p0', h[5], 's0', h[6], 'e0', h[7], 'x0', h[8] or '0', 'latest', h[6])
    h[1], h[2], h[3], h[4], h[9] = h[5], h[6], h[7], h[8] or '0', h[6]
  else
    rcall('DEL', nextKey)
  end
  rcall('HDEL', periodsKey, 'p1', 's1', 'e1', 'x1')
  h[5], h[6], h[7], h[8] = false, false, false, false
  return h
end
