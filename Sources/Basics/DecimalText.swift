/// Integers written as decimal digits without a `String` or an array for them: status lines,
/// Content-Length, the Date header's year and the `apns-priority`/`apns-expiration` values all
/// go out this way, per request.
package enum DecimalText {
    /// Appends `value` in decimal, a `-` first when negative, with leading zeros up to `minDigits`.
    @inlinable
    package static func append(_ value: Int, to out: inout [UInt8], minDigits: Int = 1) {
        withDigits(value, minDigits: minDigits) { out.append(contentsOf: $0) }
    }

    /// Hands `body` the decimal text of `value` (a `-` first when negative, leading zeros up to
    /// `minDigits`, at most 30), in a stack buffer valid during the call. Inlinable: unspecialised,
    /// a caller in another module would reach the generic `body` through its metadata for every number.
    @inlinable
    package static func withDigits<R>(_ value: Int, minDigits: Int = 1, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        // Written backwards into 32 bytes on the stack: an Int has at most 19 digits and a sign.
        var scratch: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return try withUnsafeMutableBytes(of: &scratch) { raw in
            let out = raw.bindMemory(to: UInt8.self)
            // Int.min has no positive counterpart; its magnitude as unsigned is exact.
            var v = value.magnitude
            var i = out.count
            repeat {
                i -= 1
                out[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            } while v > 0
            while out.count - i < min(minDigits, 30) {
                i -= 1
                out[i] = UInt8(ascii: "0")
            }
            if value < 0 {
                i -= 1
                out[i] = UInt8(ascii: "-")
            }
            return try body(UnsafeBufferPointer(rebasing: out[i...]))
        }
    }
}
