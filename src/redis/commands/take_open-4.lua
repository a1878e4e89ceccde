--[[
  idpool_take_open: the first step of the service's take, one MULTI of
  idpool_take_open, a native `LPOP <taking> count` and idpool_take_close.
  The ids never pass through Lua: turning 1,000 list elements into Lua
  strings and joining them cost Redis ~150 µs of the ~200 µs a take of 1,000
  spent (INFO commandstats, measured here); the native LPOP writes them
  straight into the reply.

  All or nothing: when every check passes, the pool is renamed to the
  taking key, so the LPOP that follows in the same MULTI pops `count` ids
  from it; when one fails, the taking key does not exist and the LPOP
  answers nil, taking nothing. idpool_take_close renames what is left back.
  Nothing runs between them (MULTI), so no other client ever sees the pool
  under the taking key.

  Input:
    KEYS[1] ids list
    KEYS[2] epoch marker (epoch `run_id:master_replid` the pool was filled in)
    KEYS[3] rate counter prefix (the current second is appended)
    KEYS[4] taking key (the LPOP's key)
    ARGV[1] count
    ARGV[2] max ids per second, 0 = unlimited

  Output:
    {0, remaining}      the LPOP takes `count` ids
    {-1, size}          short: fewer than count ids ready, nothing taken
    {-2}                epoch changed: pool must be discarded first
    {-3, retryAfterMs}  rate limited, nothing taken
]]
local function take_open(KEYS, ARGV)
  -- A MULTI never leaves one behind (take_close runs in it). One left by a
  -- take_open sent without its MULTI is not the pool any more (a reset may
  -- have come since): dropped, its ids are never handed out.
  rcall('DEL', KEYS[4])
  local count = tonumber(ARGV[1])
  local refused, rateKey, size = refuseTake(KEYS[1], KEYS[2], KEYS[3], count, tonumber(ARGV[2]))
  if refused then
    return refused
  end
  rcall('RENAME', KEYS[1], KEYS[4])
  if rateKey then
    countRate(rateKey, count)
  end
  return {0, size - count}
end

redis.register_function('idpool_take_open', take_open)
