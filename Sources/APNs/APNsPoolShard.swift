import Synchronization
import EventLoop

/// A push as the pool's state machine holds it for the client: what goes out and who hears the
/// answer. It lives in the push's one record (`PoolStateMachine.Push`) until the machine ends it.
struct PushRequest: PoolRequest {
    let id: PushID
    let notification: APNsNotification
    let completion: APNsPool.Completion
}

/// One loop's share of a pool: its state machine, which holds the shard's pushes, and its
/// connections.
///
/// `@unchecked Sendable` so the pool can hand it to its loop: everything but `published` is
/// touched on `loop` alone (the pool reaches it through `loop.execute`, or directly when the
/// caller already runs on `loop`); `published` is atomics, for the other loops and probes.
final class APNsPoolShard: @unchecked Sendable {
    typealias Machine = PoolStateMachine<PushRequest>

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

    private var machine: Machine
    /// Why the last connect failed, until one succeeds: a push that fails `unavailable` (or
    /// `timeout`) meanwhile carries it, as a value and in its message.
    var lastConnectFailure: APNsConnectFailure?
    /// A handful (the shard's slots, and those draining): searched, not hashed.
    private(set) var connections = SmallMap<ConnectionID, APNsConnection>()
    /// The next push id: `index + 1 + k × shards`, so ids stay unique when a push moves to
    /// another shard (`.handOff`).
    private var nextPush: UInt64
    private let pushIDStep: UInt64
    private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    /// Events being handled, nested ones included: a send is submitted directly only when a
    /// sender's push is the one event under way. A send decided inside a connection's callback
    /// (an answer, a GOAWAY, a close) or a completion waits for the loop's next turn, so the
    /// connection is never re-entered from its own callback.
    private var depth = 0
    /// An empty action list whose storage `handle` reuses, one allocation fewer per event.
    private var spareActions: [Machine.Action] = []

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
        fileprivate func store(_ summary: Machine.Summary, shutDown: Bool) {
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

    init(index: Int, loop: EventLoop, machine: PoolConfiguration, environment: APNsEnvironment,
         endpoint: APNsEndpoint, configuration: APNsClientConfiguration, observer: (any APNsClientObserver)?,
         unixTime: @escaping @Sendable () -> Int64) {
        self.index = index
        self.loop = loop
        self.machine = Machine(configuration: machine)
        self.nextPush = UInt64(machine.shard) + 1
        self.pushIDStep = UInt64(machine.shards)
        self.environment = environment
        self.endpoint = endpoint
        self.configuration = configuration
        self.observer = observer
        self.unixTime = unixTime
    }

    /// True when a push enqueued now goes out at once. Loop only.
    var canTakeNow: Bool { machine.summary.canTakeNow }

    /// The notification of a push still in the pool (nil once it ended): a connection reads
    /// Apple's answer with it. Loop only.
    func notification(of id: PushID) -> APNsNotification? { machine.push(id)?.request.notification }

    /// The deadline of a push still in the pool, from its record (nil once it ended): a
    /// connection's deadline timer reads it. Loop only.
    func deadline(of id: PushID) -> MonotonicInstant? { machine.push(id)?.deadline }

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

    func enqueue(_ notification: APNsNotification, deadline: MonotonicInstant, completion: @escaping APNsPool.Completion) {
        let id = PushID(nextPush)
        nextPush += pushIDStep
        handle(.enqueue(PushRequest(id: id, notification: notification, completion: completion),
                        deadline: deadline), fromCaller: true)
    }

    func adopt(_ push: Machine.Push) {
        handle(.adopt(push), fromCaller: true)
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

    /// Feeds the machine an event and performs its actions. `fromCaller`: a push handed in by a
    /// sender (not a connection's callback), so its send may be submitted at once.
    func handle(_ event: Machine.Event, fromCaller: Bool = false) {
        precondition(loop.inEventLoop, "a pool shard is touched on its own loop only")
        let direct = fromCaller && depth == 0
        depth += 1
        defer { depth -= 1 }
        switch event {
        case .connectionFailed(let c), .connectionClosed(let c):
            connections[c] = nil
        default:
            break
        }
        // The spare list's storage is reused (an event nested in `perform` finds none and makes its own).
        var actions = spareActions
        spareActions = []
        let summary = machine.handle(event, now: .now, into: &actions)
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
        for action in actions { perform(action, direct: direct) }
    }

    private func perform(_ action: Machine.Action, direct: Bool) {
        switch action {
        case .createConnection(let c):
            let connection = APNsConnection(id: c, loop: loop, shard: self)
            connections[c] = connection
            if machine.isReconnect(c) {
                observer?.reconnecting(environment: environment, connection: Int(truncatingIfNeeded: c.value))
            }
            let bound = LoopBound(connection, on: loop)
            loop.execute { bound.value.connect() }
        case .send(let request, let c, let isRetry):
            if isRetry { observer?.pushRetried(environment: environment) }
            // The record is live while its `.send` is performed: its deadline goes with the order.
            let id = request.id, notification = request.notification, deadline = machine.push(id)?.deadline ?? .now
            guard let connection = connections[c] else {
                // Not expected (the shard forgets a connection when the machine does), but the
                // push must not wait on a stream that never opens: it goes back as never sent.
                return handle(.streamCompleted(c, id, .notSent(.unavailable("the connection to APNs was gone before the push went out"))))
            }
            if direct {
                connection.send(id, notification, deadline: deadline)
            } else {
                let bound = LoopBound(connection, on: loop)
                loop.execute { bound.value.send(id, notification, deadline: deadline) }
            }
        case .failPush(let request, let error):
            request.completion(.failure(explained(error)))
        case .completePush(let request, let response):
            request.completion(.success(response))
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
        case .handOff(let push):
            if let pool {
                pool.handOff(push, from: self)
            } else {
                perform(Machine.ending(push, .failure(.shuttingDown("the APNs client is gone; the push was not sent"))),
                        direct: false)
            }
        case .shutdownComplete:
            let waiters = shutdownWaiters
            shutdownWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    /// A push that could not go out says why, where the shard knows more than the machine: the
    /// last connect's failure, or the step of a connect still under way when its deadline came.
    /// A push written and not answered had a connection: no connect explains it.
    private func explained(_ error: APNsError) -> APNsError {
        guard !error.wasWritten else { return error }
        if error.code == .unavailable || error.code == .timeout, let why = lastConnectFailure {
            return APNsError(code: error.code, message: "\(why); \(error.message)", connectFailure: why)
        }
        if error.code == .timeout, !machine.summary.canSendNow,
           let progress = connections.values.lazy.compactMap(\.connectProgress).first {
            return APNsError(code: .timeout, message: "\(progress); \(error.message)")
        }
        return error
    }
}
