--[[
  idpool_worker_claim: records a snowflake worker lease the database just
  granted (worker/lease.ts), outside the database, where restoring it from a
  backup cannot take it back (docs/ha.md "A restore and snowflake worker
  leases"). The new holder's token replaces whoever held the worker id
  before (their next renewal is refused), and the worker id's ceiling, the
  highest Unix ms any of its leases may have used, is read and raised in the
  same step: the new holder starts above it, so no time unit a previous
  holder could have used is used again, whatever the database's row says.
  An instance taking back the worker id whose renewal the database just
  refused (restored to an older version) names its lost token: if that is
  still the holder, nobody else used the worker id since, and the instance
  may start above what it used itself rather than above its ceiling.
  It adds one field at most per worker id (1,024 at most), so it runs on a
  server over maxmemory (`allow-oom`).

  Input:
    KEYS[1] holders (hash: worker id -> token)
    KEYS[2] ceilings (sorted set: worker id -> Unix ms)
    ARGV[1] worker id
    ARGV[2] the new holder's token
    ARGV[3] its ceiling, Unix ms
    ARGV[4] the caller's own lost token for this worker id ('' for none)

  Output:
    {ceiling, own}: the worker id's ceiling before this claim, Unix ms (0:
    none recorded), and 1 when the holder was ARGV[4], 0 otherwise
]]
local function worker_claim(KEYS, ARGV)
  local previous = rcall('ZSCORE', KEYS[2], ARGV[1])
  local own = ARGV[4] ~= '' and rcall('HGET', KEYS[1], ARGV[1]) == ARGV[4]
  rcall('HSET', KEYS[1], ARGV[1], ARGV[2])
  rcall('ZADD', KEYS[2], 'GT', ARGV[3], ARGV[1])
  return {tonumber(previous or '0'), own and 1 or 0}
end

redis.register_function{function_name = 'idpool_worker_claim', callback = worker_claim, flags = {'allow-oom'}}
