-- GCRA for every bucket of one decision, atomically (contract::limits::gcra,
-- checked against contract/golden/limits.json by host-sim/tests/traffic.rs).
-- Times are Unix microseconds (exact in Lua's doubles until the year 2255).
-- KEYS[i]: the bucket keys, in the forward's order.
-- ARGV[1]: now in Unix microseconds, or "" for this server's clock (TIME),
--          so that every gateway sharing this server counts on one clock.
-- ARGV[2i], ARGV[2i+1]: bucket i's interval (microseconds) and burst.
-- Returns one {allowed, tat, remaining, reset, retry_after} per bucket
-- counted, and stops at the first that refuses (the later ones stay
-- uncounted). Each key expires when its TAT passes: it then holds nothing.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function secs_up(us)
  return math.floor((us + 999999) / 1000000)
end
local out = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  local stored = tonumber(redis.call('GET', key)) or 0
  local tat = math.max(stored, now)
  local next_tat = tat + interval
  local horizon = now + interval * burst
  if next_tat > horizon then
    out[i] = {0, stored, 0, secs_up(tat - now), math.max(secs_up(next_tat - horizon), 1)}
    return out
  end
  -- The key lives until its TAT, in whole milliseconds rounded up.
  local ttl = math.floor((next_tat - now + 999) / 1000)
  redis.call('SET', key, string.format('%d', next_tat), 'PX', string.format('%d', ttl))
  out[i] = {1, next_tat, math.floor((horizon - next_tat) / interval), secs_up(next_tat - now), 0}
end
return out
