--[[
  idpool_number_reset: drops an entity's numbers lists and raises fences,
  when the lists were filled in another Redis epoch (a restart or failover:
  they may hold numbers already handed out); then the epoch marker is set
  to now's. (A raise trims one period's list instead: number_trim-4.lua.)

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] fence hash
    KEYS[4] live list (the entity's `ids`)
    KEYS[5] staged list
    KEYS[6] pushed counter of the live list (starts again with it)
    ARGV[1] 'epoch'
    ARGV[2..] pairs: period id, sequence every number up to which may have been issued

  Output: 1 dropped, 0 nothing to drop (the epoch was current, or a new
  entity's first fill found no list to drop)
]]
local function number_reset(KEYS, ARGV)
  local dropped = 1
  local now = epoch()
  if rcall('GET', KEYS[2]) == now then
    return 0
  end
  rcall('DEL', KEYS[6])
  if rcall('DEL', KEYS[4], KEYS[5]) == 0 then
    dropped = 0
  end
  rcall('HDEL', KEYS[1], 'p0', 's0', 'e0', 'x0', 'p1', 's1', 'e1', 'x1')
  rcall('SET', KEYS[2], now)
  for i = 2, #ARGV - 1, 2 do
    local fence = rcall('HGET', KEYS[3], ARGV[i])
    if not fence or greater(ARGV[i + 1], fence) then
      rcall('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
    end
  end
  return dropped
end

redis.register_function('idpool_number_reset', number_reset)
