--[[
  idpool_push_close: the last step of a push (see idpool_push_open and
  idpool_number_push_open). After an accepted open, the staging list (the
  pool with the segment appended) goes back to the list the open named:
  the pool, or for a business-number entity its staged list when the
  numbers are of the next period; a live list of numbers expires at its
  period's end. After a refused open, the staging list holds only the
  refused ids and is deleted. It frees memory and never adds any, so it
  runs even when the server is over maxmemory (`allow-oom`): refused ids
  must not stay behind.

  Input:
    KEYS[1] ids list
    KEYS[2] staging list
    KEYS[3] open marker: '1' (the pool), 'staged' (KEYS[4]), or the Unix ms
            the pool expires at (a business-number period's last)
    KEYS[4] a business-number entity's staged list (absent for a segment pool)

  Output:
    size of the list pushed to after the push (the pool's after a refused one)
]]
local function push_close(KEYS)
  local target = rcall('GET', KEYS[3])
  if not target then
    rcall('DEL', KEYS[2])
    return rcall('LLEN', KEYS[1])
  end
  rcall('DEL', KEYS[3])
  local list = target == 'staged' and KEYS[4] or KEYS[1]
  if rcall('EXISTS', KEYS[2]) == 1 then
    rcall('RENAME', KEYS[2], list)
    if target ~= '1' and target ~= 'staged' then
      rcall('PEXPIREAT', list, target)
    end
  end
  return rcall('LLEN', list)
end

redis.register_function{function_name = 'idpool_push_close', callback = push_close, flags = {'allow-oom'}}
