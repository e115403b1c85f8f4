import Testing
import Foundation
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
import Transport
import MockAPNs
import TestWaits

// The emulator over real TLS + HTTP/2 on loopback, driven by the Transport client with a real
// ES256 key. The JWT maker below is written here on purpose (not shared with any client code).

private enum Wire {
    static let team = "TEAM123456"
    static let kid = "KEYID12345"
    static let topic = "com.example.app"
    /// The emulator's clock in these tests, so the 410 timestamp is exact.
    static let now: Int64 = 1_750_000_000
    static let key = try! ES256PrivateKey.generate()

    static func base64url(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var out = ""
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            let produced = min(3, bytes.count - index) + 1
            for j in 0..<produced {
                out.append(alphabet[Int(group >> UInt32(18 - 6 * j) & 0x3F)])
            }
            index += 3
        }
        return out
    }

    /// One token for every test: ECDSA signatures are randomised, so signing again makes a
    /// different token, which Apple (and the emulator) refuse within 20 minutes on one connection.
    static let providerToken = jwt()

    static func jwt(iat: Int64 = now) -> String {
        let header = base64url(Array(#"{"alg":"ES256","kid":"\#(kid)"}"#.utf8))
        let claims = base64url(Array(#"{"iss":"\#(team)","iat":\#(iat)}"#.utf8))
        let signature = try! key.sign(Array("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(base64url(signature))"
    }

    static func token(_ prefix: String = "") -> String {
        prefix + String(repeating: "a", count: 64 - prefix.count)
    }

    static let payload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    static func configuration(sandbox: Bool = false, faults: MockFaults = .standard) -> MockAPNsConfiguration {
        MockAPNsConfiguration(topics: [topic], teamID: team, keys: [kid: .es256(key.publicKey)],
                              sandbox: sandbox, faults: faults)
    }

    static func headers(topic: String = topic, apnsID: String? = nil) -> [HTTP2Header] {
        var headers = [
            HTTP2Header(name: "authorization", value: "bearer \(providerToken)"),
            HTTP2Header(name: "apns-topic", value: topic),
            HTTP2Header(name: "apns-push-type", value: "alert"),
        ]
        if let apnsID { headers.append(HTTP2Header(name: "apns-id", value: apnsID)) }
        return headers
    }
}

/// One test's emulator and its client loop.
private final class Harness: Sendable {
    let server: MockAPNsServer
    let group: EventLoopGroup
    let tls: TLSContext

    init(sandbox: Bool = false, faults: MockFaults = .standard) throws {
        server = try MockAPNsServer.start(configuration: Wire.configuration(sandbox: sandbox, faults: faults),
                                          unixTime: { Wire.now })
        group = try EventLoopGroup(loopCount: 1)
        tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: server.caPEM)
    }

    func connect(_ client: Client) async throws -> Result<HTTP2ClientConnection, TransportError> {
        let box = Mutex<Handover<Result<HTTP2ClientConnection, TransportError>>?>(nil)
        let loop = group.loops[0]
        let (port, tls) = (server.port, self.tls)
        loop.execute {
            HTTP2ClientConnection.connect(host: "localhost", port: port, tls: tls, on: loop, timeout: .seconds(5),
                                          delegate: client) { result in
                box.withLock { $0 = Handover(value: result) }
            }
        }
        _ = try await eventually { box.withLock { $0 != nil } }
        return box.withLock { $0 }?.value ?? .failure(TransportError(.timedOut, "test: no answer"))
    }

    func shutdown() {
        group.shutdown()
        server.stop()
    }
}

/// Collects what one client connection hears.
private final class Client: HTTP2ClientConnectionDelegate, @unchecked Sendable {
    struct State {
        var results: [Int32: Result<HTTP2Response, HTTP2StreamError>] = [:]
        var limits: [UInt32] = []
        var goAway: (last: Int32, debug: [UInt8])?
        var closed = false
    }
    let state = Mutex(State())

    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        state.withLock { $0.results[id] = result }
    }
    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32) {
        state.withLock { $0.limits.append(value) }
    }
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        state.withLock { $0.goAway = (lastStreamID, debugData) }
    }
    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection) {}
    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?) {
        state.withLock { $0.closed = true }
    }

    /// Waits (bounded) until `condition` holds; false on timeout.
    func wait(timeout: Duration = .seconds(5), until condition: (State) -> Bool) async throws -> Bool {
        try await eventually(within: timeout) { state.withLock { condition($0) } }
    }

    func result(_ id: Int32, timeout: Duration = .seconds(5)) async throws -> Result<HTTP2Response, HTTP2StreamError>? {
        _ = try await wait(timeout: timeout) { $0.results[id] != nil }
        return state.withLock { $0.results[id] }
    }
}

