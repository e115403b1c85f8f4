/// The Lua scripts the Redis store runs: each is one atomic step on the server, so two relays
/// on one Redis see the caps, the per-device trim and the leases the same way.
///
/// What is in Redis (database of `STORE_URL`):
/// - `apns-relay:held`: a stream, one entry per held push (its fields: `RedisCodec.fieldNames`),
///   with the consumer group `relay`. An entry is leased while it is pending for a relay's own
///   consumer; released ones are pending for the consumer `released`, due at once.
/// - `apns-relay:expiry`: a sorted set of entry ids scored by arrival + TTL (Unix ms).
/// - `apns-relay:device:<token>`: a list of a device's entry ids, oldest first (its cap).
/// - `apns-relay:totals`: a hash, `entries` and `bytes` held (the caps' bookkeeping).
///
/// Leases run on the callers' clock, as `take`'s `nowMs` says, not on Redis's: a taken entry's
/// delivery time (what XAUTOCLAIM's min-idle-time is measured from) is set to its lease's end
/// minus `leaseEpochMs`, and XAUTOCLAIM is asked for entries idle at least Redis's now − the
/// caller's now + `leaseEpochMs`: an entry is claimed again exactly when the caller's now has
/// reached its lease's end, whatever the skew between the clocks. (XPENDING's idle times
/// therefore read about 31 years.)
enum RedisScripts {
    static let stream = "apns-relay:held"
    static let group = "relay"
    static let released = "released"
    static let leaseEpochMs: Int64 = 1_000_000_000_000

    private static let prelude = """
        local S, X, T, DP, G, IDLE = 'apns-relay:held', 'apns-relay:expiry', 'apns-relay:totals', 'apns-relay:device:', 'relay', 'released'
        local function n(x) return string.format('%d', x) end
        local function field(fields, name)
          for i = 1, #fields, 2 do if fields[i] == name then return fields[i + 1] end end
          return nil
        end
        local function remove(id)
          local found = redis.call('XRANGE', S, id, id)
          if #found == 0 then return 0 end
          local fields = found[1][2]
          redis.call('XACK', S, G, id)
          redis.call('XDEL', S, id)
          redis.call('ZREM', X, id)
          redis.call('LREM', DP .. (field(fields, 'd') or ''), 1, id)
          redis.call('HINCRBY', T, 'entries', -1)
          redis.call('HINCRBY', T, 'bytes', -(tonumber(field(fields, 'b')) or 0))
          return 1
        end
        -- XCLAIM of `ids` to `owner` with delivery time `time` (unpack expands only in last place).
        local function claim(owner, ids, time)
          local args = {'XCLAIM', S, G, owner, 0}
          for _, id in ipairs(ids) do table.insert(args, id) end
          table.insert(args, 'TIME'); table.insert(args, time); table.insert(args, 'JUSTID')
          return redis.call(unpack(args))
        end
        local function leased(id)
          local p = redis.call('XPENDING', S, G, id, id, 1)
          return #p > 0 and p[1][2] ~= IDLE
        end

        """

    /// ARGV: maxEntries, maxBytes, maxPerDevice, puts; then per put its push count and per
    /// push `RedisCodec.pushArity` values. Answers per put {1, dropped, id...} or {0, why}.
    static let put = prelude + """
        local maxEntries, maxBytes, maxPerDevice = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
        local puts, at = tonumber(ARGV[4]), 5
        local results = {}
        for p = 1, puts do
          local count = tonumber(ARGV[at]); at = at + 1
          local entries = tonumber(redis.call('HGET', T, 'entries') or '0')
          local bytes = tonumber(redis.call('HGET', T, 'bytes') or '0')
          local added = 0
          for i = 0, count - 1 do added = added + tonumber(ARGV[at + i * 16 + 14]) end
          if entries + count > maxEntries then
            results[p] = {0, 'the store holds ' .. n(entries) .. ' pushes; its cap is ' .. n(maxEntries)}
          elseif bytes + added > maxBytes then
            results[p] = {0, 'the store holds ' .. n(bytes) .. ' bytes; its cap is ' .. n(maxBytes)}
          else
            local result, devices, order = {1, 0}, {}, {}
            for i = 0, count - 1 do
              local a = at + i * 16
              local fields = {'r', ARGV[a], 'e', ARGV[a + 1], 'a', ARGV[a + 2], 'd', ARGV[a + 3], 't', ARGV[a + 4],
                              'i', ARGV[a + 5], 'p', ARGV[a + 6], 'y', ARGV[a + 9], 'u', ARGV[a + 10], 'at', ARGV[a + 11],
                              'ttl', ARGV[a + 12], 'x', ARGV[a + 13], 'b', ARGV[a + 14], 'pl', ARGV[a + 15]}
              if ARGV[a + 7] == '1' then table.insert(fields, 'c'); table.insert(fields, ARGV[a + 8]) end
              local id = redis.call('XADD', S, '*', unpack(fields))
              redis.call('ZADD', X, ARGV[a + 13], id)
              redis.call('RPUSH', DP .. ARGV[a + 3], id)
              table.insert(result, id)
              if not devices[ARGV[a + 3]] then devices[ARGV[a + 3]] = true; table.insert(order, ARGV[a + 3]) end
            end
            redis.call('HINCRBY', T, 'entries', count)
            redis.call('HINCRBY', T, 'bytes', added)
            for _, device in ipairs(order) do
              local key = DP .. device
              local length = redis.call('LLEN', key)
              if length > maxPerDevice then
                for _, id in ipairs(redis.call('LRANGE', key, 0, length - maxPerDevice - 1)) do
                  if not leased(id) then result[2] = result[2] + remove(id) end
                end
              end
            end
            results[p] = result
          end
          at = at + count * 16
        end
        return results
        """

