import Testing
@testable import APNsCore
import Basics
@testable import APNs

/// Token fingerprints must stay the same across releases, or log lines about one device
/// stop joining: the hash is checked against FIPS 180-4's published vectors.
@Suite("SHA-256 for fingerprints")
struct SHA256Tests {
    @Test("matches the FIPS 180-4 test vectors", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func vectors(input: String, digest: String) {
        #expect(Hex.encode(SHA256.hash(Array(input.utf8))) == digest)
    }

    @Test("a token's fingerprint is the first 4 bytes of SHA-256 over its bytes")
    func fingerprint() throws {
        let token = try DeviceToken(String(repeating: "00", count: 32))
        // SHA-256 of 32 zero bytes starts 66687aad.
        #expect(token.fingerprint == "66687aad")
    }

    @Test("tokens that pad into a second block keep their fingerprints", arguments: [
        (55, "e7313d33"), (56, "4324d65f"), (64, "39e3d7b6"), (100, "5a2cda23"),
    ])
    func longTokens(bytes: Int, fingerprint: String) throws {
        // Bytes 3, 10, 17, … (7i + 3 mod 256); the expected digits are from an independent SHA-256.
        let raw = (0..<bytes).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        let hex = Hex.encode(raw)
        if hex.utf8.count >= DeviceToken.minDigits {
            #expect(try DeviceToken(hex).fingerprint == fingerprint)
            #expect(try DeviceToken(hex.uppercased()).fingerprint == fingerprint)
        }
        #expect(String(Hex.encode(SHA256.hash(raw)).prefix(8)) == fingerprint)
    }

    @Test("a fingerprint is the first 8 digits of the token's full digest, at every length Apple may use")
    func everyLength() throws {
        for bytes in 32...100 {
            let raw = (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ bytes) }
            let token = try DeviceToken(Hex.encode(raw))
            #expect(token.fingerprint == String(Hex.encode(SHA256.hash(raw)).prefix(8)), "\(bytes) bytes")
        }
    }
}
