import Foundation
import Testing
import Basics

@Suite("base64url")
struct Base64URLTests {
    @Test("base64url decodes padded, unpadded and standard-alphabet text")
    func base64() {
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
        #expect(Base64URL.decode("+/8=") == [0xfb, 0xff])
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("A") == nil)
        #expect(Base64URL.decode("AA=A") == nil)
        #expect(Base64URL.decode("") == [])
    }

    @Test("padded and unpadded encodings agree with Foundation's for every length up to 70")
    func encodesLikeFoundation() {
        for count in 0 ... 70 {
            let bytes = (0 ..< count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let standard = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            #expect(Base64URL.encode(bytes, padded: true) == standard)
            #expect(Base64URL.encode(bytes) == standard.replacingOccurrences(of: "=", with: ""))
            #expect(Base64URL.encode(bytes, padded: true).utf8.count == Base64URL.paddedCount(count))
            #expect(Base64URL.encode(bytes).utf8.count == Base64URL.unpaddedCount(count))
            #expect(Base64URL.decode(standard) == bytes)
        }
    }

    @Test("padded base64url, the relay's m, ends in = to a whole quantum", arguments: [([], ""), ([0xFB], "-w=="), ([0xFB, 0xFF], "-_8="), ([0xFB, 0xFF, 0xBF], "-_-_")] as [([UInt8], String)])
    func base64(_ bytes: [UInt8], _ expected: String) {
        var out: [UInt8] = []
        Base64URL.append(bytes, padded: true, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
        #expect(out.count == Base64URL.paddedCount(bytes.count))
    }

    @Test("appending keeps what the buffer held")
    func appends() {
        var out = Array("m=".utf8)
        Base64URL.append([0xfb, 0xff], padded: true, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "m=-_8=")
    }

    @Test("the decoded length and first byte are known without decoding",
          arguments: [("QQ", 1, 0x41), ("QUI", 2, 0x41), ("QUI=", 2, 0x41), ("BA==", 1, 0x04), ("", 0, 0)] as [(String, Int, UInt8)])
    func info(_ text: String, _ count: Int, _ first: UInt8) throws {
        let info = try #require(Base64URL.decodedInfo(text))
        #expect(info.count == count)
        #expect(info.first == first)
    }

    @Test("padding in the middle, too much of it, or a stray character is refused",
          arguments: ["Q", "QQ=", "Q=Q=", "QQ===", "a b", "QUJD*", "="])
    func refuses(_ text: String) {
        #expect(Base64URL.decodedInfo(text) == nil)
        #expect(Base64URL.decode(text) == nil)
    }
}

@Suite("JSON strings")
struct JSONStringTests {
    @Test("quotes, backslashes and control characters get the short escapes RFC 8259 names, the rest \\u00xx")
    func escapes() {
        #expect(JSONString.quoted("a\"b\\c\nd\re\tf\u{08}g\u{0C}h") == #""a\"b\\c\nd\re\tf\bg\fh""#)
        #expect(JSONString.quoted("\u{01}\u{1F}\u{7F}") == #""\u0001\u001f\u007f""#)
    }

    @Test("U+2028 and U+2029 are escaped for JavaScript readers; other UTF-8 passes through")
    func lineSeparators() {
        #expect(JSONString.quoted("a\u{2028}b\u{2029}c") == #""a\u2028b\u2029c""#)
        #expect(JSONString.quoted("é😀\u{2027}") == "\"é😀\u{2027}\"")
    }

    @Test("JSON strings escape quotes, backslashes and control bytes wherever they fall, and their count is exact",
          arguments: [
              ("", ""), ("plain", "plain"), (#""a""#, #"\"a\""#), (#"\"#, #"\\"#),
              ("a\u{1}\nb\t", #"a\u0001\nb\t"#), ("é \u{2028} ✓", #"é \u2028 ✓"#),
              (#"x""\\y"#, #"x\"\"\\\\y"#),
          ])
    func jsonEscaping(_ c: (String, String)) {
        var out: [UInt8] = Array("k=".utf8)
        JSONString.appendEscaped(c.0, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "k=" + c.1)
        #expect(JSONString.escapedCount(c.0) == c.1.utf8.count)
    }

    @Test("the escaped count is the length of what is written, for every byte and a few mixes",
          arguments: (0 ... 0x7F).map { String(UnicodeScalar(UInt8($0))) }
              + ["", "plain", "a\u{2028}\u{2029}\"\\\n\u{01}é😀", String(repeating: "\u{7F}x", count: 50)])
    func countMatches(_ text: String) {
        var out: [UInt8] = []
        JSONString.appendEscaped(text, to: &out)
        #expect(JSONString.escapedCount(text) == out.count)
    }

    @Test("an escape is found wherever it falls in a long value, inside or across every 8-byte block")
    func escapesInLongValues() {
        // The rule written out scalar by scalar, to hold the byte-block scan against.
        func reference(_ s: String) -> String {
            var out = ""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case "\u{08}": out += "\\b"
                case "\u{0C}": out += "\\f"
                case "\u{2028}": out += "\\u2028"
                case "\u{2029}": out += "\\u2029"
                default:
                    if scalar.value < 0x20 || scalar.value == 0x7F {
                        let hex = String(scalar.value, radix: 16)
                        out += "\\u00" + (hex.count == 1 ? "0" + hex : hex)
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            return out
        }
        let specials = ["\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}", "\u{2027}", "\u{E2}",
                        "é", "😀", " ", "~", "\"\u{2028}\\"]
        for special in specials {
            for position in 0...24 {
                let text = String(repeating: "a", count: position) + special + String(repeating: "b", count: 24 - position)
                var out: [UInt8] = []
                JSONString.appendEscaped(text, to: &out)
                #expect(String(decoding: out, as: UTF8.self) == reference(text), "\(special.debugDescription) at \(position)")
                #expect(JSONString.escapedCount(text) == out.count, "\(special.debugDescription) at \(position)")
            }
        }
    }

    @Test("a short value's count is exact wherever its escape falls, the tail tested as one word")
    func countsOfShortValues() {
        // Values shorter than a word and the last bytes of longer ones: a salt of 22 characters
        // ends in a 6-byte tail, a key of 87 in a 7-byte one.
        let specials = ["\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}", "\u{2027}", "é", "a"]
        for length in 1...17 {
            for special in specials {
                for position in 0..<length {
                    let text = String(repeating: "x", count: position) + special + String(repeating: "y", count: length - 1 - position)
                    var out: [UInt8] = []
                    JSONString.appendEscaped(text, to: &out)
                    #expect(JSONString.escapedCount(text) == out.count, "\(special.debugDescription) at \(position) of \(length)")
                }
            }
        }
    }

    @Test("whatever is written parses back to the same string")
    func roundTrips() throws {
        let nasty = "a\"b\\c\nd\re\tf\u{01}g\u{7F}h\u{2028}é🙂\u{0}"
        let json = "[" + JSONString.quoted(nasty) + "]"
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String])
        #expect(parsed == [nasty])
    }

    @Test("a reason body is one JSON object, with the timestamp when given")
    func reasonBody() {
        #expect(JSONString.reasonBody("Unregistered", timestamp: 5) == #"{"reason":"Unregistered","timestamp":5}"#)
        #expect(JSONString.reasonBody("a \"b\"") == #"{"reason":"a \"b\""}"#)
    }
}

@Suite("hex and UUIDs")
struct HexAndUUIDTests {
    @Test("hex is two lower-case digits a byte")
    func hex() {
        #expect(Hex.encode([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(Hex.encode([UInt8]()) == "")
    }

    @Test("a hex digit's value is read in either case; anything else is nil")
    func hexValue() {
        #expect(Array("09afAF".utf8).map(Hex.value) == [0, 9, 10, 15, 10, 15])
        #expect(Hex.value(UInt8(ascii: "g")) == nil)
        #expect(Hex.value(UInt8(ascii: "-")) == nil)
    }

    @Test("a UUID's text is Foundation's, lower-cased")
    func lowercase() {
        for _ in 0 ..< 20 {
            let uuid = UUID()
            let ours = withUnsafeBytes(of: uuid.uuid) { $0.load(as: UUIDText.Bytes.self) }
            #expect(UUIDText.lowercase(ours) == uuid.uuidString.lowercased())
        }
    }

    @Test("a UUID's text reads back to the same bytes, in order, from either case")
    func parseKnownStrings() throws {
        let bytes = try #require(UUIDText.parse("2B4E5B8A-0C1D-4E2F-9A3B-4C5D6E7F8091"))
        #expect(withUnsafeBytes(of: bytes) { Array($0) } == [0x2b, 0x4e, 0x5b, 0x8a, 0x0c, 0x1d, 0x4e, 0x2f,
                                                              0x9a, 0x3b, 0x4c, 0x5d, 0x6e, 0x7f, 0x80, 0x91])
        #expect(UUIDText.lowercase(bytes) == "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091")
        let zero = try #require(UUIDText.parse("00000000-0000-0000-0000-000000000000"))
        #expect(zero == (0, 0))
        let ones = try #require(UUIDText.parse("ffffffff-FFFF-ffff-FFFF-ffffffffffff"))
        #expect(ones == (.max, .max))
        #expect(UUIDText.lowercase(ones) == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test("what is not a UUID's text is refused, as Foundation refused it", arguments: [
        "", "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f809", "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f80911",
        "2b4e5b8a0c1d-4e2f-9a3b-4c5d6e7f80911", "2b4e5b8a-0c1d-4e2f-9a3b_4c5d6e7f8091",
        "2b4e5b8g-0c1d-4e2f-9a3b-4c5d6e7f8091", "{2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091}",
        " 2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091", "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f809\u{e9}",
        "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f809é",
    ])
    func parseRefuses(text: String) {
        #expect(UUIDText.parse(text) == nil)
        #expect(UUID(uuidString: text) == nil)
    }

    @Test("random UUIDs are version 4, RFC 4122 variant, and do not repeat")
    func random() throws {
        var seen = Set<String>()
        for _ in 0 ..< 1000 {
            let text = UUIDText.randomLowercase()
            let uuid = try #require(UUID(uuidString: text))
            #expect(text == text.lowercased())
            #expect(uuid.uuid.6 >> 4 == 4)
            #expect(uuid.uuid.8 >> 6 == 0b10)
            seen.insert(text)
        }
        #expect(seen.count == 1000)
    }
}

