import EventLoop
import Foundation
import Synchronization
import Testing
@testable import HTTPServer

@Suite("HTTP server on loopback")
struct HTTPServerTests {
    @Test("a GET and a POST get exact responses with Content-Length and Date")
    func roundTrips() async throws {
        try await withServer { server in
            let port = server.port
            let (get, post) = try await blocking {
                let client = try TestClient(port: port)
                client.send("GET /hello HTTP/1.1\r\nHost: relay\r\n\r\n")
                let get = client.readResponse()
                client.send("POST /push/abc HTTP/1.1\r\nHost: relay\r\nContent-Length: 5\r\n\r\nhello")
                return (get, client.readResponse())
            }
            let g = try #require(get)
            let date = try #require(g.header("Date"))
            #expect(String(decoding: g.raw, as: UTF8.self) ==
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nDate: \(date)\r\n\r\nGET /hello ")
            #expect(date.hasSuffix(" GMT") && date.count == 29)
            let p = try #require(post)
            let date2 = try #require(p.header("Date"))
            #expect(String(decoding: p.raw, as: UTF8.self) ==
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 20\r\nDate: \(date2)\r\n\r\nPOST /push/abc hello")
        }
    }

    @Test("every request carries the peer address of its connection")
    func peerAddress() async throws {
        struct PeerResponder: HTTPResponder {
            func respond(to request: HTTPRequest) async -> HTTPResponse {
                HTTPResponse(status: 200, text: request.peerAddress ?? "none")
            }
        }
        try await withServer(responder: PeerResponder()) { server in
            let port = server.port
            let peers = try await blocking {
                let client = try TestClient(port: port)
                client.send("GET / HTTP/1.1\r\nHost: r\r\n\r\nGET / HTTP/1.1\r\nHost: r\r\n\r\n")
                return [client.readResponse()?.text, client.readResponse()?.text]
            }
            #expect(peers[0]?.hasPrefix("127.0.0.1:") == true)
            #expect(peers[1] == peers[0])
        }
    }

