import Testing
@testable import APNs

/// The rules a pool cut into one machine per event loop relies on, without sockets.
@Suite("Pool state machine shared over loops")
struct PoolShardTests {
    @Test("a new connection gets its first stream while an answered one has room, so load reaches every connection")
    func newConnectionGetsItsFirstStream() {
        var pool = warmPool(size: 2, streams: 100)
        // Connection 2 closes after a healthy life; connection 3 takes its slot, not yet answered.
        #expect(created(pool.handle(.connectionClosed(c(2)), now: at(0))) == [c(3)])
        _ = pool.handle(.connectionEstablished(c(3)), now: at(0))
        _ = pool.handle(.maxConcurrentStreamsChanged(c(3), 100), now: at(0))
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))
        let second = sends(pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0)))
        // The answered connection has 100 free streams, the new one 1; the new one goes first.
        #expect(Set([first[p(1)], second[p(2)]]) == Set([c(1), c(3)]))
    }

    @Test("light traffic takes turns over idle connections instead of always using the first")
    func lightTrafficTakesTurns() {
        var pool = warmPool(size: 3, streams: 100)
        var used: [ConnectionID] = []
        for n in 1...6 {
            let sent = sends(pool.handle(.enqueue(p(UInt64(n)), deadline: at(8)), now: at(0)))
            let conn = sent[p(UInt64(n))]!
            used.append(conn)
            _ = pool.handle(.streamCompleted(conn, p(UInt64(n)), success), now: at(0))
        }
        #expect(Set(used) == Set([c(1), c(2), c(3)]))
        #expect(Set(used.prefix(3)).count == 3)
    }

    @Test("machines sharing a pool hand out distinct connection ids and know their reconnects")
    func distinctConnectionIDs() {
        var first = Pool(configuration: .init(poolSize: 2, shard: 0, shards: 2))
        var second = Pool(configuration: .init(poolSize: 2, shard: 1, shards: 2))
        let a = created(first.handle(.start, now: at(0)))
        let b = created(second.handle(.start, now: at(0)))
        #expect(a == [c(1), c(3)])
        #expect(b == [c(2), c(4)])
        #expect(!(a + b).contains { first.isReconnect($0) && second.isReconnect($0) })
        #expect(!first.isReconnect(c(3)) && first.isReconnect(c(5)))
        #expect(!second.isReconnect(c(4)) && second.isReconnect(c(6)))
    }

    @Test("a retry that only its failed connection could take is handed off, with the retries it used")
    func retryHandedOff() {
        var pool = warmPool(size: 1) { $0.handsOffRetries = true }
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let actions = pool.handle(.streamCompleted(c(1), p(1), refused), now: at(0))
        #expect(actions == [.handOff(p(1), retries: 1, tokenRetried: false)])
        #expect(pool.livePushCount == 0)
        #expect(pool.queuedCount == 0)
        // A machine that may not hand off retries on the same connection rather than wait.
        var alone = warmPool(size: 1)
        _ = alone.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        #expect(alone.handle(.streamCompleted(c(1), p(1), refused), now: at(0)) == [.send(p(1), on: c(1))])
    }

    @Test("an adopted retry keeps its used retries, goes before new pushes and ignores the queue bound")
    func adoptedRetry() {
        var pool = warmPool(size: 1, streams: 1, capacity: 1)
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))  // on the wire
        _ = pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0))  // queued: the queue is full
        #expect(pool.handle(.adopt(p(3), deadline: at(8), retries: 2, tokenRetried: false), now: at(0)) == [])
        #expect(pool.queuedCount == 2)
        let next = pool.handle(.streamCompleted(c(1), p(1), success), now: at(0))
        #expect(next == [.completePush(p(1), response(200)), .send(p(3), on: c(1))])
        // Two retries used already: one more failure ends it.
        let last = pool.handle(.streamCompleted(c(1), p(3), refused), now: at(0))
        #expect(last.first == .failPush(p(3), .unavailable("")))
    }

    @Test("an expired token refused on another machine's connection replaces every connection here as old")
    func tokenRefusedElsewhere() {
        var pool = warmPool(size: 2)
        _ = pool.handle(.providerTokenIssued(c(1), issuedAt: 100), now: at(0))
        _ = pool.handle(.providerTokenIssued(c(2), issuedAt: 200), now: at(0))
        let actions = pool.handle(.providerTokenRefused(issuedAt: 150), now: at(0))
        #expect(actions.contains(.closeConnection(c(1))))
        #expect(!actions.contains(.closeConnection(c(2))))
        #expect(created(actions).count == 1)
    }
}
