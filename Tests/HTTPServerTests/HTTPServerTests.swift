import EventLoop
import Foundation
import Synchronization
import Testing
import TestWaits
@testable import HTTPServer

@Suite("HTTP server on loopback: requests and answers")
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
            #expect(try await eventually { server.openConnectionCount == 0 })
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
