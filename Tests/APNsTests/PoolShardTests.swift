import Testing
@testable import APNsCore
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
        var handed = Pool.Push(request: p(1), deadline: at(8), retries: 1)
        handed.state = .queued
        handed.sent = true
        handed.lastConnection = .avoid(c(1))
        #expect(actions == [.handOff(handed)])
        #expect(pool.livePushCount == 0)
        #expect(pool.queuedCount == 0)
        // A machine that may not hand off retries on the same connection rather than wait.
        var alone = warmPool(size: 1)
        _ = alone.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        #expect(alone.handle(.streamCompleted(c(1), p(1), refused), now: at(0)) == [.send(p(1), on: c(1), isRetry: true)])
    }

    @Test("an adopted retry keeps its used retries, goes before new pushes and ignores the queue bound")
    func adoptedRetry() {
        var pool = warmPool(size: 1, streams: 1, capacity: 1)
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))  // on the wire
        _ = pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0))  // queued: the queue is full
        #expect(pool.handle(.adopt(Pool.Push(request: p(3), deadline: at(8), retries: 2)), now: at(0)) == [])
        #expect(pool.queuedCount == 2)
        let next = pool.handle(.streamCompleted(c(1), p(1), success), now: at(0))
        #expect(next == [.completePush(p(1), response(200)), .send(p(3), on: c(1))])
        // Two retries used already: one more failure ends it.
        let last = pool.handle(.streamCompleted(c(1), p(3), refused), now: at(0))
        #expect(last.first == .failPush(p(3), .unavailable("")))
    }
    @Test("a retry after ExpiredProviderToken stays on its own connection instead of leaving for another machine")
    func expiredTokenRetryStays() {
        var pool = warmPool(size: 1) { $0.handsOffRetries = true; $0.shards = 2 }
        _ = pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0))
        let actions = pool.handle(.streamCompleted(c(1), p(1), .classify(response(403, .expiredProviderToken))), now: at(0))
        #expect(actions == [.send(p(1), on: c(1), isRetry: true)])
    }
}

/// Two machines sharing a pool, as two loops' shards: the owner adopts every hand-off into the
/// other one. Whatever happens, every push ends exactly once, in one machine or the other.
@Suite("Pool state machines handing retries to each other")
struct PoolHandOffInvariantTests {
    private struct Conn {
        var established = false
        var streams: Set<PushID> = []
    }

    private struct Owner {
        var machines: [Pool]
        var conns: [[ConnectionID: Conn]] = [[:], [:]]
        /// Each machine's push ids, mapped to the caller's push number. A machine's ids are
        /// its own residue (1, 3, 5… and 2, 4, 6…), as the client's shards make them, so a push
        /// keeps its id in the machine that adopts it.
        var owners: [[PushID: Int]] = [[:], [:]]
        var nextLocal: [UInt64] = [1, 2]
        var ends: [Int: Int] = [:]
        var handOffs = 0
        var problems: [String] = []
        var now = at(0)

        init() {
            machines = (0..<2).map { shard in
                Pool(configuration: .init(poolSize: 2, queueCapacity: 10, maxRetries: 1, shard: shard, shards: 2,
                                          handsOffRetries: true),
                     random: ConstantRandom(value: 0))
            }
        }

        mutating func fire(_ m: Int, _ event: Pool.Event) {
            for action in machines[m].handle(event, now: now) { perform(m, action) }
        }

        mutating func push(_ number: Int, to m: Int, deadline: Instant) {
            let id = PushID(nextLocal[m]); nextLocal[m] += 2
            owners[m][id] = number
            fire(m, .enqueue(id, deadline: deadline))
        }

        mutating func perform(_ m: Int, _ action: Pool.Action) {
            switch action {
            case .createConnection(let c):
                if conns[1 - m][c] != nil { problems.append("both machines opened \(c)") }
                conns[m][c] = Conn()
            case .send(let id, let c, _):
                guard conns[m][c]?.established == true else { problems.append("sent on \(c), not established"); return }
                conns[m][c]!.streams.insert(id)
            case .failPush(let id, _), .completePush(let id, _):
                guard let number = owners[m].removeValue(forKey: id) else { problems.append("ended unknown \(id)"); return }
                ends[number, default: 0] += 1
            case .closeConnection(let c):
                conns[m][c] = nil
            case .handOff(let push):
                guard let number = owners[m].removeValue(forKey: push.id) else { problems.append("handed off unknown \(push.id)"); return }
                handOffs += 1
                let other = 1 - m
                owners[other][push.id] = number
                fire(other, .adopt(push))
            case .scheduleReconnect, .wakeUp, .shutdownComplete:
                break
            }
        }
    }

    @Test("under random failures every push ends exactly once, and retries move between machines",
          arguments: [1, 2, 3, 4] as [UInt64])
    func everyPushEndsOnce(seed: UInt64) {
        var rng = SplitMix64(state: seed)
        func roll(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        var owner = Owner()
        owner.fire(0, .start)
        owner.fire(1, .start)
        var pushes = 0
        for _ in 0..<5_000 {
            let m = roll(2)
            switch roll(10) {
            case 0...2:
                owner.push(pushes, to: m, deadline: owner.now + .milliseconds(Int64(500 + roll(3_000))))
                pushes += 1
            case 3:
                if let c = owner.conns[m].filter({ !$0.value.established }).keys.sorted().first {
                    owner.conns[m][c]!.established = true
                    owner.fire(m, .connectionEstablished(c))
                    owner.fire(m, .maxConcurrentStreamsChanged(c, 1 + roll(4)))
                }
            case 4...6:
                let open = owner.conns[m].flatMap { c, conn in conn.streams.map { (c, $0) } }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
                if let (c, id) = open.randomElement(using: &rng) {
                    owner.conns[m][c]!.streams.remove(id)
                    let outcome: StreamOutcome = [success, refused, .notSent(.unavailable("closing"))][roll(3)]
                    owner.fire(m, .streamCompleted(c, id, outcome))
                }
            case 7:
                if roll(4) == 0, let c = owner.conns[m].keys.sorted().randomElement(using: &rng) {
                    owner.conns[m][c] = nil
                    owner.fire(m, .connectionFailed(c))
                }
            default:
                owner.now = owner.now + .milliseconds(100)
                owner.fire(0, .timerFired)
                owner.fire(1, .timerFired)
            }
        }
        owner.fire(0, .shutdown)
        owner.fire(1, .shutdown)
        for m in 0..<2 {
            for (c, conn) in owner.conns[m].sorted(by: { $0.key < $1.key }) {
                for id in conn.streams.sorted() { owner.fire(m, .streamCompleted(c, id, success)) }
            }
        }
        owner.now = owner.now + .seconds(60)
        owner.fire(0, .timerFired)
        owner.fire(1, .timerFired)
        #expect(owner.problems.isEmpty, "\(owner.problems.prefix(5))")
        #expect(owner.handOffs > 0)
        #expect(owner.machines.allSatisfy { $0.livePushCount == 0 })
        #expect((0..<pushes).allSatisfy { owner.ends[$0] == 1 }, "\(owner.ends.filter { $0.value != 1 }.prefix(5))")
        #expect(owner.ends.count == pushes)
    }
}
