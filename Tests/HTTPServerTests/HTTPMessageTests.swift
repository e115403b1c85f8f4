import HTTPServer
import Testing

@Suite("HTTP headers")
struct HTTPHeadersTests {
    @Test("lookups ignore case and keep repeated fields in arrival order")
    func caseInsensitive() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-Forwarded-For": "1.1.1.1"]
        headers.add("x-forwarded-for", "2.2.2.2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["X-FORWARDED-FOR"] == "1.1.1.1")
        #expect(headers.values("X-Forwarded-For") == ["1.1.1.1", "2.2.2.2"])
        #expect(headers["Missing"] == nil)
        #expect(headers.values("Missing") == [])
        #expect(headers.map(\.name) == ["Content-Type", "X-Forwarded-For", "x-forwarded-for"])
        headers.replaceOrAdd("X-FORWARDED-FOR", "3.3.3.3")
        #expect(headers.values("x-forwarded-for") == ["3.3.3.3"])
        #expect(headers.count == 2)
    }

    @Test("a field added from bytes is the field added from the same text, in its place among the others")
    func addFromBytes() {
        var fromText = HTTPHeaders(), fromBytes = HTTPHeaders()
        for (name, value) in [("A", "1"), ("X-Request-ID", "0f5b8a52-7c1e-4d2b-a3f9-6e0d1c2b3a49"), ("Empty", ""), ("B", "é2")] {
            fromText.add(name, value)
            Array(value.utf8).withUnsafeBytes { fromBytes.add(name, bytes: $0) }
        }
        #expect(fromBytes == fromText)
        #expect(fromBytes.list.map(\.name) == ["A", "X-Request-ID", "Empty", "B"])
        #expect(fromBytes["x-request-id"] == "0f5b8a52-7c1e-4d2b-a3f9-6e0d1c2b3a49")
        #expect(fromBytes["Empty"] == "" && fromBytes["B"] == "é2")
    }

    @Test("parsed header names keep their spelling and answer any case")
    func parsedLookup() throws {
        var parser = HTTPParser()
        let events = parser.feed(Array("GET / HTTP/1.1\r\ncOnTeNt-EnCoDiNg: aes128gcm\r\n\r\n".utf8))
        guard case .request(let r) = try #require(events.first) else { return }
        #expect(r.headers["Content-Encoding"] == "aes128gcm")
        #expect(r.headers.map(\.name) == ["cOnTeNt-EnCoDiNg"])
    }
}

@Suite("HTTP headers as bytes")
struct HTTPHeaderBytesTests {
    @Test("the first value of a name is read as bytes, in any case of the name; nil when absent")
    func valueBytes() {
        let headers: HTTPHeaders = ["Crypto-Key": "dh=abc", "crypto-key": "dh=def", "TTL": ""]
        #expect(headers.withValue(named: "CRYPTO-KEY") { Array($0) } == Array("dh=abc".utf8))
        #expect(headers.withValue(named: "ttl") { $0.count } == 0)
        #expect(headers.withValue(named: "Topic") { _ in true } == nil)
    }

