/// Deterministic ECDSA nonces (RFC 6979, section 3.2) for P-256 with SHA-256: k from the private
/// key and the message's digest alone, by HMAC-SHA-256 DRBG. With it the same key signs the same
/// provider token to the same bytes in every process, so a fleet of relays presents Apple one
/// token per window without talking to each other (`ES256PrivateKey.sign`).
///
/// P-256's order q and SHA-256 are both 256 bits long, so RFC 6979's bits2int is the big-endian
/// integer of 32 bytes, int2octets writes 32 bytes, and one HMAC block makes a candidate k.
package enum RFC6979 {
    /// q, the order of P-256's base point (SEC 2, section 2.4.2), big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// The nonce k (32 bytes, in [1, q-1]) for private key `x` (32 bytes) and the SHA-256 digest
    /// `h1` of the message; nil when an argument is not 32 bytes or HMAC failed.
    package static func nonce(privateKey x: [UInt8], digest h1: [UInt8]) -> [UInt8]? {
        guard x.count == 32, h1.count == 32 else { return nil }
        // bits2octets(h1): h1 mod q, and h1 < 2^256 < 2q, so one subtraction at most.
        let h = isBelowOrder(h1) ? h1 : minusOrder(h1)
        var v = [UInt8](repeating: 0x01, count: 32)
        var k = [UInt8](repeating: 0x00, count: 32)
        guard let k1 = HMACSHA256.mac(key: k, data: v + [0x00] + x + h) else { return nil }
        k = k1
        guard let v1 = HMACSHA256.mac(key: k, data: v) else { return nil }
        v = v1
        guard let k2 = HMACSHA256.mac(key: k, data: v + [0x01] + x + h) else { return nil }
        k = k2
        guard let v2 = HMACSHA256.mac(key: k, data: v) else { return nil }
        v = v2
        while true {
            guard let t = HMACSHA256.mac(key: k, data: v) else { return nil }
            v = t
            if !t.allSatisfy({ $0 == 0 }), isBelowOrder(t) { return t }
            // Out of range (about once in 2^32 keys and messages): step the DRBG and draw again.
            guard let kNext = HMACSHA256.mac(key: k, data: v + [0x00]) else { return nil }
            k = kNext
            guard let vNext = HMACSHA256.mac(key: k, data: v) else { return nil }
            v = vNext
        }
    }

    /// True when the 32-byte big-endian `value` is below q.
    static func isBelowOrder(_ value: [UInt8]) -> Bool {
        for (a, b) in zip(value, order) where a != b { return a < b }
        return false
    }

    /// `value` − q, for a 32-byte big-endian value not below q.
    private static func minusOrder(_ value: [UInt8]) -> [UInt8] {
        var out = value
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            let difference = Int(value[index]) - Int(order[index]) - borrow
            out[index] = UInt8((difference + 256) & 0xFF)
            borrow = difference < 0 ? 1 : 0
        }
        return out
    }
}
