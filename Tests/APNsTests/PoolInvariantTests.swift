import Testing
@testable import APNsCore
@testable import APNs

/// Plays the owner of the pool: performs its actions on an imaginary network, drives random
/// events from a fixed seed, and checks the pool's promises after every step.
private struct Owner {
    struct Conn {
        var established = false
        var answered = false
        var maxStreams = 1
        var draining = false
        var streams: Set<PushID> = []
        /// Streams it was given: at the pool's budget (40 here) it drains.
        var opened = 0
        var limit: Int { answered ? maxStreams : min(1, maxStreams) }
        var free: Int { established && !draining ? max(0, limit - streams.count) : 0 }
    }

    var pool: Pool
    var rng: SplitMix64
    var now = at(0)
    var conns: [ConnectionID: Conn] = [:]
    var closed: Set<ConnectionID> = []
    var deadlines: [PushID: Instant] = [:]
    var live: Set<PushID> = []
    var ended: Set<PushID> = []
    var everSent: Set<PushID> = []
    var nextPush: UInt64 = 1
    var problems: [String] = []
    var shutdownCompleted = false
    let capacity: Int
    /// Sends that reached the wire, per push: "after N attempts" may only count these.
    var attempts: [PushID: Int] = [:]
    /// When each connect began, to check that no slot connects more often than it may.
    var connects: [Instant] = []
    /// Pushes the last lost connection held: the owner's hop may still reach it and find it gone.
    var lostWith: [(ConnectionID, PushID)] = []
    /// While on, Apple sends GOAWAY after every answer (and refuses the rest on that connection).
    var storm = false
    let poolSize = 3

    init(seed: UInt64, capacity: Int) {
        self.capacity = capacity
        rng = SplitMix64(state: seed)
        pool = Pool(configuration: .init(poolSize: poolSize, queueCapacity: capacity, maxRetries: 1, maxStreamsPerConnection: 40),
                    random: SplitMix64(state: seed ^ 0xABCDEF))
    }

    mutating func problem(_ text: String) { if problems.count < 20 { problems.append(text) } }

    mutating func fire(_ event: Pool.Event) {
        switch event {
        case .connectionEstablished(let c): conns[c]?.established = true
        case .maxConcurrentStreamsChanged(let c, let n): conns[c]?.maxStreams = n
        case .connectionFailed(let c), .connectionClosed(let c):
            lostWith = (conns[c]?.streams.sorted() ?? []).map { (c, $0) }
            conns[c] = nil; closed.insert(c)
        case .goAwayReceived(let c, let unprocessed):
            conns[c]?.draining = true
            for id in unprocessed where conns[c]?.streams.remove(id) != nil { attempts[id, default: 0] -= 1 }
        case .streamCompleted(let c, let id, let outcome):
            let wasOpen = conns[c]?.streams.remove(id) != nil
            switch outcome {
            case .retryable: break
            case .notSent:
                conns[c]?.draining = true
                if wasOpen || lostWith.contains(where: { $0 == (c, id) }) { attempts[id, default: 0] -= 1 }
            default: conns[c]?.answered = true
            }
        case .shutdown:
            for c in conns.keys { conns[c]?.draining = true }
        default: break
        }
        for action in pool.handle(event, now: now) { perform(action, after: event) }
        let inFlight = conns.values.reduce(0) { $0 + $1.streams.count }
        if pool.queuedCount > capacity + inFlight + 3 * 16 { problem("queue grew to \(pool.queuedCount)") }
        if pool.livePushCount != live.count { problem("pool tracks \(pool.livePushCount) pushes, owner \(live.count) after \(event)") }
        // Each field from its own definition, against the machine's one pass.
        let ready = pool.connections.values.filter { $0.state == .ready }
        let expected = Pool.Summary(
            canTakeNow: pool.started && !pool.isShuttingDown && pool.queuedCount == 0 && pool.bestConnection(for: nil) != nil,
            hasLiveConnection: pool.connections.values.contains { $0.state != .draining },
            canSendNow: !pool.isShuttingDown && ready.contains { $0.limit > 0 }, readyConnectionCount: ready.count,
            isStarted: pool.started, inFlightCount: pool.livePushCount - pool.queuedCount, queuedCount: pool.queuedCount)
        if pool.summary != expected { problem("summary \(pool.summary), its definitions \(expected) after \(event)") }
    }

