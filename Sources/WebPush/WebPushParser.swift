#if canImport(Glibc)
import Glibc
#endif
internal import Basics

/// Turns the headers and body of a WebPush POST into a `WebPushMessage`, or the exact
/// status and reason to answer with.
///
/// Leniency is deliberate: every 4xx makes Mastodon delete the subscription for good, so the
/// parser refuses only what the device could never decrypt, and shrugs off the rest:
/// - header names are case-insensitive; parameter lists accept `;` or `,` separators, spaces
///   and tabs around them, quoted values, parameter names in any case, and unknown parameters
///   (`keyid=`, `rs=`, `p256ecdsa=`…); repeated `Encryption`/`Crypto-Key` headers are read as one list;
/// - base64 values may be padded or unpadded, and in the URL-safe (`-_`) or the standard (`+/`)
///   alphabet: the value is forwarded as sent and the device-side decoders in use map one
///   alphabet onto the other, so refusing `+/` would only cost a subscription;
/// - `TTL` that is not a non-negative integer is ignored (as if absent) rather than refused,
///   since the push itself is still deliverable; a huge TTL is capped at `maxTTL`;
/// - an unknown `Urgency` is read as `normal` (RFC 8030's default);
/// - a `Topic` Apple would refuse as `apns-collapse-id` (over 64 bytes, or any byte outside
///   visible ASCII) is dropped: the push goes out without collapsing instead of failing.
///   RFC 8030 allows only 32 base64url characters; longer, Apple-acceptable topics pass.
///
/// Checks run in this order: encoding (415), body size (400 empty, 413 too large), then the
/// keys and salt for the encoding (400). Every reason names the header or body and the fault.
package enum WebPushParser {
    /// The body cap (docs/ARCHITECTURE.md §6); the server should enforce it on `Content-Length` before
    /// reading, this is the last line of defence for chunked bodies.
    package static let defaultMaxBodyBytes = 64 * 1024

    /// Caps `TTL` so `now + ttl` can never overflow; about 68 years, far beyond what Apple stores.
    package static let maxTTL = Int(Int32.max)

    /// Apple refuses an `apns-collapse-id` longer than this.
    package static let maxTopicBytes = 64

    /// Parses one request. `headers` is read once, in a single pass, without copying names.
    package static func parse(
        headers: some Sequence<(name: String, value: String)>,
        body: [UInt8],
        maxBodyBytes: Int = defaultMaxBodyBytes
    ) throws(WebPushError) -> WebPushMessage {
        try parse(headers: Array(headers), body: body, maxBodyBytes: maxBodyBytes)
    }

    /// `parse` over fields held as Strings: their bytes are laid end to end in one buffer and read
    /// by `parse(fields:)`, so the rules have one home.
    package static func parse(
        headers: [(name: String, value: String)],
        body: [UInt8],
        maxBodyBytes: Int = defaultMaxBodyBytes
    ) throws(WebPushError) -> WebPushMessage {
        var packed: [UInt8] = []
        var ends: [(name: Int, value: Int)] = []
        ends.reserveCapacity(headers.count)
        for (name, value) in headers {
            packed.append(contentsOf: name.utf8)
            let nameEnd = packed.count
            packed.append(contentsOf: value.utf8)
            ends.append((nameEnd, packed.count))
        }
        let parsed = packed.withUnsafeBytes { bytes in
            Result { () throws(WebPushError) in
                try parse(fields: { visit in
                    var start = 0
                    for end in ends {
                        visit(UnsafeRawBufferPointer(rebasing: bytes[start..<end.name]),
                              UnsafeRawBufferPointer(rebasing: bytes[end.name..<end.value]))
                        start = end.value
                    }
                }, body: body, maxBodyBytes: maxBodyBytes)
            }
        }
        return try parsed.get()
    }

    /// Parses one request whose fields are bytes, as the server holds them: `fields` calls its
    /// argument once per field, name and value, in arrival order, and every buffer it hands out
    /// must stay valid until `parse` returns (the values are read after the walk). Nothing is
    /// decoded but what the message keeps (salt, dh, topic) and what a reason quotes.
    package static func parse(
        fields: ((_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void) -> Void,
        body: [UInt8],
        maxBodyBytes: Int = defaultMaxBodyBytes
    ) throws(WebPushError) -> WebPushMessage {
        var contentEncoding: UnsafeRawBufferPointer?
        var encryption = ListValue()
        var cryptoKey = ListValue()
        var ttlValue: UnsafeRawBufferPointer?
        var urgencyValue: UnsafeRawBufferPointer?
        var topicValue: UnsafeRawBufferPointer?

        fields { name, value in
            switch name.count {
            case 3 where asciiEqualsLowercase(name, "ttl"):
                if ttlValue == nil { ttlValue = value }
            case 5 where asciiEqualsLowercase(name, "topic"):
                if topicValue == nil { topicValue = value }
            case 7 where asciiEqualsLowercase(name, "urgency"):
                if urgencyValue == nil { urgencyValue = value }
            case 10 where asciiEqualsLowercase(name, "encryption"):
                encryption.add(value)
            case 10 where asciiEqualsLowercase(name, "crypto-key"):
                cryptoKey.add(value)
            case 16 where asciiEqualsLowercase(name, "content-encoding"):
                if contentEncoding == nil { contentEncoding = value }
            default:
                break
            }
        }

        // 1. Encoding.
        let encoding: WebPushEncoding
        let coding = contentEncoding.map { trimmed($0) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        if coding.isEmpty {
            guard encryption.isPresent || cryptoKey.isPresent else {
                throw WebPushError(status: 415, reason: "Content-Encoding header is missing; send aes128gcm or aesgcm")
            }
            encoding = .aesgcm
        } else if asciiEqualsLowercase(coding, "aesgcm") {
            encoding = .aesgcm
        } else if asciiEqualsLowercase(coding, "aes128gcm") {
            encoding = .aes128gcm
        } else {
            // Quoted as the String a reader of the header would see (invalid UTF-8 replaced).
            let quoted = String(decoding: coding, as: UTF8.self)
            throw WebPushError(status: 415, reason: "Content-Encoding \(printable(quoted[...])) is not supported; send aes128gcm or aesgcm")
        }

        // 2. Body size.
        if body.isEmpty { throw .bad("body is empty") }
        if body.count > maxBodyBytes {
            throw WebPushError(status: 413, reason: "body is \(body.count) bytes, over the \(maxBodyBytes)-byte limit")
        }

        var message = WebPushMessage(encoding: encoding, body: body)

        // 3. Keys and salt.
        switch encoding {
        case .aesgcm:
            // The value becomes the message's String before it is checked: it is kept when sound,
            // and made once either way.
            guard encryption.isPresent else { throw .bad("Encryption header is missing") }
            guard let salt = encryption.withBytes({ parameter("salt", in: $0) }) else { throw .bad("Encryption header has no salt") }
            guard let saltInfo = base64Info(salt) else { throw .bad("Encryption salt is not base64url") }
            guard saltInfo.count == 16 else { throw .bad("Encryption salt is \(saltInfo.count) bytes, not 16") }
            guard cryptoKey.isPresent else { throw .bad("Crypto-Key header is missing") }
            guard let dh = cryptoKey.withBytes({ parameter("dh", in: $0) }) else { throw .bad("Crypto-Key header has no dh") }
            guard let dhInfo = base64Info(dh) else { throw .bad("Crypto-Key dh is not base64url") }
            guard dhInfo.count == 65, dhInfo.first == 0x04 else {
                throw .bad("Crypto-Key dh is not a 65-byte uncompressed P-256 point")
            }
            message.salt = salt
            message.dh = dh
        case .aes128gcm:
            // RFC 8188 §2.1: salt(16) ‖ rs(4, big-endian) ‖ idlen(1) ‖ keyid(idlen); RFC 8291 §4 fixes keyid to the 65-byte key.
            guard body.count >= 21 else {
                throw .bad("aes128gcm body is \(body.count) bytes, shorter than its 21-byte header")
            }
            let rs = UInt32(body[16]) << 24 | UInt32(body[17]) << 16 | UInt32(body[18]) << 8 | UInt32(body[19])
            guard rs >= 18 else { throw .bad("aes128gcm header record size \(rs) is below 18") }
            let idlen = Int(body[20])
            guard idlen == 65 else { throw .bad("aes128gcm header key id length is \(idlen), not 65") }
            guard body.count > 21 + idlen else {
                throw .bad("aes128gcm body has no record after its \(21 + idlen)-byte header")
            }
            guard body[21] == 0x04 else {
                throw .bad("aes128gcm header key id is not an uncompressed P-256 point")
            }
            message.recordSize = rs
        }

        // 4. Delivery hints: never a reason to refuse.
        if let ttlValue { message.ttl = parseTTL(trimmed(ttlValue)) }
        if let urgencyValue {
            let u = trimmed(urgencyValue)
            if !u.isEmpty {
                if asciiEqualsLowercase(u, "very-low") { message.urgency = .veryLow }
                else if asciiEqualsLowercase(u, "low") { message.urgency = .low }
                else if asciiEqualsLowercase(u, "high") { message.urgency = .high }
                else { message.urgency = .normal }
            }
        }
        if let topicValue {
            let t = trimmed(topicValue)
            if !t.isEmpty, t.count <= maxTopicBytes, t.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
                message.topic = String(decoding: t, as: UTF8.self)
            }
        }
        return message
    }

    /// A field that may repeat and is then read as one list (`Encryption`, `Crypto-Key`): the
    /// first value as it lies in the caller's buffer, joined with `,` into bytes of its own only
    /// when a second one comes.
    private struct ListValue {
        private var first: UnsafeRawBufferPointer?
        private var joined: [UInt8]?

        var isPresent: Bool { first != nil }

        mutating func add(_ value: UnsafeRawBufferPointer) {
            guard let first else {
                first = value
                return
            }
            if joined == nil { joined = Array(first) }
            joined!.append(UInt8(ascii: ","))
            joined!.append(contentsOf: value)
        }

        /// `body` over the list's bytes; nil when the field is absent.
        func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R?) -> R? {
            if let joined { return joined.withUnsafeBufferPointer(body) }
            guard let first else { return nil }
            return body(first.assumingMemoryBound(to: UInt8.self))
        }
    }

    // MARK: - Helpers (internal for tests)

    /// Digits only; saturates at `maxTTL`; anything else → nil.
    static func parseTTL(_ s: UnsafeRawBufferPointer) -> Int? {
        guard !s.isEmpty else { return nil }
        var value = 0
        for byte in s {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = min(maxTTL, value * 10 + Int(byte - 0x30))
        }
        return value
    }

    /// The value of the first parameter called `name` (case-insensitive) in a `;`/`,`-separated
    /// list, unquoted. Quoted values may contain separators; a backslash escapes the next byte.
    static func parameter(_ name: StaticString, in header: String) -> Substring? {
        var header = header
        return header.withUTF8 { parameter(name, in: $0) }?[...]
    }

    /// `parameter` over bytes; the value as a String of its own (what the message keeps).
    static func parameter(_ name: StaticString, in header: UnsafeBufferPointer<UInt8>) -> String? {
        guard let (range, quoted) = parameterRange(name, in: header) else { return nil }
        let raw = UnsafeBufferPointer(rebasing: header[range])
        // Base64 never holds a backslash; unescape only when one is there.
        if quoted, raw.contains(UInt8(ascii: "\\")) {
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var escaping = false
            for b in raw {
                if !escaping && b == UInt8(ascii: "\\") { escaping = true; continue }
                escaping = false
                out.append(b)
            }
            return String(decoding: out, as: UTF8.self)
        }
        return String(decoding: raw, as: UTF8.self)
    }

    /// Where `parameter` finds the value, as byte offsets, and whether it was quoted.
    private static func parameterRange(_ name: StaticString, in p: UnsafeBufferPointer<UInt8>) -> (Range<Int>, quoted: Bool)? {
        let n = p.count
        var i = 0
        while i < n {
            // One item: up to an unquoted separator.
            var nameEnd = -1
            var valueStart = -1
            var valueEnd = -1
            var quoted = false
            var hadQuote = false
            let itemStart = i
            while i < n {
                if !quoted {
                    // Most bytes (a base64 value's) are none of the four that matter outside
                    // quotes: eight at a time up to the first that is one.
                    while i &+ 8 <= n {
                        let hits = parameterSyntaxHits(p, at: i)
                        if hits == 0 {
                            i &+= 8
                            continue
                        }
                        i &+= hits.trailingZeroBitCount &>> 3
                        break
                    }
                    if i == n { break }
                }
                let byte = p[i]
                if !quoted && !isParameterSyntax(byte) {
                    i &+= 1
                    continue
                }
                if quoted {
                    if byte == UInt8(ascii: "\\") {
                        i += 1
                        if i == n { break }
                    } else if byte == UInt8(ascii: "\"") {
                        quoted = false
                        valueEnd = i
                    }
                } else if byte == UInt8(ascii: ";") || byte == UInt8(ascii: ",") {
                    break
                } else if byte == UInt8(ascii: "=") && nameEnd < 0 {
                    nameEnd = i
                } else if byte == UInt8(ascii: "\"") && nameEnd >= 0 && !hadQuote {
                    quoted = true
                    hadQuote = true
                    valueStart = i + 1
                }
                i += 1
            }
            let itemEnd = i
            if i < n { i += 1 }

            guard nameEnd >= 0 else { continue }
            let itemName = trimmed(p, itemStart ..< nameEnd)
            guard asciiEqualsLowercase(UnsafeBufferPointer(rebasing: p[itemName]), name) else { continue }
            if hadQuote { return (valueStart ..< (valueEnd >= 0 ? valueEnd : itemEnd), true) }
            return (trimmed(p, (nameEnd + 1) ..< itemEnd), false)
        }
        return nil
    }

    /// High bits flagging the bytes at `i` that are `;` `,` `=` or `"`, the first byte lowest; 0
    /// when none of the eight is (SWAR: a zero byte of `word ^ pattern` is a match; the lowest
    /// flag is exact, a borrow only spreading flags upwards from a real one).
    @inline(__always)
    private static func parameterSyntaxHits(_ p: UnsafeBufferPointer<UInt8>, at i: Int) -> UInt64 {
        let w = UInt64(littleEndian: UnsafeRawPointer(p.baseAddress! + i).loadUnaligned(as: UInt64.self))
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func zeroBytes(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        return zeroBytes(w ^ (ones &* 0x3B)) | zeroBytes(w ^ (ones &* 0x2C))
            | zeroBytes(w ^ (ones &* 0x3D)) | zeroBytes(w ^ (ones &* 0x22))
    }

    /// Whether `byte` is one the parameter scan looks at outside quotes: `;` `,` `=` `"`.
    private static func isParameterSyntax(_ byte: UInt8) -> Bool {
        // All four are below 0x40: one bit each in a 64-bit mask.
        let mask: UInt64 = 1 << 0x3B | 1 << 0x2C | 1 << 0x3D | 1 << 0x22
        // `&>>`: the amount is known to be below 64, so the plain shift instruction does.
        return byte < 0x40 && (mask &>> UInt64(byte)) & 1 != 0
    }

    /// `range` without its leading and trailing spaces and tabs.
    private static func trimmed(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var start = range.lowerBound, end = range.upperBound
        while start < end, p[start] == 0x20 || p[start] == 0x09 { start += 1 }
        while end > start, p[end - 1] == 0x20 || p[end - 1] == 0x09 { end -= 1 }
        return start ..< end
    }

    /// Validates base64 (either alphabet, padded or not, see `Base64URL.decodedInfo`) and returns
    /// the decoded length and first byte, without decoding: the relay forwards the text, it only
    /// needs to know it is sound. An empty value is no salt or key, so it is refused.
    static func base64Info(_ s: Substring) -> (count: Int, first: UInt8)? {
        guard let info = Base64URL.decodedInfo(s), info.count > 0 else { return nil }
        return info
    }

    /// `base64Info` of a whole String, the parser's case, over its bytes.
    static func base64Info(_ s: String) -> (count: Int, first: UInt8)? {
        guard let info = Base64URL.decodedInfo(s), info.count > 0 else { return nil }
        return info
    }

    /// The bytes of a value `base64Info` accepts; nil for anything it refuses. For receivers
    /// that want the salt and key as bytes, not as sent.
    package static func base64Decode(_ s: Substring) -> [UInt8]? {
        base64Info(s) == nil ? nil : Base64URL.decode(s)
    }

    /// ASCII case-insensitive equality of bytes (a field's name or value) against an already
    /// lower-case literal, without allocating.
    private static func asciiEqualsLowercase(_ bytes: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        asciiEqualsLowercase(bytes.assumingMemoryBound(to: UInt8.self), lower)
    }

    /// `asciiEqualsLowercase` for typed bytes (the parameter scan's). The literal is a
    /// `StaticString`: its bytes are at hand, with none of a String's ways to reach them.
    private static func asciiEqualsLowercase(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        lower.withUTF8Buffer { asciiEqualsLowercase(bytes, $0) }
    }

    /// `asciiEqualsLowercase` for two byte buffers, the second already lower-case.
    private static func asciiEqualsLowercase(_ a: UnsafeBufferPointer<UInt8>, _ lower: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == lower.count else { return false }
        for i in 0..<a.count {
            let x = a[i]
            if ((x >= 0x41 && x <= 0x5A) ? x | 0x20 : x) != lower[i] { return false }
        }
        return true
    }

    /// `bytes` without its leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0, end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start ..< end])
    }

    /// Keeps a reflected header value to one short, safe line.
    static func printable(_ s: Substring) -> String {
        let clipped = s.utf8.prefix(40)
        let text = String(decoding: clipped.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
        return "\"" + text + (s.utf8.count > 40 ? "…" : "") + "\""
    }
}
