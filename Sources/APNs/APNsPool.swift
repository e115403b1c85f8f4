#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EventLoop
import Transport

/// One environment's connections, shared nothing: the pool is cut into shards, one per event loop
/// (as many as there are connections when the pool is smaller than the loop count), each with
/// its own `PoolStateMachine`, its share of the connections and of the queue, all touched on
/// its loop alone. A push sent on a loop goes to that loop's shard and, when a connection there
/// has a free stream, out on it and back without a lock or a thread hop. Only when the local
/// shard cannot take it (nothing ready, no free stream, pushes already waiting) does it go to
/// another shard's loop; retries that would land on the connection they failed on move the same
/// way (`.handOff`).
///
/// A loop without a shard of its own (pool smaller than the loop count) sends to shard
/// `loop index % shard count` on that shard's loop (one hop), or to another shard with room; a
/// push from outside any loop goes round the shards that have a connection up or coming.
final class APNsPool: Sendable {
    typealias Completion = @Sendable (Result<APNsResponse, APNsError>) -> Void
    typealias Instant = MonotonicInstant

    let environment: APNsEnvironment
    let endpoint: APNsEndpoint
    let configuration: APNsClientConfiguration
    let loops: [EventLoop]
    let observer: (any APNsClientObserver)?
    let unixTime: @Sendable () -> Int64
    let shards: [APNsPoolShard]
    /// The shard each loop sends to, by the loop's index.
    private let home: [Int]
    /// Spreads pushes from outside the loops, and hand-offs, over the shards.
    private let cursor = Atomic<UInt>(0)

    init(environment: APNsEnvironment, endpoint: APNsEndpoint, configuration: APNsClientConfiguration,
         loops: [EventLoop], observer: (any APNsClientObserver)?, unixTime: @escaping @Sendable () -> Int64) {
        self.environment = environment
        self.endpoint = endpoint
        self.configuration = configuration
        self.loops = loops
        self.observer = observer
        self.unixTime = unixTime
        let count = max(1, min(configuration.poolSize, loops.count))
        /// `total` spread over the shards, the first ones taking the remainder.
        func share(_ total: Int, _ index: Int) -> Int { total / count + (index < total % count ? 1 : 0) }
        var shards: [APNsPoolShard] = []
        for index in 0..<count {
            let machine = PoolStateMachine.Configuration(
                poolSize: share(max(1, configuration.poolSize), index),
                queueCapacity: share(max(0, configuration.queueCapacity), index),
                maxRetries: configuration.maxRetries, backoffBase: configuration.backoffBase,
                backoffMax: configuration.backoffMax, stallGrace: configuration.stallGrace,
                maxStreamsPerConnection: configuration.maxStreamsPerConnection,
                shard: index, shards: count, handsOffRetries: count > 1,
                retriesTooManyRequests: configuration.retryPolicy.retriesTooManyRequests,
                retryDelay: configuration.retryPolicy.delayPerAttempt)
            shards.append(APNsPoolShard(index: index, loop: loops[index], machine: machine, environment: environment,
                                        endpoint: endpoint, configuration: configuration, observer: observer,
                                        unixTime: unixTime))
        }
        self.shards = shards
        self.home = loops.indices.map { $0 % count }
        for shard in shards { shard.pool = self }
    }

    /// Opens every shard's connections and starts their tickers.
    func start() {
        for shard in shards { shard.loop.execute { shard.start() } }
    }

    // MARK: Callers

    /// - Parameter timeout: this push's deadline from now, retries included; nil = `pushTimeout`.
    func send(_ notification: APNsNotification, timeout: Duration? = nil, completion: @escaping Completion) {
        let deadline = MonotonicInstant.now + (timeout ?? configuration.pushTimeout)
        let current = EventLoop.current
        var local: APNsPoolShard?
        if let current, let index = loops.firstIndex(where: { $0 === current }) { local = shards[home[index]] }
        // The normal path: this loop's shard can send it now, so nothing crosses threads.
        if let local, local.loop === current, local.canTakeNow {
            local.enqueue(notification, deadline: deadline, completion: completion)
            return
        }
        let target = route(preferring: local)
        if target.loop === current {
            target.enqueue(notification, deadline: deadline, completion: completion)
        } else {
            if current != nil { observer?.pushCrossedLoops(environment: environment) }
            target.loop.execute { target.enqueue(notification, deadline: deadline, completion: completion) }
        }
    }

