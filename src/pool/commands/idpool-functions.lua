#!lua name=idpool
--[[
  The guarded pop for trusted consumers that talk to Redis directly:

    FCALL idpool_pop 2 idpool:{KEY}:ids idpool:{KEY}:server COUNT

  Same rule as the service's own pop: all or nothing, and nothing from a
  pool filled on another Redis server (after a restart or failover the
  service discards and refills it within one refill tick).

  Output:
    {id, ...}                 COUNT ids
    {}                        fewer than COUNT ids ready; nothing taken
    error IDPOOL_SERVER_CHANGED  the pool is being rebuilt: retry shortly
]]
local function idpool_pop(keys, args)
  local runId = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  if redis.call('GET', keys[2]) ~= runId then
    return redis.error_reply('IDPOOL_SERVER_CHANGED pool filled on another Redis server; retry shortly')
  end
  local count = tonumber(args[1])
  if not count or count < 1 then
    return redis.error_reply('IDPOOL_BAD_COUNT count must be a positive integer')
  end
  if redis.call('LLEN', keys[1]) < count then
    return {}
  end
  return redis.call('LPOP', keys[1], count)
end

redis.register_function('idpool_pop', idpool_pop)
