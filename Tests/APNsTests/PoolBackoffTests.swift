import Testing
@testable import APNs

@Suite("Reconnect backoff, with the time injected")
struct PoolBackoffTests {
    @Test("reconnect delays double from the base with jitter, capped, and no reconnect happens early")
    func backoffDoublesAndWaits() {
        var machine = PoolStateMachine(configuration: .init(poolSize: 1, backoffBase: .seconds(1), backoffMax: .seconds(60)),
                                       random: SplitMix64(state: 42))
        var now = ContinuousClock.now
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

    @Test("an answer from Apple resets the backoff")
    func answerResetsBackoff() {
        var machine = PoolStateMachine(configuration: .init(poolSize: 1, backoffBase: .seconds(1)), random: SplitMix64(state: 7))
        var now = ContinuousClock.now
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
        guard case .scheduleReconnect(_, let delay) = machine.handle(.connectionFailed(c), now: now).first else {
            Issue.record("no backoff"); return
        }
        #expect(delay <= .seconds(1))
    }
}
