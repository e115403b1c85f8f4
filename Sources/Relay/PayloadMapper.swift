#if canImport(Glibc)
import Glibc
#endif
import APNs
import Basics
import WebPush

/// Everything the APNs request needs from one WebPush message, decided without I/O.
package struct APNsPushPlan: Sendable, Equatable {
    /// The JSON body, byte for byte (docs/ARCHITECTURE.md §5).
    package var payload: [UInt8]
    /// `apns-priority`: 5 for `very-low`/`low` urgency (Apple may batch them to save power), else 10.
    package var priority: Int
    /// `apns-expiration` in unix seconds; 0 means "deliver once, don't store" (TTL 0); nil: send no header.
    package var expiration: Int?
    /// `apns-collapse-id` from the WebPush `Topic`, so a newer message replaces the older one.
    package var collapseID: String?
    /// True when the message did not fit and only the alert and `i` go out: the user still gets
    /// "a new notification" instead of losing the subscription to a 413.
    package var degraded: Bool
    /// Why it was degraded, for the log line: sizes, and the sender's record size when padding
    /// to it is what made the body too big. nil when not degraded.
    package var degradedReason: String?

    package init(payload: [UInt8], priority: Int, expiration: Int?, collapseID: String?, degraded: Bool,
                degradedReason: String? = nil) {
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.degraded = degraded
        self.degradedReason = degradedReason
    }
}

