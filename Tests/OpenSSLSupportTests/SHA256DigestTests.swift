import Testing
import Dispatch
import Synchronization
@testable import OpenSSLSupport

@Suite("SHA-256 by OpenSSL")
struct SHA256DigestTests {
    @Test("the first word of FIPS 180-4's examples", arguments: [
        ("", 0xe3b0_c442 as UInt32),
        ("abc", 0xba78_16bf),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0x248d_6a61),
        // Many blocks, and lengths on either side of the padding's block boundary.
        (String(repeating: "a", count: 1_000_000), 0xcdc7_6e5c),
        (String(repeating: "a", count: 55), 0x9f4390f8),
        (String(repeating: "a", count: 56), 0xb35439a4),
        (String(repeating: "a", count: 64), 0xffe054fe),
    ] as [(String, UInt32)])
    func knownDigests(message: String, firstWord: UInt32) {
        let word = Array(message.utf8).withUnsafeBytes { SHA256Digest.firstWord(of: $0) }
        #expect(word == firstWord)
    }
}

@Suite("SHA-256 by OpenSSL, on several threads")
struct SHA256DigestReuseTests {
    @Test("each message hashes as it would alone, many in turn on several threads at once")
    func reusedContextsCarryNothingOver() {
        let messages: [(String, UInt32)] = [("abc", 0xba78_16bf), ("", 0xe3b0_c442),
                                            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0x248d_6a61)]
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<500 {
                let (message, expected) = messages[(round + thread) % messages.count]
                let word = Array(message.utf8).withUnsafeBytes { SHA256Digest.firstWord(of: $0) }
                if word != expected { wrong.withLock { $0 += 1 } }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
    }
}