@Suite("decimal digits")
struct DecimalTextTests {
    @Test("integers are written as Swift writes them, with leading zeros up to the width asked",
          arguments: [0, 7, 10, 201, -42, 1_764_547_200, Int.max, Int.min])
    func decimal(value: Int) {
        var out = Array("x=".utf8)
        DecimalText.append(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x=\(value)")
        DecimalText.withDigits(value) { #expect(String(decoding: $0, as: UTF8.self) == String(value)) }
    }

    @Test("a minimum width pads with zeros after the sign", arguments: [(7, 4, "0007"), (2026, 4, "2026"), (12345, 4, "12345"), (-5, 3, "-005")])
    func padded(value: Int, width: Int, text: String) {
        var out: [UInt8] = []
        DecimalText.append(value, to: &out, minDigits: width)
        #expect(String(decoding: out, as: UTF8.self) == text)
    }
}

@Suite("JSON text in a lent block")
struct JSONBlockTests {
    /// One piece of text, written both ways.
    private enum Piece {
        case quoted(String), raw(String), int(Int), byte(UInt8), literal

        func write(to text: inout JSONBlock) {
            switch self {
            case .quoted(let s): text.appendQuoted(s)
            case .raw(let s): text.append(raw: s)
            case .int(let i): text.append(i)
            case .byte(let b): text.append(b)
            case .literal: text.append(#","key":"#)
            }
        }

        func write(to out: inout [UInt8]) {
            switch self {
            case .quoted(let s): JSONString.appendQuoted(s, to: &out)
            case .raw(let s): out.append(contentsOf: s.utf8)
            case .int(let i): DecimalText.append(i, to: &out)
            case .byte(let b): out.append(b)
            case .literal: out.append(contentsOf: #","key":"#.utf8)
            }
        }
    }

    private static func randomString(_ rng: inout some RandomNumberGenerator) -> String {
        let alphabet: [String] = ["a", "Z", "0", " ", "\"", "\\", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "\u{2028}",
                                  "\u{2029}", "\u{2027}", "é", "😀", "-", "~"]
        // Mostly short values, as a log line's are; now and then one longer than the block itself.
        let length = Int.random(in: 0...9, using: &rng) == 0 ? Int.random(in: 100...1500, using: &rng) : Int.random(in: 0...40, using: &rng)
        var s = ""
        for _ in 0..<length { s += Bool.random(using: &rng) ? "x" : alphabet.randomElement(using: &rng)! }
        return s
    }

    @Test("whatever is written through the block is byte for byte what the array writers append, in order")
    func sameAsTheArrayWriters() {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<150 {
            var pieces: [Piece] = []
            for _ in 0..<Int.random(in: 0...40, using: &rng) {
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: pieces.append(.quoted(Self.randomString(&rng)))
                case 1: pieces.append(.raw(Self.randomString(&rng)))
                case 2: pieces.append(.int(Bool.random(using: &rng) ? Int.random(in: -1000...1000, using: &rng) : Int.random(in: .min ... .max, using: &rng)))
                case 3: pieces.append(.byte(UInt8.random(in: 0...255, using: &rng)))
                default: pieces.append(.literal)
                }
            }
            // Text already in the array stays first, as a batch's earlier lines do.
            var expected: [UInt8] = Array("earlier line\n".utf8)
            for piece in pieces { piece.write(to: &expected) }
            var written: [UInt8] = Array("earlier line\n".utf8)
            JSONBlock.write(into: &written) { text in
                for piece in pieces { piece.write(to: &text) }
            }
            #expect(written == expected, "round \(round)")
            if written != expected { return }
        }
    }

    @Test("an escape is written the same through the block wherever it falls, around every 8-byte block")
    func escapesAtEveryPosition() {
        let specials = ["\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}", "\u{2027}", "é", "😀", "\"\u{2028}\\"]
        for special in specials {
            for position in 0...24 {
                let text = String(repeating: "a", count: position) + special + String(repeating: "b", count: 24 - position)
                #expect(JSONBlock.bytes { $0.appendQuoted(text) } == Array(JSONString.quoted(text).utf8),
                        "\(special.debugDescription) at \(position)")
            }
        }
        #expect(JSONBlock.bytes { $0.append(Int.min); $0.append(0) } == Array("\(Int.min)0".utf8))
    }
}