    mutating func perform(_ action: Pool.Action, after event: Pool.Event) {
        switch action {
        case .createConnection(let c):
            if conns[c] != nil || closed.contains(c) { problem("connection id \(c) reused") }
            conns[c] = Conn()
            // Each slot waits at least twice the base delay (2 s) between connects.
            connects.append(now)
            let recent = connects.suffix(poolSize + 1).filter { $0 > now - .seconds(2) }
            if recent.count > poolSize { problem("\(recent.count) connects within 2 s at \(now - t0)") }
        case .send(let id, let c, _):
            guard let conn = conns[c] else { problem("sent \(id) on unknown or closed \(c)"); return }
            if !conn.established { problem("sent \(id) on \(c) before it was established") }
            if conn.draining { problem("sent \(id) on draining \(c)") }
            if conn.streams.count >= conn.limit { problem("sent \(id) on \(c) beyond its limit \(conn.limit)") }
            if !live.contains(id) { problem("sent \(id), which is not live") }
            // A first attempt goes to the least loaded connection: fewest open streams for its limit.
            if !everSent.contains(id), conns.values.contains(where: { $0.free > 0 && $0.streams.count * conn.limit < conn.streams.count * $0.limit }) {
                problem("sent \(id) on \(c) with \(conn.streams.count) of \(conn.limit) streams open while another was less loaded")
            }
            everSent.insert(id)
            attempts[id, default: 0] += 1
            conns[c]!.streams.insert(id)
            conns[c]!.opened += 1
            if conns[c]!.opened >= 40 { conns[c]!.draining = true }
        case .failPush(let id, let error):
            if let range = error.message.range(of: #"after (\d+) attempts"#, options: .regularExpression) {
                let n = Int(error.message[range].split(separator: " ")[1])!
                if n > attempts[id, default: 0] { problem("\(id) failed after \(n) attempts, only \(attempts[id, default: 0]) reached the wire") }
            }
            if ended.contains(id) { problem("\(id) ended twice (after \(event))") }
            if !live.contains(id) && !ended.contains(id) { problem("\(id) ended but was never enqueued") }
            live.remove(id); ended.insert(id)
        case .completePush(let id, _):
            if ended.contains(id) { problem("\(id) ended twice (after \(event))") }
            if !live.contains(id) && !ended.contains(id) { problem("\(id) ended but was never enqueued") }
            live.remove(id); ended.insert(id)
        case .closeConnection(let c):
            if conns[c] == nil { problem("closed unknown \(c)") }
            conns[c] = nil; closed.insert(c)
        case .scheduleReconnect(_, let delay):
            if delay < .zero || delay > .seconds(60) { problem("reconnect delay \(delay) outside 0...60 s") }
        case .wakeUp(let delay):
            if delay <= .zero { problem("a wake-up \(delay) from now") }
        case .handOff(let push):
            let id = push.id
            problem("handed \(id) off, though this pool is alone and may not")
        case .shutdownComplete:
            if shutdownCompleted { problem("shutdown completed twice") }
            shutdownCompleted = true
        }
    }

