import Foundation
import Testing
@testable import Relay

/// The vectors were computed outside Swift, by this Python 3 script written from the rule
/// toot-relay's apps decode (not from the relay's code), and its output pasted here:
///
///     A = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
///     def digits(value, count):
///         out = []
///         for _ in range(count):
///             out.append(A[value % 85]); value //= 85
///         assert value == 0
///         return "".join(reversed(out))
///     def enc(b):
///         full = len(b) // 4 * 4
///         s = "".join(digits(int.from_bytes(b[i:i+4], "big"), 5) for i in range(0, full, 4))
///         rest = b[full:]
///         return s + (digits(int.from_bytes(rest, "big"), len(rest) + 1) if rest else "")
///     import hashlib
///     for n in range(10):
///         b = hashlib.sha256(b"relay-to").digest()[:n]
///         print(n, b.hex(), enc(b))
///     print([enc(b"\xff" * n) for n in range(1, 5)])
///     print(enc(bytes.fromhex("864FD26FB559F75B")))
/// The first bytes of SHA-256("relay-to"), as the script prints them.
private let sha: [UInt8] = [0xa5, 0x73, 0xa8, 0x55, 0xb2, 0x25, 0x1b, 0x1a, 0x7b]

private let vectors: [(bytes: [UInt8], z85: String)] = [
    (Array(sha.prefix(0)), ""),
    (Array(sha.prefix(1)), "1}"),
    (Array(sha.prefix(2)), "5<p"),
    (Array(sha.prefix(3)), "hT+n"),
    (Array(sha.prefix(4)), "Re@On"),
    (Array(sha.prefix(5)), "Re@On28"),
    (Array(sha.prefix(6)), "Re@On6qJ"),
    (Array(sha.prefix(7)), "Re@Onj0)&"),
    (Array(sha.prefix(8)), "Re@OnVlZCd"),
    (Array(sha.prefix(9)), "Re@OnVlZCd1C"),
    // The largest value of each block length: the first digit stays inside the alphabet.
    ([0xff], "30"),
    ([0xff, 0xff], "960"),
    ([0xff, 0xff, 0xff], "rr90"),
    ([0xff, 0xff, 0xff, 0xff], "%nSc0"),
    ([0, 0, 0, 0], "00000"),
    // ZeroMQ's own Z85 example (RFC 32): whole blocks are plain Z85.
    ([0x86, 0x4f, 0xd2, 0x6f, 0xb5, 0x59, 0xf7, 0x5b], "HelloWorld"),
]

@Suite("Z85, toot-relay's variant")
struct Z85Tests {
    @Test("each length from 0 to 9 encodes to the independently computed vector", arguments: vectors)
    func encodes(_ vector: (bytes: [UInt8], z85: String)) {
        #expect(Z85.encode(vector.bytes) == vector.z85)
        #expect(Z85.encodedCount(vector.bytes.count) == vector.z85.utf8.count)
    }

    @Test("decoding gives the bytes back", arguments: vectors)
    func decodes(_ vector: (bytes: [UInt8], z85: String)) {
        #expect(Z85.decode(vector.z85) == vector.bytes)
    }

    @Test("random bytes of every length up to 64 survive a round trip")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for count in 0...64 {
            let input = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Z85.decode(Z85.encode(input)) == input, "\(count) bytes")
        }
    }

    @Test("a lone trailing digit, a foreign character or a group too big for its bytes does not decode")
    func refuses() {
        #expect(Z85.decode("Re@On1") == nil)
        #expect(Z85.decode("Re@O\"") == nil)
        #expect(Z85.decode("#####") == nil)
        #expect(Z85.decode("##") == nil)
    }
}
