/**
 * The Lua scripts of the Redis counter store: each store operation is one script, so each is one atomic
 * round trip, and a decision over all of a request's limits and its budget is all-or-nothing however many
 * replicas ask at once.
 *
 * The arithmetic is the in-memory store's, written the same way (same operations in the same order on IEEE
 * doubles), so both stores take the same decisions for the same sequences; numbers go back as strings
 * (`%.17g`), because Redis truncates Lua numbers to integers in replies.
 *
 * Time is Redis's own (`TIME`), so replicas whose clocks disagree still refill buckets alike; a test may
 * pass its own clock in `ARGV[1]` (empty means `TIME`). Scripts replicate by effects (the Redis 7 default),
 * which is what makes `TIME` before a write allowed.
 *
 * Every expiry is set relative to that clock (`PEXPIRE` by `expires_at - now`, never `PEXPIREAT`): on
 * Redis's clock the two are the same instant, and under a test's clock a period counter lives as long as the
 * test's period does, rather than vanishing once the real date passes the pinned one. A non-positive time to
 * live deletes the key, as a past `PEXPIREAT` would.
 *
 * @module
 */

const PRELUDE = `
local EPS = 1e-9
local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(x) return string.format('%.17g', x) end
local function bucket_level(key, limit, window, t)
  local s = redis.call('HMGET', key, 'l', 'a')
  if not s[1] then return limit end
  local elapsed = math.max(0, t - tonumber(s[2]))
  return math.min(limit, tonumber(s[1]) + (elapsed * limit) / window)
end
local function until_full(level, limit, window)
  if level >= limit - EPS then return 0 end
  return math.ceil(((limit - level) * window) / limit)
end
local function until_available(level, amount, limit, window)
  if level >= amount - EPS then return 0 end
  return math.ceil(((amount - level) * window) / limit)
end
local function set_bucket(key, level, limit, window, t)
  local full = until_full(level, limit, window)
  if full == 0 then
    redis.call('DEL', key)
  else
    redis.call('HSET', key, 'l', fmt(level), 'a', fmt(t))
    redis.call('PEXPIRE', key, full)
  end
end
local function period_value(key)
  return tonumber(redis.call('GET', key) or '0') or 0
end
local function set_period(key, value, expires_at, t)
  redis.call('SET', key, fmt(value))
  redis.call('PEXPIRE', key, math.floor(expires_at - t))
end
local function live_slots(key, t)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(t))
  return redis.call('ZCARD', key)
end
local function release_slot(key, member, t)
  if member ~= '' then
    redis.call('ZREM', key, member)
  elseif live_slots(key, t) > 0 then
    redis.call('ZPOPMIN', key)
  end
end
`;

/**
 * `reserve`: KEYS = one key per check, then (optional) a marker key; ARGV[1] = clock, then five values per
 * check: kind (`b` bucket, `c` concurrency, `p` period), limit, window (bucket) or time-to-live (concurrency,
 * ms), amount, expiry (period, epoch ms), then the marker's time-to-live (ms) and the reservation's id.
 * Replies `{all_ok, then per check: ok, used, remaining, reset_ms, retry_after_ms}`. When every check passed,
 * the marker is set: a client that gave up waiting for this reply can still undo what the script took
 * (`UNDO_LUA`).
 *
 * A concurrency counter is a sorted set of the slots taken, each the id of the reservation that took it,
 * scored by the instant it expires (its time-to-live after the take): a slot that is never given back (its
 * replica died, its settlement was lost) comes back on its own when that instant passes, however busy the
 * counter stays meanwhile. Slots past their instant are trimmed before counting.
 */
