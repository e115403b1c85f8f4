import Testing
import Encoders

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

@Suite("Encoders' fast paths agree with their definitions")
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
}