/// Maps a parsed WebPush message to the APNs payload and headers.
///
/// The JSON is written by hand: the key order is fixed (`aps`, `i`, `m`, `s`, `k`, `e`), the
/// size is known before a byte is written, and it is several times faster than a serializer.
package enum PayloadMapper {
    /// Apple's limit for a regular (non-VoIP) notification payload, as APNsCore states it.
    package static let maxPayloadBytes = APNsPushType.alert.maxPayloadSize

    /// What the app shows when it cannot decrypt; iOS only runs the extension for a visible alert.
    package static let defaultAlertLocKey = "apns-default-message"

    /// The fixed parts around the alert's key and the id, made once: as literals turned into
    /// arrays inside `plan` they were two allocations per push.
    private static let head = Array(#"{"aps":{"alert":{"loc-key":""#.utf8)
    private static let afterLoc = Array(#""},"mutable-content":1},"i":""#.utf8)

    /// Builds the plan for one message.
    ///
    /// When the full payload would exceed `maxPayloadBytes`, the degraded form (same `aps`, `i`
    /// only) is returned. Nothing is ever truncated: the route caps the id at
    /// `PushRoute.maxIDBytes` so the degraded form fits whenever `alertLocKey` is a sane
    /// configuration value (under ~900 bytes); past that, the degraded payload is returned as is
    /// and Apple's own size check decides.
    package static func plan(message: WebPushMessage, id: String, alertLocKey: String = defaultAlertLocKey,
                            now: Int) -> APNsPushPlan {
        let locCount = JSONString.escapedCount(alertLocKey), idCount = JSONString.escapedCount(id)
        let baseSize = head.count + locCount + afterLoc.count + idCount + 1

        // The full form's size, computed before anything is written.
        var fullSize = baseSize
        var escapesNothing = locCount == alertLocKey.utf8.count && idCount == id.utf8.count
        fullSize += #","m":""#.utf8.count + Base64URL.paddedCount(message.body.count) + 1
        if message.encoding == .aesgcm {
            if let s = message.salt {
                let count = JSONString.escapedCount(s)
                escapesNothing = escapesNothing && count == s.utf8.count
                fullSize += #","s":""#.utf8.count + count + 1
            }
            if let k = message.dh {
                let count = JSONString.escapedCount(k)
                escapesNothing = escapesNothing && count == k.utf8.count
                fullSize += #","k":""#.utf8.count + count + 1
            }
        }
        fullSize += #","e":""#.utf8.count + message.encoding.rawValue.utf8.count + 2 // `"}`

        let degraded = fullSize > maxPayloadBytes
        if !degraded && escapesNothing {
            let out = plainFullPayload(message: message, id: id, alertLocKey: alertLocKey, size: fullSize)
            return plan(payload: out, degraded: false, fullSize: fullSize, message: message, now: now)
        }
        return plan(payload: payload(message: message, id: id, alertLocKey: alertLocKey, degraded: degraded,
                                     capacity: degraded ? baseSize + 1 : fullSize),
                    degraded: degraded, fullSize: fullSize, message: message, now: now)
    }

    /// The payload appended piece by piece, every string escaped: the general way, for a degraded
    /// payload and for an id, key or loc-key that holds a byte JSON must escape. `capacity` is
    /// the size reserved up front, the payload's when it is known.
    static func payload(message: WebPushMessage, id: String, alertLocKey: String, degraded: Bool,
                        capacity: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity)
        out.append(contentsOf: head)
        JSONString.appendEscaped(alertLocKey, to: &out)
        out.append(contentsOf: afterLoc)
        JSONString.appendEscaped(id, to: &out)
        out.append(UInt8(ascii: "\""))
        if !degraded {
            out.append(contentsOf: #","m":""#.utf8)
            Base64URL.append(message.body, padded: true, to: &out)
            out.append(UInt8(ascii: "\""))
            if message.encoding == .aesgcm {
                if let s = message.salt {
                    out.append(contentsOf: #","s":""#.utf8)
                    JSONString.appendEscaped(s, to: &out)
                    out.append(UInt8(ascii: "\""))
                }
                if let k = message.dh {
                    out.append(contentsOf: #","k":""#.utf8)
                    JSONString.appendEscaped(k, to: &out)
                    out.append(UInt8(ascii: "\""))
                }
            }
            out.append(contentsOf: #","e":""#.utf8)
            out.append(contentsOf: message.encoding.rawValue.utf8)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The full payload when no string in it needs escaping (the usual push: a plain id, base64
    /// salt and key): the same bytes as `payload`, written once into an array of exactly `size`
    /// bytes instead of a dozen appends, each with its fixed cost, and a base64 text filled twice.
    static func plainFullPayload(message: WebPushMessage, id: String, alertLocKey: String, size: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var w = PlainWriter(buffer)
            w.put(head)
            w.put(alertLocKey)
            w.put(afterLoc)
            w.put(id)
            w.putLiteral(#"","m":""#)
            w.putBase64(message.body)
            w.putLiteral("\"")
            if message.encoding == .aesgcm {
                if let s = message.salt {
                    w.putLiteral(#","s":""#)
                    w.put(s)
                    w.putLiteral("\"")
                }
                if let k = message.dh {
                    w.putLiteral(#","k":""#)
                    w.put(k)
                    w.putLiteral("\"")
                }
            }
            w.putLiteral(#","e":""#)
            w.put(message.encoding.rawValue)
            w.putLiteral(#""}"#)
            // The size was computed from the same pieces; a mismatch would be a bug in this file.
            precondition(w.written == size, "payload size \(w.written) is not the computed \(size)")
            count = w.written
        }
    }

    /// Copies bytes into an uninitialised buffer, checking every copy against its end: the only
    /// unchecked writes of the payload live here.
    private struct PlainWriter {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var written = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
            precondition(bytes.count <= buffer.count - written, "payload writer overflow")
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
            (buffer.baseAddress! + written).initialize(from: source, count: bytes.count)
            written += bytes.count
        }

        mutating func put(_ bytes: [UInt8]) { bytes.withUnsafeBufferPointer { put($0) } }

        mutating func putLiteral(_ text: StaticString) {
            text.withUTF8Buffer { put($0) }
        }

        mutating func put(_ text: String) {
            StringBytes.with(text) { put($0) }
        }

        mutating func putBase64(_ bytes: [UInt8]) {
            let count = Base64URL.paddedCount(bytes.count)
            precondition(count <= buffer.count - written, "payload writer overflow")
            let dst = UnsafeMutableBufferPointer(rebasing: buffer[written ..< (written + count)])
            bytes.withUnsafeBufferPointer { Base64URL.encode($0, padded: true, into: dst) }
            written += count
        }
    }

    /// The plan around a finished payload: the headers come from the WebPush hints alike on
    /// every route. `fullSize` is the size the payload would have had undegraded.
    static func plan(payload: [UInt8], degraded: Bool, fullSize: Int, message: WebPushMessage, now: Int) -> APNsPushPlan {
        let priority: Int
        switch message.urgency {
        case .veryLow?, .low?: priority = 5
        case .normal?, .high?, nil: priority = 10
        }

        var expiration: Int?
        if let ttl = message.ttl {
            if ttl <= 0 {
                expiration = 0
            } else {
                let (sum, overflow) = now.addingReportingOverflow(ttl)
                expiration = overflow ? Int.max : sum
            }
        }
        return APNsPushPlan(payload: payload, priority: priority, expiration: expiration,
                            collapseID: message.topic, degraded: degraded,
                            degradedReason: degraded ? degradedReason(message, fullSize: fullSize) : nil)
    }

    /// A sender that pads every record to a record size of 4096 (webpush-go's default) makes
    /// every body at least that big, so no payload of it can ever fit: say so, with the fix.
    static func degradedReason(_ message: WebPushMessage, fullSize: Int) -> String {
        var reason = "the \(message.body.count)-byte encrypted body makes a \(fullSize)-byte payload, over Apple's \(maxPayloadBytes)"
        if message.encoding == .aes128gcm, let rs = message.recordSize, rs >= 4096, message.body.count >= 4096 {
            reason += "; the sender pads to its record size rs=\(rs) (webpush-go's default): set it to 2048, as GoToSocial does"
        }
        return reason
    }
}