    /// Where a push goes when the local shard cannot send it at once: a shard that can, else the
    /// local one while it has a connection up or coming, else the next shard that has one, else
    /// the local (or next) one, whose machine answers at once when no connection can come in time.
    /// Reads the other shards' published state: a stale read only queues the push there.
    private func route(preferring local: APNsPoolShard?) -> APNsPoolShard {
        let start = Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(shards.count))
        let rotation = (0..<shards.count).map { shards[(start + $0) % shards.count] }
        if let local {
            if let other = rotation.first(where: { $0 !== local && $0.published.canTakeNow }) { return other }
            if local.published.live { return local }
        }
        // From outside the loops: round the shards that have a way out, ignoring momentary room
        // (it lags behind pushes already on their way), so each shard's share of the queue holds.
        return rotation.first(where: { $0.published.live }) ?? local ?? rotation[0]
    }

    /// A retry that `from` could only give to the connection it failed on, or to none.
    func handOff(_ entry: APNsPoolShard.Entry, retries: Int, tokenRetried: Bool, from: APNsPoolShard) {
        let others = shards.filter { $0 !== from }
        let start = Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(max(1, others.count)))
        let rotation = others.indices.map { others[(start + $0) % others.count] }
        // When no other shard has a way out, it goes back to where it was, as a fresh retry.
        let target = rotation.first { $0.published.canTakeNow } ?? rotation.first { $0.published.live } ?? from
        target.loop.execute { target.adopt(entry, retries: retries, tokenRetried: tokenRetried) }
    }

    /// True when a push sent now could go out at once (a ready connection with a free stream limit).
    var isReady: Bool { shards.contains { $0.published.ready } }

    var stats: (open: Int, inFlight: Int, queued: Int) {
        shards.reduce((0, 0, 0)) { total, shard in
            let s = shard.published
            return (total.0 + s.open, total.1 + s.inFlight, total.2 + s.queued)
        }
    }

    /// Fails queued pushes, lets in-flight ones end (their deadlines bound the wait), closes.
    func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for shard in shards { group.addTask { await shard.shutdown() } }
        }
    }

    /// Test seam: moves the next stream id of every open connection, so a test can bring them to
    /// the end of HTTP/2's 2^31 ids. Returns how many connections took it.
    func setNextStreamID(_ streamID: Int32) async -> Int {
        var moved = 0
        for shard in shards {
            moved += await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
                shard.loop.execute { done.resume(returning: shard.setNextStreamID(streamID)) }
            }
        }
        return moved
    }

    /// Ready connections of the shard on `loop` (0 for a loop without a shard), as last published.
    func readyConnections(on loop: EventLoop) -> Int {
        shards.first { $0.loop === loop }?.published.open ?? 0
    }

    /// Test seam: breaks the open connections of the shard on `loop` as a network failure would
    /// (their slots back off); returns how many there were.
    func breakConnections(on loop: EventLoop) async -> Int {
        guard let shard = shards.first(where: { $0.loop === loop }) else { return 0 }
        return await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            loop.execute { done.resume(returning: shard.breakConnections()) }
        }
    }
}

/// One loop's share of a pool: its state machine, the pushes it holds and its connections.
///
/// `@unchecked Sendable` so the pool can hand it to its loop: everything but `published` is
/// touched on `loop` alone (the pool reaches it through `loop.execute`, or directly when the
/// caller already runs on `loop`); `published` is atomics, for the other loops and probes.
final class APNsPoolShard: @unchecked Sendable {
    typealias Instant = MonotonicInstant

    struct Entry: Sendable {
        let notification: APNsNotification
        let deadline: Instant
        let completion: APNsPool.Completion
        var attempts = 0
        /// Apple's last answer to a retried attempt: it stands when no later attempt gets one.
        var lastAnswer: APNsResponse?

        /// Counts one more attempt and hands out what sending needs. Mutating, so that through
        /// `entries.values[index]` it works in place: the subscript's getter copies the entry.
        mutating func attempt() -> (attempts: Int, notification: APNsNotification, deadline: Instant) {
            attempts += 1
            return (attempts, notification, deadline)
        }
    }

    let index: Int
    let loop: EventLoop
    let environment: APNsEnvironment
    let endpoint: APNsEndpoint
    let configuration: APNsClientConfiguration
    let observer: (any APNsClientObserver)?
    let unixTime: @Sendable () -> Int64
    /// Set once by the pool right after creating its shards, before any loop sees the shard.
    weak var pool: APNsPool?
    let published = Published()

