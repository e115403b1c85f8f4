/// JSON string literals written by hand: every error body of the relay and its hot-path APNs
/// payload are a few known keys, so a full encoder would only cost allocations.
///
/// `"` and `\` are escaped with a backslash, control bytes as `\u00xx`, everything else (UTF-8
/// included) passes through as is.
public enum JSONString {
    /// Bytes `s` takes between the quotes.
    public static func escapedCount(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in
            var n = bytes.count
            for b in bytes {
                if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { n += 1 }
                else if b < 0x20 { n += 5 }
            }
            return n
        }
    }

    /// Appends `s` escaped, without the quotes. Runs of plain bytes go in whole: the payload's
    /// salt, key and id have nothing to escape, and a byte-at-a-time append cost more than the
    /// rest of the payload.
    public static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { bytes in
            var runStart = 0
            for i in bytes.indices {
                let b = bytes[i]
                guard b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart ..< i]))
                if b < 0x20 {
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(hexDigits[Int(b >> 4)])
                    out.append(hexDigits[Int(b & 15)])
                } else {
                    out.append(UInt8(ascii: "\\"))
                    out.append(b)
                }
                runStart = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
    }

    /// `s` as a quoted JSON string literal.
    public static func quoted(_ s: String) -> String {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out.reserveCapacity(s.utf8.count + 2)
        appendEscaped(s, to: &out)
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