    mutating func roll(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

    mutating func randomConnection() -> ConnectionID? {
        // Sometimes an id the pool has forgotten: stale events must be harmless.
        if roll(10) == 0, let old = closed.randomElement(using: &rng) { return old }
        return conns.keys.sorted().randomElement(using: &rng)
    }

    mutating func randomOutcome() -> StreamOutcome {
        switch roll(10) {
        case 0...4: return .success(response(200))
        case 5: return .final(response(410, .unregistered))
        case 6: return .classify(response(429, .tooManyRequests))
        case 7: return .retryable(.unavailable("refused"))
        case 8: return .classify(response(403, .expiredProviderToken))
        default: return roll(3) == 0 ? .classify(response(429, .tooManyProviderTokenUpdates)) : .classify(response(503, .shutdown))
        }
    }

    mutating func step() {
        switch roll(100) {
        case 0..<30:
            let id = PushID(nextPush); nextPush += 1
            let deadline = now + .milliseconds(Int64(500 + roll(9_500)))
            deadlines[id] = deadline
            live.insert(id)
            fire(.enqueue(id, deadline: deadline))
        case 30..<35:
            if let c = conns.filter({ !$0.value.established }).keys.sorted().randomElement(using: &rng) {
                fire(.connectionEstablished(c))
                // A connection that ends at once, sometimes after its first answer (a GOAWAY storm).
                if roll(16) == 0 {
                    if let id = conns[c]?.streams.first, roll(2) == 0 { fire(.streamCompleted(c, id, .success(response(200)))) }
                    fire(roll(2) == 0 ? .connectionClosed(c) : .connectionFailed(c))
                }
            }
        case 35..<37:
            if let c = randomConnection() {
                fire(.connectionFailed(c))
                // The owner's hop reaches the lost connection for some of its pushes: never sent.
                for (c, id) in lostWith where roll(2) == 0 { fire(.streamCompleted(c, id, .notSent(.unavailable("closed")))) }
            }
        case 37..<38:
            if let c = randomConnection() { fire(.connectionClosed(c)) }
        case 38..<43:
            if let c = randomConnection() { fire(.maxConcurrentStreamsChanged(c, roll(17))) }
        case 43..<45:
            if let c = randomConnection() {
                let streams = conns[c]?.streams.sorted() ?? []
                fire(.goAwayReceived(c, unprocessed: streams.filter { _ in roll(2) == 0 }))
            }
        case 45..<76:
            let open = conns.flatMap { c, conn in conn.streams.map { (c, $0) } }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            if let (c, id) = open.randomElement(using: &rng) {
                fire(.streamCompleted(c, id, randomOutcome()))
                if storm, let rest = conns[c]?.streams.sorted() { fire(.goAwayReceived(c, unprocessed: rest)) }
            }
        case 76..<79:
            // Submit refused: going away or out of stream ids.
            let open = conns.flatMap { c, conn in conn.streams.map { (c, $0) } }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            if let (c, id) = open.randomElement(using: &rng) { fire(.streamCompleted(c, id, .notSent(.unavailable("out of stream ids")))) }
        case 79..<80:
            // GOAWAY storms come and go, about a quarter of the time.
            storm = roll(4) == 0
        case 80..<88:
            now = now + .milliseconds(Int64(roll(1_500)))
            fire(.timerFired)
        case 88..<95:
            let due = live.filter { deadlines[$0]! <= now }.sorted()
            if let id = due.randomElement(using: &rng) { fire(.deadlinePassed(id)) }
            else if roll(4) == 0, let old = ended.randomElement(using: &rng) { fire(.deadlinePassed(old)) }
        default:
            now = now + .milliseconds(Int64(roll(300)))
        }
    }

    /// Shuts down and plays a well-behaved network until everything has ended.
    mutating func drain() {
        fire(.shutdown)
        for _ in 0..<200 where !shutdownCompleted {
            let open = conns.flatMap { c, conn in conn.streams.map { (c, $0) } }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            for (c, id) in open { fire(.streamCompleted(c, id, .success(response(200)))) }
            now = now + .seconds(5)
            fire(.timerFired)
            for c in conns.keys.sorted() where conns[c]!.streams.isEmpty && !conns[c]!.established {
                fire(.connectionFailed(c))
            }
        }
    }
}

@Suite("Pool state machine invariants")
struct PoolInvariantTests {
    @Test("under 10,000 random events every push ends exactly once and no limit is ever broken",
          arguments: [UInt64(1), 2, 3, 0xDEADBEEF])
    func randomEvents(seed: UInt64) {
        var owner = Owner(seed: seed, capacity: 20)
        owner.fire(.start)
        for _ in 0..<10_000 { owner.step() }
        owner.drain()
        #expect(owner.problems.isEmpty, "\(owner.problems)")
        #expect(owner.live.isEmpty, "never ended: \(owner.live.sorted().prefix(10))")
        #expect(owner.shutdownCompleted)
        #expect(owner.pool.connectionCount == 0)
        #expect(owner.ended.count > 500, "too few pushes to mean anything: \(owner.ended.count)")
        #expect(owner.everSent.count > 100, "sent \(owner.everSent.count), ended \(owner.ended.count)")
    }
}