    private var machine: PoolStateMachine
    private var entries: [PushID: Entry] = [:]
    /// Why the last connect failed, until one succeeds: a push that fails `unavailable` (or
    /// `timeout`) meanwhile carries it, as a value and in its message.
    var lastConnectFailure: APNsConnectFailure?
    /// A handful (the shard's slots, and those draining): searched, not hashed.
    private var connections = SmallMap<ConnectionID, APNsConnection>()
    private var nextPush: UInt64 = 1
    private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    /// Nested `handle` calls: a send is submitted directly only from a caller's outermost one,
    /// never from a connection's or a completion's (we may be inside nghttp2).
    private var depth = 0
    /// An empty action list whose storage `handle` reuses, one allocation fewer per event.
    private var spareActions: [PoolStateMachine.Action] = []

    /// What other threads may read of a shard: written on its loop after every event.
    final class Published: Sendable {
        private let flags = Atomic<Int>(Flag.live)
        private let openCount = Atomic<Int>(0)
        private let inFlightCount = Atomic<Int>(0)
        private let queuedCount = Atomic<Int>(0)
        enum Flag {
            static let canTakeNow = 1, live = 2, ready = 4, shutDown = 8
        }
        var canTakeNow: Bool { flags.load(ordering: .relaxed) & Flag.canTakeNow != 0 }
        var live: Bool { flags.load(ordering: .relaxed) & Flag.live != 0 }
        var ready: Bool { flags.load(ordering: .relaxed) & Flag.ready != 0 }
        var shutDown: Bool { flags.load(ordering: .acquiring) & Flag.shutDown != 0 }
        var open: Int { openCount.load(ordering: .relaxed) }
        var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
        var queued: Int { queuedCount.load(ordering: .relaxed) }

        /// Takes the machine's figures as values: handed the machine itself, the caller copied it.
        fileprivate func store(_ summary: PoolStateMachine.Summary, shutDown: Bool) {
            var value = 0
            if summary.canTakeNow { value |= Flag.canTakeNow }
            if summary.hasLiveConnection || !summary.isStarted { value |= Flag.live }
            if summary.canSendNow { value |= Flag.ready }
            if shutDown { value |= Flag.shutDown }
            // Stores only when something changed: the normal path then writes nothing shared.
            if flags.load(ordering: .relaxed) != value { flags.store(value, ordering: .releasing) }
            Self.update(openCount, summary.readyConnectionCount)
            Self.update(inFlightCount, summary.inFlightCount)
            Self.update(queuedCount, summary.queuedCount)
        }

        private static func update(_ atomic: borrowing Atomic<Int>, _ value: Int) {
            if atomic.load(ordering: .relaxed) != value { atomic.store(value, ordering: .relaxed) }
        }
    }

    init(index: Int, loop: EventLoop, machine: PoolStateMachine.Configuration, environment: APNsEnvironment,
         endpoint: APNsEndpoint, configuration: APNsClientConfiguration, observer: (any APNsClientObserver)?,
         unixTime: @escaping @Sendable () -> Int64) {
        self.index = index
        self.loop = loop
        self.machine = PoolStateMachine(configuration: machine)
        self.environment = environment
        self.endpoint = endpoint
        self.configuration = configuration
        self.observer = observer
        self.unixTime = unixTime
    }

    /// True when a push enqueued now goes out at once. Loop only.
    var canTakeNow: Bool { machine.summary.canTakeNow }

    // MARK: On the loop

    func start() {
        handle(.start)
        tick()
    }

    private func tick() {
        loop.schedule(after: configuration.tickInterval) { [weak self] in
            guard let self, !self.published.shutDown else { return }
            self.handle(.timerFired)
            self.tick()
        }
    }

    func enqueue(_ notification: APNsNotification, deadline: Instant, completion: @escaping APNsPool.Completion) {
        let id = PushID(nextPush)
        nextPush += 1
        entries[id] = Entry(notification: notification, deadline: deadline, completion: completion)
        handle(.enqueue(id, deadline: deadline), fromCaller: true)
    }

