#!lua name=idpool
--[[
  idpool's Redis function library. Built at load time from this prelude and
  one file per function (`<name>-<numKeys>.lua`), loaded by every instance
  with FUNCTION LOAD REPLACE.

  Every function first checks that the pool was filled on the Redis server
  answering now: a restarted server (AOF that lost its last second, an older
  RDB snapshot) or a promoted replica has a new run_id, and its pools may
  hold ids already handed out.

  The run_id is read once per loaded library and kept in a library-level
  local: it survives between calls, and is gone with the process, so a
  restarted (or newly promoted) server reads its own again. This saves an
  INFO call (~12 µs) on every pop.
]]
-- redis.call exists only while a function runs, not while the library loads.
local function rcall(...)
  return redis.call(...)
end
local currentRunId

local function runId()
  if not currentRunId then
    currentRunId = string.match(rcall('INFO', 'server'), 'run_id:(%x+)')
  end
  return currentRunId
end

-- Ids may exceed 2^53, so they stay decimal strings: longer is larger.
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

-- The checks every push makes before writing: the pool belongs to the server
-- answering now (KEYS[3]), and the segment's lowest id is above the fence
-- (KEYS[2]). Returns -2 (server changed) or -4 (fenced) when refused.
local function refusePush(KEYS, lowest)
  if rcall('GET', KEYS[3]) ~= runId() then
    return -2
  end
  local fence = rcall('GET', KEYS[2])
  if fence and not greater(lowest, fence) then
    return -4
  end
end
