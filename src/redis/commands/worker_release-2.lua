--[[
  idpool_worker_release: a holder that stops gives its worker id back. Its
  token goes, and the ceiling comes down to the last time unit it actually
  used (nothing above it was issued), so the next holder does not wait for
  its clock to pass a ceiling nobody used. Only while the caller still
  holds the worker id: after another claim the ceiling is the claimant's.
  It adds no memory (`allow-oom`).

  Input:
    KEYS[1] holders (hash: worker id -> token)
    KEYS[2] ceilings (sorted set: worker id -> Unix ms)
    ARGV[1] worker id
    ARGV[2] the holder's token
    ARGV[3] the last Unix ms it used

  Output:
     0  released
    -5  not the holder any more: nothing changed
]]
local function worker_release(KEYS, ARGV)
  if rcall('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
    return -5
  end
  rcall('HDEL', KEYS[1], ARGV[1])
  rcall('ZADD', KEYS[2], ARGV[3], ARGV[1])
  return 0
end

redis.register_function{function_name = 'idpool_worker_release', callback = worker_release, flags = {'allow-oom'}}
