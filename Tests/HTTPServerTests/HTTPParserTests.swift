import HTTPServer
import Testing

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

private func request(
    _ method: String, _ target: String, _ version: HTTPVersion = .http11, headers: [(String, String)],
    body: String = "", keepAlive: Bool = true
) -> HTTPParserEvent {
    .request(HTTPRequest(
        method: method, target: target, version: version, headers: HTTPHeaders(headers),
        body: bytes(body), keepAlive: keepAlive))
}

struct ValidCase: Sendable, CustomTestStringConvertible {
    let name: String
    let input: String
    let expected: [HTTPParserEvent]
    var testDescription: String { name }
}

let validCases: [ValidCase] = [
    ValidCase(
        name: "GET with query, proxy headers",
        input: "GET /push/abcd/1?sandbox=true HTTP/1.1\r\nHost: relay\r\nX-Forwarded-For: 10.0.0.1 , 10.0.0.2\r\nx-request-id: r-1\r\n\r\n",
        expected: [request("GET", "/push/abcd/1?sandbox=true", headers: [
            ("Host", "relay"), ("X-Forwarded-For", "10.0.0.1 , 10.0.0.2"), ("x-request-id", "r-1"),
        ])]),
    ValidCase(
        name: "POST with Content-Length",
        input: "POST /push/ab/1 HTTP/1.1\r\nHost: r\r\nContent-Encoding: aesgcm\r\nContent-Length: 11\r\n\r\nhello world",
        expected: [request("POST", "/push/ab/1", headers: [
            ("Host", "r"), ("Content-Encoding", "aesgcm"), ("Content-Length", "11"),
        ], body: "hello world")]),
    ValidCase(
        name: "chunked with extensions and trailers",
        input: "POST /p HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: Chunked\r\n\r\n5;name=value\r\nhello\r\n6 ; x=\"y\"\r\n world\r\nA\r\n0123456789\r\n0;last\r\nX-Trailer: t\r\nX-Other:\r\n\r\n",
        expected: [request("POST", "/p", headers: [("Host", "r"), ("Transfer-Encoding", "Chunked")],
            body: "hello world0123456789")]),
    ValidCase(
        name: "HTTP/1.0 closes by default",
        input: "GET /metrics HTTP/1.0\r\nUser-Agent: curl\r\n\r\n",
        expected: [request("GET", "/metrics", .http10, headers: [("User-Agent", "curl")], keepAlive: false)]),
    ValidCase(
        name: "three pipelined requests come out in order",
        input: "GET /1 HTTP/1.1\r\nHost: r\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: r\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /3 HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\nxy\r\n0\r\n\r\n",
        expected: [
            request("GET", "/1", headers: [("Host", "r")]),
            request("POST", "/2", headers: [("Host", "r"), ("Content-Length", "3")], body: "abc"),
            request("POST", "/3", headers: [("Host", "r"), ("Transfer-Encoding", "chunked"), ("Connection", "close")],
                body: "xy", keepAlive: false),
        ]),
    ValidCase(
        name: "empty lines before a request line are skipped",
        input: "\r\n\r\nGET / HTTP/1.1\r\nHost: r\r\n\r\n",
        expected: [request("GET", "/", headers: [("Host", "r")])]),
    ValidCase(
        name: "Expect 100-continue with the body already there, header values trimmed, obs-text kept",
        input: "PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nX-A: \t v\u{e9} \t\r\nContent-Length: 2\r\n\r\nok",
        expected: [request("PUT", "/x", headers: [("Expect", "100-continue"), ("X-A", "v\u{e9}"), ("Content-Length", "2")],
            body: "ok")]),
    ValidCase(
        name: "repeated identical Content-Length is one length",
        input: "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1, 1\r\n\r\nz",
        expected: [request("POST", "/", headers: [("Content-Length", "1"), ("Content-Length", "1, 1")], body: "z")]),
]

