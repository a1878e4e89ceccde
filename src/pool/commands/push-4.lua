--[[
  idpool_push: appends one segment of ids to an entity's pool, but only if
  the segment starts above every id ever pushed for the entity (the fence).
  A refiller that stalled past its lock TTL and pushes an older segment is
  refused, so the pool never goes out of order and never holds an id twice.

  Input:
    KEYS[1] ids list
    KEYS[2] fence (highest id ever pushed, decimal)
    KEYS[3] epoch marker
    KEYS[4] pushed counter (ids pushed in this epoch; pushed - size = ids taken, by any pop)
    ARGV[1] lowest id of the segment (decimal)
    ARGV[2] highest id of the segment (decimal)
    ARGV[3..n] the ids, in pop order

  Output:
    size of the pool after the push
    -2  epoch changed: the pool must be reset before anything is pushed
    -4  refused by the fence: a newer segment was pushed already
]]
local function push(KEYS, ARGV)
  local refused = refusePush(KEYS, ARGV[1])
  if refused then
    return refused
  end

  -- unpack() fails near 8,000 values (Lua C stack), so push in chunks of 1,000.
  local size = 0
  local n = #ARGV
  for i = 3, n, 1000 do
    size = rcall('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, n)))
  end
  rcall('SET', KEYS[2], ARGV[2])
  rcall('INCRBY', KEYS[4], n - 2)
  return size
end

redis.register_function('idpool_push', push)
