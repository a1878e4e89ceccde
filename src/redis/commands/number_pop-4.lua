--[[
  idpool_number_pop: the guarded pop of business numbers for trusted
  consumers that talk to Redis directly:

    FCALL idpool_number_pop 4 idpool:{KEY}:n:periods idpool:{KEY}:server idpool:{KEY}:n:ids:0 idpool:{KEY}:n:ids:1 COUNT

  The same rules as the service's take: the period is the one holding the
  Redis server's clock now, all or nothing, nothing from lists filled in
  another Redis epoch, nothing of a period older than one already taken
  from. Returns formatted numbers (`INV20261128-000123`). A plain LPOP of
  one slot's list returns formatted numbers too, but of whatever period
  that slot holds: after a boundary, the old period's leftovers.

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] numbers list of slot 0
    KEYS[4] numbers list of slot 1
    ARGV[1] count

  Output:
    {number, ...}                  COUNT numbers
    {}                             fewer than COUNT ready; nothing taken
    error IDPOOL_SERVER_CHANGED    the lists are being rebuilt: retry shortly
    error IDPOOL_PERIOD_EXHAUSTED  the period is full: retry in the next one
]]
local function number_pop(KEYS, ARGV)
  if rcall('GET', KEYS[2]) ~= epoch() then
    return redis.error_reply('IDPOOL_SERVER_CHANGED numbers filled in another Redis epoch (restart or failover); retry shortly')
  end
  local count = tonumber(ARGV[1])
  if not count or count < 1 or count ~= math.floor(count) then
    return redis.error_reply('IDPOOL_BAD_COUNT count must be a positive integer')
  end
  local p = numberNow(KEYS[1])
  if not p or p.start < p.latest then
    return {}
  end
  local list = KEYS[3 + p.slot]
  if rcall('LLEN', list) < count then
    if p.full then
      return redis.error_reply('IDPOOL_PERIOD_EXHAUSTED period ' .. p.id .. ' is full; the next starts in ' .. (p.stop - p.now) .. ' ms')
    end
    return {}
  end
  numberTaken(KEYS[1], p)
  return rcall('LPOP', list, count)
end

redis.register_function('idpool_number_pop', number_pop)