export const RESERVE_LUA = PRELUDE + `
local t = now_ms()
local n = math.floor((#ARGV - 1) / 5)
local kinds, limits, windows, amounts, expiries, levels, useds, oks = {}, {}, {}, {}, {}, {}, {}, {}
local all = true
for i = 1, n do
  local o = 1 + (i - 1) * 5
  kinds[i] = ARGV[o + 1]
  limits[i] = tonumber(ARGV[o + 2])
  windows[i] = tonumber(ARGV[o + 3])
  amounts[i] = tonumber(ARGV[o + 4])
  expiries[i] = tonumber(ARGV[o + 5])
  if kinds[i] == 'b' then
    levels[i] = bucket_level(KEYS[i], limits[i], windows[i], t)
    oks[i] = amounts[i] <= 0 or levels[i] >= amounts[i] - EPS
  elseif kinds[i] == 'c' then
    useds[i] = live_slots(KEYS[i], t)
    oks[i] = useds[i] < limits[i]
  else
    useds[i] = period_value(KEYS[i])
    if amounts[i] > 0 then oks[i] = useds[i] + amounts[i] <= limits[i] + EPS else oks[i] = useds[i] < limits[i] end
  end
  if not oks[i] then all = false end
end
local member = ARGV[3 + 5 * n] or ''
local out = { all and '1' or '0' }
for i = 1, n do
  local ok, used, remaining, reset, retry = oks[i], 0, 0, 0, 0
  if kinds[i] == 'b' then
    local level = levels[i]
    if all and amounts[i] > 0 then
      level = level - amounts[i]
      set_bucket(KEYS[i], level, limits[i], windows[i], t)
    end
    used = limits[i] - level
    remaining = math.max(0, math.floor(level + EPS))
    reset = until_full(level, limits[i], windows[i])
    if not ok then retry = until_available(level, amounts[i], limits[i], windows[i]) end
  elseif kinds[i] == 'c' then
    used = useds[i]
    if all then
      redis.call('ZADD', KEYS[i], fmt(t + windows[i]), member)
      -- The key outlives its latest slot, so it goes with its slots when the counter is left alone.
      redis.call('PEXPIRE', KEYS[i], windows[i])
      used = redis.call('ZCARD', KEYS[i])
    end
    remaining = math.max(0, limits[i] - used)
  else
    used = useds[i]
    if all and amounts[i] > 0 then
      used = used + amounts[i]
      set_period(KEYS[i], used, expiries[i], t)
    end
    remaining = math.max(0, limits[i] - used)
  end
  table.insert(out, ok and '1' or '0')
  table.insert(out, fmt(used))
  table.insert(out, fmt(remaining))
  table.insert(out, fmt(reset))
  table.insert(out, fmt(retry))
end
if all and KEYS[n + 1] then redis.call('SET', KEYS[n + 1], '1', 'PX', tonumber(ARGV[2 + 5 * n])) end
return out
`;

/**
 * `undo`: gives back what a `reserve` took, if it took anything and was not undone yet: KEYS[1] = that reserve's
 * marker, then its KEYS; ARGV = its ARGV (clock, five values per check, marker time-to-live, id). The marker says
 * it took (it is set only when every check passed) and is deleted here, so an undo runs once however often it is
 * sent.
 */
export const UNDO_LUA = PRELUDE + `
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
local t = now_ms()
for i = 1, #KEYS - 1 do
  local key = KEYS[i + 1]
  local o = 1 + (i - 1) * 5
  local kind, limit, window, amount = ARGV[o + 1], tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4])
  if kind == 'c' then
    redis.call('ZREM', key, ARGV[#ARGV])
  elseif kind == 'b' then
    if amount > 0 then
      set_bucket(key, math.min(limit, bucket_level(key, limit, window, t) + amount), limit, window, t)
    end
  elseif amount > 0 then
    set_period(key, math.max(0, period_value(key) - amount), tonumber(ARGV[o + 5]), t)
  end
end
return 1
`;

/** `adjust`: KEYS[1] = bucket; ARGV = clock, limit, window, delta. */
export const ADJUST_LUA = PRELUDE + `
local t = now_ms()
local limit, window, delta = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local level = bucket_level(KEYS[1], limit, window, t) - delta
set_bucket(KEYS[1], math.min(limit, level), limit, window, t)
return 1
`;

