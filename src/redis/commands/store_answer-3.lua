--[[
  idpool_store_answer: stores the answer to one Idempotency-Key of an entity,
  indexes it by time and drops the entity's expired answers and, beyond its
  caps (a count and bytes), its oldest, in one atomic call. The first stored
  answer wins: one already there is left alone and returned. (No epoch
  check: answers are not pools, and a lost answer only costs a retry a new
  batch.)

  Input:
    KEYS[1] answer key
    KEYS[2] index: the entity's answers as `requestKey\nbytes` by store time (Redis clock, ms)
    KEYS[3] bytes of the answers in the index
    ARGV[1] the encoded answer
    ARGV[2] how long answers are kept, ms
    ARGV[3] the request key (the answer key ends with it)
    ARGV[4] answers kept per entity
    ARGV[5] answer key less the request key (same hash tag as KEYS[1])
    ARGV[6] bytes this answer counts as
    ARGV[7] bytes of answers kept per entity

  Output:
    {1, now, minute, bytes, ...}
                  stored; `now` the Redis clock (ms), then the bytes of the
                  answers dropped beyond the caps by the minute (of the
                  Redis clock) each was stored in: they leave the total
    {0, answer}   an answer was stored first: it stands
    {0}           one was stored first and has just expired
]]

-- An index member's request key and bytes (a member without bytes counts 0).
local function answerOf(member)
  local requestKey, bytes = string.match(member, '^(.*)\n(%d+)$')
  if not requestKey then
    return member, 0
  end
  return requestKey, tonumber(bytes)
end

local function storeAnswer(KEYS, ARGV)
  local ttl = tonumber(ARGV[2])
  if not rcall('SET', KEYS[1], ARGV[1], 'PX', ttl, 'NX') then
    return {0, rcall('GET', KEYS[1])}
  end
  local now = rcall('TIME')
  local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  rcall('ZADD', KEYS[2], nowMs, ARGV[3] .. '\n' .. ARGV[6])
  local held = rcall('INCRBY', KEYS[3], ARGV[6])
  -- Expired answers are gone already (PX): their bytes leave the count.
  for _, member in ipairs(rcall('ZRANGEBYSCORE', KEYS[2], '-inf', nowMs - ttl)) do
    local _, bytes = answerOf(member)
    rcall('ZREM', KEYS[2], member)
    held = rcall('DECRBY', KEYS[3], bytes)
  end
  local count = rcall('ZCARD', KEYS[2])
  local maxCount, maxBytes = tonumber(ARGV[4]), tonumber(ARGV[7])
  local freed = {}
  while count > maxCount or held > maxBytes do
    -- ZPOPMIN answers member, score.
    local oldest = rcall('ZPOPMIN', KEYS[2])
    if #oldest == 0 then
      break
    end
    local requestKey, bytes = answerOf(oldest[1])
    rcall('DEL', ARGV[5] .. requestKey)
    held = rcall('DECRBY', KEYS[3], bytes)
    count = count - 1
    local minute = math.floor(tonumber(oldest[2]) / 60000)
    freed[minute] = (freed[minute] or 0) + bytes
  end
  -- An idle entity's index and count go with its last answer.
  rcall('PEXPIRE', KEYS[2], ttl)
  rcall('PEXPIRE', KEYS[3], ttl)
  local reply = {1, nowMs}
  for minute, bytes in pairs(freed) do
    reply[#reply + 1] = minute
    reply[#reply + 1] = bytes
  end
  return reply
end

redis.register_function('idpool_store_answer', storeAnswer)
