--[[
  idpool_push_open: the first step of a push. A push is one MULTI of three
  steps, so that Redis appends the ids with a native RPUSH (no id ever
  becomes a Lua string: measured here, building or copying the ids in a
  function cost Redis 150-240 us per 1,000, a native RPUSH ~30):

    FCALL idpool_push_open   (this function: the checks)
    RPUSH <staging> id ...   (the segment, in pop order)
    FCALL idpool_push_close  (puts the staging list back as the pool)

  Only when the checks pass does the pool move to the staging key, behind
  which the RPUSH appends; otherwise the RPUSH fills a staging list of its
  own that idpool_push_close deletes. Nothing runs between the steps of a
  MULTI, so no one ever sees the pool moved, and ids that were not checked
  (a refused push, or a library missing when the MULTI ran) never reach it.

  The checks (refusePush): the pool belongs to the server answering now's
  epoch, and the segment starts above every id ever pushed for the entity
  (the fence). A refiller that stalled past its lock TTL, or a push
  retried after its answer was lost, is refused, so the pool never goes out
  of order and never holds an id twice.

  Input:
    KEYS[1] ids list
    KEYS[2] fence (highest id ever pushed, decimal)
    KEYS[3] epoch marker
    KEYS[4] pushed counter (ids pushed in this epoch; pushed - size = ids taken, by any pop)
    KEYS[5] staging list (the RPUSH's key)
    KEYS[6] open marker (exists from an accepted open to its close)
    ARGV[1] lowest id of the segment (decimal)
    ARGV[2] highest id of the segment (decimal)
    ARGV[3] how many ids the RPUSH appends

  Output:
    0   accepted: the pool is at the staging key until idpool_push_close
    -2  epoch changed: the pool must be reset before anything is pushed
    -4  refused by the fence: a newer segment was pushed already
]]
local function push_open(KEYS, ARGV)
  -- Left by a MULTI that ran without the library: never part of the pool.
  rcall('DEL', KEYS[5], KEYS[6])
  local refused = refusePush(KEYS, ARGV[1])
  if refused then
    return refused
  end
  if rcall('EXISTS', KEYS[1]) == 1 then
    rcall('RENAME', KEYS[1], KEYS[5])
  end
  rcall('SET', KEYS[6], '1')
  rcall('SET', KEYS[2], ARGV[2])
  rcall('INCRBY', KEYS[4], ARGV[3])
  return 0
end

redis.register_function('idpool_push_open', push_open)