/**
 * `release`: KEYS[1] = concurrency counter; ARGV[1] = clock. Gives back one slot not named (the one nearest its
 * expiry); a set left empty is no key, so an idle counter leaves none.
 */
export const RELEASE_LUA = PRELUDE + `
release_slot(KEYS[1], '', now_ms())
return 1
`;

/** `periodAdd` (ARGV[4] = `add`) or `periodRaise` (`raise`): KEYS[1] = counter; ARGV = clock, value, expiry. */
export const PERIOD_LUA = PRELUDE + `
local t = now_ms()
local value, expires_at = tonumber(ARGV[2]), tonumber(ARGV[3])
local current = period_value(KEYS[1])
local next_value
if ARGV[4] == 'raise' then next_value = math.max(current, value) else next_value = math.max(0, current + value) end
set_period(KEYS[1], next_value, expires_at, t)
return fmt(next_value)
`;

/**
 * `settle`: what an admission gives back when it ends, in one script. KEYS = the concurrency counters to
 * release, then the buckets to adjust, then the period counters to add to, then (with an id) the reservation's
 * marker; ARGV = clock, the three counts, the reservation's id (or empty), the marker's time-to-live, then limit,
 * window, delta per bucket and amount, expiry per period counter.
 *
 * With an id, the admission's own slots are given back, and the marker is set to `settled` (for its
 * time-to-live): a settlement sent again, because its reply never came, finds it and does nothing, so it counts
 * once however often it is sent within that time. Replies 1 when it settled, 0 when it had already.
 */
export const SETTLE_LUA = PRELUDE + `
local t = now_ms()
local nr, na, np = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local id = ARGV[5]
if id ~= '' then
  local marker = KEYS[nr + na + np + 1]
  if redis.call('GET', marker) == 'settled' then return 0 end
  redis.call('SET', marker, 'settled', 'PX', tonumber(ARGV[6]))
end
for i = 1, nr do release_slot(KEYS[i], id, t) end
local o = 7
for i = 1, na do
  local key = KEYS[nr + i]
  local limit, window, delta = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  o = o + 3
  local level = bucket_level(key, limit, window, t) - delta
  set_bucket(key, math.min(limit, level), limit, window, t)
end
for i = 1, np do
  local key = KEYS[nr + na + i]
  local amount, expires_at = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  o = o + 2
  set_period(key, math.max(0, period_value(key) + amount), expires_at, t)
end
return 1
`;

/**
 * `peek`: what `reserve` would answer for the same KEYS and ARGV, without writing anything (a concurrency
 * check takes no slot). Replies `{per check: ok, used, remaining, reset_ms, retry_after_ms}`.
 */
export const PEEK_LUA = PRELUDE + `
local t = now_ms()
local out = {}
for i = 1, #KEYS do
  local o = 1 + (i - 1) * 5
  local kind, limit, window, amount = ARGV[o + 1], tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4])
  local ok, used, remaining, reset, retry = true, 0, 0, 0, 0
  if kind == 'b' then
    local level = bucket_level(KEYS[i], limit, window, t)
    ok = amount <= 0 or level >= amount - EPS
    used = limit - level
    remaining = math.max(0, math.floor(level + EPS))
    reset = until_full(level, limit, window)
    if not ok then retry = until_available(level, amount, limit, window) end
  elseif kind == 'c' then
    used = redis.call('ZCOUNT', KEYS[i], '(' .. fmt(t), '+inf')
    ok = used < limit
    remaining = math.max(0, limit - used)
  else
    used = period_value(KEYS[i])
    if amount > 0 then ok = used + amount <= limit + EPS else ok = used < limit end
    remaining = math.max(0, limit - used)
  end
  table.insert(out, ok and '1' or '0')
  table.insert(out, fmt(used))
  table.insert(out, fmt(remaining))
  table.insert(out, fmt(reset))
  table.insert(out, fmt(retry))
end
return out
`;
