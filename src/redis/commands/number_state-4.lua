--[[
  idpool_number_state: what the refiller needs to see of a business-number
  entity, read at one instant: the Redis server's clock, each slot's
  period and the size of its list. Read only.

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] numbers list of slot 0
    KEYS[4] numbers list of slot 1

  Output:
    {nowMs, epochCurrent (1/0), p0, s0, e0, x0, size0, p1, s1, e1, x1, size1}
    (a field of an empty slot is false)
]]
local function number_state(KEYS, ARGV)
  local t = rcall('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local h = rcall('HMGET', KEYS[1], 'p0', 's0', 'e0', 'x0', 'p1', 's1', 'e1', 'x1')
  local current = rcall('GET', KEYS[2]) == epoch() and 1 or 0
  return {now, current, h[1], h[2], h[3], h[4], rcall('LLEN', KEYS[3]), h[5], h[6], h[7], h[8], rcall('LLEN', KEYS[4])}
end

redis.register_function{function_name = 'idpool_number_state', callback = number_state, flags = {'no-writes'}}
