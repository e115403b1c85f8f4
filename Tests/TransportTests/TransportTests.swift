import Testing
import Foundation
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
@testable import Transport
import CertificateSupport
import TestWaits

/// A server that answers every request with 200 and the request body, or as told.
final class EchoServerDelegate: HTTP2ServerConnectionDelegate, @unchecked Sendable {
    let answerAfter: Int?   // GOAWAY once this many requests arrived, answering only those
    let answer: Bool
    var received = 0
    /// `received`, for other threads to read.
    let arrived = Atomic<Int>(0)
    init(answer: Bool = true, goAwayAfter: Int? = nil) {
        self.answer = answer
        self.answerAfter = goAwayAfter
    }
    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2Request, stream id: Int32) {
        received += 1
        arrived.store(received, ordering: .releasing)
        if let limit = answerAfter {
            if received == limit {
                connection.goAway(lastStreamID: id, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
            }
            if received > limit { return }
        }
        guard answer else { return }
        connection.respond(stream: id, status: 200, headers: [HTTP2Header(name: "x-path", value: request.path)], body: request.body)
    }
    func connection(_ connection: HTTP2ServerConnection, streamDidClose id: Int32, errorCode: UInt32) {}
    func connection(_ connection: HTTP2ServerConnection, didClose error: TransportError?) {}
}

/// Collects what a client connection hears; `done` once `expected` streams completed.
final class Recorder: HTTP2ClientConnectionDelegate, @unchecked Sendable {
    let lock = Mutex<(results: [Int32: Result<HTTP2Response, HTTP2StreamError>], duplicates: Int, goAway: Int32?, closed: Bool)>(([:], 0, nil, false))
    let expected: Int
    init(expected: Int) { self.expected = expected }

    var done: Bool { lock.withLock { $0.results.count >= expected } }
    var closed: Bool { lock.withLock { $0.closed } }

    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        lock.withLock { state in
            if state.results[id] != nil { state.duplicates += 1 }
            state.results[id] = result
        }
    }
    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32) {}
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8],
                    refused: [UInt64]) {
        lock.withLock { $0.goAway = lastStreamID }
    }
    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection) {}
    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?) {
        lock.withLock { $0.closed = true }
    }
}

/// Carries a connection (not `Sendable`: it belongs to its loop) to the test's thread once
/// `connect` has finished with it. The test reads its immutable `loop` and settled values there,
/// and reaches it otherwise only through `Fixture.submit`'s hop onto the loop.
struct Handover<Value>: @unchecked Sendable {
    let value: Value
}

struct Fixture {
    let group: EventLoopGroup
    let server: HTTP2Server
    let clientTLS: TLSContext

    init(group: EventLoopGroup, server: HTTP2Server, clientTLS: TLSContext) {
        self.group = group
        self.server = server
        self.clientTLS = clientTLS
    }

    init(maxConcurrentStreams: UInt32 = 1000, delegate: @escaping @Sendable () -> HTTP2ServerConnectionDelegate) throws {
        group = try EventLoopGroup(loopCount: 2)
        let certs = try TestCertificates.make()
        let serverTLS = try TLSContext.server(certificateChainPEM: certs.certificatePEM, privateKeyPEM: certs.privateKeyPEM)
        server = try HTTP2Server.start(tls: serverTLS, group: group, maxConcurrentStreams: maxConcurrentStreams) { _ in delegate() }
        clientTLS = try TLSContext.client(trustSystemStore: false, extraCAPEM: certs.caPEM)
    }

