#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestWaits
@testable import HTTPServer

@Suite("HTTPS server on loopback: the plain listener's limits, and hostile clients", .serialized)
struct HTTPSLimitsTests {
    @Test("plain HTTP sent to the HTTPS port is answered 503 in plain text and closed; garbage and an oversized record are closed; all are counted")
    func hostileBytes() async throws {
        try await withHTTPSServer { server, files in
            let port = server.port
            let (plain, plainClosed, garbageClosed, hugeClosed) = try await blocking {
                let plain = try TestClient(port: port)
                plain.send("POST /push/x HTTP/1.1\r\nHost: r\r\nContent-Length: 2\r\n\r\nhi")
                let answer = plain.readResponse()
                let plainClosed = plain.isClosedByServer()
                let garbage = try TestClient(port: port)
                garbage.send((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })
                let huge = try TestClient(port: port)
                // A handshake record header claiming 65535 bytes: more than TLS allows (2^14 + 2048).
                huge.send([0x16, 0x03, 0x01, 0xFF, 0xFF] + [UInt8](repeating: 0x01, count: 2000))
                return (answer, plainClosed, garbage.isClosedByServerAfterAnyBytes(), huge.isClosedByServerAfterAnyBytes())
            }
            #expect(plain?.status == 503)
            #expect(plain?.text.contains("HTTPS") == true)
            #expect(plain?.header("Connection") == "close")
            #expect(plainClosed)
            #expect(garbageClosed)
            #expect(hugeClosed)
            #expect(try await eventually { server.tlsFailureCount == 3 && server.openConnectionCount == 0 })
            let caPEM = files.certificates.caPEM
            let after = try await blocking {
                let client = try TLSTestClient(port: port, caPEM: caPEM)
                try client.handshake()
                try client.send("GET /after HTTP/1.1\r\nHost: r\r\n\r\n")
                return client.readResponse()
            }
            #expect(after?.text == "GET /after ", "the server still serves")
        }
    }

