/// The Redis store's commands and the decoding of their replies: no I/O, so what goes to Redis
/// and what comes back is tested without a server.
package enum RedisCodec {
    /// Values per push in the put script's arguments.
    package static let pushArity = 16

    /// Stream entry field names, as the scripts write them.
    enum Field {
        static let route = "r", environment = "e", app = "a", device = "d", topic = "t", apnsID = "i", priority = "p"
        static let collapseID = "c", pushType = "y", urgency = "u", arrival = "at", ttl = "ttl", payload = "pl"
    }

    package static func idText(_ id: HeldPushID) -> String { "\(id.high)-\(id.low)" }

    /// A stream id `ms-seq` as (ms, seq); nil when it is not one.
    package static func id(_ text: String) -> HeldPushID? {
        guard let dash = text.firstIndex(of: "-"), let ms = UInt64(text[..<dash]),
              let seq = UInt64(text[text.index(after: dash)...]) else { return nil }
        return HeldPushID(high: ms, low: seq)
    }

    /// EVALSHA `sha` with no keys and `arguments`.
    package static func evalsha(_ sha: String, _ arguments: [[UInt8]]) -> RedisCommand {
        [Array("EVALSHA".utf8), Array(sha.utf8), Array("0".utf8)] + arguments
    }

    /// The put script's arguments for every put of a turn.
    package static func putArguments(_ puts: [[HeldPush]], limits: HoldLimits) -> [[UInt8]] {
        var words: [[UInt8]] = [String(limits.maxEntries), String(limits.maxBytes), String(limits.maxPerDevice), String(puts.count)]
            .map { Array($0.utf8) }
        for pushes in puts {
            words.append(Array(String(pushes.count).utf8))
            for push in pushes {
                for text in [push.route, push.environment, push.app, push.deviceToken, push.topic, push.apnsID, String(push.priority),
                             push.collapseID == nil ? "0" : "1", push.collapseID ?? "", push.pushType, push.urgency,
                             String(push.arrivalMs), String(push.ttlSeconds), String(push.expiresAtMs), String(push.storedBytes)] {
                    words.append(Array(text.utf8))
                }
                words.append(push.payload)
            }
        }
        return words
    }

    /// One put's answer from the put script: {1, dropped, id...} or {0, why}.
    package static func receipt(_ value: RedisValue, expecting count: Int) -> Result<PutReceipt, PushStoreError> {
        guard let parts = value.array, let flag = parts.first?.integer else { return .failure(malformed("put")) }
        if flag == 0 { return .failure(PushStoreError(.capReached, parts.dropFirst().first?.text ?? "the store is at its cap")) }
        guard parts.count == count + 2, let dropped = parts[1].integer else { return .failure(malformed("put")) }
        var ids: [HeldPushID] = []
        for part in parts.dropFirst(2) {
            guard let text = part.text, let id = id(text) else { return .failure(malformed("put")) }
            ids.append(id)
        }
        return .success(PutReceipt(ids: ids, droppedForDeviceCap: Int(dropped)))
    }

    /// The take script's answer: {id, {field, value...}}... as pushes.
    package static func pushes(_ value: RedisValue) -> Result<[StoredPush], PushStoreError> {
        guard let entries = value.array else { return .failure(malformed("take")) }
        var taken: [StoredPush] = []
        taken.reserveCapacity(entries.count)
        for entry in entries {
            guard let pair = entry.array, pair.count == 2, let idText = pair[0].text, let id = id(idText),
                  let fields = pair[1].array, let push = push(fields) else { return .failure(malformed("take")) }
            taken.append(StoredPush(id: id, push: push))
        }
        return .success(taken)
    }

    /// A stream entry's fields as a push; nil when one it needs is missing.
    package static func push(_ fields: [RedisValue]) -> HeldPush? {
        var values: [String: [UInt8]] = [:]
        var index = 0
        while index + 1 < fields.count {
            guard let name = fields[index].text, case .bulk(let bytes) = fields[index + 1] else { return nil }
            values[name] = bytes
            index += 2
        }
        func text(_ name: String) -> String? { values[name].map { String(decoding: $0, as: UTF8.self) } }
        func number(_ name: String) -> Int64? { text(name).flatMap { Int64($0) } }
        guard let route = text(Field.route), let environment = text(Field.environment), let app = text(Field.app),
              let device = text(Field.device), let topic = text(Field.topic), let apnsID = text(Field.apnsID),
              let priority = number(Field.priority), let pushType = text(Field.pushType), let urgency = text(Field.urgency),
              let arrival = number(Field.arrival), let ttl = number(Field.ttl), let payload = values[Field.payload] else { return nil }
        return HeldPush(route: route, environment: environment, app: app, deviceToken: device, topic: topic, apnsID: apnsID,
                        priority: Int(priority), collapseID: text(Field.collapseID), pushType: pushType, urgency: urgency,
                        arrivalMs: arrival, ttlSeconds: ttl, payload: payload)
    }

    /// The counts script's answer {entries, bytes, oldest or -1, leased}.
    package static func counts(_ value: RedisValue) -> Result<HeldCounts, PushStoreError> {
        guard let parts = value.array, parts.count == 4, let entries = parts[0].integer, let bytes = parts[1].integer,
              let oldest = parts[2].integer, let leased = parts[3].integer else { return .failure(malformed("counts")) }
        return .success(HeldCounts(entries: Int(entries), bytes: Int(bytes), oldestArrivalMs: oldest < 0 ? nil : oldest, leased: Int(leased)))
    }

    /// What a Redis error reply means for the store: full (maxmemory, or a disk that refuses
    /// the AOF), or another failure.
    package static func error(code: String, line: String, doing what: String) -> PushStoreError {
        switch code {
        case "OOM": PushStoreError(.diskFull, "Redis is at its maxmemory: \(what) refused (\(line))")
        case "MISCONF": PushStoreError(.diskFull, "Redis cannot write to its disk: \(what) refused (\(line))")
        default: PushStoreError(.storeFailed, "Redis refused \(what): \(line)")
        }
    }

    package static func malformed(_ what: String) -> PushStoreError {
        PushStoreError(.storeFailed, "Redis answered \(what) with a reply this relay cannot read")
    }
}
