/// Random (version 4) UUIDs and their lower-case text: every push gets one as its `apns-id`, and
/// every request without `X-Request-ID` one as its id. Made by hand, without Foundation's `UUID`
/// (which on Linux opens, reads and closes /dev/urandom for each one, and is not worth linking
/// Foundation for). A UUID here is its 16 bytes in order, held as two words loaded from memory.
package enum UUIDText {
    /// The 16 bytes of a UUID in order: `withUnsafeBytes(of:)` reads them back.
    package typealias Bytes = (UInt64, UInt64)

    /// A random UUID, its bytes from `RandomBytes` (one getrandom call per 256 UUIDs).
    package static func random(using source: RandomBytes = .shared) -> Bytes {
        var words = source.words()
        withUnsafeMutableBytes(of: &words) { bytes in
            bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
            bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        }
        return words
    }

    /// The canonical text, `8-4-4-4-12` lower-case hex digits, written straight into the string's storage.
    package static func lowercase(_ uuid: Bytes) -> String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                // The four dashes at their fixed places, the digits around them (computed, not read
                // from `Hex.digits`: the global's access check per digit cost more than the digit).
                var o = 0
                for i in 0 ..< 16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o &+= 1 }
                    let b = bytes[i]
                    out[o] = Hex.digit(b >> 4)
                    out[o &+ 1] = Hex.digit(b & 0x0f)
                    o &+= 2
                }
                return o
            }
        }
    }

    /// Reads `8-4-4-4-12` hex digits of either case: exactly 36 characters, the dashes where they
    /// belong, nothing around them, and only hex digits between them (stricter than Foundation's
    /// `UUID(uuidString:)`, which also read a group such as `0C+D`).
    package static func parse(_ text: String) -> Bytes? {
        let text = Array(text.utf8)
        guard text.count == 36 else { return nil }
        var words: Bytes = (0, 0)
        let ok = withUnsafeMutableBytes(of: &words) { bytes -> Bool in
            var i = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[i] == UInt8(ascii: "-") else { return false }
                    i += 1
                }
                guard let high = Hex.value(text[i]), let low = Hex.value(text[i + 1]) else { return false }
                bytes[index] = high << 4 | low
                i += 2
            }
            return true
        }
        return ok ? words : nil
    }

    /// A random UUID's lower-case text.
    package static func randomLowercase() -> String { lowercase(random()) }
}
