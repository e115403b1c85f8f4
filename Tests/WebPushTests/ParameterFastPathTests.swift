import Testing
@testable import WebPush

/// A deterministic generator, so a failing case can be replayed.
private struct ParameterRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The parameter scan as first written, every byte through every test: what the scan that skips
/// plain bytes must find.
private func referenceParameter(_ name: String, in header: String) -> String? {
    let p = Array(header.utf8)
    let n = p.count
    func trimmed(_ r: Range<Int>) -> Range<Int> {
        var s = r.lowerBound, e = r.upperBound
        while s < e, p[s] == 0x20 || p[s] == 0x09 { s += 1 }
        while e > s, p[e - 1] == 0x20 || p[e - 1] == 0x09 { e -= 1 }
        return s ..< e
    }
    var i = 0
    while i < n {
        var nameEnd = -1, valueStart = -1, valueEnd = -1
        var quoted = false, hadQuote = false
        let itemStart = i
        while i < n {
            let byte = p[i]
            if quoted {
                if byte == UInt8(ascii: "\\") {
                    i += 1
                    if i == n { break }
                } else if byte == UInt8(ascii: "\"") {
                    quoted = false
                    valueEnd = i
                }
            } else if byte == UInt8(ascii: ";") || byte == UInt8(ascii: ",") {
                break
            } else if byte == UInt8(ascii: "=") && nameEnd < 0 {
                nameEnd = i
            } else if byte == UInt8(ascii: "\"") && nameEnd >= 0 && !hadQuote {
                quoted = true
                hadQuote = true
                valueStart = i + 1
            }
            i += 1
        }
        let itemEnd = i
        if i < n { i += 1 }
        guard nameEnd >= 0 else { continue }
        let itemName = String(decoding: p[trimmed(itemStart ..< nameEnd)], as: UTF8.self)
        guard itemName.lowercased() == name else { continue }
        let range = hadQuote ? valueStart ..< (valueEnd >= 0 ? valueEnd : itemEnd) : trimmed((nameEnd + 1) ..< itemEnd)
        var out: [UInt8] = []
        var escaping = false
        for b in p[range] {
            if hadQuote && !escaping && b == UInt8(ascii: "\\") { escaping = true; continue }
            escaping = false
            out.append(b)
        }
        return String(decoding: out, as: UTF8.self)
    }
    return nil
}

@Suite("WebPush parameter scan agrees with its definition")
struct ParameterFastPathTests {
    @Test("salt and dh are found as the byte-by-byte scan finds them, in random lists of quotes, separators and escapes")
    func parameters() {
        var rng = ParameterRandom(state: 8291)
        let pieces = ["salt", "dh", "SALT", "Dh", "=", "=", ";", ",", "\"", "\\", " ", "\t", "abc", "-_", "p256ecdsa", "keyid"]
        for _ in 0 ..< 4000 {
            let header = (0 ..< Int.random(in: 0 ... 10, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            #expect(WebPushParser.parameter("salt", in: header).map(String.init) == referenceParameter("salt", in: header), "\(header)")
            #expect(WebPushParser.parameter("dh", in: header).map(String.init) == referenceParameter("dh", in: header), "\(header)")
        }
    }

    @Test("long values are scanned eight bytes at a time and each separator, quote or = is found at every offset")
    func longParameters() {
        var rng = ParameterRandom(state: 8188)
        let syntax = ["=", ";", ",", "\"", "\\", " "]
        let base64 = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/".utf8)
        func run(_ count: Int) -> String {
            String(decoding: (0 ..< count).map { _ in base64.randomElement(using: &rng)! }, as: UTF8.self)
        }
        for _ in 0 ..< 3000 {
            // Runs of every length from 0 to 40 between names and syntax, so each syntax byte falls
            // at every place of an eight-byte word.
            var header = ""
            for _ in 0 ..< Int.random(in: 1 ... 8, using: &rng) {
                switch Int.random(in: 0 ..< 4, using: &rng) {
                case 0: header += ["salt=", "dh=", "p256ecdsa=", "keyid=", "DH = "].randomElement(using: &rng)!
                case 1: header += syntax.randomElement(using: &rng)!
                default: header += run(Int.random(in: 0 ... 40, using: &rng))
                }
            }
            let names: [(StaticString, String)] = [("salt", "salt"), ("dh", "dh"), ("p256ecdsa", "p256ecdsa")]
            for (literal, name) in names {
                #expect(WebPushParser.parameter(literal, in: header).map(String.init) == referenceParameter(name, in: header), "\(header)")
            }
        }
        // A Mastodon-shaped Crypto-Key: dh, then its p256ecdsa, each 87 characters.
        let dh = run(87), key = run(87)
        #expect(WebPushParser.parameter("dh", in: "dh=\(dh);p256ecdsa=\(key)").map(String.init) == dh)
        #expect(WebPushParser.parameter("p256ecdsa", in: "dh=\(dh);p256ecdsa=\(key)").map(String.init) == key)
    }
}
