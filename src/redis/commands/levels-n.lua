--[[
  idpool_levels: the levels of many pools in one call (the refill sweep's
  read of its idle batch, 200 pools a second: one command where 200 LLEN
  and an MGET cost the client a command object, a timer and a reply each;
  inside, the same LLEN a pool and MGET). Read only, and touches no pool,
  so no epoch check. One server only: on a Cluster the pools live on many
  nodes, and the sweep pipelines LLEN and GET per node instead.

  Input (any number of pairs; `-n` in the file name):
    KEYS[2i-1] a pool's id list
    KEYS[2i]   its pushed counter

  Output:
    {size1, pushed1, size2, pushed2, ...} (a counter never set, or not a
    string, is false; a list key of the wrong type is an error in its
    place, the others answer)
]]
-- Counters per MGET: Lua's unpack has a limit on its results.
local MGET_CHUNK = 1000

local function levels(KEYS)
  local out = {}
  local n = #KEYS / 2
  for i = 1, n do
    out[2 * i - 1] = redis.pcall('LLEN', KEYS[2 * i - 1])
  end
  for first = 1, n, MGET_CHUNK do
    local last = math.min(first + MGET_CHUNK - 1, n)
    local counters = {}
    for i = first, last do
      counters[#counters + 1] = KEYS[2 * i]
    end
    local values = rcall('MGET', unpack(counters))
    for i = first, last do
      out[2 * i] = values[i - first + 1]
    end
  end
  return out
end

redis.register_function{function_name = 'idpool_levels', callback = levels, flags = {'no-writes'}}
