#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Foundation
import Testing
import TestWaits
@testable import HTTPServer

@Suite("HTTP server endurance on loopback")
struct EnduranceTests {
    @Test("a body trickled a byte at a time is answered 408 at the whole-request deadline")
    func slowBodyGets408() async throws {
        // The body never pauses for bodyTimeout, so only the request deadline can end it. The
        // server's time is a clock the test moves: 50 ms of it between bytes, however slow the machine.
        let clock = ManualClock()
        let configuration = testConfiguration(body: .milliseconds(400), request: .milliseconds(600), clock: clock.serverClock)
        try await withServer(configuration) { server in
            let port = server.port
            let client = try await blocking { () -> TestClient in
                let client = try TestClient(port: port, timeout: 0.05)
                client.send("POST /p HTTP/1.1\r\nHost: r\r\nContent-Length: 1000\r\n\r\n")
                client.send([UInt8](repeating: 0x61, count: 900))
                return client
            }
            #expect(try await eventually { server.bufferedRequestBytes > 0 }, "the request's first bytes are read")
            let (status, reason, trickled) = try await blocking { () -> (Int?, String, Int) in
                // 100 more bytes, one per 50 ms of the server's time: 5 s for the whole body.
                for sent in 1...100 {
                    clock.advance(.milliseconds(50))
                    guard client.send([0x62]) else { return (nil, "send failed", sent) }
                    if let response = client.readResponse() { return (response.status, response.text, sent) }
                }
                return (client.readResponse()?.status, "", 100)
            }
            #expect(status == 408)
            #expect(reason.contains("request not complete"))
            #expect(trickled < 100)
        }
    }

    @Test("past the request budget the slowest half-received request is answered 408 and others are still served")
    func budgetCutsTheSlowest() async throws {
        // One loop, so the sender that crossed the budget and the slowest one share a loop.
        let configuration = testConfiguration(request: .seconds(30), maxBufferedRequestBytes: 64 << 10, loops: 1)
        try await withServer(configuration) { server in
            let port = server.port
            let slow = try await blocking { () -> [TestClient] in
                try (0..<3).map { _ -> TestClient in
                    let c = try TestClient(port: port, timeout: 2)
                    c.send("POST /p HTTP/1.1\r\nHost: r\r\nContent-Length: 60000\r\n\r\n")
                    c.send([UInt8](repeating: 0x61, count: 30000))
                    // Each one older, so slower on average, than the next: the pace is what the test
                    // is about (a manual clock would move before the server had read the bytes).
                    usleep(50_000)
                    return c
                }
            }
            #expect(try await eventually { server.budgetCutCount >= 1 })
            let firstAnswer = try await blocking { slow[0].readResponse() }
            #expect(firstAnswer?.status == 408)
            #expect(firstAnswer?.text.contains("unfinished requests") == true)
            #expect(try await eventually { server.bufferedRequestBytes <= 64 << 10 })
            let served = try await blocking { () -> String? in
                let c = try TestClient(port: port)
                c.send("POST /push HTTP/1.1\r\nHost: r\r\nContent-Length: 5\r\n\r\nhello")
                return c.readResponse()?.text
            }
            #expect(served == "POST /push hello")
            // The newest slow sender was not cut: it finishes its body and is answered.
            let last = try await blocking { () -> Int? in
                slow[2].send([UInt8](repeating: 0x62, count: 30000))
                return slow[2].readResponse()?.status
            }
            #expect(last == 200)
        }
    }

