--[[
  idpool_number_push_close: the last step of a push of business numbers
  (see idpool_number_push_open). After an accepted open, the staging list
  (the list with the numbers appended) goes back as the live list, expiring
  at its period's end, or as the staged one; after a refused open, it holds
  only the refused numbers and is deleted. It frees memory and never adds
  any (`allow-oom`): refused numbers must not stay behind.

  Input:
    KEYS[1] live list (the entity's `ids`)
    KEYS[2] staged list
    KEYS[3] staging list
    KEYS[4] open marker

  Output:
    size of the list pushed to after the push (0 after a refused open)
]]
local function number_push_close(KEYS)
  local target = rcall('GET', KEYS[4])
  if not target then
    rcall('DEL', KEYS[3])
    return 0
  end
  rcall('DEL', KEYS[4])
  local list = target == 'staged' and KEYS[2] or KEYS[1]
  if rcall('EXISTS', KEYS[3]) == 1 then
    rcall('RENAME', KEYS[3], list)
    if target ~= 'staged' then
      rcall('PEXPIREAT', list, target)
    end
  end
  return rcall('LLEN', list)
end

redis.register_function{function_name = 'idpool_number_push_close', callback = number_push_close, flags = {'allow-oom'}}
