internal import Basics

/// One push, checked against Apple's rules when made, so a refusal costs no stream
/// and says exactly what to fix.
package struct APNsNotification: Sendable {
    /// Where the push goes (the `:path`).
    package let token: DeviceToken
    /// The final topic, with the push type's suffix.
    package let topic: String
    /// Given or guessed; decides the topic suffix, default priority and size limit.
    package let pushType: APNsPushType
    /// 10 = now, 5 = when power allows, 1 = lowest.
    package let priority: Int
    /// Unix seconds until which Apple keeps retrying; 0 = try once, nil = Apple's default.
    package let expiration: Int?
    /// Pushes with the same id replace each other on the device.
    package let collapseID: String?
    /// The lower-case UUID sent as `apns-id`, echoed to the caller to match Apple's logs.
    package let apnsID: String
    /// The request body, already checked against the type's size limit.
    package let payload: [UInt8]
    /// `/3/device/<token>`. A connection writes it straight into its request's headers
    /// (`pathPrefix`, then the token's hex), so no string is made for it per push.
    package var path: String { Self.pathPrefix + token.hex }

    /// What every `:path` starts with, before the device token's hex.
    package static let pathPrefix = "/3/device/"

    /// - Parameters:
    ///   - pushType: guessed from the payload when nil: background when `aps` holds only
    ///     `content-available`, alert otherwise.
    ///   - priority: 10, 5 or 1; defaults to 5 for background (Apple refuses 10 there) and 10 otherwise.
    ///   - apnsID: generated when nil.
    package init(
        token: DeviceToken, topic: String, payload: APNsPayload,
        pushType: APNsPushType? = nil, priority: Int? = nil,
        expiration: Int? = nil, collapseID: String? = nil, apnsID: APNsID? = nil
    ) throws(APNsError) {
        let type = pushType ?? (payload.isBackgroundOnly ? .background : .alert)

        guard !topic.isEmpty else { throw .invalid("topic is empty; set it to the app's bundle id") }
        guard Self.isVisibleASCII(topic) else {
            throw .invalid("topic \"\(topic)\" must be a bundle id: no spaces or control characters")
        }

        let prio = priority ?? (type == .background ? 5 : 10)
        guard prio == 10 || prio == 5 || prio == 1 else {
            throw .invalid("priority must be 10, 5 or 1; got \(prio)")
        }
        if type == .background && prio == 10 {
            throw .invalid("background pushes must use priority 5 or 1; Apple refuses 10")
        }

        if let expiration, expiration < 0 {
            throw .invalid("expiration must be a Unix time in seconds, or 0 to try once; got \(expiration)")
        }
        if let collapseID {
            let size = collapseID.utf8.count
            guard size >= 1 && size <= 64 else {
                throw .invalid("collapse id must be 1 to 64 bytes; got \(size) bytes")
            }
            // A header value: HTTP/2 refuses CR, LF and NUL in one, and RFC 9110 every control
            // byte but tab. Refused here, it is the caller's mistake; at submit time it read as
            // a connection that cannot open streams, and the push failed as APNs unavailable.
            guard collapseID.utf8.allSatisfy({ ($0 >= 0x20 || $0 == 0x09) && $0 != 0x7F }) else {
                throw .invalid("collapse id must not hold control characters (CR, LF, NUL…)")
            }
        }

        let limit = type.maxPayloadSize
        guard !payload.bytes.isEmpty else { throw .invalid("payload is empty; Apple answers PayloadEmpty") }
        guard payload.bytes.count <= limit else {
            throw .invalid("payload is \(payload.bytes.count) bytes, over Apple's \(limit)-byte limit for \(type) pushes; shorten it")
        }

        self.token = token
        self.topic = type.topic(for: topic)
        self.pushType = type
        self.priority = prio
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID?.description ?? UUIDText.randomLowercase()
        self.payload = payload.bytes
    }

    /// Whether every byte of `text` is visible ASCII (no space, control byte or non-ASCII), read
    /// over its contiguous bytes: every push checks its topic.
    private static func isVisibleASCII(_ text: String) -> Bool {
        func check(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var outside = false
            for b in bytes { outside = outside || !(b > 0x20 && b < 0x7f) }
            return !outside
        }
        return text.utf8.withContiguousStorageIfAvailable(check) ?? text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    /// The request headers besides the pseudo-headers (`:method POST`, `:path` = ``path``,
    /// `:scheme`, `:authority`), names in lower case as HTTP/2 requires.
    /// - Parameter authorization: the connection's provider token (the JWT text).
    package func headers(authorization jwt: String) -> [(String, String)] {
        withAuthorization("bearer " + jwt)
    }

    /// The same headers with the token's ready-made `bearer <JWT>` value.
    package func headers(bearer token: ProviderToken) -> [(String, String)] {
        withAuthorization(token.authorization)
    }

    private func withAuthorization(_ value: String) -> [(String, String)] {
        var headers: [(String, String)] = []
        writeHeaders { name, bytes in headers.append((name, String(decoding: bytes, as: UTF8.self))) }
        headers.append(("authorization", value))
        return headers
    }

    /// Hands each header but `authorization` (which belongs to the connection) to `field`, in
    /// the order sent, the value as UTF-8 bytes valid during the call: a connection packs them
    /// straight into its request, so a push makes no header list and no strings.
    package func writeHeaders(_ field: (_ name: String, _ value: UnsafeBufferPointer<UInt8>) -> Void) {
        func text(_ name: String, _ value: String) {
            StringBytes.with(value) { field(name, $0) }
        }
        func number(_ name: String, _ value: Int) {
            DecimalText.withDigits(value) { field(name, $0) }
        }
        text("apns-topic", topic)
        text("apns-push-type", pushType.rawValue)
        number("apns-priority", priority)
        text("apns-id", apnsID)
        if let expiration { number("apns-expiration", expiration) }
        if let collapseID { text("apns-collapse-id", collapseID) }
    }
}