    @Test("a client that closes half-way through its ClientHello frees its slot and is counted")
    func closedMidHandshake() async throws {
        try await withHTTPSServer { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let client = try await blocking {
                let client = try TLSTestClient(port: port, caPEM: caPEM)
                let hello = try client.clientHello()
                client.raw.send(Array(hello.prefix(hello.count / 2)))
                return client
            }
            #expect(try await eventually { server.openConnectionCount == 1 && !server.holdsFreshIdleConnection },
                    "the half hello is read")
            client.raw.close()
            #expect(try await eventually { server.openConnectionCount == 0 && server.tlsFailureCount == 1 })
        }
    }

    @Test("half a ClientHello is cut at the header deadline; a client that sends nothing at the idle deadline")
    func handshakeDeadlines() async throws {
        let clock = ManualClock()
        let configuration = testConfiguration(header: .milliseconds(40), idle: .seconds(1), clock: clock.serverClock)
        try await withHTTPSServer(configuration) { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let (silent, half) = try await blocking {
                let silent = try TestClient(port: port)
                let half = try TLSTestClient(port: port, caPEM: caPEM)
                let hello = try half.clientHello()
                half.raw.send(Array(hello.prefix(hello.count / 2)))
                return (silent, half)
            }
            #expect(try await eventually { server.openConnectionCount == 2 })
            // The half hello's arrival is not observable: step the clock until its deadline has
            // passed (at most 500 ms of the clock's time, half the idle timeout).
            var steps = 0
            while server.openConnectionCount == 2 && steps < 10 {
                clock.advance(.milliseconds(50))
                steps += 1
                _ = try await eventually(within: .milliseconds(100)) { server.openConnectionCount < 2 }
            }
            #expect(server.openConnectionCount == 1, "the half handshake was cut, the silent one kept")
            #expect(try await blocking { half.raw.isClosedByServer() })
            clock.advance(.seconds(1))
            #expect(try await blocking { silent.isClosedByServer() })
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test("a body trickled over TLS is answered 408 at the request deadline")
    func trickledBody() async throws {
        let clock = ManualClock()
        try await withHTTPSServer(testConfiguration(request: .milliseconds(100), clock: clock.serverClock)) { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let client = try await blocking {
                let client = try TLSTestClient(port: port, caPEM: caPEM)
                try client.handshake()
                try client.send("POST /slow HTTP/1.1\r\nHost: r\r\nContent-Length: 100\r\n\r\n0123456789")
                return client
            }
            #expect(try await eventually { server.bufferedRequestBytes > 0 }, "the head and the first body bytes are read")
            clock.advance(.milliseconds(150))
            let response = try await blocking { client.readResponse() }
            #expect(response?.status == 408)
            #expect(response?.header("Connection") == "close")
            #expect(try await eventually { server.openConnectionCount == 0 && server.bufferedRequestBytes == 0 })
        }
    }

    @Test("at the cap a stalled handshake is cut for a new client; with every connection answering, the new one is refused")
    func connectionCap() async throws {
        let configuration = testConfiguration(maxConnections: 2, loops: 1)
        let answering = Signal()
        try await withHTTPSServer(configuration) { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let stalled = try await blocking {
                try (0..<2).map { _ in
                    let client = try TLSTestClient(port: port, caPEM: caPEM)
                    let hello = try client.clientHello()
                    client.raw.send(Array(hello.prefix(hello.count / 2)))
                    return client
                }
            }
            #expect(try await eventually { server.openConnectionCount == 2 && !server.holdsFreshIdleConnection },
                    "both half hellos read")
            let served = try await blocking {
                let client = try TLSTestClient(port: port, caPEM: caPEM)
                try client.handshake()
                try client.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                return client.readResponse()
            }
            #expect(served?.text == "GET /health ")
            #expect(server.evictedConnectionCount == 1)
            #expect(server.openConnectionCount <= 2)
            _ = stalled
        }

        let responder = EchoResponder(started: { _ in answering.raise() })
        try await withHTTPSServer(configuration, responder: responder) { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let busy = try await blocking {
                try (0..<2).map { _ in
                    let client = try TLSTestClient(port: port, caPEM: caPEM)
                    try client.handshake()
                    try client.send("GET /slow HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 1500\r\n\r\n")
                    return client
                }
            }
            #expect(try await eventually { server.openConnectionCount == 2 && answering.count == 2 },
                    "both requests with the responder")
            let refused = try await blocking { () -> Bool in
                let client = try TLSTestClient(port: port, caPEM: caPEM, timeout: 2)
                return (try? client.handshake()) == nil
            }
            #expect(refused)
            #expect(server.rejectedConnectionCount == 1)
            let answers = try await blocking { busy.map { $0.readResponse()?.status } }
            #expect(answers == [200, 200])
        }
    }

    @Test("pipelined requests over TLS are answered in order, on one kept connection")
    func pipelining() async throws {
        try await withHTTPSServer { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let texts = try await blocking { () -> [String?] in
                let client = try TLSTestClient(port: port, caPEM: caPEM)
                try client.handshake()
                try client.send("GET /1 HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 200\r\n\r\n"
                    + "GET /2 HTTP/1.1\r\nHost: r\r\n\r\nGET /3 HTTP/1.1\r\nHost: r\r\n\r\n")
                var texts = (0..<3).map { _ in client.readResponse()?.text }
                try client.send("GET /4 HTTP/1.1\r\nHost: r\r\n\r\n")
                texts.append(client.readResponse()?.text)
                return texts
            }
            #expect(texts == ["GET /1 ", "GET /2 ", "GET /3 ", "GET /4 "])
        }
    }

    @Test("drain over TLS: the request in flight is answered with Connection: close, the idle connection closes")
    func drain() async throws {
        let started = Signal()
        try await withHTTPSServer(responder: EchoResponder { _ in started.raise() }) { server, files in
            let port = server.port
            let caPEM = files.certificates.caPEM
            let (busy, idle) = try await blocking {
                let idle = try TLSTestClient(port: port, caPEM: caPEM)
                try idle.handshake()
                let busy = try TLSTestClient(port: port, caPEM: caPEM)
                try busy.handshake()
                try busy.send("GET /inflight HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 300\r\n\r\n")
                return (busy, idle)
            }
            #expect(try await eventually { started.isRaised })
            async let drained = server.drain(deadline: .seconds(5))
            let response = try await blocking { busy.readResponse() }
            #expect(response?.text == "GET /inflight ")
            #expect(response?.header("Connection") == "close")
            #expect(try await blocking { idle.raw.receive() == nil || idle.readResponse() == nil })
            #expect(await drained)
        }
    }
}