    /// ARGV: max, nowMs, leaseMs, consumer. Answers the entries taken, oldest first, as
    /// XRANGE does ({id, {field, value...}}...).
    static let take = prelude + """
        local max, now, lease, me = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
        local epoch = \(leaseEpochMs)
        if max <= 0 then return {} end
        local t = redis.call('TIME')
        local rnow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local leaseTime = now + lease - epoch
        if leaseTime < 1 then leaseTime = 1 end
        if leaseTime > rnow then leaseTime = rnow end
        local minIdle = rnow - now + epoch
        if minIdle < 0 then minIdle = 0 end
        local out, ids, skipped = {}, {}, {}
        local function consider(entry)
          if entry and entry[2] then
            if tonumber(field(entry[2], 'x')) <= now then table.insert(skipped, entry[1])
            else table.insert(out, entry); table.insert(ids, entry[1]) end
          end
        end
        local cursor = '0-0'
        repeat
          local r = redis.call('XAUTOCLAIM', S, G, me, n(minIdle), cursor, 'COUNT', max - #out)
          cursor = r[1]
          for _, entry in ipairs(r[2]) do consider(entry) end
        until cursor == '0-0' or #out >= max
        while #out < max do
          local r = redis.call('XREADGROUP', 'GROUP', G, me, 'COUNT', max - #out, 'STREAMS', S, '>')
          if not r or #r == 0 or #r[1][2] == 0 then break end
          for _, entry in ipairs(r[1][2]) do consider(entry) end
        end
        if #ids > 0 then claim(me, ids, n(leaseTime)) end
        if #skipped > 0 then claim(IDLE, skipped, '0') end
        return out
        """

    /// ARGV: ids. Answers how many were held.
    static let finish = prelude + """
        local gone = 0
        for _, id in ipairs(ARGV) do gone = gone + remove(id) end
        return gone
        """

    /// ARGV: nowMs. Answers how many expired pushes went (leased ones are spared).
    static let dropExpired = prelude + """
        local gone = 0
        for _, id in ipairs(redis.call('ZRANGEBYSCORE', X, '-inf', ARGV[1])) do
          if not leased(id) then gone = gone + remove(id) end
        end
        return gone
        """

    /// Answers {entries, bytes, oldest arrival or -1, leased}.
    static let counts = prelude + """
        local entries = tonumber(redis.call('HGET', T, 'entries') or '0')
        local bytes = tonumber(redis.call('HGET', T, 'bytes') or '0')
        local oldest = -1
        local first = redis.call('XRANGE', S, '-', '+', 'COUNT', 1)
        if #first > 0 then oldest = tonumber(field(first[1][2], 'at')) end
        local pending = redis.call('XPENDING', S, G)
        local leasedCount = tonumber(pending[1])
        if pending[4] then
          for _, c in ipairs(pending[4]) do if c[1] == IDLE then leasedCount = leasedCount - tonumber(c[2]) end end
        end
        return {entries, bytes, oldest, leasedCount}
        """

    /// ARGV: consumer. Gives back every push the consumer holds (due at once for any relay) and
    /// removes the consumer: a relay that stops lets the others deliver what it had taken.
    static let letGo = prelude + """
        local me = ARGV[1]
        while true do
          local p = redis.call('XPENDING', S, G, '-', '+', 1000, me)
          if #p == 0 then break end
          local ids = {}
          for _, e in ipairs(p) do table.insert(ids, e[1]) end
          claim(IDLE, ids, '0')
        end
        redis.call('XGROUP', 'DELCONSUMER', S, G, me)
        return 0
        """

    static let all: [String] = [put, take, finish, dropExpired, counts, letGo]
}
