
/// Apple's answer to one push, with what it means for the subscription.
public struct APNsResponse: Sendable, Hashable {
    /// Apple accepted the push (status 200).
    public let ok: Bool
    /// Apple's HTTP status (200, 400, 403, 405, 410, 413, 429, 500, 503).
    public let status: Int
    /// The `apns-id` Apple echoed (ours, or one it made up).
    public let apnsID: String
    /// `apns-unique-id`: sandbox only, for Apple's delivery log.
    public let uniqueID: String?
    /// The device token the push went to, as the caller gave it (log a `DeviceToken`'s
    /// `fingerprint` instead: a token in a log is a leaked address).
    public var device: String {
        switch deviceSource {
        case .given(let text): text
        case .token(let token): token.hex
        }
    }
    /// Nil when `ok`.
    public let reason: APNsReason?
    /// When Apple says a token stopped working (`timestamp` of a 410), in Unix milliseconds.
    public let goneSinceMs: Int64?
    /// Why a push of `sendMany` never reached Apple (reason `NotSent`), as a value: decide on its
    /// `code`, print its description. Nil for Apple's answers.
    public let cause: APNsError?

    /// Apple's answers keep the token and spell it only when `device` is read: the relay never
    /// reads it, so no string is made per push.
    private enum DeviceSource: Sendable {
        case given(String)
        case token(DeviceToken)
    }
    private let deviceSource: DeviceSource

    /// For the transport and for tests that stand in for Apple.
    public init(ok: Bool, status: Int, apnsID: String, uniqueID: String? = nil, device: String,
                reason: APNsReason? = nil, goneSinceMs: Int64? = nil, cause: APNsError? = nil) {
        self.ok = ok; self.status = status; self.apnsID = apnsID; self.uniqueID = uniqueID
        self.deviceSource = .given(device); self.reason = reason; self.goneSinceMs = goneSinceMs; self.cause = cause
    }

    /// A push that never reached Apple (refused before sending, or no answer): status 0,
    /// reason `NotSent`, and the cause as its meaning.
    public static func notSent(device: String, apnsID: String = "", cause: APNsError) -> APNsResponse {
        APNsResponse(ok: false, status: 0, apnsID: apnsID, device: device, reason: .notSent, cause: cause)
    }

    private init(ok: Bool, status: Int, apnsID: String, uniqueID: String?, token: DeviceToken,
                 reason: APNsReason? = nil, goneSinceMs: Int64? = nil) {
        self.ok = ok; self.status = status; self.apnsID = apnsID; self.uniqueID = uniqueID
        self.deviceSource = .token(token); self.reason = reason; self.goneSinceMs = goneSinceMs; self.cause = nil
    }

    /// The same answer naming the device as the caller wrote it.
    package func answering(device: String) -> APNsResponse {
        APNsResponse(ok: ok, status: status, apnsID: apnsID, uniqueID: uniqueID, device: device, reason: reason,
                     goneSinceMs: goneSinceMs, cause: cause)
    }

