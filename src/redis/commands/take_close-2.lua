--[[
  idpool_take_close: the last step of a take (see idpool_take_open). What
  the LPOP left under the taking key becomes the pool again; a take that
  emptied the pool left no key. It frees memory and never adds any, so it
  runs even when the server is over maxmemory (`allow-oom`): the pool must
  never stay under the taking key.

  Input:
    KEYS[1] taking key
    KEYS[2] ids list

  Output:
    1 when the pool was put back, 0 when there was nothing to put back
]]
local function take_close(KEYS)
  if rcall('EXISTS', KEYS[1]) == 1 then
    rcall('RENAME', KEYS[1], KEYS[2])
    return 1
  end
  return 0
end

redis.register_function{function_name = 'idpool_take_close', callback = take_close, flags = {'allow-oom'}}
