--[[
  idpool_number_state: what the refiller and a short take need to see of a
  business-number entity, read at one instant of the Redis server's clock:
  each list's period, its bounds, whether its counter is full, its size,
  and `latest`. When the lists belong to this epoch, it first makes the
  staged period live if the clock is in it (numberPromote), so the first
  take after a boundary is served from Redis.

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] live list (the entity's `ids`)
    KEYS[4] staged list
    KEYS[5] pushed counter of the live list

  Output:
    {nowMs, epochCurrent (1/0), p0, s0, e0, x0, size0, p1, s1, e1, x1, size1, latest}
    (slot 0 the live list, 1 the staged one; a field of an empty slot is false)
]]
local function number_state(KEYS)
  local now = redisNow()
  local current = rcall('GET', KEYS[2]) == epoch()
  local h
  if current then
    h = numberPromote(KEYS[1], KEYS[3], KEYS[4], KEYS[5], now)
  else
    h = rcall('HMGET', KEYS[1], 'p0', 's0', 'e0', 'x0', 'p1', 's1', 'e1', 'x1', 'latest')
  end
  return {now, current and 1 or 0, h[1], h[2], h[3], h[4], rcall('LLEN', KEYS[3]),
          h[5], h[6], h[7], h[8], rcall('LLEN', KEYS[4]), h[9] or '0'}
end

redis.register_function('idpool_number_state', number_state)
