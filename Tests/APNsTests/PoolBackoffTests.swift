import Testing
@testable import APNsCore
@testable import APNs

@Suite("Reconnect backoff, with the time injected")
struct PoolBackoffTests {
    @Test("reconnect delays double from the base with jitter, capped, and no reconnect happens early")
    func backoffDoublesAndWaits() {
        var machine = PoolStateMachine(configuration: .init(poolSize: 1, backoffBase: .seconds(1), backoffMax: .seconds(60)),
                                       random: SplitMix64(state: 42))
        var now = Instant.now
        var actions = machine.handle(.start, now: now)
        var delays: [Duration] = []
        for _ in 0..<9 {
            guard case .createConnection(let c) = actions.first else { Issue.record("expected a connect, got \(actions)"); return }
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

    @Test("an answer from a connection that outlives its young age resets the backoff")
    func answerResetsBackoff() {
        var machine = PoolStateMachine(configuration: .init(poolSize: 1, backoffBase: .seconds(1)), random: SplitMix64(state: 7))
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
        now = now + .seconds(10)
        guard case .scheduleReconnect(_, let delay) = machine.handle(.connectionFailed(c), now: now).first else {
            Issue.record("no backoff"); return
        }
        #expect(delay <= .seconds(1))
    }

    @Test("a connection that answers and then dies young (GOAWAY after every request) backs off, longer each time")
    func youngDeathBacksOff() {
        var pool = PoolStateMachine(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        var now = at(0)
        var conn = created(pool.handle(.start, now: now))[0]
        var delays: [Duration] = []
        for n in 1...5 {
            _ = pool.handle(.connectionEstablished(conn), now: now)
            let id = p(UInt64(n))
            #expect(pool.handle(.enqueue(id, deadline: now + .seconds(100)), now: now) == [.send(id, on: conn)])
            _ = pool.handle(.streamCompleted(conn, id, success), now: now)
            let actions = pool.handle(.goAwayReceived(conn, unprocessed: []), now: now + .milliseconds(5))
            #expect(created(actions).isEmpty, "reconnected at once after a young death: \(actions)")
            guard let delay = actions.lazy.compactMap({ if case .scheduleReconnect(_, let d) = $0 { d } else { nil } }).first else {
                Issue.record("no backoff: \(actions)"); return
            }
            delays.append(delay)
            now = now + .milliseconds(5) + delay
            conn = created(pool.handle(.timerFired, now: now))[0]
        }
        #expect(delays == [0.5, 1, 2, 4, 8].map { Duration.milliseconds(Int64($0 * 1000)) })
    }

    @Test("with no young age at all, a slot still never connects twice within half the base delay")
    func minimumConnectInterval() {
        var pool = PoolStateMachine(configuration: .init(poolSize: 1, youngConnectionAge: .zero), random: ConstantRandom(value: 0))
        let conn = created(pool.handle(.start, now: at(0)))[0]
        _ = pool.handle(.connectionEstablished(conn), now: at(0))
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        _ = pool.handle(.streamCompleted(conn, p(1), success), now: at(0))
        let actions = pool.handle(.connectionClosed(conn), now: at(0.1))
        #expect(actions == [.scheduleReconnect(conn, after: .milliseconds(400))])
        #expect(pool.handle(.timerFired, now: at(0.4)) == [])
        #expect(created(pool.handle(.timerFired, now: at(0.5))).count == 1)
    }
}
