--[[
  idpool_take: the service's pop. Takes `count` ids from the head of one
  entity's pool, all or nothing, and counts them against the entity's
  per-second limit (shared by every instance, timed by the Redis server's
  clock).

  Input:
    KEYS[1] ids list
    KEYS[2] epoch marker (epoch `run_id:master_replid` the pool was filled in)
    KEYS[3] rate counter prefix (the current second is appended)
    ARGV[1] count
    ARGV[2] max ids per second, 0 = unlimited

  Output:
    {0, remaining, 'id,id,...'} taken; the ids joined by commas, because one
                               bulk string costs the client far less to
                               parse than a thousand (measured here)
    {-1, size}                 short: fewer than count ids ready, nothing taken
    {-2}                       epoch changed: pool must be discarded first
    {-3, retryAfterMs}         rate limited, nothing taken
]]
local function take(KEYS, ARGV)
  if rcall('GET', KEYS[2]) ~= epoch() then
    return {-2}
  end

  local count = tonumber(ARGV[1])
  local limit = tonumber(ARGV[2])
  local rateKey
  if limit > 0 then
    local retryAfterMs
    rateKey, retryAfterMs = rateWindow(KEYS[3], count, limit)
    if not rateKey then
      return {-3, retryAfterMs}
    end
  end

  local size = rcall('LLEN', KEYS[1])
  if size < count then
    return {-1, size}
  end

  local ids = rcall('LPOP', KEYS[1], count)
  if rateKey then
    countRate(rateKey, count)
  end
  return {0, size - count, table.concat(ids, ',')}
end

redis.register_function('idpool_take', take)