/// Carries a connection (not `Sendable`: it belongs to its loop) to the test's thread once
/// `connect` has finished with it; the test reaches it only through `onLoop`.
struct Handover<Value>: @unchecked Sendable {
    let value: Value
}

/// Runs `body` with the connection on the connection's loop and returns its value.
private func onLoop<T: Sendable>(_ connection: HTTP2ClientConnection, _ body: @escaping @Sendable (HTTP2ClientConnection) -> T) async -> T {
    let bound = LoopBound(connection, on: connection.loop)
    return await withCheckedContinuation { continuation in
        connection.loop.execute { continuation.resume(returning: body(bound.value)) }
    }
}

/// Submits one push and returns its stream id.
private func push(_ connection: HTTP2ClientConnection, token: String = Wire.token(), headers: [HTTP2Header] = Wire.headers(),
                  body: [UInt8] = Wire.payload) async throws -> Int32 {
    let id = await onLoop(connection) { try? $0.submitRequest(path: "/3/device/\(token)", headers: headers, body: body) }
    return try #require(id)
}

private func reason(_ response: HTTP2Response) -> String? {
    (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["reason"] as? String
}

@Suite("MockAPNsServer over TLS + HTTP/2", .serialized)
struct MockAPNsServerTests {
    @Test("a valid push answers 200, echoes apns-id and is recorded with its headers, payload and connection")
    func validPush() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let apnsID = "6f1d3c1e-2b0a-4c5e-9f7a-0123456789ab"
        let id = try await push(connection, headers: Wire.headers(apnsID: apnsID))
        let response = try #require(try await client.result(id)).get()
        #expect(response.status == 200)
        #expect(response.header("apns-id") == apnsID)
        #expect(response.header("apns-unique-id") == nil)
        #expect(response.body.isEmpty)

        let record = try #require(harness.server.records.first)
        #expect(record.status == 200)
        #expect(record.path == "/3/device/\(Wire.token())")
        #expect(record.header("apns-topic") == Wire.topic)
        #expect(record.header("authorization") == "bearer \(Wire.providerToken)")
        #expect(record.payload == Wire.payload)
        #expect(record.streamID == id)
        #expect(record.connectionID == 1)
        #expect(harness.server.connectionCount == 1)
        #expect(harness.server.openConnectionCount == 1)
        #expect(harness.server.streamCount == 1)
    }

    @Test("the sandbox answers carry apns-unique-id")
    func sandbox() async throws {
        let harness = try Harness(sandbox: true)
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let response = try #require(try await client.result(try await push(connection))).get()
        #expect(response.status == 200)
        let unique = try #require(response.header("apns-unique-id"))
        #expect(UUID(uuidString: unique) != nil)
    }

    @Test("a bad topic and a bad device token come back with their status and JSON reason")
    func rejections() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let topic = try #require(try await client.result(try await push(connection, headers: Wire.headers(topic: "com.other.app")))).get()
        #expect(topic.status == 400)
        #expect(reason(topic) == "TopicDisallowed")
        #expect(topic.header("content-type") == "application/json")
        let token = try #require(try await client.result(try await push(connection, token: String(repeating: "zz", count: 32)))).get()
        #expect(token.status == 400)
        #expect(reason(token) == "BadDeviceToken")
        #expect(harness.server.records.map(\.reason) == ["TopicDisallowed", "BadDeviceToken"])
    }

    @Test("MAX_CONCURRENT_STREAMS is 1 until the first authenticated success, then 1000")
    func streamLimit() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        #expect(await onLoop(connection) { $0.remoteMaxConcurrentStreams } == 1)
        // Authenticated but rejected: no raise yet.
        let rejected = try #require(try await client.result(try await push(connection, headers: Wire.headers(topic: "com.other.app")))).get()
        #expect(rejected.status == 400)
        #expect(client.state.withLock { $0.limits }.allSatisfy { $0 == 1 })
        let accepted = try #require(try await client.result(try await push(connection))).get()
        #expect(accepted.status == 200)
        #expect(try await client.wait { $0.limits.last == 1000 })
        #expect(await onLoop(connection) { $0.remoteMaxConcurrentStreams } == 1000)
    }

    @Test("a dead token answers 410 Unregistered with the timestamp in milliseconds")
    func deadToken() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let response = try #require(try await client.result(try await push(connection, token: Wire.token("dead")))).get()
        #expect(response.status == 410)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(json["reason"] as? String == "Unregistered")
        #expect((json["timestamp"] as? NSNumber)?.int64Value == Wire.now * 1000)
    }

    @Test("a never-answered stream stays open until the client cancels it")
    func neverAnswered() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        _ = try #require(try await client.result(try await push(connection))).get()   // raises the stream limit
        #expect(try await client.wait { $0.limits.last == 1000 })
        let silent = try await push(connection, token: Wire.token(MockFaults.Prefix.neverAnswer))
        let after = try await push(connection)
        #expect(try #require(try await client.result(after)).get().status == 200)
        #expect(try await eventually(within: .seconds(5)) { harness.server.records.count >= 3 })
        #expect(client.state.withLock { $0.results[silent] } == nil)
        await onLoop(connection) { $0.cancel(stream: silent) }
        let cancelled = try #require(try await client.result(silent))
        #expect(throws: HTTP2StreamError.self) { try cancelled.get() }
        if case .failure(let error) = cancelled { #expect(error.reason == .cancelled) }
        #expect(harness.server.records.first { $0.streamID == silent }?.status == nil)
    }

    @Test("a delayed push is still answered 200 once its timer fires")
    func delayed() async throws {
        var faults = MockFaults.standard
        faults.byTokenPrefix[MockFaults.Prefix.delay] = .delay(.milliseconds(200))
        let harness = try Harness(faults: faults)
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        _ = try #require(try await client.result(try await push(connection))).get()
        #expect(try await client.wait { $0.limits.last == 1000 })
        let slow = try await push(connection, token: Wire.token(MockFaults.Prefix.delay))
        let fast = try await push(connection)
        #expect(try #require(try await client.result(fast)).get().status == 200)
        #expect(try #require(try await client.result(slow)).get().status == 200)
        #expect(harness.server.records.first { $0.streamID == slow }?.status == 200)
    }

    @Test("a refused stream reaches the client as REFUSED_STREAM, not processed")
    func refusedStream() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let result = try #require(try await client.result(try await push(connection, token: Wire.token(MockFaults.Prefix.refuseStream))))
        guard case .failure(let error) = result else {
            Issue.record("a refused stream was answered: \(result)")
            return
        }
        #expect(error.errorCode == HTTP2ErrorCode.refusedStream)
        #expect(error.wasProcessed == false)
    }

    @Test("GOAWAY after N requests names the Nth stream and carries Apple's debug data")
    func goAwayAfterRequests() async throws {
        var faults = MockFaults.standard
        faults.goAwayAfterRequests = 3
        let harness = try Harness(faults: faults)
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let first = try await push(connection)
        #expect(try #require(try await client.result(first)).get().status == 200)
        #expect(try await client.wait { $0.limits.last == 1000 })
        // All four in one loop job: the GOAWAY that the third answer brings cannot arrive between
        // two submissions (it did when the client read fast enough), so ids[2...] are surely refused.
        let ids = try #require(await onLoop(connection) { connection -> [Int32]? in
            try? (0..<4).map { _ in try connection.submitRequest(path: "/3/device/\(Wire.token())", headers: Wire.headers(), body: Wire.payload) }
        })
        #expect(try await client.wait { state in ids.allSatisfy { state.results[$0] != nil } })
        let goAway = try #require(client.state.withLock { $0.goAway })
        #expect(goAway.last == ids[1])
        #expect(goAway.debug == Array(#"{"reason":"Shutdown"}"#.utf8))
        for id in ids {
            let result = try #require(client.state.withLock { $0.results[id] })
            switch result {
            case .success(let response):
                #expect(id <= goAway.last)
                #expect(response.status == 200)
            case .failure(let error):
                #expect(id > goAway.last)
                #expect(error.wasProcessed == false)
            }
        }
        #expect(harness.server.records.count == 3)
    }

    @Test("goAwayAll sends GOAWAY with the given reason to every connection")
    func goAwayAll() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let clients = [Client(), Client()]
        var connections: [HTTP2ClientConnection] = []
        for client in clients { connections.append(try await harness.connect(client).get()) }
        #expect(try #require(try await clients[0].result(try await push(connections[0]))).get().status == 200)
        harness.server.goAwayAll(debugReason: "Maintenance")
        for client in clients {
            #expect(try await client.wait { $0.goAway != nil })
            #expect(client.state.withLock { $0.goAway?.debug } == Array(#"{"reason":"Maintenance"}"#.utf8))
        }
    }

    @Test("dropAllConnections fails the client's pending streams promptly")
    func dropAll() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        _ = try #require(try await client.result(try await push(connection))).get()
        let pending = try await push(connection, token: Wire.token(MockFaults.Prefix.neverAnswer))
        #expect(try await eventually(within: .seconds(5)) { harness.server.records.count >= 2 })
        harness.server.dropAllConnections()
        let result = try #require(try await client.result(pending))
        guard case .failure(let error) = result else {
            Issue.record("a dropped stream was answered")
            return
        }
        #expect(error.reason == .connectionClosed)
        #expect(try await client.wait { $0.closed })
        #expect(harness.server.openConnectionCount == 0)
    }

    @Test("refuseConnections makes a connect fail, then succeed on the same port")
    func refuseConnections() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let port = harness.server.port
        harness.server.refuseConnections(for: .milliseconds(300))
        let refused = try await harness.connect(Client())
        guard case .failure(let error) = refused else {
            Issue.record("connected while the emulator refused connections")
            return
        }
        #expect(error.code == .connectFailed)
        // The refusal lasts 300 ms: a connect after it succeeds.
        #expect(try await eventually(within: .seconds(5)) { (try? await harness.connect(Client()).get()) != nil })
        #expect(harness.server.port == port)
    }

    @Test("stop kills the emulator and restart brings it back on the same port")
    func stopAndRestart() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let port = harness.server.port
        let first = Client()
        let connection = try await harness.connect(first).get()
        _ = try #require(try await first.result(try await push(connection))).get()
        harness.server.stop()
        #expect(try await first.wait { $0.closed })
        guard case .failure(let error) = try await harness.connect(Client()) else {
            Issue.record("connected to a stopped emulator")
            return
        }
        #expect(error.code == .connectFailed)

        try harness.server.restart()
        #expect(harness.server.port == port)
        let second = Client()
        let again = try await harness.connect(second).get()
        #expect(try #require(try await second.result(try await push(again))).get().status == 200)
        #expect(harness.server.connectionCount == 2)
        #expect(Set(harness.server.records.map(\.connectionID)) == [1, 2])
    }
}
