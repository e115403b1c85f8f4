import Testing
@testable import Encoders

/// TextSearch against the standard library's own searching (which tests may link): on text
/// without combining marks the two must agree exactly, slices and multi-byte characters included.
@Suite("text search agrees with the standard library")
struct TextSearchDifferentialTests {
    private static let alphabet: [String] = ["a", "b", ",", "é", "€", "😀", "\r\n", "\\n"]

    private static func random(_ length: Int, _ rng: inout SplitMix) -> String {
        var s = ""
        for _ in 0..<length { s += alphabet[Int(rng.next() % UInt64(alphabet.count))] }
        return s
    }

    @Test("firstRange, contains, replacing and split match on 5,000 random strings and their slices")
    func agree() {
        var rng = SplitMix(seed: 14)
        for _ in 0..<5000 {
            let haystack = Self.random(Int(rng.next() % 12), &rng)
            let needle = Self.random(1 + Int(rng.next() % 3), &rng)
            let replacement = Self.random(Int(rng.next() % 3), &rng)
            #expect(haystack.firstRange(ofText: needle) == haystack.firstRange(of: needle), "\(haystack) / \(needle)")
            #expect(haystack.contains(text: needle) == haystack.contains(needle))
            #expect(haystack.replacing(text: needle, with: replacement) == haystack.replacing(needle, with: replacement))
            #expect(haystack.split(text: needle).map(String.init)
                    == haystack.split(separator: needle, omittingEmptySubsequences: false).map(String.init))
            // A slice that starts past the first character: its indices are the string's.
            if let first = haystack.indices.first, haystack.count > 1 {
                let slice = haystack[haystack.index(after: first)...]
                #expect(slice.firstRange(ofText: needle) == slice.firstRange(of: needle), "slice of \(haystack) / \(needle)")
                #expect(slice.replacing(text: needle, with: replacement) == slice.replacing(needle, with: replacement))
            }
        }
    }
}

private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
