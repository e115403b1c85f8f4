#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Encoders

/// An APNs device token, checked once so nothing malformed reaches Apple.
///
/// Apple answers a bad token with 400 `BadDeviceToken`, which the relay must treat as a
/// dead subscription; refusing obviously broken tokens here keeps that answer meaningful.
public struct DeviceToken: Sendable, Hashable, CustomStringConvertible {
    /// The token in lower-case hex, the form Apple's `:path` expects.
    public let hex: String

    /// Apple's tokens are 32 bytes today; it has said they may grow, so we accept up to 100 bytes.
    public static let minDigits = 64
    public static let maxDigits = 200

    /// Accepts upper- or lower-case hex of even length, 64 to 200 digits.
    public init(_ hex: String) throws(APNsError) {
        let utf8 = hex.utf8
        guard utf8.count >= Self.minDigits, utf8.count <= Self.maxDigits else {
            throw .invalid("device token must be \(Self.minDigits) to \(Self.maxDigits) hex digits; got \(utf8.count) characters")
        }
        guard utf8.count % 2 == 0 else {
            throw .invalid("device token must have an even number of hex digits; got \(utf8.count)")
        }
        var lower = [UInt8]()
        lower.reserveCapacity(utf8.count)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                lower.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                lower.append(byte + 32)
            default:
                throw .invalid("device token must be hex digits only (0-9, a-f); found another character")
            }
        }
        self.hex = String(decoding: lower, as: UTF8.self)
    }

    /// Old apps sent `[deviceToken description]`, e.g. `<abcd 1234 …>`; this recovers the hex.
    /// Spaces and angle brackets go, letters become lower case; nothing is validated here.
    public static func cleaned(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\t"):
                continue
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                out.append(byte + 32)
            default:
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Logs must never hold a token (it addresses a person's phone), yet lines about one
    /// device must be joinable: the first 8 hex digits of SHA-256 over the token's bytes.
    public var fingerprint: String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8 = 0
        for (index, byte) in hex.utf8.enumerated() {
            let nibble = byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : byte - UInt8(ascii: "a") + 10
            if index % 2 == 0 { high = nibble } else { bytes.append(high << 4 | nibble) }
        }
        let digest = SHA256.hash(bytes)
        return Hex.encode(digest.prefix(4))
    }

    /// The fingerprint, so a token printed by accident still does not leak.
    public var description: String { "DeviceToken(\(fingerprint))" }
}

/// SHA-256 (FIPS 180-4), only for token fingerprints: the module must not depend on
/// OpenSSL for something this small, and Foundation on Linux has no digest API.
enum SHA256 {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// Runs when a log line names a device (`fingerprint`): at the default level, info, every
    /// push writes one, so this can run once per push. The schedule and padding live in stack
    /// buffers, and the state in locals.
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var h0: UInt32 = 0x6a09e667, h1: UInt32 = 0xbb67ae85, h2: UInt32 = 0x3c6ef372, h3: UInt32 = 0xa54ff53a
        var h4: UInt32 = 0x510e527f, h5: UInt32 = 0x9b05688c, h6: UInt32 = 0x1f83d9ab, h7: UInt32 = 0x5be0cd19
        let bitLength = UInt64(message.count) &* 8
        // Message, 0x80, zeros up to 56 mod 64, then the 64-bit length.
        let padded = (message.count + 9 + 63) / 64 * 64
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: padded) { data in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                k.withUnsafeBufferPointer { k in
                    _ = data.initialize(fromContentsOf: message)
                    data[message.count] = 0x80
                    for i in (message.count + 1)..<(padded - 8) { data[i] = 0 }
                    for j in 0..<8 { data[padded - 8 + j] = UInt8(truncatingIfNeeded: bitLength >> UInt64(56 - 8 * j)) }
                    for chunk in stride(from: 0, to: padded, by: 64) {
                        for i in 0..<16 {
                            let j = chunk + i * 4
                            w[i] = UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
                        }
                        for i in 16..<64 {
                            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                        }
                        var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, hh = h7
                        for i in 0..<64 {
                            let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                            let ch = (e & f) ^ (~e & g)
                            let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
                            let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                            let maj = (a & b) ^ (a & c) ^ (b & c)
                            let t2 = s0 &+ maj
                            hh = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ t2
                        }
                        h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= hh
                    }
                    data.deinitialize()
                }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(32)
        for word in [h0, h1, h2, h3, h4, h5, h6, h7] {
            out.append(UInt8(truncatingIfNeeded: word >> 24)); out.append(UInt8(truncatingIfNeeded: word >> 16))
            out.append(UInt8(truncatingIfNeeded: word >> 8)); out.append(UInt8(truncatingIfNeeded: word))
        }
        return out
    }

    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
}
