--[[
  idpool_raise_fence: an entity's number line was moved up (an import found
  the old service had issued further). Its ready ids may lie below the new
  line: the list is dropped and the fence raised to the highest id below the
  line in one step, so a refill that reserved before the move has its push
  refused (it starts at or below the fence) and nothing below the line is
  handed out.

  Input:
    KEYS[1] ids list
    KEYS[2] fence
    KEYS[3] pushed counter
    KEYS[4] push-in-progress marker
    ARGV[1] highest id below the new line (decimal)

  Output:
    1
]]
local function raise_fence(KEYS, ARGV)
  rcall('DEL', KEYS[1], KEYS[3], KEYS[4])
  local fence = rcall('GET', KEYS[2])
  if not fence or greater(ARGV[1], fence) then
    rcall('SET', KEYS[2], ARGV[1])
  end
  return 1
end

redis.register_function('idpool_raise_fence', raise_fence)
