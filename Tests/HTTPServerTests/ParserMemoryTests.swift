import HTTPServer
import Testing

/// Feeds bytes that complete nothing: the request is still arriving.
private func feedPartial(_ parser: inout HTTPParser, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    let events = parser.feed(bytes)
    #expect(events.isEmpty, sourceLocation: sourceLocation)
}

@Suite("HTTP parser memory")
struct ParserMemoryTests {
    private func head(length: Int) -> [UInt8] {
        Array("POST /push/ab/1 HTTP/1.1\r\nHost: r\r\nContent-Length: \(length)\r\n\r\n".utf8)
    }

    @Test("a declared Content-Length reserves nothing: capacity follows the bytes that arrived")
    func capacityFollowsArrivals() {
        var parser = HTTPParser()
        feedPartial(&parser, head(length: 65536) + [UInt8](repeating: 0x61, count: 1000))
        #expect(parser.heldByteCount >= 1000)
        #expect(parser.heldByteCount < 4096)
        for _ in 0..<10 { feedPartial(&parser, [UInt8](repeating: 0x62, count: 1000)) }
        #expect(parser.heldByteCount >= 11_000)
        #expect(parser.heldByteCount <= 2 * 11_000)
    }

    @Test("body bytes that arrive after the head are held once, not in the input buffer and the body")
    func bodyHeldOnce() {
        var parser = HTTPParser()
        feedPartial(&parser, head(length: 65536))
        feedPartial(&parser, [UInt8](repeating: 0x61, count: 65000))
        // The body's own bytes, within the declared length: no second copy beside them.
        #expect(parser.heldByteCount >= 65000)
        #expect(parser.heldByteCount <= 65536 + 1024)
        let events = parser.feed([UInt8](repeating: 0x62, count: 536))
        guard case .request(let request)? = events.first else {
            Issue.record("expected the request, got \(events)")
            return
        }
        #expect(request.body.count == 65536)
        #expect(request.body.prefix(65000).allSatisfy { $0 == 0x61 } && request.body.suffix(536).allSatisfy { $0 == 0x62 })
    }

    @Test("a chunked body grows with its chunks, not with the body limit")
    func chunkedGrowsWithChunks() {
        var parser = HTTPParser(limits: HTTPParserLimits(maxBodyBytes: 1 << 20))
        let start = Array("POST /p HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        feedPartial(&parser, start + Array("10\r\n0123456789abcdef\r\n".utf8))
        #expect(parser.heldByteCount < 4096)
    }

    @Test("a head waiting for its body counts its fields in what the parser holds")
    func headCounted() {
        var parser = HTTPParser()
        let value = String(repeating: "v", count: 600)
        feedPartial(&parser, Array("POST /push/ab/1 HTTP/1.1\r\nHost: r\r\nX-Long: \(value)\r\nContent-Length: 10\r\n\r\n".utf8))
        // The fields' bytes (names and values) are held until the request is handed on: the
        // server's budget for half-received requests must see them.
        #expect(parser.heldByteCount >= "Host".utf8.count + 1 + "X-Long".utf8.count + 600 + "Content-Length".utf8.count + 2)
        #expect(parser.heldByteCount < 4096)
    }

    @Test("a body that arrives with its head is handed on in the buffer it arrived in, not copied into another")
    func bodyAdopted() throws {
        var parser = HTTPParser()
        let head = head(length: 3000)
        let events = parser.feed(head + [UInt8](repeating: 0x61, count: 3000))
        guard case .request(let request)? = events.first else {
            Issue.record("expected the request, got \(events)")
            return
        }
        #expect(request.body == [UInt8](repeating: 0x61, count: 3000))
        // The input buffer held head and body; an array made for the body alone would not.
        #expect(request.body.capacity >= head.count + 3000)
        #expect(parser.heldByteCount == 0)
    }

    @Test("between requests a connection's parser holds nothing")
    func idleHoldsNothing() {
        var parser = HTTPParser()
        let events = parser.feed(head(length: 5000) + [UInt8](repeating: 0x61, count: 5000))
        #expect(events.count == 1)
        #expect(parser.isIdle)
        #expect(parser.heldByteCount == 0)
    }
}
