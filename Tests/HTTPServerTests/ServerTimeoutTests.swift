import EventLoop
import Foundation
import Synchronization
import Testing
import TestWaits
@testable import HTTPServer

@Suite("HTTP server on loopback: timeouts")
struct ServerTimeoutTests {
    // The deadlines below are judged by a clock the test moves: nothing sleeps, and a slow
    // machine can neither hurry nor delay a timeout.

    @Test("a slow sender is cut off with 408 while another client is served")
    func slowHeaders() async throws {
        let clock = ManualClock()
        try await withServer(testConfiguration(header: .milliseconds(40), clock: clock.serverClock)) { server in
            let port = server.port
            let slow = try await blocking { try TestClient(port: port) }
            try await blocking {
                slow.send("GET / HTTP/1.1\r\n")
                slow.send("Host: r\r\n")
            }
            let other = try await blocking {
                let client = try TestClient(port: port)
                client.send("GET /fast HTTP/1.1\r\nHost: r\r\n\r\n")
                return client.readResponse()
            }
            #expect(other?.text == "GET /fast ")
            #expect(try await eventually { server.bufferedRequestBytes > 0 }, "the slow head's first bytes are read")
            let (timeout, closed) = try await blocking {
                // Keeps trickling, a line every 20 and 15 ms: a trickle does not reset the head
                // deadline, so 45 ms after the first byte it is 408.
                for step in [20, 15] {
                    clock.advance(.milliseconds(step))
                    slow.send("X-Slow: 1\r\n")
                }
                clock.advance(.milliseconds(10))
                return (slow.readResponse(), slow.isClosedByServer())
            }
            #expect(timeout?.status == 408)
            #expect(timeout?.header("Connection") == "close")
            #expect(closed)
        }
    }

    @Test("a body that stops moving gets 408 and the connection closes")
    func stalledBody() async throws {
        let clock = ManualClock()
        try await withServer(testConfiguration(body: .milliseconds(40), clock: clock.serverClock)) { server in
            let port = server.port
            let client = try await blocking {
                let client = try TestClient(port: port)
                client.send("POST /s HTTP/1.1\r\nHost: r\r\nContent-Length: 100\r\n\r\n0123456789")
                return client
            }
            #expect(try await eventually { server.bufferedRequestBytes > 0 }, "the head and the first body bytes are read")
            clock.advance(.milliseconds(50))
            let (response, closed) = try await blocking { (client.readResponse(), client.isClosedByServer()) }
            #expect(response?.status == 408)
            #expect(closed)
        }
    }

    @Test("an idle keep-alive connection is closed without a word after idleTimeout")
    func idleClose() async throws {
        // Each reading of the server's clock takes 20 ms: a connection the test sees counted, or an
        // answer it has read, must already have its idle time running from a reading made before.
        let clock = ManualClock(readDelay: .milliseconds(20))
        try await withServer(testConfiguration(idle: .milliseconds(40), clock: clock.serverClock)) { server in
            let port = server.port
            let (client, first, never) = try await blocking {
                let client = try TestClient(port: port)
                client.send("GET / HTTP/1.1\r\nHost: r\r\n\r\n")
                let first = client.readResponse()
                let never = try TestClient(port: port)  // connects, sends nothing
                return (client, first, never)
            }
            #expect(first?.status == 200)
            #expect(try await eventually { server.openConnectionCount == 2 })
            clock.advance(.milliseconds(50))
            let (closed, fresh) = try await blocking { (client.isClosedByServer(), never.isClosedByServer()) }
            #expect(closed)
            #expect(fresh)
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test("a client that stops reading a large answer is cut off after writeTimeout")
    func stuckReader() async throws {
        try await withServer(testConfiguration(write: .milliseconds(300))) { server in
            let port = server.port
            let client = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /big HTTP/1.1\r\nHost: r\r\n\r\n")
                return c
            }
            #expect(try await eventually { server.openConnectionCount == 1 })
            #expect(try await eventually(within: .seconds(5)) { server.openConnectionCount == 0 })
            _ = client
        }
    }
}

@Suite("Connection timeouts (pure)")
struct ConnectionTimeoutTests {
    let config = HTTPServerConfiguration(
        headerTimeout: .seconds(10), bodyTimeout: .seconds(5), requestTimeout: .seconds(60), idleTimeout: .seconds(75),
        writeTimeout: .seconds(10))
    let t0 = LoopClock.now()

