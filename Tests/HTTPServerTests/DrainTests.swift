import EventLoop
import Foundation
import Synchronization
import Testing
import TestWaits
@testable import HTTPServer

@Suite("HTTP server on loopback: drain")
struct DrainTests {
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
            #expect(try await eventually { started.isRaised })
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
        let started = Signal()
        try await withServer(responder: EchoResponder { _ in started.raise() }) { server in
            let port = server.port
            let client = try await blocking {
                let c = try TestClient(port: port)
                c.send("GET /slow HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 2000\r\n\r\n")
                return c
            }
            #expect(try await eventually { started.isRaised }, "the request is with the responder")
            #expect(await server.drain(deadline: .milliseconds(200)) == false)
            _ = client
        }
    }
}
