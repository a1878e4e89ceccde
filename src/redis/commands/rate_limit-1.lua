--[[
  idpool_rate_limit: counts `count` ids against an entity's per-second limit,
  for entities whose ids do not come from a pool (snowflake). The same
  counter and the same Redis clock as idpool_take, so every instance counts
  one second alike, whatever its own clock says.

    FCALL idpool_rate_limit 1 idpool:{KEY}:rate: COUNT MAX

  Input:
    KEYS[1] rate counter prefix (the current second is appended)
    ARGV[1] count
    ARGV[2] max ids per second (> 0)

  Output:
    {0}                  admitted and counted
    {-3, retryAfterMs}   over the limit: nothing counted
]]
local function rateLimit(KEYS, ARGV)
  local key, retryAfterMs = rateWindow(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
  if not key then
    return {-3, retryAfterMs}
  end
  countRate(key, tonumber(ARGV[1]))
  return {0}
end

redis.register_function('idpool_rate_limit', rateLimit)
