--[[
  idpool_push_range: idpool_push for a monotonic stretch of ids that the
  function writes itself, so the refiller sends five numbers instead of
  thousands of ids (measured here: the refill then costs Node nothing and
  Redis about what a plain RPUSH of the same ids costs). Ids are
  `(first + k) * clusterCount + clusterIndex` for k in [0, count). Only used
  while every id is below 2^53, where Lua's doubles are exact.

  Input:
    KEYS[1] ids list
    KEYS[2] fence (highest id ever pushed, decimal)
    KEYS[3] epoch marker
    KEYS[4] pushed counter (ids pushed in this epoch; pushed - size = ids taken, by any pop)
    ARGV[1] lowest id (decimal)
    ARGV[2] highest id (decimal)
    ARGV[3] first number of the line
    ARGV[4] count
    ARGV[5] cluster count
    ARGV[6] cluster index

  Output:
    size of the pool after the push
    -2  epoch changed: the pool must be reset before anything is pushed
    -4  refused by the fence: a newer segment was pushed already
]]
local function push_range(KEYS, ARGV)
  local refused = refusePush(KEYS, ARGV[1])
  if refused then
    return refused
  end

  local first, count = tonumber(ARGV[3]), tonumber(ARGV[4])
  local c, i = tonumber(ARGV[5]), tonumber(ARGV[6])
  local format = string.format
  local chunk, n, size = {}, 0, 0
  -- unpack() fails near 8,000 values (Lua C stack), so push in chunks of 1,000.
  for k = 0, count - 1 do
    n = n + 1
    chunk[n] = format('%d', (first + k) * c + i)
    if n == 1000 then
      size = rcall('RPUSH', KEYS[1], unpack(chunk, 1, n))
      n = 0
    end
  end
  if n > 0 then
    size = rcall('RPUSH', KEYS[1], unpack(chunk, 1, n))
  end
  rcall('SET', KEYS[2], ARGV[2])
  rcall('INCRBY', KEYS[4], count)
  return size
end

redis.register_function('idpool_push_range', push_range)
