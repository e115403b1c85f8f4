import Testing
@testable import HTTPServer

/// The parser's and serializer's byte-level shortcuts, held to the plain definitions they replace
/// on varied inputs, so a shortcut cannot change what a sender sees.
@Suite("HTTP fast paths agree with their definitions")
struct HTTPFastPathTests {
    /// RFC 9110 §5.6.2, written out: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
    /// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
    static let tchar = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))

    @Test("the token-character mask says yes for exactly RFC 9110's tchar, over all 256 bytes")
    func tokenMask() {
        for b in 0 ... 255 {
            #expect(isTokenChar(UInt8(b)) == Self.tchar.contains(UInt8(b)), "byte \(b)")
        }
    }

    @Test("a name compared with a literal agrees with the comparison with a String, in any case and length")
    func literalNames() {
        let names = ["Host", "host", "HOST", "Hos", "Hostt", "Höst", "Content-Length", "content-length", "Content_Length",
                     "Transfer-Encoding", "X-Request-ID", "x-request-id", "", "Date", "dATE", "Connection", "Expect"]
        for name in names {
            Array(name.utf8).withUnsafeBytes { bytes in
                #expect(asciiCaseInsensitiveEquals(bytes, literal: "Host") == asciiCaseInsensitiveEquals(bytes, "Host"), "\(name)")
                #expect(asciiCaseInsensitiveEquals(bytes, literal: "Content-Length") == asciiCaseInsensitiveEquals(bytes, "Content-Length"))
                #expect(asciiCaseInsensitiveEquals(bytes, literal: "X-Request-ID") == asciiCaseInsensitiveEquals(bytes, "X-Request-ID"))
                #expect(asciiCaseInsensitiveEquals(bytes, literal: "Date") == asciiCaseInsensitiveEquals(bytes, "Date"))
            }
        }
    }

    @Test("the eight-at-a-time byte search finds what a byte-by-byte search finds, in every range")
    func byteSearch() {
        var rng = SplitMix64(seed: 14)
        for _ in 0 ..< 300 {
            let count = Int.random(in: 0 ... 40, using: &rng)
            // Few distinct bytes, so matches fall everywhere, including next to high bytes.
            let bytes = (0 ..< count).map { _ in [0x20, 0x41, 0x80, 0xA0, 0x00, 0xFF].randomElement(using: &rng)! as UInt8 }
            let lower = Int.random(in: 0 ... count, using: &rng)
            let upper = Int.random(in: lower ... count, using: &rng)
            for needle: UInt8 in [0x20, 0x00, 0x80, 0xFF, 0x3A] {
                let found = bytes.withUnsafeBufferPointer { firstIndex(of: needle, in: $0, lower ..< upper) }
                #expect(found == bytes[lower ..< upper].firstIndex(of: needle), "\(bytes) \(lower)..<\(upper) \(needle)")
            }
        }
    }

    @Test("a parsed request's X-Forwarded-For and X-Request-ID are the first values a lookup by name reads")
    func requestFieldsInOneWalk() {
        var rng = SplitMix64(seed: 8)
        let names = ["X-Forwarded-For", "x-forwarded-for", "X-FORWARDED-FOR", "X-Request-ID", "x-request-id",
                     "X-Forwarded-Fo", "X-Request-IDs", "Host", "X-Forwarded-Host"]
        let values = ["1.2.3.4", " 5.6.7.8 , 9.9.9.9", "", ",", "abc-123", "  "]
        for _ in 0 ..< 200 {
            var headers = HTTPHeaders()
            for _ in 0 ..< Int.random(in: 0 ... 5, using: &rng) {
                headers.add(names.randomElement(using: &rng)!, values.randomElement(using: &rng)!)
            }
            let request = HTTPRequest(method: "POST", target: "/push/a/b", headers: headers)
            #expect(request.forwardedFor == headers["X-Forwarded-For"].flatMap(firstListElement), "\(headers.list)")
            #expect(request.requestID == headers["X-Request-ID"], "\(headers.list)")
        }
    }

    @Test("fields of every name length, stored with their lengths in one append or three, read back as added")
    func fieldStorage() {
        var headers = HTTPHeaders()
        var added: [(String, String)] = []
        for length in 0 ... 80 {
            let name = String(repeating: "n", count: length) + String(length)
            let value = String(repeating: "v", count: length % 7)
            headers.add(name, value)
            added.append((name, value))
        }
        #expect(headers.list.map(\.name) == added.map(\.0))
        #expect(headers.list.map(\.value) == added.map(\.1))
        #expect(headers.count == added.count)
    }

    @Test("a header line whose name has a bad character and no colon is refused for the missing colon")
    func fieldFaultOrder() {
        var parser = HTTPParser()
        let events = parser.feed(Array("GET / HTTP/1.1\r\nBad Name\r\n\r\n".utf8))
        #expect(events == [.error(HTTPParseError(status: 400, reason: "header line without a colon"))])
        var second = HTTPParser()
        let refused = second.feed(Array("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n".utf8))
        #expect(refused == [.error(HTTPParseError(status: 400, reason: "invalid character in a header name"))])
    }

    @Test("framing fields a handler sets are dropped in any case, and fields of the same lengths are kept")
    func framingNames() {
        let framing = ["Content-Length", "content-length", "TRANSFER-ENCODING", "Date", "dAtE", "Connection"]
        let kept = ["Content-Lengtx", "Transfer-Encodin", "Data", "Connectioo", "apns-id", "Retry-After"]
        var headers = HTTPHeaders()
        for name in framing + kept { headers.add(name, "1") }
        var out: [UInt8] = []
        serialize(HTTPResponse(status: 201, headers: headers), date: "D", close: false, into: &out)
        let text = String(decoding: out, as: UTF8.self)
        var expected = "HTTP/1.1 201 Created\r\n"
        for name in kept { expected += "\(name): 1\r\n" }
        expected += "Content-Length: 0\r\nDate: D\r\n\r\n"
        #expect(text == expected)
    }

    @Test("a field value is clean by words exactly when it is clean byte by byte, a bad byte anywhere in it")
    func cleanValues() {
        // The definition the serializer keeps: a control byte other than tab, or DEL, is replaced.
        func clean(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { !(($0 < 0x20 && $0 != 0x09) || $0 == 0x7F) } }
        let odd: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0xA0, 0xE2, 0xFF]
        for length in 0 ... 24 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(plain.withUnsafeBytes(isCleanFieldValue))
            for position in 0 ..< length {
                for b in odd {
                    var value = plain
                    value[position] = b
                    #expect(value.withUnsafeBytes(isCleanFieldValue) == clean(value), "byte \(b) at \(position) of \(length)")
                }
            }
        }
    }

    @Test("a control byte in an answer's field value goes out as a space, wherever it falls")
    func controlBytesInValues() {
        for position in 0 ..< 40 {
            var value = Array(String(repeating: "7", count: 40).utf8)
            value[position] = 0x0A
            var headers = HTTPHeaders()
            headers.add("apns-id", String(decoding: value, as: UTF8.self))
            var out: [UInt8] = []
            serialize(HTTPResponse(status: 201, headers: headers), date: "D", close: false, into: &out)
            value[position] = 0x20
            let expected = "HTTP/1.1 201 Created\r\napns-id: \(String(decoding: value, as: UTF8.self))\r\nContent-Length: 0\r\nDate: D\r\n\r\n"
            #expect(String(decoding: out, as: UTF8.self) == expected, "newline at \(position)")
        }
    }
}