@Suite("HTTP/1.1 parser: valid requests")
struct HTTPParserValidTests {
    @Test("a valid request parses the same whole, split at every byte, and one byte at a time", arguments: validCases)
    func everySplit(_ c: ValidCase) throws {
        let input = bytes(c.input)
        let whole = parse(input).outcome
        #expect(whole.events == c.expected)
        #expect(whole.idle && !whole.failed)
        for cut in 0...input.count {
            let split = parse(input, cuts: [cut]).outcome
            #expect(split == whole, "split at \(cut)")
        }
        #expect(parseBytewise(input) == whole)
    }

    @Test("path, query, forwardedFor and requestID are derived from the request")
    func derivedFields() throws {
        var parser = HTTPParser(peerAddress: "127.0.0.1:5000")
        let events = parser.feed(bytes(validCases[0].input))
        guard case .request(let r) = try #require(events.first) else { Issue.record("no request"); return }
        #expect(r.path == "/push/abcd/1")
        #expect(r.query == "sandbox=true")
        #expect(r.forwardedFor == "10.0.0.1")
        #expect(r.requestID == "r-1")
        #expect(r.peerAddress == "127.0.0.1:5000")
        let plain = HTTPRequest(method: "GET", target: "/a?b?c")
        #expect(plain.path == "/a" && plain.query == "b?c")
        #expect(HTTPRequest(method: "GET", target: "/a?").query == "")
        #expect(HTTPRequest(method: "GET", target: "/a").query == nil)
    }

