--[[
  idpool_levels: the levels of many pools in one call (the refill sweep's
  read of its idle batch, 200 pools a second: one command instead of 200
  LLEN and an MGET, each a command object, a timer and a reply in the
  client). Read only; touches no pool, so no epoch check. One server only:
  on a Cluster the pools live on many nodes, and the sweep pipelines LLEN
  and GET per node instead.

  Input (any number of pairs; `-n` in the file name):
    KEYS[2i-1] a pool's id list
    KEYS[2i]   its pushed counter

  Output:
    {size1, pushed1, size2, pushed2, ...} (a counter never set is false;
    a key of the wrong type is an error in its place, the others answer)
]]
local function levels(KEYS)
  local out = {}
  for i = 1, #KEYS, 2 do
    out[i] = redis.pcall('LLEN', KEYS[i])
    out[i + 1] = redis.pcall('GET', KEYS[i + 1])
  end
  return out
end

redis.register_function{function_name = 'idpool_levels', callback = levels, flags = {'no-writes'}}
