/// JSON string literals written by hand: every error body of the relay and its hot-path APNs
/// payload are a few known keys, so a full encoder would only cost allocations.
///
/// `"` and `\` are escaped with a backslash, control bytes as `\u00xx`, everything else (UTF-8
/// included) passes through as is.
public enum JSONString {
    /// Bytes `s` takes between the quotes.
    public static func escapedCount(_ s: String) -> Int {
        var n = 0
        for b in s.utf8 {
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { n += 2 }
            else if b < 0x20 { n += 6 }
            else { n += 1 }
        }
        return n
    }

    /// Appends `s` escaped, without the quotes.
    public static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        for b in s.utf8 {
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
                out.append(UInt8(ascii: "\\"))
                out.append(b)
            } else if b < 0x20 {
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 15)])
            } else {
                out.append(b)
            }
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
