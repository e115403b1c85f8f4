import Testing
import HTTP2

@Suite("packed header blocks")
struct HeaderBlockTests {
    @Test("a packed request reaches the server as sent, its own fields before the shared ones, from a block reused per request")
    func packedRequest() throws {
        let pair = try Pair()
        var shared = HTTP2HeaderBlock()
        shared.append("authorization", "bearer abc")
        var request = HTTP2HeaderBlock()
        var ids: [Int32] = []
        for (token, id) in [("abcd", "5e6f"), ("ef01", "")] {
            HTTP2ClientSession.startRequest(&request, authority: "api.push.apple.com") { path in
                path.append(contentsOf: "/3/device/".utf8)
                path.append(contentsOf: token.utf8)
            }
            request.append("apns-topic", "org.example.app")
            if !id.isEmpty { request.append("apns-id", id, neverIndex: true) }
            ids.append(try pair.client.submitRequest(request, shared: shared, body: Array("{}".utf8)))
        }
        try pair.pump()

        let first = try #require(pair.serverRecorder.requests[ids[0]])
        #expect(first.method == "POST")
        #expect(first.scheme == "https")
        #expect(first.authority == "api.push.apple.com")
        #expect(first.path == "/3/device/abcd")
        #expect(first.headers.map(\.name) == ["apns-topic", "apns-id", "authorization"])
        #expect(first.header("apns-id") == "5e6f")
        #expect(first.header("authorization") == "bearer abc")
        #expect(first.body == Array("{}".utf8))
        // The block was emptied for the second request: nothing of the first is left in it.
        let second = try #require(pair.serverRecorder.requests[ids[1]])
        #expect(second.path == "/3/device/ef01")
        #expect(second.headers.map(\.name) == ["apns-topic", "authorization"])
        #expect(pair.clientRecorder.response(ids[1])?.status == 200)
    }

    @Test("a connection's shared block may hold the pseudo-headers every request shares; they go out before the request's :path")
    func sharedPseudoHeaders() throws {
        let pair = try Pair()
        var shared = HTTP2HeaderBlock()
        HTTP2ClientSession.startShared(&shared, authority: "api.push.apple.com")
        shared.append("authorization", "bearer abc")
        var request = HTTP2HeaderBlock()
        request.append(":path", neverIndex: true) { $0.append(contentsOf: "/3/device/abcd".utf8) }
        request.append("apns-topic", "org.example.app")
        let id = try pair.client.submitRequest(request, shared: shared, body: [])
        try pair.pump()
        let received = try #require(pair.serverRecorder.requests[id])
        #expect(received.method == "POST")
        #expect(received.scheme == "https")
        #expect(received.authority == "api.push.apple.com")
        #expect(received.path == "/3/device/abcd")
        #expect(received.headers.map(\.name) == ["apns-topic", "authorization"])
        #expect(pair.clientRecorder.response(id)?.status == 200)
    }

    @Test("a block reads back the fields it was given, flags and empty values included")
    func readsBack() {
        let fields = [HTTP2Header(name: ":path", value: "/x", neverIndex: true), HTTP2Header(name: "a", value: ""),
                      HTTP2Header(name: "b", value: String(repeating: "v", count: 70_000))]
        let block = HTTP2HeaderBlock(fields)
        #expect(block.count == 3)
        #expect(block.fields == fields)
        #expect(block.problem == nil)
    }

    @Test("a block remembers the first field HTTP/2 refuses, once, and emptying it for the next request forgets it")
    func checkedAsFilled() {
        var block = HTTP2HeaderBlock()
        block.append("x-ok", "1")
        block.append("x-bad", "a\nb")
        block.append("Upper", "2")
        #expect(block.problem?.contains("x-bad") == true)
        block.removeAll()
        #expect(block.problem == nil && block.count == 0)
        block.append("x-ok", "1")
        #expect(block.problem == nil)
    }

    @Test("a field appended with checked: false is stored as given and not checked; the next checked one still is")
    func uncheckedAppend() {
        var block = HTTP2HeaderBlock()
        let bad = Array("a\nb".utf8)
        bad.withUnsafeBufferPointer { block.append("x-trusted", bytes: $0, checked: false) }
        block.append(":path", neverIndex: true, checked: false) { $0.append(contentsOf: "/3\r".utf8) }
        #expect(block.problem == nil, "the caller vouched for both fields")
        #expect(block.fields == [HTTP2Header(name: "x-trusted", value: "a\nb"),
                                 HTTP2Header(name: ":path", value: "/3\r", neverIndex: true)])
        bad.withUnsafeBufferPointer { block.append("x-checked", bytes: $0) }
        #expect(block.problem?.contains("x-checked") == true)
        var pseudoLate = HTTP2HeaderBlock()
        pseudoLate.append("x-trusted", bytes: UnsafeBufferPointer(start: nil, count: 0), checked: false)
        pseudoLate.append(":path", "/late")
        #expect(pseudoLate.problem?.contains(":path") == true, "an unchecked regular field still counts as one")
    }

    @Test("a pseudo-header after a regular field, an upper-case name or a CR in a value is refused before a stream opens",
          arguments: [("apns-topic", "x", ":path"), ("Apns-Topic", "x", "x-ok"), ("apns-topic", "a\rb", "x-ok")])
    func refused(name: String, value: String, after: String) throws {
        let pair = try Pair()
        var request = HTTP2HeaderBlock()
        HTTP2ClientSession.startRequest(&request, authority: "a") { $0.append(contentsOf: "/".utf8) }
        request.append(name, value)
        request.append(after, "/late")
        #expect(throws: HTTP2Error(code: .invalidHeader, message: "")) {
            try pair.client.submitRequest(request, body: [])
        }
        #expect(pair.client.openStreamCount == 0)
    }

    @Test("a response's headers are kept as received and read by name, a value equal to a known one given as that value")
    func responseHeaders() throws {
        let pair = try Pair { session, _, id in
            try? session.respond(stream: id, status: 201,
                                 headers: [HTTP2Header(name: "apns-id", value: "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091"),
                                           HTTP2Header(name: "x-empty", value: "")],
                                 body: [])
        }
        let id = try pair.get("/3/device/abcd")
        try pair.pump()
        let response = try #require(pair.clientRecorder.response(id))
        #expect(response.status == 201)
        #expect(response.headers.map(\.name) == ["apns-id", "x-empty"])
        #expect(response.header("apns-id") == "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091")
        #expect(response.header("apns-id", reusing: "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091") == "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091")
        #expect(response.header("apns-id", reusing: "another") == "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091")
        #expect(response.header("x-empty") == "")
        #expect(response.header("x-missing") == nil)
    }
}
