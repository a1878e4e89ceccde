--[[
  idpool_unlock_stale: drops a refill lock taken before the Redis epoch
  changed. A refiller that held the lock when its server failed over cannot
  release it (that server is gone), and the lock came over with
  replication: it would block every refill of the entity until its TTL
  (seconds of 503 after a failover). While the pool's epoch marker is not
  the answering server's, nobody has reset the pool in this epoch, so the
  lock is the old epoch's. Safety never rests on the lock (the fence and the
  epoch checks keep ids unique): a lock dropped by mistake costs at most a
  segment refused by the fence.

  Input:
    KEYS[1] refill lock
    KEYS[2] epoch marker

  Output:
    1  the lock was there and is dropped
    0  kept (the pool belongs to this epoch) or there was none
]]
local function unlock_stale(KEYS)
  if rcall('GET', KEYS[2]) == epoch() then
    return 0
  end
  return rcall('DEL', KEYS[1])
end

redis.register_function('idpool_unlock_stale', unlock_stale)
