import Testing
import Foundation
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
import Transport
import MockAPNs
import TestWaits

// The emulator over real TLS + HTTP/2 on loopback, through the harness in WireHarness.swift.

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

    @Test("a delayed answer that never goes out (its stream reset by the client, its connection gone) is reported with its apns-id; one sent is not")
    func answerLost() async throws {
        let lost = Mutex<[String]>([])
        let harness = try Harness(onAnswerLost: { id in lost.withLock { $0.append(id) } })
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let (sent, reset, cut) = ("00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002",
                                  "00000000-0000-4000-8000-000000000003")
        let answered = try await push(connection, headers: Wire.headers(apnsID: sent))
        #expect(try #require(try await client.result(answered)).get().status == 200)
        let delayed = Wire.token(MockFaults.Prefix.delay)
        let cancelled = try await push(connection, token: delayed, headers: Wire.headers(apnsID: reset))
        _ = try await push(connection, token: delayed, headers: Wire.headers(apnsID: cut))
        #expect(try await eventually(within: .seconds(5)) { harness.server.records.count == 3 }, "both delayed pushes decided")
        await onLoop(connection) { $0.cancel(stream: cancelled) }
        #expect(try await eventually(within: .seconds(5)) { lost.withLock { $0 } == [reset] })
        harness.server.stop()
        #expect(try await eventually(within: .seconds(5)) { lost.withLock { $0 } == [reset, cut] })
        #expect(harness.server.records.map(\.status) == [200, 200, 200], "decided, and recorded, as Apple had them")
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

    @Test("waitForRecords is woken by the record that makes its count, and answers false at its timeout")
    func waitForRecords() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        #expect(!server.waitForRecords(count: 1, timeout: .milliseconds(20)))
        async let woken = onOwnThread { server.waitForRecords(count: 2, timeout: .seconds(10)) }
        let client = Client()
        let connection = try await harness.connect(client).get()
        _ = try #require(try await client.result(try await push(connection))).get()
        _ = try #require(try await client.result(try await push(connection))).get()
        #expect(try await woken)
        #expect(server.waitForRecords(count: 2, timeout: .zero), "a count already held answers at once")
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
        // The port stays the emulator's while it refuses: no other socket (a parallel test's
        // server given a free port) can take it and answer in its place.
        #expect(!canBind(port), "port \(port) was free for anyone while the emulator refused connections")
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
        #expect(!canBind(port), "port \(port) was free for anyone while the emulator was stopped")
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

/// Whether a socket without SO_REUSEADDR could bind 127.0.0.1:`port` now: what the kernel checks
/// before it gives a port to anyone else.
private func canBind(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}
