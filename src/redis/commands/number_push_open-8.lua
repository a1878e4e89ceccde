--[[
  idpool_number_push_open: the first step of a push of business numbers,
  one MULTI as a plain push is (push_open-6.lua says why: the numbers reach
  Redis by a native RPUSH, never as Lua strings):

    FCALL idpool_number_push_open   (this function: the checks)
    RPUSH <staging> number ...       (the numbers, in take order)
    FCALL idpool_push_close          (puts the staging list back, live or staged)

  The period goes to the live list (`ids`) when the Redis clock is in it,
  to the staged list when it is still ahead. A live period is set only when
  it starts no earlier than `latest` (then it becomes `latest`); the list
  it replaces is dropped (the old period's leftovers: gaps, never repeats).
  The numbers' sequences must start above the period's fence, the highest
  sequence ever pushed for it (a database restored from a backup repeats no
  number). Only when every check passes does the list move to the staging
  key, behind which the RPUSH appends; otherwise the RPUSH fills a staging
  list of its own that idpool_push_close deletes.

  Input:
    KEYS[1] period table
    KEYS[2] epoch marker
    KEYS[3] fence hash (period id → highest sequence pushed)
    KEYS[4] live list (the entity's `ids`)
    KEYS[5] staged list
    KEYS[6] staging list (the RPUSH's key)
    KEYS[7] open marker (from an accepted open to its close: the list the numbers go to)
    KEYS[8] pushed counter of the live list (numbers pushed to it; pushed - size = taken, by any pop)
    ARGV[1] period id
    ARGV[2] period start (Unix ms)
    ARGV[3] period end (Unix ms, the first instant after it)
    ARGV[4] lowest sequence pushed (decimal; '' with no numbers)
    ARGV[5] highest sequence pushed (decimal; '' with no numbers)
    ARGV[6] how many numbers the RPUSH appends (0: none, only the full mark)
    ARGV[7] 1 when the period's counter is now full

  Output:
    {0, slot}  accepted: 0 live, 1 staged
    {-2}       epoch changed
    {-4}       fenced: the lowest sequence is not above the period's fence
    {-8}       the period starts before `latest` (the Redis clock went back)
    {-9}       the period is over by the Redis clock
]]
local function number_push_open(KEYS, ARGV)
  -- Left by a MULTI that ran without the library: never part of a list.
  rcall('DEL', KEYS[6], KEYS[7])
  if rcall('GET', KEYS[2]) ~= epoch() then
    return {-2}
  end
  local now = redisNow()
  local h = numberPromote(KEYS[1], KEYS[4], KEYS[5], KEYS[8], now)
  local id, start, stop = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
  if start < tonumber(h[9] or '0') then
    return {-8}
  end
  if now >= stop then
    return {-9}
  end
  local slot
  if h[1] == id then
    slot = 0
  elseif h[5] == id then
    slot = 1
  else
    slot = start <= now and 0 or 1
    rcall('DEL', KEYS[4 + slot])
    rcall('HSET', KEYS[1], 'p' .. slot, id, 's' .. slot, start, 'e' .. slot, stop, 'x' .. slot, '0')
    if slot == 0 then
      rcall('HSET', KEYS[1], 'latest', start)
      rcall('SET', KEYS[8], '0')
    end
  end
  if tonumber(ARGV[6]) > 0 then
    local fence = rcall('HGET', KEYS[3], id)
    if fence and not greater(ARGV[4], fence) then
      return {-4}
    end
    local list = KEYS[4 + slot]
    if rcall('EXISTS', list) == 1 then
      rcall('RENAME', list, KEYS[6])
    end
    -- The live list expires at the period's last millisecond (Redis expires a key once its clock is past the time).
    rcall('SET', KEYS[7], slot == 0 and tostring(stop - 1) or 'staged')
    rcall('HSET', KEYS[3], id, ARGV[5])
    if slot == 0 then
      rcall('INCRBY', KEYS[8], ARGV[6])
    end
  end
  if ARGV[7] == '1' then
    rcall('HSET', KEYS[1], 'x' .. slot, '1')
  end
  return {0, slot}
end

redis.register_function('idpool_number_push_open', number_push_open)