    @Test("the requests held while the budget cuts are released: nothing stays counted after the clients leave")
    func budgetReturnsToZero() async throws {
        let configuration = testConfiguration(maxBufferedRequestBytes: 64 << 10, loops: 2)
        try await withServer(configuration) { server in
            let port = server.port
            let clients = try await blocking {
                try (0..<8).map { _ -> TestClient in
                    let c = try TestClient(port: port, timeout: 2)
                    c.send("POST /p HTTP/1.1\r\nHost: r\r\nContent-Length: 60000\r\n\r\n")
                    c.send([UInt8](repeating: 0x61, count: 40000))
                    return c
                }
            }
            // The server has read past its budget and cut someone before the clients leave.
            #expect(try await eventually { server.budgetCutCount >= 1 })
            try await blocking { for c in clients { c.close() } }
            #expect(try await eventually { server.openConnectionCount == 0 })
            #expect(server.bufferedRequestBytes == 0)
        }
    }
}

@Suite("Connection cap (pure)")
struct ConnectionCapTests {
    let t0 = LoopClock.now()
    let cap = ConnectionCap(maxConnections: 10, minimumKeptIdle: .seconds(1))
    var later: Int64 { t0 + nanos(.seconds(60)) }

    /// Per loop: since when its oldest fresh and its oldest kept connection are idle.
    func loops(_ heads: (fresh: Int64?, kept: Int64?)...) -> [[Int64?]] {
        heads.map { [$0.fresh, $0.kept] }
    }

    @Test("under the cap a connection is accepted whatever is idle")
    func underCap() {
        #expect(cap.decide(open: 10, oldestIdle: loops((nil, nil), (nil, nil)), local: 0, now: later) == .accept)
    }

    @Test("at the cap the kept connection idle the longest, on any loop, makes room")
    func evictsOldest() {
        #expect(cap.decide(open: 11, oldestIdle: loops((nil, t0 + nanos(.seconds(5))), (nil, t0 + nanos(.seconds(2)))), local: 0, now: later)
                == .evict(loop: 1, kind: .kept))
        #expect(cap.decide(open: 11, oldestIdle: loops((nil, t0 + nanos(.seconds(1))), (nil, nil)), local: 1, now: later)
                == .evict(loop: 0, kind: .kept))
    }

    @Test("on a tie the new connection's own loop gives way, which needs no hop")
    func tiePrefersLocal() {
        #expect(cap.decide(open: 11, oldestIdle: loops((nil, t0), (nil, t0), (nil, t0)), local: 2, now: later)
                == .evict(loop: 2, kind: .kept))
    }

    @Test("a connection that never sent a byte goes first once open 250 ms: there is no request on it to lose")
    func freshGoesFirst() {
        let now = t0 + nanos(.seconds(10))
        #expect(cap.decide(open: 11, oldestIdle: loops((now - nanos(.milliseconds(250)), now - nanos(.seconds(9))), (nil, nil)), local: 1, now: now)
                == .evict(loop: 0, kind: .fresh))
    }

    @Test("a connection opened just now, whose request may be on its way, gives way only after a trickle, and last")
    func youngFreshGoesLast() {
        let now = t0 + nanos(.seconds(10))
        // A kept connection idle long enough goes before it.
        #expect(cap.decide(open: 11, oldestIdle: loops((now - nanos(.milliseconds(5)), now - nanos(.seconds(9))), (nil, nil)), local: 1, now: now)
                == .evict(loop: 0, kind: .kept))
        // Else a trickled request is cut first (the owner tries it), and the young one is the fallback.
        #expect(cap.decide(open: 11, oldestIdle: loops((now - nanos(.milliseconds(5)), nil), (now - nanos(.milliseconds(2)), nil)), local: 1, now: now)
                == .cutSlowest(thenFresh: 0))
    }

    @Test("a kept connection idle for less than the minimum never gives way: its client may be sending right now")
    func recentlyIdleIsSafe() {
        let now = t0 + nanos(.seconds(10))
        #expect(cap.decide(open: 11, oldestIdle: loops((nil, now - nanos(.milliseconds(50))), (nil, now - nanos(.milliseconds(999)))), local: 0, now: now)
                == .cutSlowest(thenFresh: nil))
        #expect(cap.decide(open: 11, oldestIdle: loops((nil, now - nanos(.milliseconds(50))), (nil, now - nanos(.seconds(1)))), local: 0, now: now)
                == .evict(loop: 1, kind: .kept))
    }

    @Test("with nothing idle the slowest request still arriving is cut: a trickle, not a sender writing at once")
    func cutsSlowest() {
        let now = t0 + nanos(.seconds(10))
        let arriving = [
            RequestBudget.Candidate(held: 40_000, received: 40_000, since: now - nanos(.seconds(3))),       // 13 bytes/ms
            RequestBudget.Candidate(held: 33_000, received: 33_000, since: now - nanos(.seconds(5))),       // 6.6 bytes/ms
            RequestBudget.Candidate(held: 2_000, received: 2_000, since: now - nanos(.microseconds(300))),  // a push arriving
        ]
        #expect(cap.decide(open: 11, oldestIdle: loops((nil, nil), (nil, nil)), local: 0, now: now) == .cutSlowest(thenFresh: nil))
        #expect(cap.slowestToCut(arriving, now: now) == 1)
        #expect(cap.slowestToCut([], now: now) == nil)
    }
}

