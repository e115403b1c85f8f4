/// JSON string literals written by hand, the one escaping rule of every JSON the package writes:
/// APNs payloads, the relay's answers and JSON log lines. Every one is a few known keys, so a
/// full encoder would only cost allocations.
///
/// RFC 8259: `"` and `\` get a backslash; backspace, form feed, newline, return and tab their
/// short escapes; every other control character and DEL `\u00xx`; U+2028 and U+2029 `\u2028`,
/// `\u2029`, because some JavaScript readers of log lines take them as line ends. Everything
/// else, UTF-8 included, passes through; runs of plain bytes are copied whole.
package enum JSONString {
    /// What one byte at `i` becomes: nil when it passes through, else the escape and the bytes
    /// it stands for (3 for U+2028/2029, 1 otherwise). `\u00xx` is spelled out by the callers.
    @inline(__always)
    private static func escape(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> (text: StaticString, width: Int)? {
        let b = bytes[i]
        switch b {
        case UInt8(ascii: "\""): return ("\\\"", 1)
        case UInt8(ascii: "\\"): return ("\\\\", 1)
        case 0x0A: return ("\\n", 1)
        case 0x0D: return ("\\r", 1)
        case 0x09: return ("\\t", 1)
        case 0x08: return ("\\b", 1)
        case 0x0C: return ("\\f", 1)
        case 0x00 ..< 0x20, 0x7F: return ("", 1)
        case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
            return (bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 3)
        default: return nil
        }
    }

    /// False for every byte `escape` passes through without a look at its neighbours: all but
    /// control characters, `"`, `\`, DEL and 0xE2 (the lead byte of U+2028/2029).
    @inline(__always)
    private static func mayNeedEscape(_ b: UInt8) -> Bool {
        b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b == 0x7F || b == 0xE2
    }

    /// False when none of the 8 bytes at `i` may need an escape (`mayNeedEscape` for all 8 at
    /// once, SWAR): a payload's long base64 message and most log values are passed 8 bytes per
    /// test instead of one. "Any byte below n / equal to v" tests are exact for the whole word
    /// (a borrow only ever spreads from a byte that is itself a hit).
    @inline(__always)
    private static func blockMayNeedEscape(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
        let w = UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self)
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func zeroByte(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        let below20 = (w &- ones &* 0x20) & ~w & highs
        return (below20 | zeroByte(w ^ (ones &* 0x22)) | zeroByte(w ^ (ones &* 0x5C))
            | zeroByte(w ^ (ones &* 0x7F)) | zeroByte(w ^ (ones &* 0xE2))) != 0
    }

    /// Bytes `s` takes between the quotes once escaped.
    package static func escapedCount(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in
            var n = bytes.count
            var i = 0
            while i < bytes.count {
                if i &+ 8 <= bytes.count, !blockMayNeedEscape(bytes, at: i) { i &+= 8; continue }
                guard mayNeedEscape(bytes[i]), let found = escape(bytes, at: i) else { i += 1; continue }
                n += (found.text.utf8CodeUnitCount == 0 ? 6 : found.text.utf8CodeUnitCount) - found.width
                i += found.width
            }
            return n
        }
    }

    /// Appends `s` escaped, without the quotes.
    package static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { bytes in
            var runStart = 0
            var i = 0
            while i < bytes.count {
                // Most bytes of a log line or payload are plain: skip them 8 at a time, then one
                // cheap test each, and look closer only at a byte that may need an escape.
                if i &+ 8 <= bytes.count, !blockMayNeedEscape(bytes, at: i) { i &+= 8; continue }
                guard mayNeedEscape(bytes[i]), let found = escape(bytes, at: i) else { i += 1; continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart ..< i]))
                if found.text.utf8CodeUnitCount > 0 {
                    found.text.withUTF8Buffer { out.append(contentsOf: $0) }
                } else {
                    let b = bytes[i]
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(Hex.digits[Int(b >> 4)])
                    out.append(Hex.digits[Int(b & 0x0F)])
                }
                i += found.width
                runStart = i
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart ..< bytes.count]))
        }
    }

    /// Appends `s` as a quoted JSON string literal.
    package static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(s, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// `s` as a quoted JSON string literal.
    package static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 2)
        appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `{"reason":…}`, plus `"timestamp"` when given: the body of every non-2xx answer of the
    /// relay (the HTTP server's own refusals and the push answers alike), so senders and
    /// operators read them the same way.
    package static func reasonBody(_ reason: String, timestamp: Int64? = nil) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(reason.utf8.count + 40)
        out.append(contentsOf: #"{"reason":"#.utf8)
        appendQuoted(reason, to: &out)
        if let timestamp { out.append(contentsOf: #","timestamp":"#.utf8); out.append(contentsOf: String(timestamp).utf8) }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
