--[[
  idpool_reset: claims an entity's pool for the Redis server answering now.
  If the pool was filled in another Redis epoch (restart with persistence,
  failover, or a fresh empty server), its ids may have been handed out
  already: the list is discarded and the fence raised to what the database
  says may be issued.

  Input:
    KEYS[1] ids list
    KEYS[2] fence
    KEYS[3] epoch marker
    KEYS[4] pushed counter (starts again with the new pool)
    ARGV[1] database fence: highest id that may have been issued (decimal), or '' for none

  Output:
    1  pool discarded and claimed for this epoch
    0  pool already belongs to this epoch (another instance reset it)
]]
local function reset(KEYS, ARGV)
  local now = epoch()
  if rcall('GET', KEYS[3]) == now then
    return 0
  end

  rcall('DEL', KEYS[1], KEYS[4])
  local fence = rcall('GET', KEYS[2])
  if ARGV[1] ~= '' and (not fence or greater(ARGV[1], fence)) then
    rcall('SET', KEYS[2], ARGV[1])
  end
  rcall('SET', KEYS[3], now)
  return 1
end

redis.register_function('idpool_reset', reset)
