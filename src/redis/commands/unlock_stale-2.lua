--[[
  idpool_unlock_stale: drops a refill lock taken before the Redis epoch
  changed. A refiller that held the lock when its server failed over cannot
  release it (that server is gone), and the lock came over with
  replication: it would block every refill of the entity until its TTL
  (seconds of 503 after a failover). The lock names the epoch it was taken
  in (idpool_lock_acquire), so a lock taken in this one is kept, though the
  pool is not reset yet: its holder is the refiller about to reset it (a new
  entity's first refill, or the first one after a failover). Dropping it
  would let a second refiller reserve beside it, and the fence would refuse
  the first one's segment: a gap, and a false `database_behind`. A lock of
  an older release names no epoch: the pool's epoch marker decides, as it
  did then. Safety never rests on the lock (the fence and the epoch checks
  keep ids unique).

  Input:
    KEYS[1] refill lock
    KEYS[2] epoch marker

  Output:
    1  the lock was there and is dropped
    0  kept (taken in this epoch, or of an older release on a pool reset in it) or there was none
]]
local function unlock_stale(KEYS)
  local lock = rcall('GET', KEYS[1])
  if not lock then
    return 0
  end
  local takenIn = string.match(lock, '@(.+)$') or rcall('GET', KEYS[2])
  if takenIn == epoch() then
    return 0
  end
  return rcall('DEL', KEYS[1])
end

redis.register_function('idpool_unlock_stale', unlock_stale)
