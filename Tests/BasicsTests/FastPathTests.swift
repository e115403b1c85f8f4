import Testing
import Basics

/// A deterministic generator, so a failing case can be replayed.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The base64 check as it was written first, a character at a time through `Base64URL.value`:
/// the definition the table-driven check must agree with.
private func referenceDecodedInfo(_ text: String) -> (count: Int, first: UInt8)? {
    var symbols = 0, padding = 0
    var v0: UInt8 = 0, v1: UInt8 = 0
    for byte in text.utf8 {
        if byte == UInt8(ascii: "=") {
            padding += 1
            continue
        }
        guard padding == 0, let v = Base64URL.value(byte) else { return nil }
        if symbols == 0 { v0 = v } else if symbols == 1 { v1 = v }
        symbols += 1
    }
    guard symbols % 4 != 1 else { return nil }
    if padding > 0 {
        guard symbols > 0, padding <= 2, (symbols + padding) % 4 == 0 else { return nil }
    }
    return (symbols * 3 / 4, v0 << 2 | v1 >> 4)
}

/// base64url a character at a time, six bits by six: the definition the word-at-a-time encoder
/// must agree with.
private func referenceBase64(_ bytes: [UInt8], padded: Bool) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
        let chunk = Array(bytes[i ..< min(i + 3, bytes.count)])
        let v = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
        for k in 0 ..< chunk.count + 1 { out.append(alphabet[(v >> (18 - 6 * k)) & 63]) }
        if padded { out += Array(repeating: UInt8(ascii: "="), count: 3 - chunk.count) }
        i += 3
    }
    return String(decoding: out, as: UTF8.self)
}

/// A UUID's text from its bytes through `Hex.encode`: what the word-at-a-time writer must produce.
private func referenceUUIDText(_ bytes: [UInt8]) -> String {
    let hex = Array(Hex.encode(bytes).utf8)
    let groups = [0 ..< 8, 8 ..< 12, 12 ..< 16, 16 ..< 20, 20 ..< 32].map { String(decoding: hex[$0], as: UTF8.self) }
    return groups.joined(separator: "-")
}

@Suite("Basics' fast paths agree with their definitions")
struct EncoderFastPathTests {
    @Test("the base64 check agrees with the character-by-character one on random texts of both alphabets, padding and junk")
    func base64Check() {
        var rng = SplitMix64(state: 14)
        let pieces = Array("AQw09-_+/=".utf8) + [0x20, 0x00, 0xC3, 0xA9, UInt8(ascii: "*")]
        for _ in 0 ..< 3000 {
            let count = Int.random(in: 0 ... 12, using: &rng)
            var bytes = (0 ..< count).map { _ in pieces.randomElement(using: &rng)! }
            // Often valid-looking: symbols then a little padding.
            if Bool.random(using: &rng) {
                bytes = bytes.map { $0 == UInt8(ascii: "=") || $0 > 0x7F || $0 <= 0x20 || $0 == UInt8(ascii: "*") ? UInt8(ascii: "Q") : $0 }
                bytes += Array(repeating: UInt8(ascii: "="), count: Int.random(in: 0 ... 3, using: &rng))
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let expected = referenceDecodedInfo(text)
            for got in [Base64URL.decodedInfo(text), Base64URL.decodedInfo(text[...])] {
                #expect(got?.count == expected?.count && got?.first == expected?.first, "\(text)")
            }
        }
    }

    @Test("a computed hex digit is the table's, for every nibble")
    func hexDigit() {
        for n in 0 ..< 16 { #expect(Hex.digit(UInt8(n)) == Hex.digits[n]) }
    }

    @Test("a UUID's text is its 16 bytes as hex in 8-4-4-4-12 groups, for random UUIDs")
    func uuidText() {
        var rng = SplitMix64(state: 4)
        for _ in 0 ..< 500 {
            let uuid: UUIDText.Bytes = (rng.next(), rng.next())
            let bytes = withUnsafeBytes(of: uuid) { Array($0) }
            let hex = Hex.encode(bytes)
            let groups = [0 ..< 8, 8 ..< 12, 12 ..< 16, 16 ..< 20, 20 ..< 32].map { r in
                String(hex.utf8[hex.utf8.index(hex.utf8.startIndex, offsetBy: r.lowerBound) ..< hex.utf8.index(hex.utf8.startIndex, offsetBy: r.upperBound)])!
            }
            let text = UUIDText.lowercase(uuid)
            #expect(text == groups.joined(separator: "-"))
            #expect(UUIDText.parse(text).map { withUnsafeBytes(of: $0) { Array($0) } } == bytes)
        }
    }

    @Test("every byte value in every place of a UUID is written as its two digits, between the dashes")
    func uuidEveryByteEverywhere() {
        for place in 0 ..< 16 {
            for value in 0 ... 255 {
                // The other bytes differ from each other and from `value`'s neighbours, so a digit
                // written to the wrong place shows.
                var bytes = (0 ..< 16).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 3) }
                bytes[place] = UInt8(value)
                let uuid = bytes.withUnsafeBytes { $0.loadUnaligned(as: UUIDText.Bytes.self) }
                #expect(UUIDText.lowercase(uuid) == referenceUUIDText(bytes), "byte \(place) = \(value)")
            }
        }
    }

