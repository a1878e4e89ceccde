--[[
  idpool_number_push: appends formatted numbers of one period to a slot.
  The slot takes the period when it is empty or its period is over by the
  Redis clock (the old leftovers dropped: gaps, never repeats); a slot
  holding another period that is not over refuses. The numbers' sequences
  must start above the period's fence, the highest sequence ever pushed
  for it (a database restored from a backup repeats no number).

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] fence hash (period id → highest sequence pushed)
    KEYS[4] numbers list of slot 0
    KEYS[5] numbers list of slot 1
    ARGV[1] slot (0 or 1)
    ARGV[2] period id
    ARGV[3] period start (Unix ms)
    ARGV[4] period end (Unix ms)
    ARGV[5] lowest sequence pushed ('' with no numbers)
    ARGV[6] highest sequence pushed ('' with no numbers)
    ARGV[7] 1 when the period's counter is now full
    ARGV[8..] the numbers, in take order

  Output:
    {0, size}  pushed; the slot's list size after
    {-2}       epoch changed
    {-4}       fenced: the lowest sequence is not above the period's fence
    {-9}       the slot holds another period that is not over
]]
local function number_push(KEYS, ARGV)
  if rcall('GET', KEYS[2]) ~= epoch() then
    return {-2}
  end
  local slot = ARGV[1]
  local list = KEYS[4 + tonumber(slot)]
  local held = rcall('HMGET', KEYS[1], 'p' .. slot, 'e' .. slot)
  if held[1] ~= ARGV[2] then
    local t = rcall('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if held[1] and tonumber(held[2]) > now then
      return {-9}
    end
    rcall('DEL', list)
    rcall('HSET', KEYS[1], 'p' .. slot, ARGV[2], 's' .. slot, ARGV[3], 'e' .. slot, ARGV[4], 'x' .. slot, '0')
  end
  if #ARGV > 7 then
    local fence = rcall('HGET', KEYS[3], ARGV[2])
    if fence and not greater(ARGV[5], fence) then
      return {-4}
    end
    rcall('RPUSH', list, unpack(ARGV, 8))
    rcall('HSET', KEYS[3], ARGV[2], ARGV[6])
  end
  if ARGV[7] == '1' then
    rcall('HSET', KEYS[1], 'x' .. slot, '1')
  end
  return {0, rcall('LLEN', list)}
end

redis.register_function('idpool_number_push', number_push)
