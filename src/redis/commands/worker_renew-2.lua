--[[
  idpool_worker_renew: a snowflake worker lease's heartbeat, on the record
  idpool_worker_claim keeps. Refused when another instance has claimed the
  worker id since (the database was restored and gave the row away): the
  holder stops issuing at once and leases again. Otherwise the ceiling is
  raised before the holder may use it. A token missing altogether (a Redis
  server that came back empty) is written back: the database still says who
  holds the worker id, and the first of two claimants to renew keeps it.
  Adds one field at most (`allow-oom`, as idpool_worker_claim).

  Input:
    KEYS[1] holders (hash: worker id -> token)
    KEYS[2] ceilings (sorted set: worker id -> Unix ms)
    ARGV[1] worker id
    ARGV[2] the holder's token
    ARGV[3] its new ceiling, Unix ms

  Output:
     0  renewed
    -5  not the holder: another instance claimed the worker id since
]]
local function worker_renew(KEYS, ARGV)
  local holder = rcall('HGET', KEYS[1], ARGV[1])
  if holder and holder ~= ARGV[2] then
    return -5
  end
  if not holder then
    rcall('HSET', KEYS[1], ARGV[1], ARGV[2])
  end
  rcall('ZADD', KEYS[2], 'GT', ARGV[3], ARGV[1])
  return 0
end

redis.register_function{function_name = 'idpool_worker_renew', callback = worker_renew, flags = {'allow-oom'}}