    @Test("a UUID's text is written into exactly its 36 bytes of a larger buffer")
    func uuidWriteStaysInItsBytes() {
        var rng = SplitMix64(state: 36)
        for _ in 0 ..< 100 {
            let uuid: UUIDText.Bytes = (rng.next(), rng.next())
            var buffer = [UInt8](repeating: 0xEE, count: UUIDText.textCount + 8)
            buffer.withUnsafeMutableBytes { UUIDText.write(uuid, into: UnsafeMutableRawBufferPointer(rebasing: $0[4...])) }
            #expect(buffer[..<4].allSatisfy { $0 == 0xEE } && buffer[(4 + UUIDText.textCount)...].allSatisfy { $0 == 0xEE })
            #expect(String(decoding: buffer[4 ..< 4 + UUIDText.textCount], as: UTF8.self) == UUIDText.lowercase(uuid))
            #expect(UUIDText.lowercase(uuid) == referenceUUIDText(withUnsafeBytes(of: uuid) { Array($0) }))
        }
    }

    @Test("four bytes' hex digits are each byte's two digits in order, the first in the lowest byte")
    func hexDigitsOfFourBytes() {
        var rng = SplitMix64(state: 8)
        for _ in 0 ..< 2000 {
            let word = UInt32(truncatingIfNeeded: rng.next())
            let digits = UUIDText.hexDigits(word)
            let bytes = (0 ..< 4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) }
            #expect(withUnsafeBytes(of: digits.littleEndian) { Array($0) } == Array(Hex.encode(bytes).utf8))
        }
    }

    @Test("base64 a word at a time is the character-at-a-time definition, for every length to 300, padded or not")
    func base64EveryLength() {
        var rng = SplitMix64(state: 64)
        for count in 0 ... 300 {
            let bytes = (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            for padded in [false, true] {
                #expect(Base64URL.encode(bytes, padded: padded) == referenceBase64(bytes, padded: padded), "\(count) bytes")
            }
        }
    }

    @Test("base64 of every byte value in every place of a six-byte step, around the step's edges")
    func base64EveryByteEverywhere() {
        // A push body's length (350): its steps, then the three-byte and the padded tail.
        let base = (0 ..< 350).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 7) }
        for place in [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 340, 341, 342, 343, 344, 345, 346, 347, 348, 349] {
            for value in 0 ... 255 {
                var bytes = base
                bytes[place] = UInt8(value)
                #expect(Base64URL.encode(bytes, padded: true) == referenceBase64(bytes, padded: true), "byte \(place) = \(value)")
            }
        }
    }
}
