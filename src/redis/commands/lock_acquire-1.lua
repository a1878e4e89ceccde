--[[
  idpool_lock_acquire: takes an entity's refill lock, a lease of a second or
  so that its holder extends while its refill runs (idpool_lock_extend). The
  lock only keeps two refillers from reserving at once; the fence and the
  epoch keep ids unique without it (docs/design.md invariants 3 and 4).

  A lock whose lease has less than ARGV[3] ms left was not extended when it
  should have been (its holder extends it every ARGV[3] ms): the holder died,
  stalled or lost its connection. It is taken over rather than waited out,
  so an empty pool waits for a dead refiller half to three quarters of a
  lease. A holder that was only slow finds its token gone at its next
  extension and stops; its push, if it comes, is refused by the fence or
  adds a segment above it.

  The lock's value is the token and the epoch it was taken in
  (`token@run_id:master_replid`): after a failover, a lock that came over
  with replication is told from one taken since (idpool_unlock_stale).

  Input:
    KEYS[1] refill lock
    ARGV[1] token (`host:pid:random`: who holds it, for operators)
    ARGV[2] lease, ms
    ARGV[3] stale below, ms (a lock with less left is taken over; one with no expiry too)

  Output:
    1  taken (it was free)
    2  taken over from a holder that stopped extending it
    0  held by a holder that extends it
]]
local function lock_acquire(KEYS, ARGV)
  local value = ARGV[1] .. '@' .. epoch()
  if rcall('SET', KEYS[1], value, 'NX', 'PX', ARGV[2]) then
    return 1
  end
  -- -1: no expiry (set by hand): it would block the entity for good.
  if rcall('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
    rcall('SET', KEYS[1], value, 'PX', ARGV[2])
    return 2
  end
  return 0
end

redis.register_function('idpool_lock_acquire', lock_acquire)