    func adopt(_ entry: Entry, retries: Int, tokenRetried: Bool) {
        let id = PushID(nextPush)
        nextPush += 1
        entries[id] = entry
        handle(.adopt(id, deadline: entry.deadline, retries: retries, tokenRetried: tokenRetried), fromCaller: true)
    }

    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                if published.shutDown { return continuation.resume() }
                shutdownWaiters.append(continuation)
                handle(.shutdown)
            }
        }
    }

    func setNextStreamID(_ streamID: Int32) -> Int {
        connections.values.count { (try? $0.setNextStreamID(streamID)) != nil }
    }

    func breakConnections() -> Int {
        let open = Array(connections.values)
        for connection in open { connection.breakForTesting() }
        return open.count
    }

    /// Feeds the machine an event and performs its actions. `fromCaller`: a push handed in by a
    /// sender (not a connection's callback), so its send may be submitted at once.
    func handle(_ event: PoolStateMachine.Event, fromCaller: Bool = false) {
        precondition(loop.inEventLoop, "a pool shard is touched on its own loop only")
        let direct = fromCaller && depth == 0
        depth += 1
        defer { depth -= 1 }
        let now = MonotonicInstant.now
        switch event {
        case .connectionFailed(let c), .connectionClosed(let c):
            connections[c] = nil
        case .streamCompleted(_, let id, .retryableAnswer(let response)), .streamCompleted(_, let id, .final(let response)):
            entries[id]?.lastAnswer = response
        default:
            break
        }
        // The spare list's storage is reused (an event nested in `perform` finds none and makes its own).
        var actions = spareActions
        spareActions = []
        let summary = machine.handle(event, now: now, into: &actions)
        defer {
            // Kept only while small: a burst (a shutdown failing every push) must not pin its list.
            if actions.capacity <= 64 {
                actions.removeAll(keepingCapacity: true)
                spareActions = actions
            }
        }
        // The machine reports it last, once; comparing every action with it cost more than the check.
        var shutdownDone = false
        if case .shutdownComplete? = actions.last { shutdownDone = true }
        published.store(summary, shutDown: shutdownDone || published.shutDown)
        perform(actions, direct: direct)
    }

    private func perform(_ actions: [PoolStateMachine.Action], direct: Bool) {
        for action in actions {
            switch action {
            case .createConnection(let c):
                let connection = APNsConnection(id: c, loop: loop, shard: self)
                connections[c] = connection
                if machine.isReconnect(c) {
                    observer?.reconnecting(environment: environment, connection: Int(truncatingIfNeeded: c.value))
                }
                let bound = LoopBound(connection, on: loop)
                loop.execute { bound.value.connect() }
            case .send(let id, let c):
                // One lookup, and the entry changed where it is stored, not copied out and back
                // (nor through the keyed subscript's `modify`, which cost more than the copy).
                guard let index = entries.index(forKey: id) else { continue }
                let attempt = entries.values[index].attempt()
                if attempt.attempts > 1 { observer?.pushRetried(environment: environment) }
                guard let connection = connections[c] else { continue }
                let notification = attempt.notification, deadline = attempt.deadline
                if direct {
                    connection.send(id, notification, deadline: deadline)
                } else {
                    // Inside a connection's callback (maybe nghttp2's): submit on the next turn.
                    let bound = LoopBound(connection, on: loop)
                    loop.execute { bound.value.send(id, notification, deadline: deadline) }
                }
            case .failPush(let id, let error):
                guard let entry = entries.removeValue(forKey: id) else { continue }
                if let answer = entry.lastAnswer {
                    entry.completion(.success(answer))
                } else if error.code == .unavailable || error.code == .timeout, let why = lastConnectFailure {
                    entry.completion(.failure(APNsError(code: error.code, message: "\(why); \(error.message)", connectFailure: why)))
                } else if error.code == .timeout, !machine.canSendNow,
                          let progress = connections.values.lazy.compactMap(\.connectProgress).first {
                    // The deadline came while the connection was still being made: say which step hung.
                    entry.completion(.failure(APNsError(code: .timeout, message: "\(progress); \(error.message)")))
                } else {
                    entry.completion(.failure(error))
                }
            case .completePush(let id, let response):
                entries.removeValue(forKey: id)?.completion(.success(response))
            case .closeConnection(let c):
                if let connection = connections.removeValue(forKey: c) {
                    let bound = LoopBound(connection, on: loop)
                    loop.execute { bound.value.close() }
                }
            case .scheduleReconnect(_, let delay):
                observer?.reconnectScheduled(environment: environment, after: delay)
                loop.schedule(after: delay) { [weak self] in self?.handle(.timerFired) }
            case .wakeUp(let delay):
                loop.schedule(after: delay) { [weak self] in self?.handle(.timerFired) }
            case .handOff(let id, let retries, let tokenRetried):
                guard let entry = entries.removeValue(forKey: id) else { continue }
                if let pool {
                    pool.handOff(entry, retries: retries, tokenRetried: tokenRetried, from: self)
                } else {
                    entry.completion(.failure(.shuttingDown("the APNs client is gone; the push was not sent")))
                }
            case .shutdownComplete:
                let waiters = shutdownWaiters
                shutdownWaiters = []
                for waiter in waiters { waiter.resume() }
            }
        }
    }
}
