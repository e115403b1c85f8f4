import Testing
@testable import APNsCore
import Encoders
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
}
