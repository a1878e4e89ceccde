--[[
  idpool_push_close: the last step of a push (see idpool_push_open). After
  an accepted open, the staging list (the pool with the segment appended)
  becomes the pool again; after a refused one, the staging list holds only
  the refused segment and is deleted. It frees memory and never adds any,
  so it runs even when the server is over maxmemory (`allow-oom`): a
  refused segment must not stay behind.

  Input:
    KEYS[1] ids list
    KEYS[2] staging list
    KEYS[3] open marker

  Output:
    size of the pool after the push
]]
local function push_close(KEYS)
  if rcall('DEL', KEYS[3]) == 1 then
    if rcall('EXISTS', KEYS[2]) == 1 then
      rcall('RENAME', KEYS[2], KEYS[1])
    end
  else
    rcall('DEL', KEYS[2])
  end
  return rcall('LLEN', KEYS[1])
end

redis.register_function{function_name = 'idpool_push_close', callback = push_close, flags = {'allow-oom'}}