    @Test("an idle connection closes silently at idleTimeout, not before")
    func idle() {
        var t = ConnectionTimeouts(configuration: config, now: t0)
        #expect(t.action(phase: .idle, pendingWriteBytes: 0, now: t0 + nanos(.seconds(74))) == .none)
        #expect(t.action(phase: .idle, pendingWriteBytes: 0, now: t0 + nanos(.seconds(75))) == .close)
    }

    @Test("a head not complete within headerTimeout gets 408 even when bytes keep trickling")
    func head() {
        var t = ConnectionTimeouts(configuration: config, now: t0)
        t.lastRead = t0 + nanos(.seconds(9))
        #expect(t.action(phase: .receivingHead, pendingWriteBytes: 0, now: t0 + nanos(.seconds(9))) == .none)
        if case .requestTimeout = t.action(phase: .receivingHead, pendingWriteBytes: 0, now: t0 + nanos(.seconds(10))) {} else {
            Issue.record("expected a 408")
        }
    }

    @Test("a body is judged by its last progress, not its start")
    func body() {
        var t = ConnectionTimeouts(configuration: config, now: t0)
        t.lastRead = t0 + nanos(.seconds(20))
        #expect(t.action(phase: .receivingBody, pendingWriteBytes: 0, now: t0 + nanos(.seconds(24))) == .none)
        if case .requestTimeout = t.action(phase: .receivingBody, pendingWriteBytes: 0, now: t0 + nanos(.seconds(25))) {} else {
            Issue.record("expected a 408")
        }
    }

    @Test("a request gets one deadline, head and body together, however steadily its bytes arrive")
    func wholeRequest() {
        let config = HTTPServerConfiguration(bodyTimeout: .seconds(5), requestTimeout: .seconds(10))
        var t = ConnectionTimeouts(configuration: config, now: t0)
        // A byte every second: the body never stalls for bodyTimeout (5 s).
        for second in 1...9 {
            t.lastRead = t0 + nanos(.seconds(second))
            #expect(t.action(phase: .receivingBody, pendingWriteBytes: 0, now: t0 + nanos(.seconds(second))) == .none)
        }
        t.lastRead = t0 + nanos(.seconds(10))
        guard case .requestTimeout(let reason) = t.action(phase: .receivingBody, pendingWriteBytes: 0, now: t0 + nanos(.seconds(10))) else {
            Issue.record("expected a 408 at the request deadline")
            return
        }
        #expect(reason.contains("request not complete"))
        var head = ConnectionTimeouts(configuration: HTTPServerConfiguration(requestTimeout: .seconds(3)), now: t0)
        if case .requestTimeout = head.action(phase: .receivingHead, pendingWriteBytes: 0, now: t0 + nanos(.seconds(3))) {} else {
            Issue.record("expected a 408 for a head past the request deadline")
        }
    }

    @Test("while the responder works no read timeout applies")
    func responding() {
        var t = ConnectionTimeouts(configuration: config, now: t0)
        #expect(t.action(phase: .responding, pendingWriteBytes: 0, now: t0 + nanos(.seconds(1000))) == .none)
    }

    @Test("unsent bytes that stop draining close the connection; draining ones keep it")
    func writes() {
        var t = ConnectionTimeouts(configuration: config, now: t0)
        t.noteWriteBuffer(1000, now: t0)
        #expect(t.action(phase: .responding, pendingWriteBytes: 800, now: t0 + nanos(.seconds(9))) == .none)
        #expect(t.action(phase: .responding, pendingWriteBytes: 800, now: t0 + nanos(.seconds(18))) == .none)
        #expect(t.action(phase: .responding, pendingWriteBytes: 800, now: t0 + nanos(.seconds(19))) == .close)
    }

    @Test("the sweep interval follows the shortest timeout within 5 ms and 1 s")
    func sweep() {
        #expect(config.sweepInterval == .seconds(0.625))
        let tiny = HTTPServerConfiguration(headerTimeout: .milliseconds(8))
        #expect(tiny.sweepInterval == .milliseconds(5))
        let long = HTTPServerConfiguration(headerTimeout: .seconds(60), bodyTimeout: .seconds(60), writeTimeout: .seconds(60))
        #expect(long.sweepInterval == .seconds(1))
    }
}
