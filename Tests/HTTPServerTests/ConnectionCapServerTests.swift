import EventLoop
import Foundation
import Synchronization
import Testing
import TestWaits
@testable import HTTPServer

@Suite("HTTP server on loopback: the connection cap")
struct ConnectionCapServerTests {
    @Test("at maxConnections with every connection waiting for its answer, new ones are closed at once and counted")
    func connectionCapWhenBusy() async throws {
        let arrived = Atomic(0)
        let responder = EchoResponder { _ in arrived.add(1, ordering: .relaxed) }
        try await withServer(testConfiguration(maxConnections: 3), responder: responder) { server in
            let port = server.port
            let kept = try await blocking {
                try (0..<3).map { _ -> TestClient in
                    let c = try TestClient(port: port)
                    c.send("GET /k HTTP/1.1\r\nHost: r\r\nX-Delay-Ms: 1500\r\n\r\n")
                    return c
                }
            }
            #expect(try await eventually { server.openConnectionCount == 3 })
            #expect(try await eventually { arrived.load(ordering: .relaxed) == 3 }, "the three requests are with the responder")
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
        // No minimum idle time: the test needs no wait for the kept connections to age, and which
        // of them gives way is still decided by how long each has been idle.
        try await withServer(testConfiguration(maxConnections: 3, minimumIdle: .zero, loops: 1)) { server in
            let port = server.port
            let kept = try await blocking { try Self.keptClients(3, port: port) }
            #expect(server.openConnectionCount == 3)
            let health = try await blocking { try Self.healthStatus(port: port) }
            #expect(health == 200)
            #expect(try await eventually { server.evictedConnectionCount == 1 })
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
            let kept = try await blocking { try Self.keptClients(2, port: port) }
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
            #expect(try await eventually { server.openConnectionCount == 3 })
            let health = try await blocking { try Self.healthStatus(port: port) }
            #expect(health == 200)
            // The idle one may live on the other loop, which closes it while the new one is served.
            #expect(try await eventually { server.evictedConnectionCount == 1 })
            #expect(server.rejectedConnectionCount == 0)
            #expect(try await eventually { server.openConnectionCount <= 3 })
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
            // Each trickle is read, so the three are requests arriving, not connections that sent nothing.
            #expect(try await eventually { server.openConnectionCount == 3 && server.bufferedRequestBytes > 0 })
            let health = try await blocking { try Self.healthStatus(port: port) }
            #expect(health == 200)
            #expect(try await eventually { server.evictedConnectionCount == 1 })
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
            #expect(try await eventually { server.bufferedRequestBytes > 0 && server.openConnectionCount == 2 })
            let newcomer = try await blocking { try TestClient(port: port) }  // its request is "on its way"
            #expect(try await eventually { server.openConnectionCount == 3 }, "the newcomer is accepted before the probe")
            let (health, newcomerServed) = try await blocking { () -> (Int?, String?) in
                let probe = try TestClient(port: port)
                probe.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
                let status = probe.readResponse()?.status
                newcomer.send("GET /mine HTTP/1.1\r\nHost: r\r\n\r\n")
                return (status, newcomer.readResponse()?.text)
            }
            #expect(health == 200)
            #expect(newcomerServed == "GET /mine ")
            #expect(try await eventually { server.evictedConnectionCount == 1 })
            withExtendedLifetime(slow) {}
        }
    }

    /// `count` keep-alive clients, each with one request answered: idle between two requests.
    private static func keptClients(_ count: Int, port: Int) throws -> [TestClient] {
        try (0..<count).map { i in
            let c = try TestClient(port: port)
            c.send("GET /k\(i) HTTP/1.1\r\nHost: r\r\n\r\n")
            _ = c.readResponse()
            return c
        }
    }

    /// The status a new client's GET /health gets (nil: closed without an answer).
    private static func healthStatus(port: Int) throws -> Int? {
        let c = try TestClient(port: port)
        c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n")
        return c.readResponse()?.status
    }
}