    @Test("every field is walked as bytes in arrival order, repeats kept, as the Strings read")
    func fieldBytes() {
        let headers: HTTPHeaders = ["A": "1", "b": "", "A": "é;x"]
        var walked: [String] = []
        headers.withFieldBytes { fields in
            fields.forEach { name, value in
                walked.append(String(decoding: name, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
            }
        }
        #expect(walked == ["A=1", "b=", "A=é;x"])
        #expect(headers.map { "\($0.name)=\($0.value)" } == walked)
        #expect(headers.list.map(\.value) == ["1", "", "é;x"])
    }

    @Test("a parsed value that is not UTF-8 keeps its bytes; as a String it is decoded with replacements")
    func obsText() throws {
        var parser = HTTPParser()
        let events = parser.feed(Array("GET / HTTP/1.1\r\nX-Odd: a\u{FF}b\r\n\r\n".utf8.map { $0 == 0xC3 ? 0xFF : $0 }.filter { $0 != 0xBF }))
        guard case .request(let r) = try #require(events.first) else { return }
        #expect(r.headers.withValue(named: "x-odd") { Array($0) } == [0x61, 0xFF, 0x62])
        #expect(r.headers["X-Odd"] == "a\u{FFFD}b")
    }

    @Test("removing a name keeps the other fields in order; equality is field by field, byte for byte")
    func removeAndEquality() {
        var headers: HTTPHeaders = ["A": "1", "B": "2", "a": "3", "C": "4"]
        headers.remove("A")
        #expect(headers == ["B": "2", "C": "4"])
        #expect(headers.count == 2)
        headers.remove("missing")
        #expect(headers == ["B": "2", "C": "4"])
        #expect(headers != ["B": "2", "c": "4"])
        #expect(headers != ["B": "2"])
        #expect(HTTPHeaders() == HTTPHeaders([]))
        #expect(HTTPHeaders().isEmpty)
    }
}

@Suite("response serialization")
struct HTTPSerializerTests {
    let date = "Tue, 14 Nov 2023 22:13:20 GMT"

    @Test("a response is framed with Content-Length and Date after its own headers")
    func exactBytes() {
        var out: [UInt8] = []
        serialize(HTTPResponse(status: 201, headers: ["apns-id": "abc"]), date: date, close: false, into: &out)
        #expect(String(decoding: out, as: UTF8.self)
            == "HTTP/1.1 201 Created\r\napns-id: abc\r\nContent-Length: 0\r\nDate: \(date)\r\n\r\n")
    }

    @Test("closing adds Connection: close; a text body carries its type and length")
    func closing() {
        var out: [UInt8] = Array("prefix|".utf8)
        serialize(HTTPResponse(status: 400, text: "bad token"), date: date, close: true, into: &out)
        #expect(String(decoding: out, as: UTF8.self)
            == "prefix|HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 9\r\nDate: \(date)\r\nConnection: close\r\n\r\nbad token")
    }

    @Test("JSON bodies, framing headers from the handler are replaced, injected CRLF is neutralised")
    func framingOwned() {
        var response = HTTPResponse(status: 410, json: #"{"reason":"Unregistered"}"#)
        response.headers.add("Content-Length", "999")
        response.headers.add("Connection", "keep-alive")
        response.headers.add("Date", "yesterday")
        response.headers.add("Transfer-Encoding", "chunked")
        response.headers.add("X-Evil", "a\r\nSet-Cookie: x")
        response.headers.add("Bad Name", "v")
        var out: [UInt8] = []
        serialize(response, date: date, close: false, into: &out)
        #expect(String(decoding: out, as: UTF8.self)
            == "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nX-Evil: a  Set-Cookie: x\r\nContent-Length: 25\r\nDate: \(date)\r\n\r\n{\"reason\":\"Unregistered\"}")
    }

    @Test("204 carries neither Content-Length nor a body; unknown statuses still get a phrase")
    func noContent() {
        var out: [UInt8] = []
        serialize(HTTPResponse(status: 204, body: [1, 2, 3]), date: date, close: false, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == "HTTP/1.1 204 No Content\r\nDate: \(date)\r\n\r\n")
        out = []
        serialize(HTTPResponse(status: 599), date: date, close: false, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == "HTTP/1.1 599 Status\r\nContent-Length: 0\r\nDate: \(date)\r\n\r\n")
    }

    @Test("a parse error becomes its status with the reason as a JSON body")
    func parseErrorResponse() {
        let response = HTTPResponse(parseError: HTTPParseError(status: 431, reason: #"too many "headers"\#n"#))
        #expect(response.status == 431)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason":"too many \"headers\"\n"}"#)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(String(decoding: HTTPResponse.continueHead, as: UTF8.self) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test("httpDate gives the IMF-fixdate of a Unix second", arguments: [
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (1_700_000_000, "Tue, 14 Nov 2023 22:13:20 GMT"),
        (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
    ])
    func date(_ c: (Int, String)) {
        #expect(httpDate(c.0) == c.1)
    }
}

@Suite("request targets")
struct RequestTargetTests {
    @Test("an absolute-form target is routed by its path and query, like the origin form", arguments: [
        ("http://relay.example/push/ab/1?sandbox=true", "/push/ab/1", "sandbox=true"),
        ("HTTPS://relay.example:8443/push/ab/1", "/push/ab/1", nil),
        ("http://relay.example", "/", nil),
        ("http://relay.example?x=1", "/", "x=1"),
        ("/push/ab/1?sandbox=true", "/push/ab/1", "sandbox=true"),
        ("*", "*", nil),
    ] as [(String, String, String?)])
    func absoluteForm(target: String, path: String, query: String?) {
        let request = HTTPRequest(method: "POST", target: target)
        #expect(request.path == path)
        #expect(request.query == query)
        #expect(request.target == target)
    }
}