    /// Equal when every field reads the same, however `device` is held.
    public static func == (lhs: APNsResponse, rhs: APNsResponse) -> Bool {
        lhs.ok == rhs.ok && lhs.status == rhs.status && lhs.apnsID == rhs.apnsID && lhs.uniqueID == rhs.uniqueID
            && lhs.reason == rhs.reason && lhs.goneSinceMs == rhs.goneSinceMs && lhs.device == rhs.device
            && lhs.cause?.description == rhs.cause?.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ok); hasher.combine(status); hasher.combine(apnsID); hasher.combine(uniqueID)
        hasher.combine(reason); hasher.combine(goneSinceMs); hasher.combine(device)
    }

    /// What to do: delivered, forget the token, retry, or fix our configuration.
    /// A 410 with a reason we do not know still means a dead token: Apple uses 410 for nothing else.
    public var category: APNsReason.Category {
        if ok { return .delivered }
        if status == 410 { return .tokenDead }
        return reason?.category ?? .configurationError
    }

    /// The subscription should be deleted: `APNsReason.removeToken`, and any 410 (a dead
    /// token, whatever reason Apple gave). (The relay answers DeviceTokenNotForTopic with 502
    /// all the same: for it, that means its own topic is wrong, and removing every
    /// subscription would be worse.)
    public var removeToken: Bool { category == .tokenDead || (reason?.removeToken ?? false) }

    /// One line for logs and the relay's answer.
    public var meaning: String {
        if ok { return "Delivered to APNs." }
        if let cause { return cause.description }
        return reason?.meaning ?? "APNs answered \(status) without a reason."
    }

    /// Reads Apple's answer: status, `apns-id`/`apns-unique-id` headers (any case), and for an
    /// error the body `{"reason":"…","timestamp":…}`. Never throws: a garbled body still
    /// yields a response whose status decides what happens.
    package static func parse(status: Int, headers: [(String, String)], body: [UInt8], device: DeviceToken,
                             sentID: String = "") -> APNsResponse {
        let apnsID = headers.first { $0.0.caseInsensitiveEquals("apns-id") }?.1
        let uniqueID = headers.first { $0.0.caseInsensitiveEquals("apns-unique-id") }?.1
        return parse(status: status, apnsID: apnsID, uniqueID: uniqueID, body: body, device: device, sentID: sentID)
    }

    /// The same, from the two headers' values (nil when absent), so a caller that holds the
    /// headers in another form makes no list of them.
    package static func parse(status: Int, apnsID received: String?, uniqueID: String?, body: [UInt8], device: DeviceToken,
                             sentID: String = "") -> APNsResponse {
        // Apple echoes the id we sent: then it is ours as it stands, no lower-cased copy made.
        let apnsID = received.map { $0 == sentID ? sentID : $0.lowercased() } ?? sentID
        if status == 200 {
            return APNsResponse(ok: true, status: status, apnsID: apnsID, uniqueID: uniqueID, token: device)
        }
        let body = body.isEmpty ? ErrorBody() : ErrorBody(body)
        return APNsResponse(ok: false, status: status, apnsID: apnsID, uniqueID: uniqueID, token: device,
                            reason: body.reason.map(APNsReason.init), goneSinceMs: body.timestamp)
    }

    /// Apple's error body, `{"reason":"BadDeviceToken","timestamp":1700000000000}`; a field of
    /// another type is skipped rather than losing the other, and a body that is not a JSON
    /// object gives neither.
    struct ErrorBody: Equatable {
        var reason: String?
        var timestamp: Int64?

        init(reason: String? = nil, timestamp: Int64? = nil) { self.reason = reason; self.timestamp = timestamp }

        init(_ body: [UInt8]) {
            guard case .object(let members)? = APNsJSON.parse(body) else { return }
            if case .string(let text)? = members["reason"] { reason = text }
            switch members["timestamp"] {
            case .int(let ms)?: timestamp = Int64(ms)
            case .double(let ms)? where ms.isFinite && abs(ms) < 9e18: timestamp = Int64(ms)
            default: break
            }
        }
    }

    /// The JSON `send` prints, and each of `send-many`'s results:
    /// `{"ok":true,"status":200,"apns_id":…,"unique_id":…,"device":…}` (`unique_id` only when known) or
    /// `{"ok":false,"status":…,"apns_id":…,"reason":…,"meaning":…,"remove_token":…,"gone_since_ms":…,"device":…}`
    /// (`apns_id` only when one was sent or answered, `gone_since_ms` only when Apple gave it).
    /// Every result names its device, a failure above all: a caller filters for failures, and a
    /// filtered list has lost the positions.
    public var json: String {
        var w = JSONWriter(capacity: 160)
        if ok {
            w.raw("{\"ok\":true,\"status\":"); w.int(status)
            w.raw(",\"apns_id\":"); w.string(apnsID)
            if let uniqueID { w.raw(",\"unique_id\":"); w.string(uniqueID) }
            w.raw(",\"device\":"); w.string(device)
            w.raw("}")
        } else {
            w.raw("{\"ok\":false,\"status\":"); w.int(status)
            if !apnsID.isEmpty { w.raw(",\"apns_id\":"); w.string(apnsID) }
            w.raw(",\"reason\":")
            if let reason { w.string(reason.rawValue) } else { w.raw("null") }
            w.raw(",\"meaning\":"); w.string(meaning)
            w.raw(",\"remove_token\":"); removeToken ? w.raw("true") : w.raw("false")
            if let goneSinceMs { w.raw(",\"gone_since_ms\":"); w.int(goneSinceMs) }
            w.raw(",\"device\":"); w.string(device)
            w.raw("}")
        }
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

/// The outcome of sending one notification to many devices.
public struct SendManyResult: Sendable {
    /// Pushes Apple accepted.
    public let sent: Int
    /// Pushes refused or not sent, whatever the reason.
    public let failed: Int
    /// The tokens (as given) whose subscriptions should be deleted: BadDeviceToken, Unregistered
    /// (any 410) and DeviceTokenNotForTopic, in the caller's order.
    public let remove: [String]
    /// One per token, in the caller's order; one that never reached Apple has reason `NotSent`.
    public let results: [APNsResponse]

    /// Counts the results.
    public init(results: [APNsResponse]) {
        self.results = results
        self.sent = results.count(where: { $0.ok })
        self.failed = results.count - sent
        self.remove = results.filter(\.removeToken).map(\.device)
    }

    /// True when nothing was sent because talking to Apple failed: every result is `NotSent`
    /// for a reason other than a push refused before sending (connect, TLS, timeout, queue).
    public var noneReachedApple: Bool {
        !results.isEmpty && results.allSatisfy { result in
            result.reason == .notSent && result.cause?.code != .invalidNotification
        }
    }

    /// `{"sent":…,"failed":…,"remove":[…],"results":[…]}`, each result as `APNsResponse.json`.
    public var json: String {
        var w = JSONWriter(capacity: 64 + results.count * 160)
        w.raw("{\"sent\":"); w.int(sent)
        w.raw(",\"failed\":"); w.int(failed)
        w.raw(",\"remove\":"); w.stringArray(remove)
        w.raw(",\"results\":[")
        for (index, result) in results.enumerated() {
            if index > 0 { w.raw(",") }
            w.bytes.append(contentsOf: result.json.utf8)
        }
        w.raw("]}")
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

extension String {
    func caseInsensitiveEquals(_ lowerASCII: String) -> Bool {
        let a = self.utf8, b = lowerASCII.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) {
            let lx = (x >= 65 && x <= 90) ? x + 32 : x
            if lx != y { return false }
        }
        return true
    }
}
