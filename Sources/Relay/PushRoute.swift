#if canImport(Glibc)
import Glibc
#endif
import APNs

/// Where one push goes, read from `POST /push/{device_token}/{id}[?sandbox=true]`.
package struct PushRoute: Sendable, Equatable {
    /// The token exactly as sent (case kept), so logs and replies match what the sender holds.
    package var deviceToken: String
    /// One percent-decoded path segment, echoed to the device as `"i"` so the app can find its keys.
    package var id: String
    /// `?sandbox=true` (only that literal) selects Apple's development host, as metatext-apns does.
    package var sandbox: Bool

    /// The token as APNs takes it, checked once by `match` so the push does not check it again;
    /// nil only for a route built by hand from a token that is not valid.
    package var device: DeviceToken?

    package init(deviceToken: String, id: String, sandbox: Bool) {
        self.init(deviceToken: deviceToken, device: try? DeviceToken(deviceToken), id: id, sandbox: sandbox)
    }

    init(deviceToken: String, device: DeviceToken?, id: String, sandbox: Bool) {
        self.deviceToken = deviceToken
        self.device = device
        self.id = id
        self.sandbox = sandbox
    }

    /// The decoded id (and relay-to's extra path) is capped so the degraded payload (alert + `i`
    /// or `x` only, each byte at most six once JSON-escaped) always fits Apple's 4096 bytes; real
    /// ids are a few dozen bytes.
    package static let maxIDBytes = 512

    /// Matches `/push/{token}/{id}` with an optional trailing slash.
    ///
    /// Anything that is not that shape (a missing or empty id, an extra segment, `//`) is
    /// `.notFound`. A path of the right shape whose token is not hex or whose id does not
    /// percent-decode to UTF-8 (or is over `maxIDBytes`) is `.badRequest`: both are 4xx, both
    /// drop the subscription — right, since the URL never changes and can never work.
    /// The query's last `sandbox` parameter decides; other parameters are ignored.
    package static let prefix = "/push/"

    package static func match(path: String, query: String?) -> RouteMatch {
        guard hasBytePrefix(path, prefix) else { return .notFound }
        // Two segments found by index, not by `split`: this runs for every push, and the array of
        // slices `split` builds was an allocation per push for two values.
        // The slashes are looked for in the contiguous bytes: stepping a UTF8View's indices cost
        // more than the rest of the match.
        let utf8 = path.utf8
        let start = prefix.utf8.count
        guard let (slash, idEnd) = segmentEnds(utf8, from: start) else { return .notFound }
        let tokenBytes = utf8[utf8.index(utf8.startIndex, offsetBy: start) ..< utf8.index(utf8.startIndex, offsetBy: slash)]
        let idBytes = utf8[utf8.index(utf8.startIndex, offsetBy: slash + 1) ..< utf8.index(utf8.startIndex, offsetBy: idEnd)]

        let token = String(Substring(tokenBytes))
        let device: DeviceToken
        switch checkedToken(token) {
        case .success(let checked): device = checked
        case .failure(let refusal): return .badRequest(reason: refusal.reason)
        }

        let id: String
        switch decodedPathText(idBytes, what: "push id") {
        case .success(let text): id = text
        case .failure(let refusal): return .badRequest(reason: refusal.reason)
        }

        var sandbox = false
        if let query {
            // Pair by pair, by index (no array of pairs); an empty pair (`&&`) matches nothing.
            let utf8 = query.utf8
            var start = utf8.startIndex
            while start < utf8.endIndex {
                let end = utf8[start...].firstIndex(of: UInt8(ascii: "&")) ?? utf8.endIndex
                let pair = utf8[start..<end]
                start = end < utf8.endIndex ? utf8.index(after: end) : end
                let eq = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
                guard pair[..<eq].elementsEqual("sandbox".utf8) else { continue }
                sandbox = eq < pair.endIndex && pair[pair.index(after: eq)...].elementsEqual("true".utf8)
            }
        }
        return .push(PushRoute(deviceToken: token, device: device, id: id, sandbox: sandbox))
    }

    /// Whether `text`'s bytes begin with `prefix`'s, compared over contiguous bytes: the generic
    /// `starts(with:)` over two UTF8Views stepped both a byte at a time, on every push.
    static func hasBytePrefix(_ text: String, _ prefix: String) -> Bool {
        let fast = text.utf8.withContiguousStorageIfAvailable { t in
            prefix.utf8.withContiguousStorageIfAvailable { p in
                guard t.count >= p.count else { return false }
                for i in 0 ..< p.count where t[i] != p[i] { return false }
                return true
            }
        }
        if let fast, let result = fast { return result }
        return text.utf8.starts(with: prefix.utf8)
    }

    /// Where `{token}/{id}[/]` from byte `start` splits: the offsets of the slash after the token
    /// and of the id's end; nil unless both are non-empty and nothing follows but one slash.
    static func segmentEnds(_ utf8: String.UTF8View, from start: Int) -> (slash: Int, idEnd: Int)? {
        func find(_ p: UnsafeBufferPointer<UInt8>) -> (slash: Int, idEnd: Int)? {
            var slash = -1
            var i = start
            while i < p.count {
                if p[i] == UInt8(ascii: "/") {
                    if slash < 0 {
                        slash = i
                    } else {
                        // A second slash is only the optional trailing one.
                        guard i == p.count - 1 else { return nil }
                        break
                    }
                }
                i += 1
            }
            guard slash > start, i > slash + 1 else { return nil }
            return (slash, i)
        }
        if let found = utf8.withContiguousStorageIfAvailable(find) { return found }
        return Array(utf8).withUnsafeBufferPointer(find)
    }

    /// A token from a path as APNs takes it, or why it can never work.
    static func checkedToken(_ token: String) -> Result<DeviceToken, PathRefusal> {
        // The token rules (hex, even, 64 to 200 digits) are APNs's, kept in one place.
        guard let device = try? DeviceToken(token) else {
            return .failure(PathRefusal(
                reason: "device token is not an even number of hex digits, \(DeviceToken.minDigits) to \(DeviceToken.maxDigits) long"))
        }
        return .success(device)
    }

    /// Why a path value was refused: one line for the 400's reason.
    struct PathRefusal: Error, Equatable {
        var reason: String
    }

    /// A percent-decoded path value (the push id, relay-to's extra path) that the app gets back
    /// in its payload: UTF-8 and at most `maxIDBytes` decoded, so the degraded payload fits.
    static func decodedPathText(_ raw: Substring.UTF8View.SubSequence, what: String) -> Result<String, PathRefusal> {
        // The usual id has no escape: its bytes are already the text (a String's bytes are UTF-8),
        // so it is taken as is, without the byte array and the UTF-8 check.
        let escaped = raw.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: "%")) } ?? raw.contains(UInt8(ascii: "%"))
        if !escaped {
            guard raw.count <= maxIDBytes else {
                return .failure(PathRefusal(reason: "\(what) is \(raw.count) bytes, over the \(maxIDBytes)-byte limit"))
            }
            return .success(String(Substring(raw)))
        }
        guard let decoded = percentDecode(raw) else {
            return .failure(PathRefusal(reason: "\(what) has a malformed percent-escape"))
        }
        guard decoded.count <= maxIDBytes else {
            return .failure(PathRefusal(reason: "\(what) is \(decoded.count) bytes, over the \(maxIDBytes)-byte limit"))
        }
        guard let text = String(validating: decoded, as: UTF8.self) else {
            return .failure(PathRefusal(reason: "\(what) is not UTF-8 once percent-decoded"))
        }
        return .success(text)
    }

    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30 ... 0x39: return b - 0x30
        case 0x41 ... 0x46: return b - 0x41 + 10
        case 0x61 ... 0x66: return b - 0x61 + 10
        default: return nil
        }
    }

    /// RFC 3986 path-segment decoding: `%XX` only; `+` stays a plus.
    static func percentDecode(_ raw: Substring.UTF8View.SubSequence) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        while i < raw.endIndex {
            let b = raw[i]
            if b == UInt8(ascii: "%") {
                let h = raw.index(after: i)
                guard h < raw.endIndex else { return nil }
                let l = raw.index(after: h)
                guard l < raw.endIndex, let hi = hexValue(raw[h]), let lo = hexValue(raw[l]) else { return nil }
                out.append(hi << 4 | lo)
                i = raw.index(after: l)
            } else {
                out.append(b)
                i = raw.index(after: i)
            }
        }
        return out
    }
}

/// The outcome of matching a request path against a push route (`/push` or `/relay-to`).
package enum RouteMatch: Sendable, Equatable {
    /// A well-formed `/push` route.
    case push(PushRoute)
    /// A well-formed `/relay-to` route.
    case relayTo(RelayToRoute)
    /// Not the route at all: answer 404 (the server may try its other routes first).
    case notFound
    /// The route's shape with a token or path value that can never work: answer 400 with `reason`.
    case badRequest(reason: String)
}
