--[[
  idpool_lock_release: drops a refill lock if the caller still holds it: a
  holder that lost it never drops the lock of the refiller that took it
  over. It frees memory, so it runs on a server over maxmemory (`allow-oom`).

  Input:
    KEYS[1] refill lock
    ARGV[1] the holder's token

  Output:
    1  released
    0  not the caller's (taken over, lapsed, or taken in another epoch): nothing done
]]
local function lock_release(KEYS, ARGV)
  if rcall('GET', KEYS[1]) ~= ARGV[1] .. '@' .. epoch() then
    return 0
  end
  return rcall('DEL', KEYS[1])
end

redis.register_function{function_name = 'idpool_lock_release', callback = lock_release, flags = {'allow-oom'}}
