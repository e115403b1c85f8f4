internal import Basics

/// An APNs device token, checked once so nothing malformed reaches Apple.
///
/// Apple answers a bad token with 400 `BadDeviceToken`, which the relay must treat as a
/// dead subscription; refusing obviously broken tokens here keeps that answer meaningful.
package struct DeviceToken: Sendable, Hashable, CustomStringConvertible {
    /// The token in lower-case hex, the form Apple's `:path` expects.
    package let hex: String

    /// Apple's tokens are 32 bytes today; it has said they may grow, so we accept up to 100 bytes.
    package static let minDigits = 64
    package static let maxDigits = 200

    /// Accepts upper- or lower-case hex of even length, 64 to 200 digits.
    ///
    /// A token already in lower case (what apps send) is kept as given, sharing its storage: every
    /// push checks one, and a copy of its digits was an allocation per push.
    package init(_ hex: String) throws(APNsError) {
        let utf8 = hex.utf8
        guard utf8.count >= Self.minDigits, utf8.count <= Self.maxDigits else {
            throw .invalid("device token must be \(Self.minDigits) to \(Self.maxDigits) hex digits; got \(utf8.count) characters")
        }
        guard utf8.count % 2 == 0 else {
            throw .invalid("device token must have an even number of hex digits; got \(utf8.count)")
        }
        // Over the contiguous bytes (a token from a path has them), every digit classified without
        // a branch: stepping the UTF8View a byte at a time cost more than the rest of the push's
        // checks together.
        let (valid, hasUpper) = utf8.withContiguousStorageIfAvailable(Self.classify) ?? Self.classify(Array(utf8))
        guard valid else {
            throw .invalid("device token must be hex digits only (0-9, a-f); found another character")
        }
        guard hasUpper else {
            self.hex = hex
            return
        }
        self.hex = String(unsafeUninitializedCapacity: utf8.count) { out in
            for (i, byte) in utf8.enumerated() {
                out[i] = byte <= UInt8(ascii: "9") ? byte : byte | 0x20
            }
            return utf8.count
        }
    }

    /// Whether every byte is a hex digit, and whether any is an upper-case one: one table entry
    /// a byte, OR-ed together (1 upper-case digit, 2 anything but a digit).
    private static func classify(_ digits: UnsafeBufferPointer<UInt8>) -> (valid: Bool, hasUpper: Bool) {
        let seen = digitClasses.withUnsafeBufferPointer { classes in
            var seen: UInt8 = 0
            for byte in digits { seen |= classes[Int(byte)] }
            return seen
        }
        return (seen & 2 == 0, seen & 1 != 0)
    }

    /// 0 for `0-9` and `a-f`, 1 for `A-F`, 2 for every other byte.
    private static let digitClasses: [UInt8] = (0 ... 255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): return 0
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return 1
        default: return 2
        }
    }

    private static func classify(_ digits: [UInt8]) -> (valid: Bool, hasUpper: Bool) {
        digits.withUnsafeBufferPointer(classify)
    }

    /// Old apps sent `[deviceToken description]`, e.g. `<abcd 1234 …>`; this recovers the hex.
    /// Spaces and angle brackets go, letters become lower case; nothing is validated here.
    package static func cleaned(_ text: String) -> String {
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
    /// Every push logged at `info` computes one, so the token is decoded into the hash's stack
    /// buffer and the digits go into an 8-byte (inline, never allocated) string.
    package var fingerprint: String { fingerprint(word: SHA256.firstWord(ofLowercaseHex: hex)) }

    /// `fingerprint`, with the SHA-256 done by `sha256FirstWord`, which gets the token's bytes and
    /// returns its digest's first 4 bytes, big-endian (nil: this module's own SHA-256 does it).
    /// The relay passes OpenSSL's, which uses the CPU's SHA instructions: a few times faster
    /// than the portable one, on a line every push writes.
    package func fingerprint(sha256FirstWord: (UnsafeRawBufferPointer) -> UInt32?) -> String {
        var hex = hex
        let word = hex.withUTF8 { digits in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: digits.count / 2) { bytes in
                for i in 0..<bytes.count { bytes[i] = SHA256.byte(digits[2 * i], digits[2 * i + 1]) }
                return sha256FirstWord(UnsafeRawBufferPointer(bytes))
            }
        }
        return fingerprint(word: word ?? SHA256.firstWord(ofLowercaseHex: hex))
    }

    private func fingerprint(word: UInt32) -> String {
        String(unsafeUninitializedCapacity: 8) { out in
            Hex.digits.withUnsafeBufferPointer { digits in
                for i in 0..<8 { out[i] = digits[Int(truncatingIfNeeded: word >> UInt32(28 - 4 * i)) & 0x0f] }
            }
            return 8
        }
    }

    /// The fingerprint, so a token printed by accident still does not leak.
    package var description: String { "DeviceToken(\(fingerprint))" }
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

    /// The digest of `message`, 32 bytes.
    static func hash(_ message: [UInt8]) -> [UInt8] {
        let state = digest(count: message.count) { data in
            message.withUnsafeBufferPointer { message in
                for i in 0..<message.count { data[i] = message[i] }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(32)
        state.append(to: &out)
        return out
    }

    /// The digest's first 4 bytes, big-endian, of the bytes `hex` spells (lower-case digits,
    /// even count, as `DeviceToken` keeps them): a token's fingerprint, with nothing allocated.
    static func firstWord(ofLowercaseHex hex: String) -> UInt32 {
        var hex = hex
        return hex.withUTF8 { digits in
            digest(count: digits.count / 2) { data in
                for i in 0..<(digits.count / 2) { data[i] = byte(digits[2 * i], digits[2 * i + 1]) }
            }.h0
        }
    }

    /// The byte two lower-case hex digits spell.
    static func byte(_ high: UInt8, _ low: UInt8) -> UInt8 { nibble(high) << 4 | nibble(low) }

    private static func nibble(_ digit: UInt8) -> UInt8 {
        digit <= UInt8(ascii: "9") ? digit &- UInt8(ascii: "0") : digit &- UInt8(ascii: "a") &+ 10
    }

    /// The eight working words between blocks (FIPS 180-4 H0…H7), kept in registers.
    struct State {
        var h0: UInt32 = 0x6a09e667, h1: UInt32 = 0xbb67ae85, h2: UInt32 = 0x3c6ef372, h3: UInt32 = 0xa54ff53a
        var h4: UInt32 = 0x510e527f, h5: UInt32 = 0x9b05688c, h6: UInt32 = 0x1f83d9ab, h7: UInt32 = 0x5be0cd19

        func append(to out: inout [UInt8]) {
            func big(_ word: UInt32) {
                out.append(UInt8(truncatingIfNeeded: word >> 24)); out.append(UInt8(truncatingIfNeeded: word >> 16))
                out.append(UInt8(truncatingIfNeeded: word >> 8)); out.append(UInt8(truncatingIfNeeded: word))
            }
            big(h0); big(h1); big(h2); big(h3); big(h4); big(h5); big(h6); big(h7)
        }
    }

    /// Hashes `count` bytes that `fill` writes at the start of a stack buffer; the padding
    /// (0x80, zeros up to 56 mod 64, the 64-bit bit length) and the schedule live on the stack too.
    private static func digest(count: Int, fill: (UnsafeMutableBufferPointer<UInt8>) -> Void) -> State {
        let bitLength = UInt64(count) &* 8
        let padded = (count + 9 + 63) / 64 * 64
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: padded) { data in
            fill(data)
            data[count] = 0x80
            for i in (count + 1)..<(padded - 8) { data[i] = 0 }
            for j in 0..<8 { data[padded - 8 + j] = UInt8(truncatingIfNeeded: bitLength >> UInt64(56 - 8 * j)) }
            return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                k.withUnsafeBufferPointer { k in
                    var state = State()
                    for chunk in stride(from: 0, to: padded, by: 64) {
                        compress(data, at: chunk, into: &state, schedule: w, k: k)
                    }
                    return state
                }
            }
        }
    }

    private static func compress(_ data: UnsafeMutableBufferPointer<UInt8>, at chunk: Int, into state: inout State,
                                 schedule w: UnsafeMutableBufferPointer<UInt32>, k: UnsafeBufferPointer<UInt32>) {
        for i in 0..<16 {
            let j = chunk + i * 4
            w[i] = UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
        }
        for i in 16..<64 {
            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var a = state.h0, b = state.h1, c = state.h2, d = state.h3, e = state.h4, f = state.h5, g = state.h6, hh = state.h7
        for i in 0..<64 {
            let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
            let ch = (e & f) ^ (~e & g)
            let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
            let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
            let maj = (a & b) ^ (a & c) ^ (b & c)
            let t2 = s0 &+ maj
            hh = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ t2
        }
        state.h0 &+= a; state.h1 &+= b; state.h2 &+= c; state.h3 &+= d
        state.h4 &+= e; state.h5 &+= f; state.h6 &+= g; state.h7 &+= hh
    }

    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
}
