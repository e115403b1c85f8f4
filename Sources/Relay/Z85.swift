/// The Z85 variant of toot-relay and webpush-apn-relay, in which their apps (Toot!, the
/// official Mastodon app and its forks) expect `p`, `k` and `s`.
///
/// ZeroMQ's Z85 alphabet, each 4-byte block big-endian as 5 digits; unlike ZeroMQ's Z85 the
/// length need not be a multiple of 4: a trailing block of n bytes (1 to 3) is written as
/// n + 1 digits of its own big-endian value (not zero-padded to 4 bytes). The alphabet holds
/// no `"` and no `\`, so the text goes into JSON unescaped.
package enum Z85 {
    package static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    /// Digits `byteCount` bytes take, known before a byte is written.
    package static func encodedCount(_ byteCount: Int) -> Int {
        let rest = byteCount % 4
        return byteCount / 4 * 5 + (rest == 0 ? 0 : rest + 1)
    }

    /// Appends the digits of `bytes`.
    package static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        let table = alphabet
        var i = 0
        let n = bytes.count
        while i + 4 <= n {
            let value = UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
            appendDigits(of: value, count: 5, table: table, to: &out)
            i += 4
        }
        if i < n {
            var value: UInt32 = 0
            for b in bytes[i...] { value = value << 8 | UInt32(b) }
            appendDigits(of: value, count: n - i + 1, table: table, to: &out)
        }
    }

    /// `bytes` as Z85 text.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(encodedCount(bytes.count))
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// What the app's extension does with `p`, `k` and `s`; nil for a character outside the
    /// alphabet, an impossible length (a trailing group of 1 digit), or a group whose value
    /// does not fit its bytes.
    package static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        let digits = Array(text.utf8)
        out.reserveCapacity(digits.count / 5 * 4 + 3)
        var i = 0
        while i < digits.count {
            let count = min(5, digits.count - i)
            guard count >= 2 else { return nil }
            var value: UInt64 = 0
            for d in digits[i..<(i + count)] {
                guard let v = digitValue[Int(d)] else { return nil }
                value = value * 85 + UInt64(v)
            }
            let byteCount = count - 1
            guard value >> (8 * UInt64(byteCount)) == 0 else { return nil }
            for shift in stride(from: 8 * (byteCount - 1), through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
            i += count
        }
        return out
    }

    private static func appendDigits(of value: UInt32, count: Int, table: [UInt8], to out: inout [UInt8]) {
        var divisor: UInt32 = 1
        for _ in 1..<count { divisor &*= 85 }
        var rest = value
        for _ in 0..<count {
            out.append(table[Int(rest / divisor)])
            rest %= divisor
            divisor /= 85
        }
    }

    private static let digitValue: [UInt8?] = {
        var table = [UInt8?](repeating: nil, count: 256)
        for (index, digit) in alphabet.enumerated() { table[Int(digit)] = UInt8(index) }
        return table
    }()
}
