--[[
  idpool_lock_extend: renews a refill lock's lease if the caller still holds
  it (idpool_lock_acquire). A holder whose lock was taken over, or lapsed,
  learns it here and stops extending. It adds no memory, so it runs on a
  server over maxmemory (`allow-oom`): a refill under way there keeps its lock.

  Input:
    KEYS[1] refill lock
    ARGV[1] the holder's token
    ARGV[2] lease, ms

  Output:
    1  extended
    0  not the caller's any more (taken over, lapsed, dropped by idpool_unlock_stale,
       or taken in another epoch)
]]
local function lock_extend(KEYS, ARGV)
  if rcall('GET', KEYS[1]) ~= ARGV[1] .. '@' .. epoch() then
    return 0
  end
  return rcall('PEXPIRE', KEYS[1], ARGV[2])
end

redis.register_function{function_name = 'idpool_lock_extend', callback = lock_extend, flags = {'allow-oom'}}
