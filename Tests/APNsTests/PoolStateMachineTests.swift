import Testing
@testable import APNsCore
@testable import APNs

@Suite("Pool state machine")
struct PoolStateMachineTests {
    @Test("start opens one connection per pool slot")
    func start() {
        var pool = Pool(configuration: .init(poolSize: 3))
        #expect(pool.handle(.start, now: at(0)) == [.createConnection(c(1)), .createConnection(c(2)), .createConnection(c(3))])
        #expect(pool.handle(.start, now: at(0)) == [])
    }

    @Test("a push id already in the pool is answered at once, and the push that holds it goes on")
    func reusedID() {
        var pool = warmPool(size: 1)
        #expect(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)) == [.send(p(1), on: c(1))])
        let again = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        #expect(again.count == 1)
        if case .failPush(let id, let error)? = again.first { #expect(id == p(1) && error.code == .unavailable) }
        #expect(pool.handle(.streamCompleted(c(1), p(1), success), now: at(0)) == [.completePush(p(1), response(200))])
        #expect(pool.livePushCount == 0)
    }

    @Test("a push waits until a connection is established")
    func waitsForConnection() {
        var pool = Pool(configuration: .init(poolSize: 1))
        _ = pool.handle(.start, now: at(0))
        #expect(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)) == [])
        #expect(pool.handle(.connectionEstablished(c(1)), now: at(0)) == [.send(p(1), on: c(1))])
    }

    @Test("a new connection carries one stream until its first answer, then up to MAX_CONCURRENT_STREAMS")
    func firstStreamAlone() {
        var pool = Pool(configuration: .init(poolSize: 1))
        _ = pool.handle(.start, now: at(0))
        _ = pool.handle(.connectionEstablished(c(1)), now: at(0))
        _ = pool.handle(.maxConcurrentStreamsChanged(c(1), 3), now: at(0))
        var sent = [PushID: ConnectionID]()
        for n in 1...5 { sent.merge(sends(pool.handle(.enqueue(p(UInt64(n)), deadline: at(8)), now: at(0)))) { a, _ in a } }
        #expect(sent == [p(1): c(1)])
        let after = pool.handle(.streamCompleted(c(1), p(1), success), now: at(0))
        #expect(after == [.completePush(p(1), response(200)), .send(p(2), on: c(1)), .send(p(3), on: c(1)), .send(p(4), on: c(1))])
    }

    @Test("a connection never exceeds the live MAX_CONCURRENT_STREAMS, even after it shrinks")
    func liveLimit() {
        var pool = warmPool(size: 1, streams: 4)
        for n in 1...4 { _ = pool.handle(.enqueue(p(UInt64(n)), deadline: at(8)), now: at(0)) }
        _ = pool.handle(.maxConcurrentStreamsChanged(c(1), 1), now: at(0))
        #expect(pool.handle(.enqueue(p(5), deadline: at(8)), now: at(0)) == [])
        // Four streams open, limit 1: three answers free nothing new; the fourth lets one through.
        for n in 1...3 {
            let actions = pool.handle(.streamCompleted(c(1), p(UInt64(n)), success), now: at(0))
            #expect(sends(actions).isEmpty)
        }
        #expect(sends(pool.handle(.streamCompleted(c(1), p(4), success), now: at(0))) == [p(5): c(1)])
    }

    @Test("a push goes to the connection with the fewest open streams, never the busiest")
    func mostFree() {
        var pool = warmPool(size: 3, streams: 4)
        // Fill conn 1 with two streams and conn 2 with one by completing the others' pushes.
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))
        let second = sends(pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0)))
        let third = sends(pool.handle(.enqueue(p(3), deadline: at(8)), now: at(0)))
        #expect(Set([first[p(1)], second[p(2)], third[p(3)]]) == Set([c(1), c(2), c(3)]))
        _ = pool.handle(.streamCompleted(third[p(3)]!, p(3), success), now: at(0))
        let fourth = sends(pool.handle(.enqueue(p(4), deadline: at(8)), now: at(0)))
        #expect(fourth[p(4)] == third[p(3)])
    }

    @Test("a full queue answers overloaded at once")
    func overloaded() {
        var pool = Pool(configuration: .init(poolSize: 1, queueCapacity: 2))
        _ = pool.handle(.start, now: at(0))
        #expect(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)) == [])
        #expect(pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0)) == [])
        let actions = pool.handle(.enqueue(p(3), deadline: at(8)), now: at(0))
        #expect(actions == [.failPush(p(3), .overloaded(""))])
        #expect(pool.queuedCount == 2)
    }

    @Test("a retryable failure is retried on another connection, at most twice")
    func retries() {
        var pool = warmPool(size: 2)
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let second = sends(pool.handle(.streamCompleted(first, p(1), refused), now: at(1)))[p(1)]!
        #expect(second != first)
        let third = sends(pool.handle(.streamCompleted(second, p(1), refused), now: at(2)))[p(1)]!
        #expect(third != second)
        let last = pool.handle(.streamCompleted(third, p(1), refused), now: at(3))
        #expect(last == [.failPush(p(1), .unavailable(""))])
        #expect(pool.livePushCount == 0)
    }

    @Test("500, 503 and Shutdown are retryable answers; other answers are final")
    func classify() {
        #expect(StreamOutcome.classify(response(500, .internalServerError)) == .retryableAnswer(response(500, .internalServerError)))
        #expect(StreamOutcome.classify(response(503, .serviceUnavailable)) == .retryableAnswer(response(503, .serviceUnavailable)))
        #expect(StreamOutcome.classify(response(503, .shutdown)) == .retryableAnswer(response(503, .shutdown)))
        #expect(StreamOutcome.classify(response(429, .tooManyRequests)) == .final(response(429, .tooManyRequests)))
        #expect(StreamOutcome.classify(response(410, .unregistered)) == .final(response(410, .unregistered)))
        #expect(StreamOutcome.classify(response(403, .expiredProviderToken)) == .expiredProviderToken(response(403, .expiredProviderToken)))
        #expect(StreamOutcome.classify(response(429, .tooManyProviderTokenUpdates)) == .final(response(429, .tooManyProviderTokenUpdates)))
    }

    @Test("a retry is not attempted once the push's deadline has passed")
    func retryWithinDeadline() {
        var pool = warmPool(size: 2)
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let actions = pool.handle(.streamCompleted(first, p(1), refused), now: at(8))
        #expect(actions == [.failPush(p(1), .timeout(""))])
    }

    @Test("429 TooManyRequests completes the push without a retry")
    func tooManyRequests() {
        var pool = warmPool(size: 2)
        let conn = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let answer = response(429, .tooManyRequests)
        #expect(pool.handle(.streamCompleted(conn, p(1), .classify(answer)), now: at(0)) == [.completePush(p(1), answer)])
    }

    @Test("403 ExpiredProviderToken (with a newer token) resends the push once on its own connection, without using a retry; no connection closes or opens")
    func expiredProviderToken() {
        var pool = warmPool(size: 1) { $0.maxRetries = 0 }
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let answer = response(403, .expiredProviderToken)
        let actions = pool.handle(.streamCompleted(c(1), p(1), .classify(answer)), now: at(0))
        #expect(actions == [.send(p(1), on: c(1), isRetry: true)])
        // A second expired token is Apple's final word for this push; the connection stays.
        let again = pool.handle(.streamCompleted(c(1), p(1), .classify(answer)), now: at(0))
        #expect(again == [.completePush(p(1), answer)])
        #expect(pool.summary.readyConnectionCount == 1)
    }

    @Test("ExpiredProviderToken on one connection of several: the retry stays on it, and none is replaced")
    func expiredProviderTokenPool() {
        var pool = warmPool(size: 3)
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let actions = pool.handle(.streamCompleted(first, p(1), .classify(response(403, .expiredProviderToken))), now: at(0))
        #expect(sends(actions) == [p(1): first])
        #expect(created(actions).isEmpty && !actions.contains { if case .closeConnection = $0 { true } else { false } })
        #expect(pool.summary.readyConnectionCount == 3)
    }

    @Test("a connection with streams still open closes only after they finish")
    func drainBeforeClose() {
        var pool = warmPool(size: 1)
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        _ = pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0))
        let actions = pool.handle(.goAwayReceived(c(1), unprocessed: []), now: at(0))
        #expect(!actions.contains(.closeConnection(c(1))))
        #expect(pool.handle(.streamCompleted(c(1), p(1), success), now: at(0)) == [.completePush(p(1), response(200))])
        #expect(pool.handle(.streamCompleted(c(1), p(2), success), now: at(0)) == [.completePush(p(2), response(200)), .closeConnection(c(1))])
    }

    @Test("429 TooManyProviderTokenUpdates is the push's answer; the connection stays (the shared token was refused, not it)")
    func tooManyTokenUpdates() {
        var pool = warmPool(size: 1)
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let answer = response(429, .tooManyProviderTokenUpdates)
        let actions = pool.handle(.streamCompleted(c(1), p(1), .classify(answer)), now: at(0))
        #expect(actions == [.completePush(p(1), answer)])
        #expect(pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0)) == [.send(p(2), on: c(1))])
        // A policy that retries 429 TooManyRequests does not retry this 429: another attempt
        // would bring the same refused token.
        var retrying = warmPool(size: 1) { $0.retriesTooManyRequests = true }
        _ = retrying.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        #expect(retrying.handle(.streamCompleted(c(1), p(1), .classify(answer)), now: at(0)) == [.completePush(p(1), answer)])
    }

    @Test("GOAWAY stops new streams on that connection at once and re-queues its unprocessed pushes elsewhere")
    func goAway() {
        var pool = warmPool(size: 2)
        var onFirst: [PushID] = []
        for n in 1...4 {
            let sent = sends(pool.handle(.enqueue(p(UInt64(n)), deadline: at(8)), now: at(0)))
            if sent[p(UInt64(n))] == c(1) { onFirst.append(p(UInt64(n))) }
        }
        #expect(onFirst.count == 2)
        let actions = pool.handle(.goAwayReceived(c(1), unprocessed: [onFirst[1]]), now: at(0))
        #expect(actions == [.createConnection(c(3)), .send(onFirst[1], on: c(2), isRetry: true)])
        let later = sends(pool.handle(.enqueue(p(9), deadline: at(8)), now: at(0)))
        #expect(later[p(9)] == c(2))
        #expect(pool.handle(.streamCompleted(c(1), onFirst[0], success), now: at(0)) == [.completePush(onFirst[0], response(200)), .closeConnection(c(1))])
    }

    @Test("a GOAWAY that arrives before its answers, after Apple took streams, reopens at once")
    func goAwayBeforeAnswers() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        let conn = created(pool.handle(.start, now: at(0)))[0]
        _ = pool.handle(.connectionEstablished(conn), now: at(0))
        let sent = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))
        #expect(sent[p(1)] == conn)
        // p(1) is at or below last_stream_id: processed, its answer still on the way. Apple took
        // work on the connection, so nothing says the slot is failing.
        let actions = pool.handle(.goAwayReceived(conn, unprocessed: []), now: at(11))
        #expect(created(actions).count == 1)
        #expect(!actions.contains { if case .scheduleReconnect = $0 { true } else { false } })
    }

    @Test("a GOAWAY that took nothing on a never-answered connection backs off")
    func goAwayTookNothing() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        let conn = created(pool.handle(.start, now: at(0)))[0]
        _ = pool.handle(.connectionEstablished(conn), now: at(0))
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let actions = pool.handle(.goAwayReceived(conn, unprocessed: [p(1)]), now: at(0))
        #expect(created(actions).isEmpty)
        #expect(actions.contains { if case .scheduleReconnect = $0 { true } else { false } })
    }

    @Test("reconnect backoff doubles from 1 s up to 60 s with jitter, and a connection that carried work resets it")
    func backoff() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        var now = at(0)
        var conn = created(pool.handle(.start, now: now))[0]
        var delays: [Duration] = []
        for _ in 0..<9 {
            // Each connect takes 2 s to fail, so the slot's minimum interval plays no part.
            now = now + .seconds(2)
            let actions = pool.handle(.connectionFailed(conn), now: now)
            guard case .scheduleReconnect(_, let delay) = actions.first else { Issue.record("no reconnect: \(actions)"); return }
            delays.append(delay)
            now = now + delay
            conn = created(pool.handle(.timerFired, now: now))[0]
        }
        // The constant source (0) picks the smallest jitter: half of 1, 2, 4 … 60 s.
        #expect(delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30].map { Duration.milliseconds(Int64($0 * 1000)) })

        _ = pool.handle(.connectionEstablished(conn), now: now)
        _ = pool.handle(.enqueue(p(1), deadline: now + .seconds(8)), now: now)
        _ = pool.handle(.streamCompleted(conn, p(1), success), now: now)
        // It carried work: whatever ended it, the slot is healthy and reconnects at once.
        now = now + .seconds(10)
        #expect(created(pool.handle(.connectionFailed(conn), now: now)).count == 1)
    }

    @Test("the jitter keeps each delay between half and all of the exponential step")
    func jitterRange() {
        var pool = Pool(configuration: .init(poolSize: 1), random: SplitMix64(state: 42))
        var now = at(0)
        var conn = created(pool.handle(.start, now: now))[0]
        var seen = Set<Duration>()
        for step in 0..<8 {
            now = now + .seconds(2)
            guard case .scheduleReconnect(_, let delay) = pool.handle(.connectionFailed(conn), now: now).first else { return }
            let full = Duration.seconds(min(60, 1 << step))
            #expect(delay >= full / 2 && delay <= full)
            seen.insert(delay)
            now = now + delay
            conn = created(pool.handle(.timerFired, now: now))[0]
        }
        #expect(seen.count == 8)
    }

    @Test("a lost connection's open pushes are retried on another connection, and one that carried work is replaced at once")
    func lostConnection() {
        var pool = warmPool(size: 2)
        let conn = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let actions = pool.handle(.connectionFailed(conn), now: at(1))
        #expect(actions.contains(.send(p(1), on: conn == c(1) ? c(2) : c(1), isRetry: true)))
        #expect(created(actions).count == 1)
    }

    @Test("a cleanly closed connection that had answered is replaced at once")
    func cleanClose() {
        var pool = warmPool(size: 1)
        #expect(pool.handle(.connectionClosed(c(1)), now: at(0)) == [.createConnection(c(2))])
    }

    @Test("when every connection is failing, queued pushes that cannot be sent in time fail as unavailable")
    func hopeless() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        _ = pool.handle(.start, now: at(-60))
        // It connected once, long ago; its replacement is coming up when the pushes arrive.
        _ = pool.handle(.connectionEstablished(c(1)), now: at(-60))
        _ = pool.handle(.connectionFailed(c(1)), now: at(-1))
        #expect(created(pool.handle(.timerFired, now: at(0))) == [c(2)])
        _ = pool.handle(.enqueue(p(1), deadline: at(0.3)), now: at(0))
        _ = pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0))
        let actions = pool.handle(.connectionFailed(c(2)), now: at(0))
        // Backoff 1 s, but the slot connected at 0: no sooner than 2 s after that.
        #expect(actions == [.scheduleReconnect(c(2), after: .seconds(2)), .failPush(p(1), .unavailable(""))])
        #expect(pool.livePushCount == 1)
    }

    @Test("before any connection was ever made, a failed connect fails every waiting push at once")
    func firstConnectFails() {
        var pool = Pool(configuration: .init(poolSize: 1), random: ConstantRandom(value: 0))
        _ = pool.handle(.start, now: at(0))
        _ = pool.handle(.enqueue(p(1), deadline: at(0.3)), now: at(0))
        _ = pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0))
        let actions = pool.handle(.connectionFailed(c(1)), now: at(0))
        #expect(actions == [.scheduleReconnect(c(1), after: .seconds(2)), .failPush(p(1), .unavailable("")),
                            .failPush(p(2), .unavailable(""))])
        #expect(pool.livePushCount == 0)
        // Once the reconnect is under way, pushes wait for it again.
        #expect(created(pool.handle(.timerFired, now: at(2))) == [c(2)])
        #expect(pool.handle(.enqueue(p(3), deadline: at(8)), now: at(2)) == [])
    }

    @Test("a push past its deadline fails with timeout, and its late answer is ignored")
    func deadline() {
        var pool = warmPool(size: 1)
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let actions = pool.handle(.deadlinePassed(p(1)), now: at(8))
        #expect(actions == [.failPush(p(1), .timeout(""))])
        // Written to a connection: Apple may have it (a held push is then not put first in line).
        if case .failPush(_, let error)? = actions.first { #expect(error.wasWritten) }
        #expect(pool.handle(.streamCompleted(c(1), p(1), success), now: at(9)) == [])
        #expect(pool.handle(.deadlinePassed(p(1)), now: at(9)) == [])
    }

    @Test("a push whose deadline passes before any connection took it fails with timeout, not written")
    func deadlineUnwritten() {
        var pool = Pool(configuration: .init(poolSize: 1))
        _ = pool.handle(.start, now: at(0))
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let actions = pool.handle(.deadlinePassed(p(1)), now: at(8))
        #expect(actions == [.failPush(p(1), .timeout(""))])
        if case .failPush(_, let error)? = actions.first { #expect(!error.wasWritten) } else { Issue.record("\(actions)") }
    }

    @Test("a queued push whose deadline passes fails at the next timer tick")
    func queuedDeadline() {
        var pool = Pool(configuration: .init(poolSize: 1))
        _ = pool.handle(.start, now: at(0))
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        #expect(pool.handle(.timerFired, now: at(7)) == [])
        #expect(pool.handle(.timerFired, now: at(8)) == [.failPush(p(1), .timeout(""))])
    }

    @Test("a connection whose stream stalls past the deadline is replaced")
    func stall() {
        var pool = warmPool(size: 2)
        let conn = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        _ = pool.handle(.deadlinePassed(p(1)), now: at(8))
        #expect(pool.handle(.timerFired, now: at(9)) == [])
        let actions = pool.handle(.timerFired, now: at(10))
        // It had carried work before it stalled: its replacement opens at once.
        #expect(actions == [.closeConnection(conn), .createConnection(c(3))])
        #expect(pool.connectionCount == 2)
    }

    @Test("shutdown fails queued pushes with a clear error and closes connections when their streams finish")
    func shutdown() {
        var pool = warmPool(size: 1, streams: 1)
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        _ = pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0))
        let actions = pool.handle(.shutdown, now: at(1))
        #expect(actions == [.failPush(p(2), .shuttingDown(""))])
        if case .failPush(_, let error) = actions.first { #expect(error.message.contains("shutting down")) }
        #expect(pool.handle(.enqueue(p(3), deadline: at(8)), now: at(1)) == [.failPush(p(3), .shuttingDown(""))])
        let last = pool.handle(.streamCompleted(c(1), p(1), success), now: at(2))
        #expect(last == [.completePush(p(1), response(200)), .closeConnection(c(1)), .shutdownComplete])
    }

    @Test("shutdown does not retry a push whose stream fails")
    func shutdownNoRetry() {
        var pool = warmPool(size: 2)
        let conn = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        _ = pool.handle(.shutdown, now: at(0))
        let actions = pool.handle(.streamCompleted(conn, p(1), refused), now: at(0))
        #expect(actions == [.failPush(p(1), .unavailable("")), .closeConnection(conn), .shutdownComplete])
    }

    @Test("a connection that has opened maxStreamsPerConnection streams drains while its replacement opens")
    func streamBudget() {
        // The warm-up push already used one of c(1)'s three streams.
        var pool = warmPool(size: 1) { $0.maxStreamsPerConnection = 3 }
        #expect(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)) == [.send(p(1), on: c(1))])
        #expect(pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0)) == [.send(p(2), on: c(1)), .createConnection(c(2))])
        #expect(pool.handle(.enqueue(p(3), deadline: at(8)), now: at(0)) == [])
        #expect(pool.handle(.connectionEstablished(c(2)), now: at(0)) == [.send(p(3), on: c(2))])
        #expect(pool.handle(.streamCompleted(c(1), p(1), success), now: at(0)) == [.completePush(p(1), response(200))])
        #expect(pool.handle(.streamCompleted(c(1), p(2), success), now: at(0)) == [.completePush(p(2), response(200)), .closeConnection(c(1))])
    }

    @Test("a connection retired for its stream budget is replaced without backoff, even one that never had an answer")
    func streamBudgetWhenYoung() {
        var pool = Pool(configuration: .init(poolSize: 1, maxStreamsPerConnection: 1), random: ConstantRandom(value: 0))
        _ = pool.handle(.start, now: at(0))
        _ = pool.handle(.connectionEstablished(c(1)), now: at(0))
        // The slot connected at 0: its next connect may come at 2 s, and no later.
        #expect(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(1)) == [.send(p(1), on: c(1)), .scheduleReconnect(c(1), after: .seconds(1))])
        #expect(created(pool.handle(.timerFired, now: at(2))) == [c(2)])
    }

    @Test("a push its connection could not submit (going away, out of stream ids) is requeued without using a retry, and that connection is never chosen again")
    func notSentIsNotAnAttempt() {
        var pool = warmPool(size: 2) { $0.maxRetries = 0 }
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let other = first == c(1) ? c(2) : c(1)
        let actions = pool.handle(.streamCompleted(first, p(1), .notSent(.unavailable("out of stream ids"))), now: at(0))
        #expect(actions == [.createConnection(c(3)), .closeConnection(first), .send(p(1), on: other, isRetry: true)])
        for n in 2...6 {
            #expect(sends(pool.handle(.enqueue(p(UInt64(n)), deadline: at(8)), now: at(0)))[p(UInt64(n))] == other)
        }
        #expect(pool.handle(.streamCompleted(other, p(1), success), now: at(0)) == [.completePush(p(1), response(200))])
    }

    @Test("a push lost with a connection it never reached gets its retry back")
    func lossOfAnUnsentPushIsGivenBack() {
        var pool = warmPool(size: 2) { $0.maxRetries = 1 }
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        let second = sends(pool.handle(.connectionFailed(first), now: at(0)))[p(1)]!
        #expect(second != first)
        // The owner's hop reaches the dead connection after the loss: the push never left.
        _ = pool.handle(.streamCompleted(first, p(1), .notSent(.unavailable("closed"))), now: at(0))
        // So one real failure still leaves it a retry.
        #expect(sends(pool.handle(.streamCompleted(second, p(1), refused), now: at(1)))[p(1)] == second)
    }

    @Test("a push that arrives while every slot backs off past its deadline is answered unavailable at once")
    func hopelessAtEnqueue() {
        var pool = Pool(configuration: .init(poolSize: 2, backoffBase: .seconds(20)), random: ConstantRandom(value: 0))
        // Both connected once (so the deadline decides, not the first-connect rule), then failed.
        let conns = created(pool.handle(.start, now: at(-60)))
        for conn in conns { _ = pool.handle(.connectionEstablished(conn), now: at(-60)) }
        for conn in conns { _ = pool.handle(.connectionFailed(conn), now: at(0)) }
        // Both slots reconnect at 10 s.
        #expect(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(1)) == [.failPush(p(1), .unavailable(""))])
        #expect(pool.handle(.enqueue(p(2), deadline: at(12)), now: at(1)) == [])
    }

    @Test("the pool says it can send only while a connection could take a push now")
    func canSendNow() {
        var pool = warmPool(size: 1)
        #expect(pool.summary.canSendNow)
        _ = pool.handle(.maxConcurrentStreamsChanged(c(1), 0), now: at(0))
        #expect(!pool.summary.canSendNow)
        _ = pool.handle(.maxConcurrentStreamsChanged(c(1), 5), now: at(0))
        let conn = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        _ = pool.handle(.streamCompleted(conn, p(1), .notSent(.unavailable("out of stream ids"))), now: at(0))
        #expect(!pool.summary.canSendNow, "the exhausted connection is draining and its replacement not yet up")
        _ = pool.handle(.connectionEstablished(c(2)), now: at(0))
        #expect(pool.summary.canSendNow)
    }

    @Test("a push whose deadline has already passed is refused at enqueue")
    func lateEnqueue() {
        var pool = warmPool()
        #expect(pool.handle(.enqueue(p(1), deadline: at(0)), now: at(0)) == [.failPush(p(1), .timeout(""))])
    }
}