@Suite("Request budget (pure)")
struct RequestBudgetTests {
    let t0 = LoopClock.now()
    let budget = RequestBudget(limit: 1000)

    @Test("over the limit a connection holding its fair share stops being read; under it none does")
    func pausing() {
        #expect(!budget.shouldPause(held: 900, total: 1000, open: 2))
        #expect(budget.shouldPause(held: 500, total: 1001, open: 2))
        #expect(!budget.shouldPause(held: 499, total: 1001, open: 2))
        #expect(!budget.shouldPause(held: 0, total: 5000, open: 1000))
        #expect(budget.mayResume(total: 874))
        #expect(!budget.mayResume(total: 875))
    }

    @Test("the slowest senders are cut first, until the total is under the resume mark")
    func slowestFirst() {
        let now = t0 + nanos(.seconds(10))
        let candidates = [
            RequestBudget.Candidate(held: 300, received: 300, since: t0 + nanos(.seconds(9))),  // 300 B/s
            RequestBudget.Candidate(held: 300, received: 300, since: t0),                       // 30 B/s
            RequestBudget.Candidate(held: 300, received: 300, since: t0 + nanos(.seconds(5))),  // 60 B/s
            RequestBudget.Candidate(held: 300, received: 3000, since: t0),                      // 300 B/s, older
        ]
        #expect(budget.victims(total: 1200, open: 4, candidates: candidates, now: now) == [1, 2])
        #expect(budget.victims(total: 1000, open: 4, candidates: candidates, now: now) == [])
    }

    @Test("connections holding less than a fair share are never cut")
    func smallHoldersSpared() {
        let candidates = [
            RequestBudget.Candidate(held: 10, received: 10, since: t0),
            RequestBudget.Candidate(held: 600, received: 600, since: t0 + nanos(.seconds(1))),
        ]
        #expect(budget.victims(total: 2000, open: 2, candidates: candidates, now: t0 + nanos(.seconds(2))) == [1])
    }
}

@Suite("Memory trim policy (pure)")
struct MemoryTrimPolicyTests {
    @Test("after a burst falls to a quarter of its peak, memory is trimmed once")
    func trimsOncePerBurst() {
        var policy = MemoryTrimPolicy()
        let figures = [(64 << 20, 10_000), (20 << 20, 1000), (1 << 20, 200), (0, 10)]
        let trims = figures.map { policy.observe(bufferedBytes: $0.0, openConnections: $0.1) }
        #expect(trims == [false, false, true, false])
    }

    @Test("small peaks are not worth a trim")
    func smallPeaks() {
        var policy = MemoryTrimPolicy()
        let trims = [(1 << 20, 100), (0, 0)].map { policy.observe(bufferedBytes: $0.0, openConnections: $0.1) }
        #expect(trims == [false, false])
    }
}
