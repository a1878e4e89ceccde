--[[
  idpool_number_trim: a business-number period raised (`POST
  /admin/apps/:key/raise`): drops the numbers at or below a sequence from
  the list holding that period, keeps those above it in their order, and
  raises the period's fence to the sequence. Numbers of one period differ
  only in their zero-padded sequence, so they compare as text as their
  sequences do. A list is pushed step after step (a trend entity's shuffled
  within each), so past the raised sequence's step no number is at or below
  it: the scan stops after a step's worth of numbers above it.

  Input:
    KEYS[1] period table
    KEYS[2] fence hash
    KEYS[3] live list (the entity's `ids`)
    KEYS[4] staged list
    KEYS[5] pushed counter of the live list (less what is dropped from it: dropped, not taken)
    ARGV[1] period id
    ARGV[2] the raised sequence's number, formatted
    ARGV[3] the raised sequence (decimal)
    ARGV[4] the entity's step

  Output: how many numbers were dropped
]]
local function number_trim(KEYS, ARGV)
  local upTo, step = ARGV[2], tonumber(ARGV[4])
  local dropped = 0
  for slot = 0, 1 do
    local list = KEYS[3 + slot]
    if rcall('HGET', KEYS[1], 'p' .. slot) == ARGV[1] then
      local last, above, at = -1, 0, 0
      while above < step do
        local chunk = rcall('LRANGE', list, at, at + 999)
        if #chunk == 0 then
          break
        end
        for i = 1, #chunk do
          if chunk[i] <= upTo then
            last, above = at + i - 1, 0
          else
            above = above + 1
          end
        end
        at = at + #chunk
      end
      if last >= 0 then
        local expiresAt = rcall('PEXPIRETIME', list)
        local head = rcall('LRANGE', list, 0, last)
        rcall('LTRIM', list, last + 1, -1)
        local kept = {}
        for i = #head, 1, -1 do
          if head[i] > upTo then
            kept[#kept + 1] = head[i]
          end
        end
        dropped = #head - #kept
        if slot == 0 then
          rcall('INCRBY', KEYS[5], -dropped)
        end
        -- LPUSH of the reversed survivors puts them back at the head in their order.
        for i = 1, #kept, 5000 do
          rcall('LPUSH', list, unpack(kept, i, math.min(i + 4999, #kept)))
        end
        if expiresAt > 0 and rcall('EXISTS', list) == 1 then
          rcall('PEXPIREAT', list, expiresAt)
        end
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
