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
private let vectors: [(hex: String, z85: String)] = [
    ("", ""),
    ("a5", "1}"),
    ("a573", "5<p"),
    ("a573a8", "hT+n"),
    ("a573a855", "Re@On"),
    ("a573a855b2", "Re@On28"),
    ("a573a855b225", "Re@On6qJ"),
    ("a573a855b2251b", "Re@Onj0)&"),
    ("a573a855b2251b1a", "Re@OnVlZCd"),
    ("a573a855b2251b1a7b", "Re@OnVlZCd1C"),
    // The largest value of each block length: the first digit stays inside the alphabet.
    ("ff", "30"),
    ("ffff", "960"),
    ("ffffff", "rr90"),
    ("ffffffff", "%nSc0"),
    ("00000000", "00000"),
    // ZeroMQ's own Z85 example (RFC 32): whole blocks are plain Z85.
    ("864fd26fb559f75b", "HelloWorld"),
]

private func bytes(_ hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = hex.startIndex
    while i < hex.endIndex {
        let j = hex.index(i, offsetBy: 2)
        out.append(UInt8(hex[i..<j], radix: 16)!)
        i = j
    }
    return out
}

@Suite("Z85, toot-relay's variant")
struct Z85Tests {
    @Test("each length from 0 to 9 encodes to the independently computed vector", arguments: vectors)
    func encodes(_ vector: (hex: String, z85: String)) {
        let input = bytes(vector.hex)
        #expect(Z85.encode(input) == vector.z85)
        #expect(Z85.encodedCount(input.count) == vector.z85.utf8.count)
    }

    @Test("decoding gives the bytes back", arguments: vectors)
    func decodes(_ vector: (hex: String, z85: String)) {
        #expect(Z85.decode(vector.z85) == bytes(vector.hex))
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
