--[[
  idpool_number_take: the service's take of business numbers. Picks the
  period by the Redis server's clock (`TIME`), so every instance switches
  at the same instant whatever its own clock says, and takes `count`
  numbers of that period, all or nothing, within the per-second limit.

  Input:
    KEYS[1] period table (hash, see _prelude.lua)
    KEYS[2] epoch marker
    KEYS[3] numbers list of slot 0
    KEYS[4] numbers list of slot 1
    KEYS[5] rate counter prefix (the current second is appended)
    ARGV[1] count
    ARGV[2] max numbers per second, 0 = unlimited

  Output:
    {0, remaining, 'n,n,...', periodId}  taken, joined by commas
    {-1, size}                           short: fewer than count ready (0: no slot holds now's period yet)
    {-2}                                 epoch changed: the lists must be discarded first
    {-3, retryAfterMs}                   rate limited
    {-6, msToPeriodEnd}                  the period's counter is full and fewer than count are left
    {-8}                                 now's period starts before one already taken from (the clock went back)
]]
local function number_take(KEYS, ARGV)
  if rcall('GET', KEYS[2]) ~= epoch() then
    return {-2}
  end
  local count = tonumber(ARGV[1])
  local p = numberNow(KEYS[1])
  if not p then
    return {-1, 0}
  end
  if p.start < p.latest then
    return {-8}
  end
  local list = KEYS[3 + p.slot]
  local size = rcall('LLEN', list)
  if size < count then
    if p.full then
      return {-6, p.stop - p.now}
    end
    return {-1, size}
  end
  local limit = tonumber(ARGV[2])
  local rateKey
  if limit > 0 then
    local retryAfterMs
    rateKey, retryAfterMs = rateWindow(KEYS[5], count, limit)
    if not rateKey then
      return {-3, retryAfterMs}
    end
  end
  local numbers = rcall('LPOP', list, count)
  if rateKey then
    countRate(rateKey, count)
  end
  numberTaken(KEYS[1], p)
  return {0, size - count, table.concat(numbers, ','), p.id}
end

redis.register_function{function_name = 'idpool_number_take', callback = number_take, flags = {'allow-oom'}}
