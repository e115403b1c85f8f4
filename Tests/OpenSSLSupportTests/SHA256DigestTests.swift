import Testing
@testable import OpenSSLSupport

@Suite("SHA-256 by OpenSSL")
struct SHA256DigestTests {
    @Test("the first word of FIPS 180-4's examples", arguments: [
        ("", 0xe3b0_c442 as UInt32),
        ("abc", 0xba78_16bf),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0x248d_6a61),
    ])
    func knownDigests(message: String, firstWord: UInt32) {
        let word = Array(message.utf8).withUnsafeBytes { SHA256Digest.firstWord(of: $0) }
        #expect(word == firstWord)
    }
}
