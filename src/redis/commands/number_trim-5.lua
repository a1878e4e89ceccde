--[[
  idpool_number_trim: a business-number period raised (`POST
  /admin/apps/:key/raise`): drops the numbers at or below a sequence from
  the list holding that period, keeps those above it in their order, and
  raises the period's fence to the sequence. Numbers of one period differ
  only in their zero-padded sequence, so they compare as text as their
  sequences do. The list is read whole: a raise is an operator's rare step,
  and one above every number waiting drops the whole list anyway.

  Input:
    KEYS[1] period table
    KEYS[2] fence hash
    KEYS[3] live list (the entity's `ids`)
    KEYS[4] staged list
    KEYS[5] pushed counter of the live list (less what is dropped from it: dropped, not taken)
    ARGV[1] period id
    ARGV[2] the raised sequence's number, formatted
    ARGV[3] the raised sequence (decimal)

  Output: how many numbers were dropped
]]
local function number_trim(KEYS, ARGV)
  local upTo = ARGV[2]
  local dropped = 0
  for slot = 0, 1 do
    local list = KEYS[3 + slot]
    local all = rcall('HGET', KEYS[1], 'p' .. slot) == ARGV[1] and rcall('LRANGE', list, 0, -1) or {}
    local kept = {}
    for i = 1, #all do
      if all[i] > upTo then
        kept[#kept + 1] = all[i]
      end
    end
    if #kept < #all then
      dropped = #all - #kept
      local expiresAt = rcall('PEXPIRETIME', list)
      rcall('DEL', list)
      for i = 1, #kept, 5000 do
        rcall('RPUSH', list, unpack(kept, i, math.min(i + 4999, #kept)))
      end
      if expiresAt > 0 and #kept > 0 then
        rcall('PEXPIREAT', list, expiresAt)
      end
      if slot == 0 then
        rcall('INCRBY', KEYS[5], -dropped)
      end
    end
  end
  local fence = rcall('HGET', KEYS[2], ARGV[1])
  if not fence or greater(ARGV[3], fence) then
    rcall('HSET', KEYS[2], ARGV[1], ARGV[3])
  end
  return dropped
end

redis.register_function('idpool_number_trim', number_trim)