    /// Connects from the first loop and waits (bounded) for the result.
    func connect(_ recorder: Recorder, host: String = "localhost", tls: TLSContext? = nil) async throws -> Result<HTTP2ClientConnection, TransportError> {
        let box = Mutex<Handover<Result<HTTP2ClientConnection, TransportError>>?>(nil)
        let loop = group.loops[0]
        let port = server.port
        let tls = tls ?? clientTLS
        loop.execute {
            HTTP2ClientConnection.connect(host: host, port: port, tls: tls, on: loop, timeout: .seconds(5), delegate: recorder) { result in
                box.withLock { $0 = Handover(value: result) }
            }
        }
        _ = try await eventually { box.withLock { $0 != nil } }
        return box.withLock { $0 }?.value ?? .failure(TransportError(.timedOut, "test: no answer"))
    }

    func submit(_ connection: HTTP2ClientConnection, count: Int, body: [UInt8] = Array("hello".utf8)) {
        let bound = LoopBound(connection, on: connection.loop)
        connection.loop.execute {
            for i in 0..<count {
                _ = try? bound.value.submitRequest(path: "/r/\(i)", headers: [HTTP2Header(name: "x-i", value: "\(i)")], body: body)
            }
        }
    }

    func shutdown() {
        server.close()
        group.shutdown()
    }
}

@Suite("TLS + HTTP/2 on the event loops")
struct TransportTests {
    @Test("a request crosses TLS and HTTP/2 and its answer comes back")
    func roundTrip() async throws {
        let fixture = try Fixture { EchoServerDelegate() }
        defer { fixture.shutdown() }
        let recorder = Recorder(expected: 1)
        let connection = try await fixture.connect(recorder).get()
        fixture.submit(connection, count: 1, body: Array(repeating: 7, count: 4096))
        #expect(try await eventually(within: .seconds(10)) { recorder.done })
        let response = try #require(recorder.lock.withLock { $0.results.values.first })
        let answer = try response.get()
        #expect(answer.status == 200)
        #expect(answer.body == Array(repeating: 7, count: 4096))
        #expect(answer.header("x-path") == "/r/0")
    }

    @Test("1,000 concurrent streams on one connection all complete exactly once")
    func thousandStreams() async throws {
        let fixture = try Fixture { EchoServerDelegate() }
        defer { fixture.shutdown() }
        let recorder = Recorder(expected: 1000)
        let connection = try await fixture.connect(recorder).get()
        #expect(connection.remoteMaxConcurrentStreams == 1000)
        fixture.submit(connection, count: 1000)
        #expect(try await eventually(within: .seconds(30)) { recorder.done })
        let state = recorder.lock.withLock { ($0.results.count, $0.duplicates, $0.results.values.filter { (try? $0.get().status) == 200 }.count) }
        #expect(state.0 == 1000)
        #expect(state.1 == 0)
        #expect(state.2 == 1000)
    }

    @Test("a flush of more ciphertext than the channel's 64 KiB send buffer goes out whole, in order")
    func flushLargerThanSendBuffer() async throws {
        let fixture = try Fixture { EchoServerDelegate() }
        defer { fixture.shutdown() }
        let recorder = Recorder(expected: 500)
        let connection = try await fixture.connect(recorder).get()
        // 500 requests submitted in one job leave in one flush: about 150 KiB of TLS records,
        // sent as several buffer-fulls. A lost, doubled or reordered piece breaks the records' MACs.
        let body = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        fixture.submit(connection, count: 500, body: body)
        #expect(try await eventually(within: .seconds(30)) { recorder.done })
        let answers = recorder.lock.withLock { $0.results.values.compactMap { try? $0.get() } }
        #expect(answers.count == 500)
        #expect(answers.allSatisfy { $0.status == 200 && $0.body == body })
    }

    @Test("a GOAWAY ends the streams above last_stream_id as not processed, and the rest complete")
    func goAway() async throws {
        let fixture = try Fixture { EchoServerDelegate(goAwayAfter: 5) }
        defer { fixture.shutdown() }
        let recorder = Recorder(expected: 10)
        let connection = try await fixture.connect(recorder).get()
        fixture.submit(connection, count: 10)
        #expect(try await eventually(within: .seconds(10)) { recorder.done })
        let (results, goAway) = recorder.lock.withLock { ($0.results, $0.goAway) }
        let last = try #require(goAway)
        for (id, result) in results {
            switch result {
            case .success(let response):
                #expect(id <= last)
                #expect(response.status == 200)
            case .failure(let error):
                #expect(id > last)
                #expect(error.wasProcessed == false)
            }
        }
        #expect(results.values.filter { (try? $0.get()) != nil }.count == 5)
    }

