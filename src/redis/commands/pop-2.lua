--[[
  idpool_pop: the guarded pop for trusted consumers that talk to Redis
  directly:

    FCALL idpool_pop 2 idpool:{KEY}:ids idpool:{KEY}:server COUNT

  Same rule as the service's own take: all or nothing, and nothing from a
  pool filled in another Redis epoch (after a restart, failover or failback the
  service discards and refills it within a second).

  Input:
    KEYS[1] ids list
    KEYS[2] epoch marker
    ARGV[1] count

  Output:
    {id, ...}                    COUNT ids
    {}                           fewer than COUNT ids ready; nothing taken
    error IDPOOL_SERVER_CHANGED  the pool is being rebuilt: retry shortly
]]
local function pop(KEYS, ARGV)
  if rcall('GET', KEYS[2]) ~= epoch() then
    return redis.error_reply('IDPOOL_SERVER_CHANGED pool filled in another Redis epoch (restart or failover); retry shortly')
  end
  local count = tonumber(ARGV[1])
  if not count or count < 1 or count ~= math.floor(count) then
    return redis.error_reply('IDPOOL_BAD_COUNT count must be a positive integer')
  end
  if rcall('LLEN', KEYS[1]) < count then
    return {}
  end
  return rcall('LPOP', KEYS[1], count)
end

redis.register_function('idpool_pop', pop)