    @Test("Expect 100-continue is announced when the head arrives without the body")
    func expectContinue() {
        var parser = HTTPParser()
        let head = "POST /p HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
        #expect(parser.feed(bytes(head)) == [.expectContinue])
        #expect(parser.feed(bytes("da")) == [])
        #expect(!parser.isIdle)
        let events = parser.feed(bytes("ta"))
        #expect(events.count == 1)
        if case .request(let r) = events.first { #expect(r.body == bytes("data")) } else { Issue.record("no request") }

        var chunked = HTTPParser()
        #expect(chunked.feed(bytes("POST /p HTTP/1.1\r\nExpect: 100-Continue\r\nTransfer-Encoding: chunked\r\n\r\n")) == [.expectContinue])

        // No body to wait for, or HTTP/1.0 (RFC 9110 §10.1.1): no 100.
        var empty = HTTPParser()
        #expect(empty.feed(bytes("POST /p HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n")).count == 1)
        var old = HTTPParser()
        #expect(old.feed(bytes("POST /p HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")) == [])
    }

    @Test("limits are inclusive: exactly at each cap passes, one byte over fails with its status")
    func limitsInclusive() {
        let target = "/" + String(repeating: "a", count: 30 - "GET  HTTP/1.1".count - 1)
        let line = "GET \(target) HTTP/1.1"
        let input = bytes("\(line)\r\nA: 1\r\nContent-Length:10\r\n\r\n0123456789")
        let headerBytes = "A: 1".utf8.count + "Content-Length:10".utf8.count
        func limits(line: Int = 30, header: Int = headerBytes, count: Int = 2, body: Int = 10) -> HTTPParserLimits {
            HTTPParserLimits(maxRequestLineBytes: line, maxHeaderBytes: header, maxHeaderCount: count, maxBodyBytes: body)
        }
        #expect(line.utf8.count == 30)
        let events = parse(input, limits: limits()).outcome.events
        #expect(events.count == 1)
        if case .request(let r) = events.first { #expect(r.body.count == 10) } else { Issue.record("\(events)") }
        #expect(parse(input, limits: limits(line: 29)).outcome.events.map(status) == [414])
        #expect(parse(input, limits: limits(header: headerBytes - 1)).outcome.events.map(status) == [431])
        #expect(parse(input, limits: limits(count: 1)).outcome.events.map(status) == [431])
        #expect(parse(input, limits: limits(body: 9)).outcome.events.map(status) == [413])
    }

    @Test("a 64 KiB body fed in small reads arrives intact")
    func largeBodyInPieces() {
        let body = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let input = bytes("POST /p HTTP/1.1\r\nContent-Length: 65536\r\n\r\n") + body + bytes("GET /next HTTP/1.1\r\n\r\n")
        let cuts = Array(stride(from: 7, to: input.count, by: 1000))
        let outcome = parse(input, cuts: cuts).outcome
        #expect(outcome.events.count == 2)
        if case .request(let r) = outcome.events.first { #expect(r.body == body) } else { Issue.record("no request") }
        #expect(outcome.idle)
    }

    @Test("isIdle tells an empty connection from one in the middle of a request")
    func idle() {
        var parser = HTTPParser()
        #expect(parser.isIdle)
        _ = parser.feed(bytes("GET / HT"))
        #expect(!parser.isIdle)
        _ = parser.feed(bytes("TP/1.1\r\n\r\n"))
        #expect(parser.isIdle)
    }
}

func status(_ event: HTTPParserEvent) -> Int? {
    if case .error(let e) = event { return e.status }
    return nil
}

struct MalformedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let input: [UInt8]
    let status: Int
    init(_ name: String, _ input: String, _ status: Int) {
        self.name = name
        self.input = Array(input.utf8)
        self.status = status
    }
    init(_ name: String, bytes: [UInt8], _ status: Int) {
        self.name = name
        self.input = bytes
        self.status = status
    }
    var testDescription: String { name }
}

let malformedCases: [MalformedCase] = [
    MalformedCase("bare LF line endings", "GET / HTTP/1.1\nHost: a\n\n", 400),
    MalformedCase("bare LF in a header", "GET / HTTP/1.1\r\nHost: a\n\r\n", 400),
    MalformedCase("bare CR", "GET / HTTP/1.1\rHost: a\r\n\r\n", 400),
    MalformedCase("obs-fold", "GET / HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", 400),
    MalformedCase("obs-fold with a tab", "GET / HTTP/1.1\r\nX-A: a\r\n\tb\r\n\r\n", 400),
    MalformedCase("NUL in a header value", "GET / HTTP/1.1\r\nX-A: a\u{0}b\r\n\r\n", 400),
    MalformedCase("control byte in a header value", "GET / HTTP/1.1\r\nX-A: a\u{1}b\r\n\r\n", 400),
    MalformedCase("DEL in a header value", "GET / HTTP/1.1\r\nX-A: a\u{7f}\r\n\r\n", 400),
    MalformedCase("NUL in the request line", "GET /\u{0} HTTP/1.1\r\n\r\n", 400),
    MalformedCase("NUL bytes only", bytes: [0, 0, 0, 0], 400),
    MalformedCase("invalid method character", "G(T / HTTP/1.1\r\n\r\n", 400),
    MalformedCase("non-ASCII in the target", "GET /\u{e9} HTTP/1.1\r\n\r\n", 400),
    MalformedCase("space in a header name", "GET / HTTP/1.1\r\nX A: b\r\n\r\n", 400),
    MalformedCase("space before the colon", "GET / HTTP/1.1\r\nHost : b\r\n\r\n", 400),
    MalformedCase("invalid header name character", "GET / HTTP/1.1\r\nX@A: b\r\n\r\n", 400),
    MalformedCase("header without a colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400),
    MalformedCase("empty header name", "GET / HTTP/1.1\r\n: b\r\n\r\n", 400),
    MalformedCase("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400),
    MalformedCase("TLS ClientHello", bytes: [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03], 400),
    MalformedCase("HTTP/2.0 request line", "GET / HTTP/2.0\r\n\r\n", 505),
    MalformedCase("HTTP/3.0 request line", "GET / HTTP/3.0\r\n\r\n", 505),
    MalformedCase("HTTP/0.9 request line", "GET / HTTP/0.9\r\n\r\n", 505),
    MalformedCase("lower-case version", "GET / http/1.1\r\n\r\n", 400),
    MalformedCase("version without minor", "GET / HTTP/1\r\n\r\n", 400),
    MalformedCase("HTTP/0.9 style request line", "GET /\r\n\r\n", 400),
    MalformedCase("double space in the request line", "GET  / HTTP/1.1\r\n\r\n", 400),
    MalformedCase("trailing space in the request line", "GET / HTTP/1.1 \r\n\r\n", 400),
    MalformedCase("tab in the request line", "GET\t/ HTTP/1.1\r\n\r\n", 400),
    MalformedCase("negative Content-Length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
    MalformedCase("signed Content-Length", "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello", 400),
    MalformedCase("overflowing Content-Length", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400),
    MalformedCase("Content-Length one past Int.max", "POST / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n", 400),
    MalformedCase("hex Content-Length", "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400),
    MalformedCase("empty Content-Length", "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400),
    MalformedCase("differing Content-Length headers", "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    MalformedCase("differing Content-Length list", "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\nhello!", 400),
    MalformedCase("Content-Length over the body limit", "POST / HTTP/1.1\r\nContent-Length: 65537\r\n\r\n", 413),
    MalformedCase("Content-Length 2^62", "POST / HTTP/1.1\r\nContent-Length: 4611686018427387904\r\n\r\n", 413),
    MalformedCase("both Content-Length and Transfer-Encoding", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    MalformedCase("Transfer-Encoding gzip", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    MalformedCase("Transfer-Encoding gzip, chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    MalformedCase("chunked not last", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
    MalformedCase("chunked twice", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    MalformedCase("empty Transfer-Encoding", "POST / HTTP/1.1\r\nTransfer-Encoding: ,\r\n\r\n", 400),
    MalformedCase("Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    MalformedCase("huge chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n", 400),
    MalformedCase("chunk size of exactly 2^64", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 400),
    MalformedCase("chunk size over the body limit", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10001\r\n", 413),
    MalformedCase("chunks adding up over the body limit", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n10000\r\n", 413),
    MalformedCase("non-hex chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    MalformedCase("negative chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400),
    MalformedCase("empty chunk size line", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 400),
    MalformedCase("chunk data longer than its size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", 400),
    MalformedCase("chunk data followed by CR junk", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\rx", 400),
    MalformedCase("obs-fold in a trailer", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\r\n c\r\n\r\n", 400),
    MalformedCase("trailers over the header limit",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "t", count: 16384) + "\r\n\r\n", 431),
    MalformedCase("header line too long", "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 16384) + "\r\n\r\n", 431),
    MalformedCase("header block too large", "GET / HTTP/1.1\r\n"
        + String(repeating: "X-Big: " + String(repeating: "a", count: 2000) + "\r\n", count: 9) + "\r\n", 431),
    MalformedCase("too many headers", "GET / HTTP/1.1\r\n" + (0...100).map { "X-\($0): v\r\n" }.joined() + "\r\n", 431),
    MalformedCase("request line too long", "GET /" + String(repeating: "a", count: 8192) + " HTTP/1.1\r\n\r\n", 414),
    MalformedCase("endless empty lines", String(repeating: "\r\n", count: 5000), 414),
    MalformedCase("text garbage", "hello world, this is not http\r\n\r\n", 400),
    MalformedCase("binary garbage", bytes: [0xFF, 0xFE, 0x00, 0x13, 0x37, 0x0D, 0x0A], 400),
    MalformedCase("two Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    MalformedCase("unsupported Expect", "POST / HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx", 417),
]

@Suite("HTTP/1.1 parser: malformed requests")
struct HTTPParserMalformedTests {
    @Test("a malformed request gets its status whatever the split, and nothing after", arguments: malformedCases)
    func malformed(_ c: MalformedCase) {
        let whole = parse(c.input).outcome
        #expect(whole.events.count == 1, "\(whole)")
        #expect(whole.events.last.flatMap(status) == c.status, "\(whole)")
        #expect(whole.failed)
        if c.input.count <= 400 {
            for cut in 0...c.input.count {
                #expect(parse(c.input, cuts: [cut]).outcome == whole, "split at \(cut)")
            }
            #expect(parseBytewise(c.input) == whole)
        }
    }

    @Test("garbage fails at the first bad byte, without waiting for a line end")
    func failsEarly() {
        var parser = HTTPParser()
        #expect(parser.feed([0x16, 0x03, 0x01]).first.flatMap(status) == 400)
        var nul = HTTPParser()
        #expect(nul.feed(bytes("GET / HTTP/1.1\r\nX: \u{0}")).first.flatMap(status) == 400)
        var long = HTTPParser()
        #expect(long.feed(bytes("GET /" + String(repeating: "a", count: 9000))).first.flatMap(status) == 414)
    }

    @Test("after an error the parser yields nothing more, even for a valid request")
    func nothingAfterError() {
        var parser = HTTPParser()
        let events = parser.feed(bytes("GET / HTTP/1.1\nGET / HTTP/1.1\r\n\r\n"))
        #expect(events.count == 1)
        #expect(parser.hasFailed)
        #expect(parser.feed(bytes("GET / HTTP/1.1\r\n\r\n")) == [])
        #expect(parser.next() == nil)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test("the framing fields are found in any case, and the first fault of Content-Length in order is the one named",
          arguments: FramingCase.all)
    func framingFields(_ c: FramingCase) throws {
        var parser = HTTPParser()
        let events = parser.feed(bytes("POST /p HTTP/1.1\r\n\(c.head)\r\nabc"))
        switch try #require(events.first) {
        case .request(let request):
            #expect(c.reason == nil)
            #expect(request.keepAlive == c.keepAlive)
            #expect(request.body == bytes("abc"))
        case .error(let error):
            #expect(error.status == c.status)
            #expect(error.reason == c.reason)
        case .expectContinue:
            Issue.record("unexpected 100-continue")
        }
    }

    @Test("a control byte is refused wherever it falls in a header, and tab and non-ASCII bytes pass")
    func controlBytesAnywhere() {
        for byte: UInt8 in [0x00, 0x01, 0x08, 0x0B, 0x1F, 0x7F, 0x09, 0x20, 0x7E, 0x80, 0xC3, 0xFF] {
            let refused = (byte < 0x20 && byte != 0x09) || byte == 0x7F
            for position in 0..<20 {
                var value = [UInt8](repeating: UInt8(ascii: "v"), count: 20)
                value[position] = byte
                let head = bytes("GET / HTTP/1.1\r\nX-Long-Header-Name: ") + value + bytes("\r\n\r\n")
                var parser = HTTPParser()
                let events = parser.feed(head)
                if refused {
                    #expect(events.map(status) == [400], "byte 0x\(String(byte, radix: 16)) at \(position)")
                } else if case .request(let request) = events.first {
                    #expect(events.count == 1)
                    #expect(Array((request.headers["X-Long-Header-Name"] ?? "").utf8).count > 0)
                } else {
                    Issue.record("byte 0x\(String(byte, radix: 16)) at \(position): \(events)")
                }
            }
        }
    }

    @Test("field names keep the spelling they were sent in, common or not")
    func nameSpelling() throws {
        let names = ["host", "Hosts", "Hos", "Content-Type", "content-type", "Content-TypE",
                     "Content-Encoding", "Content-Encodinh", "TTL", "ttl", "Crypto-Key", "Crypto_Key", "X-Request-ID",
                     "X-Request-Id", "Accept-Encoding", "Content-Encoding-Extra", "X"]
        var head = "GET / HTTP/1.1\r\n"
        for (i, name) in names.enumerated() { head += "\(name): v\(i)\r\n" }
        var parser = HTTPParser(limits: HTTPParserLimits(maxHeaderCount: 100))
        let events = parser.feed(bytes(head + "\r\n"))
        guard case .request(let request) = try #require(events.first) else {
            Issue.record("\(events)")
            return
        }
        #expect(request.headers.map(\.name) == names)
        #expect(request.headers.map(\.value) == names.indices.map { "v\($0)" })
    }

    @Test("a body over the limit is refused before any of it is read")
    func bodyRefusedEarly() {
        var parser = HTTPParser()
        let events = parser.feed(bytes("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n"))
        #expect(events.map(status) == [413])
    }
}

struct FramingCase: Sendable, CustomTestStringConvertible {
    let head: String
    /// The error's status and reason; nil reason: the request is read, its body `abc`.
    var status = 0
    var reason: String?
    var keepAlive = true
    var testDescription: String { head.debugDescription }

    static let all: [FramingCase] = [
        FramingCase(head: "content-length: 3\r\n"),
        FramingCase(head: "CONTENT-LENGTH: 3\r\ncontent-length: 3, 3\r\n"),
        FramingCase(head: "Content-Length: 3\r\nCONNECTION: close\r\n", keepAlive: false),
        FramingCase(head: "Content-Length: 5, 6, x\r\n", status: 400, reason: "conflicting Content-Length values"),
        FramingCase(head: "Content-Length: x, 5, 6\r\n", status: 400, reason: "invalid Content-Length; send a decimal byte count"),
        FramingCase(head: "Content-Length: 5\r\nContent-Length: x\r\nContent-Length: 6\r\n", status: 400,
                    reason: "invalid Content-Length; send a decimal byte count"),
        FramingCase(head: "Content-Length: 5,\r\n", status: 400, reason: "invalid Content-Length; send a decimal byte count"),
        FramingCase(head: "Content-Length: x\r\ntransfer-encoding: chunked\r\n", status: 400,
                    reason: "both Content-Length and Transfer-Encoding; send only one"),
        FramingCase(head: "HOST: a\r\nhost: b\r\nContent-Length: x\r\n", status: 400, reason: "more than one Host header"),
        FramingCase(head: "Content-Length: 3\r\nexpect: 200-ok\r\n", status: 417, reason: "unsupported Expect: 200-ok"),
    ]
}

struct KeepAliveCase: Sendable, CustomTestStringConvertible {
    let version: String
    let connection: String?
    let keepAlive: Bool
    var testDescription: String { "\(version) Connection: \(connection ?? "(none)") → \(keepAlive)" }
}

@Suite("HTTP/1.1 parser: keep-alive")
struct HTTPParserKeepAliveTests {
    @Test("keep-alive follows the version default and the Connection header", arguments: [
        KeepAliveCase(version: "HTTP/1.1", connection: nil, keepAlive: true),
        KeepAliveCase(version: "HTTP/1.1", connection: "close", keepAlive: false),
        KeepAliveCase(version: "HTTP/1.1", connection: "Close", keepAlive: false),
        KeepAliveCase(version: "HTTP/1.1", connection: "keep-alive, close", keepAlive: false),
        KeepAliveCase(version: "HTTP/1.1", connection: "keep-alive", keepAlive: true),
        KeepAliveCase(version: "HTTP/1.1", connection: "Upgrade", keepAlive: true),
        KeepAliveCase(version: "HTTP/1.0", connection: nil, keepAlive: false),
        KeepAliveCase(version: "HTTP/1.0", connection: "keep-alive", keepAlive: true),
        KeepAliveCase(version: "HTTP/1.0", connection: "Keep-Alive", keepAlive: true),
        KeepAliveCase(version: "HTTP/1.0", connection: "close", keepAlive: false),
        KeepAliveCase(version: "HTTP/1.0", connection: "keep-alive,close", keepAlive: false),
        KeepAliveCase(version: "HTTP/1.2", connection: nil, keepAlive: true),
    ])
    func keepAlive(_ c: KeepAliveCase) throws {
        var parser = HTTPParser()
        let connection = c.connection.map { "Connection: \($0)\r\n" } ?? ""
        let events = parser.feed(bytes("GET / \(c.version)\r\n\(connection)\r\n"))
        guard case .request(let r) = try #require(events.first) else {
            Issue.record("\(events)")
            return
        }
        #expect(r.keepAlive == c.keepAlive)
    }

    @Test("a second Connection header counts too")
    func repeatedConnection() throws {
        var parser = HTTPParser()
        let events = parser.feed(bytes("GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"))
        guard case .request(let r) = try #require(events.first) else { return }
        #expect(!r.keepAlive)
    }
}
