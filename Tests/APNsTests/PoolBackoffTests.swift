import Testing
@testable import APNsCore
@testable import APNs

@Suite("Reconnect backoff, with the time injected")
struct PoolBackoffTests {
    @Test("reconnect delays double from the base with jitter, capped, and no reconnect happens early")
    func backoffDoublesAndWaits() {
        var machine = Pool(configuration: .init(poolSize: 1, backoffBase: .seconds(1), backoffMax: .seconds(60)),
                                       random: SplitMix64(state: 42))
        var now = Instant.now
        var actions = machine.handle(.start, now: now)
        var delays: [Duration] = []
        for _ in 0..<9 {
            guard case .createConnection(let c) = actions.first else { Issue.record("expected a connect, got \(actions)"); return }
            // The connect takes 2 s to fail: the slot's minimum interval is over, the backoff decides.
            now = now + .seconds(2)
            actions = machine.handle(.connectionFailed(c), now: now)
            guard case .scheduleReconnect(_, let delay) = actions.first else { Issue.record("expected backoff, got \(actions)"); return }
            delays.append(delay)
            // Just before the delay nothing opens; at the delay the slot reconnects.
            #expect(machine.handle(.timerFired, now: now + delay - .milliseconds(1)).isEmpty)
            now = now + delay
            actions = machine.handle(.timerFired, now: now)
        }
        for (attempt, delay) in delays.enumerated() {
            let full = min(Duration.seconds(1) * (1 << attempt), .seconds(60))
            #expect(delay >= full / 2 && delay <= full, "attempt \(attempt): \(delay) not in [\(full / 2), \(full)]")
        }
        #expect(delays.last! >= .seconds(30))
    }

    @Test("after a run of failed connects, a connection that carried work resets the backoff: its replacement opens at once")
    func answerResetsBackoff() {
        var machine = Pool(configuration: .init(poolSize: 1, backoffBase: .seconds(1)), random: SplitMix64(state: 7))
        var now = Instant.now
        var actions = machine.handle(.start, now: now)
        for _ in 0..<4 {
            guard case .createConnection(let c) = actions.first, case .scheduleReconnect(_, let d) = machine.handle(.connectionFailed(c), now: now).first
            else { Issue.record("unexpected \(actions)"); return }
            now = now + d
            actions = machine.handle(.timerFired, now: now)
        }
        guard case .createConnection(let c) = actions.first else { Issue.record("no connect"); return }
        _ = machine.handle(.connectionEstablished(c), now: now)
        let push = PushID(1)
        let sent = machine.handle(.enqueue(push, deadline: now + .seconds(8)), now: now)
        #expect(sent == [.send(push, on: c)])
        let ok = APNsResponse(ok: true, status: 200, apnsID: "x", device: "d")
        #expect(machine.handle(.streamCompleted(c, push, .success(ok)), now: now) == [.completePush(push, ok)])
        now = now + .seconds(3)
        #expect(created(machine.handle(.connectionFailed(c), now: now)).count == 1)
    }

    @Test("Apple's graceful GOAWAY after real work, every few seconds, is replaced at once each time: no backoff builds up")
    func gracefulGoAwayIsANormalDay() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        var now = at(0)
        var conn = created(pool.handle(.start, now: now))[0]
        var next: UInt64 = 1
        for _ in 1...6 {
            _ = pool.handle(.connectionEstablished(conn), now: now)
            _ = pool.handle(.maxConcurrentStreamsChanged(conn, 100), now: now)
            // Three seconds of pushes, each answered.
            for _ in 0..<30 {
                now = now + .milliseconds(100)
                let id = p(next); next += 1
                #expect(pool.handle(.enqueue(id, deadline: now + .seconds(2)), now: now) == [.send(id, on: conn)])
                _ = pool.handle(.streamCompleted(conn, id, success), now: now)
            }
            let actions = pool.handle(.goAwayReceived(conn, unprocessed: []), now: now)
            let replacement = created(actions)
            #expect(replacement.count == 1, "a routine GOAWAY backed off: \(actions)")
            guard let first = replacement.first else { return }
            conn = first
        }
    }

    @Test("a GOAWAY after every request: each connection carries one push, the slot connects at most once per 2 s and backs off no further")
    func goAwayStormIsBounded() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        var now = at(0)
        var conn = created(pool.handle(.start, now: now))[0]
        var delays: [Duration] = []
        for n in 1...5 {
            _ = pool.handle(.connectionEstablished(conn), now: now)
            let id = p(UInt64(n))
            #expect(pool.handle(.enqueue(id, deadline: now + .seconds(100)), now: now) == [.send(id, on: conn)])
            _ = pool.handle(.streamCompleted(conn, id, success), now: now)
            let actions = pool.handle(.goAwayReceived(conn, unprocessed: []), now: now + .milliseconds(5))
            #expect(created(actions).isEmpty, "reconnected within 2 s of the last connect: \(actions)")
            guard let delay = actions.lazy.compactMap({ if case .scheduleReconnect(_, let d) = $0 { d } else { nil } }).first else {
                Issue.record("no wait: \(actions)"); return
            }
            delays.append(delay)
            now = now + .milliseconds(5) + delay
            conn = created(pool.handle(.timerFired, now: now))[0]
        }
        #expect(delays == Array(repeating: .milliseconds(1995), count: 5))
    }

    @Test("connections that end without carrying work (a GOAWAY before any answer) back off, longer each time")
    func workLessDeathsBackOff() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        var now = at(0)
        var conn = created(pool.handle(.start, now: now))[0]
        var delays: [Duration] = []
        for _ in 1...6 {
            _ = pool.handle(.connectionEstablished(conn), now: now)
            now = now + .seconds(2)
            let actions = pool.handle(.goAwayReceived(conn, unprocessed: []), now: now)
            guard let delay = actions.lazy.compactMap({ if case .scheduleReconnect(_, let d) = $0 { d } else { nil } }).first else {
                Issue.record("no backoff: \(actions)"); return
            }
            delays.append(delay)
            now = now + delay
            conn = created(pool.handle(.timerFired, now: now))[0]
        }
        // The constant source (0) picks the smallest jitter: half of 1, 2, 4 … s.
        #expect(delays == [0.5, 1, 2, 4, 8, 16].map { Duration.milliseconds(Int64($0 * 1000)) })
    }

    @Test("whatever ended its connection, a slot never connects twice within twice the base delay")
    func minimumConnectInterval() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        let conn = created(pool.handle(.start, now: at(0)))[0]
        _ = pool.handle(.connectionEstablished(conn), now: at(0))
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        _ = pool.handle(.streamCompleted(conn, p(1), success), now: at(0))
        let actions = pool.handle(.connectionClosed(conn), now: at(0.1))
        #expect(actions == [.scheduleReconnect(conn, after: .milliseconds(1900))])
        #expect(pool.handle(.timerFired, now: at(1.9)) == [])
        #expect(created(pool.handle(.timerFired, now: at(2))).count == 1)
    }
}
