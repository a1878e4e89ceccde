--[[
  idpool_take: the service's take in one function. Takes `count` ids from
  the head of one entity's pool, all or nothing, and counts them against
  the entity's per-second limit (shared by every instance, timed by the
  Redis server's clock).

  The service takes 256 ids or more with idpool_take_open, LPOP and
  idpool_take_close in one MULTI, which costs Redis a quarter of what this
  function does for 1,000 (here every id becomes a Lua string), and fewer
  with this function, one call. A server over maxmemory refuses every
  command queued in a MULTI, and a take frees memory: there every take is
  this function, flagged `allow-oom` so that such a server runs it (all it
  adds is the per-second counter, a few bytes that expire in two seconds).
  The pool's ids keep being handed out while the refills are refused.

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
  local count = tonumber(ARGV[1])
  local refused, rateKey, size = refuseTake(KEYS[1], KEYS[2], KEYS[3], count, tonumber(ARGV[2]))
  if refused then
    return refused
  end
  local ids = rcall('LPOP', KEYS[1], count)
  if rateKey then
    countRate(rateKey, count)
  end
  return {0, size - count, table.concat(ids, ',')}
end

redis.register_function{function_name = 'idpool_take', callback = take, flags = {'allow-oom'}}
