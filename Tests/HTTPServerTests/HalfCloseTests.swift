import Foundation
import Testing
import TestWaits
@testable import HTTPServer

/// Clients that shut down their sending side after the request (`nc -N`, some proxies)
/// must still get every complete request answered: a push that entered is never dropped.
@Suite("HTTP server and half-closed connections")
struct HalfCloseTests {
    @Test("a POST followed by shutdown(SHUT_WR) gets its answer, then the server closes",
          arguments: [0, 100])
    func postThenHalfClose(delay: Int) async throws {
        try await withServer { server in
            let port = server.port
            let (response, closed) = try await blocking {
                let c = try TestClient(port: port)
                c.send("POST /push/abc HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: \(delay)\r\nContent-Length: 5\r\n\r\nhello")
                c.shutdownWrites()
                return (c.readResponse(), c.isClosedByServer())
            }
            #expect(response?.status == 200)
            #expect(response?.text == "POST /push/abc hello")
            if delay > 0 {
                // The EOF arrived while the responder worked: the answer announces the close.
                #expect(response?.header("Connection") == "close")
            }
            #expect(closed)
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test("two pipelined requests then SHUT_WR get both answers in order, the last says close")
    func pipelinedThenHalfClose() async throws {
        try await withServer { server in
            let port = server.port
            let (first, second, closed) = try await blocking {
                let c = try TestClient(port: port)
                c.send("POST /p0 HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 150\r\nContent-Length: 1\r\n\r\n0"
                    + "POST /p1 HTTP/1.1\r\nHost: r\r\nContent-Length: 1\r\n\r\n1")
                c.shutdownWrites()
                return (c.readResponse(), c.readResponse(), c.isClosedByServer())
            }
            #expect(first?.text == "POST /p0 0")
            #expect(first?.header("Connection") == nil, "a close here would tell the client to drop the second answer")
            #expect(second?.text == "POST /p1 1")
            #expect(second?.header("Connection") == "close")
            #expect(closed)
        }
    }

    @Test("a good request and a malformed one then SHUT_WR: the answer, then 400, then a close")
    func errorAfterGoodThenHalfClose() async throws {
        try await withServer { server in
            let port = server.port
            let (first, second, closed) = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /a HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 100\r\n\r\nGET /b HTTP/1.1\nHost: r\r\n\r\n")
                c.shutdownWrites()
                return (c.readResponse(), c.readResponse(), c.isClosedByServer())
            }
            #expect(first?.text == "GET /a ")
            #expect(second?.status == 400)
            #expect(closed)
        }
    }

    @Test("a partial request then SHUT_WR closes without an answer and reaches no responder",
          arguments: [
              "POST /push/abc HTTP/1.1\r\nHost: r\r\nContent-Len",
              "POST /push/abc HTTP/1.1\r\nHost: r\r\nContent-Length: 10\r\n\r\nabc",
              "POST /push/abc HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
          ])
    func partialThenHalfClose(partial: String) async throws {
        let started = Signal()
        // Timeouts far beyond the client's 5 s wait: only the EOF can close this connection.
        let configuration = testConfiguration(header: .seconds(30), body: .seconds(30), idle: .seconds(30))
        try await withServer(configuration, responder: EchoResponder { _ in started.raise() }) { server in
            let port = server.port
            let closed = try await blocking {
                let c = try TestClient(port: port)
                c.send(partial)
                c.shutdownWrites()
                return c.isClosedByServer()
            }
            #expect(closed, "closed at once, with no byte sent")
            #expect(!started.isRaised)
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test("an idle keep-alive connection closes at once on SHUT_WR")
    func idleThenHalfClose() async throws {
        try await withServer(testConfiguration(idle: .seconds(30))) { server in
            let port = server.port
            let (response, closed) = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /one HTTP/1.1\r\nHost: r\r\n\r\n")
                let response = c.readResponse()
                c.shutdownWrites()
                return (response, c.isClosedByServer())
            }
            #expect(response?.text == "GET /one ")
            #expect(response?.header("Connection") == nil)
            #expect(closed)
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }
}
