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
        String(unsafeUninitializedCapacity: textCount) { out in
            write(uuid, into: UnsafeMutableRawBufferPointer(out))
            return textCount
        }
    }

    /// Characters of a UUID's text.
    package static let textCount = 36

    /// Writes the canonical lower-case text into the first `textCount` bytes of `out`: each
    /// half's eight bytes become sixteen digits as two words (`hexDigits`), stored at their
    /// places around the four dashes.
    package static func write(_ uuid: Bytes, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= textCount, "a UUID's text is 36 bytes")
        let dash = UInt8(ascii: "-")
        // Each word's first byte in memory as its lowest (a no-op on this little-endian machine).
        let first = UInt64(littleEndian: uuid.0), second = UInt64(littleEndian: uuid.1)
        let a = hexDigits(UInt32(truncatingIfNeeded: first)), b = hexDigits(UInt32(truncatingIfNeeded: first >> 32))
        let c = hexDigits(UInt32(truncatingIfNeeded: second)), d = hexDigits(UInt32(truncatingIfNeeded: second >> 32))
        out.storeBytes(of: a.littleEndian, toByteOffset: 0, as: UInt64.self)
        out.storeBytes(of: dash, toByteOffset: 8, as: UInt8.self)
        out.storeBytes(of: UInt32(truncatingIfNeeded: b).littleEndian, toByteOffset: 9, as: UInt32.self)
        out.storeBytes(of: dash, toByteOffset: 13, as: UInt8.self)
        out.storeBytes(of: UInt32(truncatingIfNeeded: b >> 32).littleEndian, toByteOffset: 14, as: UInt32.self)
        out.storeBytes(of: dash, toByteOffset: 18, as: UInt8.self)
        out.storeBytes(of: UInt32(truncatingIfNeeded: c).littleEndian, toByteOffset: 19, as: UInt32.self)
        out.storeBytes(of: dash, toByteOffset: 23, as: UInt8.self)
        out.storeBytes(of: UInt32(truncatingIfNeeded: c >> 32).littleEndian, toByteOffset: 24, as: UInt32.self)
        out.storeBytes(of: d.littleEndian, toByteOffset: 28, as: UInt64.self)
    }

    /// The eight lower-case hex digits of four bytes (the first is the lowest), the first digit
    /// in the lowest byte, so storing the word little-endian writes them in order: the bytes are
    /// spread one per 16-bit lane, each lane split into its two nibbles (high nibble first), and
    /// every nibble turned into its digit at once ("0" plus the nibble, plus 39 more for 10 and up
    /// to reach "a"): a digit computed and stored at a time cost several times as much, twice a push.
    package static func hexDigits(_ bytes: UInt32) -> UInt64 {
        var x = UInt64(bytes)
        x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
        x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
        let nibbles = (x >> 4) & 0x000F_000F_000F_000F | (x & 0x000F_000F_000F_000F) << 8
        let ones: UInt64 = 0x0101_0101_0101_0101
        let letters = ((nibbles &+ ones &* 6) >> 4) & ones  // 1 in each byte whose nibble is 10 or more
        return nibbles &+ ones &* 0x30 &+ letters &* 39
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