    @Test("a server that dies mid-flight fails every pending stream promptly")
    func serverKilled() async throws {
        let connections = Mutex<[LoopBound<HTTP2ServerConnection>]>([])
        let delegates = Mutex<[EchoServerDelegate]>([])
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let certs = try TestCertificates.make()
        let serverTLS = try TLSContext.server(certificateChainPEM: certs.certificatePEM, privateKeyPEM: certs.privateKeyPEM)
        let server = try HTTP2Server.start(tls: serverTLS, group: group, maxConcurrentStreams: 100) { connection in
            connections.withLock { $0.append(LoopBound(connection, on: connection.loop)) }
            let delegate = EchoServerDelegate(answer: false)
            delegates.withLock { $0.append(delegate) }
            return delegate
        }
        let fixture = Fixture(group: group, server: server, clientTLS: try TLSContext.client(trustSystemStore: false, extraCAPEM: certs.caPEM))
        let recorder = Recorder(expected: 20)
        let connection = try await fixture.connect(recorder).get()
        fixture.submit(connection, count: 20)
        // Wait until the server holds all 20 requests unanswered, then cut it like a crash.
        #expect(try await eventually(within: .seconds(10)) { delegates.withLock { $0.first?.arrived.load(ordering: .acquiring) } == 20 })
        let serverSide = try #require(connections.withLock { $0.first })
        serverSide.loop.execute { serverSide.value.close(abruptly: true) }
        server.close()
        #expect(try await eventually(within: .seconds(5)) { recorder.done })
        #expect(try await eventually(within: .seconds(5)) { recorder.closed })
        let failures = recorder.lock.withLock { $0.results.values.filter { if case .failure = $0 { return true } else { return false } }.count }
        #expect(failures == 20)
    }

    @Test("a client that does not trust the server's CA fails with a TLS error naming the problem")
    func wrongCA() async throws {
        let fixture = try Fixture { EchoServerDelegate() }
        defer { fixture.shutdown() }
        let other = try TestCertificates.make()
        let tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: other.caPEM)
        let result = try await fixture.connect(Recorder(expected: 1), tls: tls)
        guard case .failure(let error) = result else {
            Issue.record("connected with an untrusted CA")
            return
        }
        #expect(error.code == .tls)
        #expect(error.cause == .tls(TLSError(.certificateVerificationFailed, "")))
        #expect(error.description.contains("certificate verification failed"), "\(error)")
    }

    @Test("connecting to a closed port fails promptly with connectFailed")
    func refused() async throws {
        let fixture = try Fixture { EchoServerDelegate() }
        let port = fixture.server.port
        fixture.server.close()
        defer { fixture.group.shutdown() }
        let box = Mutex<TransportError?>(nil)
        let done = Atomic<Bool>(false)
        let loop = fixture.group.loops[0]
        let tls = fixture.clientTLS
        loop.execute {
            HTTP2ClientConnection.connect(host: "127.0.0.1", port: port, tls: tls, on: loop, timeout: .seconds(5), delegate: Recorder(expected: 0)) { result in
                if case .failure(let e) = result { box.withLock { $0 = e } }
                done.store(true, ordering: .releasing)
            }
        }
        #expect(try await eventually(within: .seconds(5)) { done.load(ordering: .acquiring) })
        #expect(box.withLock { $0 }?.code == .connectFailed)
        #expect(box.withLock { $0 }?.cause == .socket(SocketError(code: .connectionRefused, message: "")))
    }
}
