--[[
  idpool_number_state: what the refiller and a short take need to see of a
  business-number entity, read at one instant of the Redis server's clock:
  each list's period, its bounds, whether its counter is full, its size,
  and `latest`. When the lists belong to this epoch, it first makes the
  staged period live if the clock is in it (numberPromote), so the first
  take after a boundary is served from Redis. With 'reset', lists filled in
  another Redis epoch (a restart or failover: they may hold numbers already
  handed out) are dropped first, the given fences raised and the epoch
  marker set to now's.

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] live list (the entity's `ids`)
    KEYS[4] staged list
    KEYS[5] pushed counter of the live list (starts again with it)
    KEYS[6] fence hash
    ARGV[1] 'reset', or absent
    ARGV[2..] pairs: period id, sequence every number up to which may have been issued

  Output:
    {nowMs, epochCurrent (1/0), p0, s0, e0, x0, size0, p1, s1, e1, x1, size1, latest, dropped (1/0),
     {period id, fence, ...}}
    (slot 0 the live list, 1 the staged one; a field of an empty slot is
    false; dropped: a reset found lists to drop; the fence hash last)
]]
local function number_state(KEYS, ARGV)
  local now = redisNow()
  local current = rcall('GET', KEYS[2]) == epoch()
  local dropped = 0
  if not current and ARGV[1] == 'reset' then
    rcall('DEL', KEYS[5])
    dropped = rcall('DEL', KEYS[3], KEYS[4]) > 0 and 1 or 0
    rcall('HDEL', KEYS[1], 'p0', 's0', 'e0', 'x0', 'p1', 's1', 'e1', 'x1')
    rcall('SET', KEYS[2], epoch())
    for i = 2, #ARGV - 1, 2 do
      local fence = rcall('HGET', KEYS[6], ARGV[i])
      if not fence or greater(ARGV[i + 1], fence) then
        rcall('HSET', KEYS[6], ARGV[i], ARGV[i + 1])
      end
    end
    current = true
  end
  local h
  if current then
    h = numberPromote(KEYS[1], KEYS[3], KEYS[4], KEYS[5], now)
  else
    h = rcall('HMGET', KEYS[1], 'p0', 's0', 'e0', 'x0', 'p1', 's1', 'e1', 'x1', 'latest')
  end
  return {now, current and 1 or 0, h[1], h[2], h[3], h[4], rcall('LLEN', KEYS[3]),
          h[5], h[6], h[7], h[8], rcall('LLEN', KEYS[4]), h[9] or '0', dropped, rcall('HGETALL', KEYS[6])}
end

redis.register_function('idpool_number_state', number_state)