    @Test("a chunked POST is answered like a Content-Length one")
    func chunkedPost() async throws {
        try await withServer { server in
            let port = server.port
            let response = try await blocking {
                let client = try TestClient(port: port)
                client.send("POST /p HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                return client.readResponse()
            }
            #expect(response?.text == "POST /p abcde")
        }
    }

    @Test("one keep-alive connection serves 100 requests")
    func keepAlive100() async throws {
        try await withServer { server in
            let port = server.port
            let (client, bodies) = try await blocking {
                let client = try TestClient(port: port)
                var bodies: [String] = []
                for i in 0..<100 {
                    client.send("GET /r\(i) HTTP/1.1\r\nHost: r\r\n\r\n")
                    guard let r = client.readResponse(), r.header("Connection") == nil else { break }
                    bodies.append(r.text)
                }
                return (client, bodies)
            }
            #expect(bodies == (0..<100).map { "GET /r\($0) " })
            #expect(server.openConnectionCount == 1)
            client.close()
        }
    }

    @Test("1,000 concurrent keep-alive connections are all served")
    func thousandConnections() async throws {
        try await withServer { server in
            let port = server.port
            let served = try await blocking {
                var clients: [TestClient] = []
                for _ in 0..<1000 { clients.append(try TestClient(port: port)) }
                for (i, c) in clients.enumerated() { c.send("GET /c\(i) HTTP/1.1\r\nHost: r\r\n\r\n") }
                var served = 0
                for (i, c) in clients.enumerated() where c.readResponse()?.text == "GET /c\(i) " { served += 1 }
                return served
            }
            #expect(served == 1000)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test("pipelined requests are answered in order even when the first is the slowest",
          arguments: [[300, 50, 0], [0, 200, 10], [120, 0, 60]])
    func pipelining(delays: [Int]) async throws {
        try await withServer { server in
            let port = server.port
            let bodies = try await blocking {
                let client = try TestClient(port: port)
                var batch = ""
                for (i, d) in delays.enumerated() {
                    batch += "POST /p\(i) HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: \(d)\r\nContent-Length: 1\r\n\r\n\(i)"
                }
                client.send(batch)
                return (0..<3).compactMap { _ in client.readResponse()?.text }
            }
            #expect(bodies == ["POST /p0 0", "POST /p1 1", "POST /p2 2"])
        }
    }

    @Test("Expect: 100-continue gets 100 Continue before the body is sent")
    func expectContinue() async throws {
        try await withServer { server in
            let port = server.port
            let (interim, final) = try await blocking {
                let client = try TestClient(port: port)
                client.send("POST /e HTTP/1.1\r\nHost: r\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
                let interim = client.readResponse()
                client.send("body")
                return (interim, client.readResponse())
            }
            #expect(interim.map { String(decoding: $0.raw, as: UTF8.self) } == "HTTP/1.1 100 Continue\r\n\r\n")
            #expect(final?.status == 200)
            #expect(final?.text == "POST /e body")
        }
    }

    @Test("a slow sender is cut off with 408 while another client is served")
    func slowHeaders() async throws {
        try await withServer(testConfiguration(header: .milliseconds(300))) { server in
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
            let (timeout, closed) = try await blocking {
                for _ in 0..<3 {  // keeps trickling: a trickle does not reset the head deadline
                    usleep(50_000)
                    slow.send("X-Slow: 1\r\n")
                }
                return (slow.readResponse(), slow.isClosedByServer())
            }
            #expect(timeout?.status == 408)
            #expect(timeout?.header("Connection") == "close")
            #expect(closed)
        }
    }

    @Test("a body that stops moving gets 408 and the connection closes")
    func stalledBody() async throws {
        try await withServer(testConfiguration(body: .milliseconds(300))) { server in
            let port = server.port
            let (response, closed) = try await blocking {
                let client = try TestClient(port: port)
                client.send("POST /s HTTP/1.1\r\nHost: r\r\nContent-Length: 100\r\n\r\n0123456789")
                return (client.readResponse(), client.isClosedByServer())
            }
            #expect(response?.status == 408)
            #expect(closed)
        }
    }

    @Test("an idle keep-alive connection is closed without a word after idleTimeout")
    func idleClose() async throws {
        try await withServer(testConfiguration(idle: .milliseconds(300))) { server in
            let port = server.port
            let (first, closed, fresh) = try await blocking {
                let client = try TestClient(port: port)
                client.send("GET / HTTP/1.1\r\nHost: r\r\n\r\n")
                let first = client.readResponse()
                let never = try TestClient(port: port)  // connects, sends nothing
                return (first, client.isClosedByServer(), never.isClosedByServer())
            }
            #expect(first?.status == 200)
            #expect(closed)
            #expect(fresh)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test("garbage, a TLS ClientHello and an HTTP/2 preface get 400 and a close; the server keeps serving",
          arguments: [
            Array("\u{01}\u{02}garbage\r\n\r\n".utf8),
            [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + [UInt8](repeating: 0x42, count: 32),
            Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8),
          ])
    func badInput(input: [UInt8]) async throws {
        try await withServer { server in
            let port = server.port
            let (response, closed, after) = try await blocking {
                let bad = try TestClient(port: port)
                bad.send(input)
                let response = bad.readResponse()
                let closed = bad.isClosedByServer()
                let good = try TestClient(port: port)
                good.send("GET /ok HTTP/1.1\r\nHost: r\r\n\r\n")
                return (response, closed, good.readResponse())
            }
            #expect(response?.status == 400)
            #expect(response?.header("Connection") == "close")
            #expect(response.map { !$0.body.isEmpty } == true)
            #expect(closed)
            #expect(after?.text == "GET /ok ")
        }
    }

    @Test("a parse error mid-pipeline still answers the good requests before it, in order")
    func errorAfterGoodRequest() async throws {
        try await withServer { server in
            let port = server.port
            let (first, second, closed) = try await blocking {
                let client = try TestClient(port: port)
                client.send("GET /a HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 100\r\n\r\nGET /b HTTP/1.1\nHost: r\r\n\r\n")
                return (client.readResponse(), client.readResponse(), client.isClosedByServer())
            }
            #expect(first?.text == "GET /a ")
            #expect(second?.status == 400)
            #expect(closed)
        }
    }

    @Test("at maxConnections with every connection waiting for its answer, new ones are closed at once and counted")
    func connectionCapWhenBusy() async throws {
        try await withServer(testConfiguration(maxConnections: 3)) { server in
            let port = server.port
            let kept = try await blocking {
                try (0..<3).map { _ -> TestClient in
                    let c = try TestClient(port: port)
                    c.send("GET /k HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 1500\r\n\r\n")
                    return c
                }
            }
            #expect(await eventually { server.openConnectionCount == 3 })
            try await Task.sleep(for: .milliseconds(100))  // the three requests are with the responder
            let extraClosed = try await blocking {
                try (0..<2).map { _ in
                    let c = try TestClient(port: port)
                    c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                    return c.isClosedByServer()
                }
            }
            #expect(extraClosed == [true, true])
            #expect(server.rejectedConnectionCount == 2)
            #expect(server.evictedConnectionCount == 0)
            #expect(server.openConnectionCount <= 3)
            let stillServed = try await blocking { kept.map { $0.readResponse()?.text } }
            #expect(stillServed == ["GET /k ", "GET /k ", "GET /k "])
        }
    }

    @Test("at maxConnections a new GET /health is answered 200 and the longest-idle connection is closed")
    func connectionCapEvictsLongestIdle() async throws {
        // One loop: a new connection makes room among its own loop's connections, and with two
        // the kernel's choice of loop decided which client was "the longest idle".
        try await withServer(testConfiguration(maxConnections: 3, loops: 1)) { server in
            let port = server.port
            let kept = try await blocking {
                try (0..<3).map { i -> TestClient in
                    let c = try TestClient(port: port)
                    c.send("GET /k\(i) HTTP/1.1\r\nHost: r\r\n\r\n")
                    _ = c.readResponse()
                    return c
                }
            }
            #expect(server.openConnectionCount == 3)
            try await Task.sleep(for: .milliseconds(300))  // past the configuration's 200 ms minimum idle
            let health = try await blocking { () -> Int? in
                let c = try TestClient(port: port)
                c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                return c.readResponse()?.status
            }
            #expect(health == 200)
            #expect(await eventually { server.evictedConnectionCount == 1 })
            #expect(server.rejectedConnectionCount == 0)
            let (firstClosed, secondServed) = try await blocking { () -> (Bool, String?) in
                let closed = kept[0].isClosedByServer()
                kept[1].send("GET /again HTTP/1.1\r\nHost: r\r\n\r\n")
                return (closed, kept[1].readResponse()?.text)
            }
            #expect(firstClosed)
            #expect(secondServed == "GET /again ")
        }
    }

    @Test("at maxConnections a kept client between two requests keeps its connection; the new one is closed instead")
    func connectionCapSparesRecentlyIdle() async throws {
        try await withServer(testConfiguration(maxConnections: 2, minimumIdle: .seconds(5))) { server in
            let port = server.port
            let kept = try await blocking {
                try (0..<2).map { i -> TestClient in
                    let c = try TestClient(port: port)
                    c.send("GET /k\(i) HTTP/1.1\r\nHost: r\r\n\r\n")
                    _ = c.readResponse()
                    return c
                }
            }
            let newClosed = try await blocking { () -> Bool in
                let c = try TestClient(port: port)
                c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                return c.isClosedByServer()
            }
            #expect(newClosed)
            #expect(server.evictedConnectionCount == 0)
            let served = try await blocking {
                kept.map { c -> String? in
                    c.send("GET /next HTTP/1.1\r\nHost: r\r\n\r\n")
                    return c.readResponse()?.text
                }
            }
            #expect(served == ["GET /next ", "GET /next "])
        }
    }

    @Test("at maxConnections held by sockets that sent nothing, a new GET /health is answered at once")
    func connectionCapIdleFlood() async throws {
        try await withServer(testConfiguration(maxConnections: 3, minimumIdle: .seconds(5))) { server in
            let port = server.port
            let flood = try await blocking { try (0..<3).map { _ in try TestClient(port: port) } }
            #expect(await eventually { server.openConnectionCount == 3 })
            let health = try await blocking { () -> Int? in
                let c = try TestClient(port: port)
                c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                return c.readResponse()?.status
            }
            #expect(health == 200)
            // The idle one may live on the other loop, which closes it while the new one is served.
            #expect(await eventually { server.evictedConnectionCount == 1 })
            #expect(server.rejectedConnectionCount == 0)
            #expect(await eventually { server.openConnectionCount <= 3 })
            withExtendedLifetime(flood) {}
        }
    }

    @Test("at maxConnections held by trickled bodies, a new GET /health is answered and the slowest gets 408")
    func connectionCapSlowBodyFlood() async throws {
        try await withServer(testConfiguration(request: .seconds(5), maxConnections: 3)) { server in
            let port = server.port
            let slow = try await blocking {
                try (0..<3).map { i -> TestClient in
                    let c = try TestClient(port: port)
                    c.send("POST /p\(i) HTTP/1.1\r\nHost: r\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "a", count: 100 * (i + 1)))
                    return c
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            let health = try await blocking { () -> Int? in
                let c = try TestClient(port: port)
                c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                return c.readResponse()?.status
            }
            #expect(health == 200)
            #expect(await eventually { server.evictedConnectionCount == 1 })
            // The one cut for the cap hears so at once; the others meet the request deadline.
            let answers = try await blocking { slow.map { $0.readResponse() } }
            #expect(answers.map { $0?.status } == [408, 408, 408])
            #expect(answers.filter { $0?.text.contains("connection cap") == true }.count == 1)
        }
    }

    @Test("at maxConnections a client that has just connected keeps its connection: a trickled body gives way instead")
    func connectionCapSparesNewClient() async throws {
        try await withServer(testConfiguration(maxConnections: 3)) { server in
            let port = server.port
            let slow = try await blocking {
                try (0..<2).map { _ -> TestClient in
                    let c = try TestClient(port: port)
                    c.send("POST /p HTTP/1.1\r\nHost: r\r\nContent-Length: 1000\r\n\r\nabc")
                    return c
                }
            }
            #expect(await eventually { server.bufferedRequestBytes > 0 && server.openConnectionCount == 2 })
            try await Task.sleep(for: .milliseconds(100))
            let (health, newcomerServed) = try await blocking { () -> (Int?, String?) in
                let newcomer = try TestClient(port: port)  // its request is "on its way"
                usleep(20_000)
                let probe = try TestClient(port: port)
                probe.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                let status = probe.readResponse()?.status
                newcomer.send("GET /mine HTTP/1.1\r\nHost: r\r\n\r\n")
                return (status, newcomer.readResponse()?.text)
            }
            #expect(health == 200)
            #expect(newcomerServed == "GET /mine ")
            #expect(await eventually { server.evictedConnectionCount == 1 })
            withExtendedLifetime(slow) {}
        }
    }

    @Test("drain answers the request in flight with Connection: close and closes idle connections at once")
    func drain() async throws {
        let started = Signal()
        let responder = EchoResponder { request in if request.path == "/slow" { started.raise() } }
        try await withServer(responder: responder) { server in
            let port = server.port
            let idle = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /first HTTP/1.1\r\nHost: r\r\n\r\n")
                _ = c.readResponse()
                return c
            }
            let busy = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /slow HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 700\r\n\r\n")
                return c
            }
            #expect(await eventually { started.isRaised })
            async let drained = server.drain(deadline: .seconds(5))
            let idleClosed = try await blocking { idle.isClosedByServer() }
            let (answer, busyClosed) = try await blocking { (busy.readResponse(), busy.isClosedByServer()) }
            #expect(idleClosed)
            #expect(answer?.text == "GET /slow ")
            #expect(answer?.header("Connection") == "close")
            #expect(busyClosed)
            #expect(await drained)
            #expect(server.openConnectionCount == 0)
            let refused = try await blocking { (try? TestClient(port: port)) == nil }
            #expect(refused)
        }
    }

    @Test("drain reports false when a request outlives the deadline")
    func drainDeadline() async throws {
        try await withServer { server in
            let port = server.port
            let client = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /slow HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 2000\r\n\r\n")
                return c
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(await server.drain(deadline: .milliseconds(200)) == false)
            _ = client
        }
    }

    @Test("Connection: close is honoured: the answer says so and the server closes")
    func connectionClose() async throws {
        try await withServer { server in
            let port = server.port
            let (response, closed) = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /bye HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
                return (c.readResponse(), c.isClosedByServer())
            }
            #expect(response?.text == "GET /bye ")
            #expect(response?.header("Connection") == "close")
            #expect(closed)
        }
    }

    @Test("HTTP/1.0 closes by default and keeps the connection with Connection: keep-alive")
    func http10() async throws {
        try await withServer { server in
            let port = server.port
            let (plain, plainClosed, kept, second) = try await blocking {
                let a = try TestClient(port: port)
                a.send("GET /old HTTP/1.0\r\n\r\n")
                let plain = a.readResponse()
                let plainClosed = a.isClosedByServer()
                let b = try TestClient(port: port)
                b.send("GET /k1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let kept = b.readResponse()
                b.send("GET /k2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                return (plain, plainClosed, kept, b.readResponse())
            }
            #expect(plain?.text == "GET /old ")
            #expect(plain?.header("Connection") == "close")
            #expect(plainClosed)
            #expect(kept?.header("Connection") == nil)
            #expect(second?.text == "GET /k2 ")
        }
    }

    @Test("the server listens on IPv6 with host ::")
    func ipv6() async throws {
        try await withServer(testConfiguration(host: "::")) { server in
            let port = server.port
            let response = try await blocking {
                let c = try TestClient(port: port, host: "::1")
                c.send("GET /v6 HTTP/1.1\r\nHost: r\r\n\r\n")
                return c.readResponse()
            }
            #expect(response?.text == "GET /v6 ")
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
            #expect(await eventually { server.openConnectionCount == 1 })
            #expect(await eventually(5) { server.openConnectionCount == 0 })
            _ = client
        }
    }

    @Test("pipelined input beyond the buffer bound is not read while a request is answered")
    func backpressure() async throws {
        var config = testConfiguration()
        config.limits = HTTPParserLimits(maxBodyBytes: 1024)
        try await withServer(config) { server in
            let port = server.port
            let count = try await blocking {
                let c = try TestClient(port: port)
                // 200 pipelined requests (~60 KB) behind a slow first one: the server pauses
                // reading instead of buffering them all, then answers every one in order.
                var batch = "GET /0 HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 200\r\n\r\n"
                for i in 1..<200 { batch += "POST /\(i) HTTP/1.1\r\nHost: r\r\nContent-Length: 256\r\n\r\n" + String(repeating: "x", count: 256) }
                c.send(batch)
                var ok = 0
                for i in 0..<200 {
                    guard let r = c.readResponse(), r.text.hasPrefix(i == 0 ? "GET /0 " : "POST /\(i) ") else { break }
                    ok += 1
                }
                return ok
            }
            #expect(count == 200)
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
