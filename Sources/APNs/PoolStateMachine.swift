/// Identifies one push inside the pool; the owner chooses it and keeps the notification.
struct PushID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let value: UInt64
    init(_ value: UInt64) { self.value = value }
    static func < (a: PushID, b: PushID) -> Bool { a.value < b.value }
    var description: String { "push#\(value)" }
}

/// Identifies one APNs connection; the state machine hands out a new one for every connect.
struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let value: UInt64
    init(_ value: UInt64) { self.value = value }
    static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.value < b.value }
    var description: String { "conn#\(value)" }
}

/// The pool's decisions, with no I/O (after async-http-client's HTTPConnectionPool.StateMachine).
///
/// The owner feeds it events (with the time) and performs the actions it returns: it opens and
/// closes connections, submits streams, arms timers and answers callers. Keeping the decisions
/// here lets every rule — stream limits, retries, backoff, GOAWAY, shutdown — be tested without
/// sockets, and guarantees that every enqueued push ends exactly once (completed or failed).
///
/// The owner must:
/// - call `.start` once, then report each created connection as established, failed or closed;
/// - arm a timer for each `.scheduleReconnect` and `.wakeUp` and call `.timerFired` when it fires, and also
///   call `.timerFired` regularly — `tickInterval`, 250 ms by default — (it expires queued pushes and finds stalled streams);
/// - report every submitted stream's end with `.streamCompleted` (or the connection's end), and
///   a `.send` it could not submit (closing, GOAWAY, out of stream ids) as `.notSent`;
/// - after performing `.closeConnection`, expect no more events for that id to matter.
/// - with `handsOffRetries`, `.adopt` every `.handOff` into another machine: the push has left
///   this one, and ends there.
struct PoolStateMachine {
    typealias Instant = MonotonicInstant

    struct Configuration: Sendable {
        /// Connections kept open; Apple prefers a few long-lived connections to many short ones.
        var poolSize: Int
        /// Pushes waiting for a free stream; beyond this we answer `overloaded` at once.
        var queueCapacity: Int
        /// Extra attempts after a retryable failure (500, 503, Shutdown, refused stream, lost connection).
        var maxRetries: Int
        /// First reconnect delay after a failure; doubles per consecutive failure.
        var backoffBase: Duration
        /// Apple treats rapid reconnects as an attack; never wait longer than this either.
        var backoffMax: Duration
        /// How long past a push's deadline an unanswered stream may linger before its connection is replaced.
        var stallGrace: Duration
        /// Streams one connection may open before it is retired: HTTP/2 client stream ids end at
        /// 2^31 (2^30 requests), so a connection drains well before and a fresh one takes its slot.
        var maxStreamsPerConnection: Int
        /// This machine's place among machines that share one pool (one per event loop), and their
        /// number: connection ids are `shard + 1 + k * shards`, so no two machines hand out the same.
        var shard: Int
        var shards: Int
        /// A retry that can go nowhere here but to the connection it just failed on (or nowhere at
        /// all) leaves as `.handOff` instead of waiting: the owner gives it to another machine.
        var handsOffRetries: Bool
        /// Whether Apple's 429 TooManyRequests is retried (using one of `maxRetries`), and how
        /// long a retried answer (500/503/Shutdown, 429) waits per attempt: see `APNsRetryPolicy`.
        var retriesTooManyRequests: Bool
        var retryDelay: Duration

        /// Every default of the pool, written once: `APNsClientConfiguration` starts from these.

        init(poolSize: Int = 2, queueCapacity: Int = 1000, maxRetries: Int = 2,
             backoffBase: Duration = .seconds(1), backoffMax: Duration = .seconds(60), stallGrace: Duration = .seconds(2),
             maxStreamsPerConnection: Int = 1_000_000_000,
             shard: Int = 0, shards: Int = 1, handsOffRetries: Bool = false,
             retriesTooManyRequests: Bool = false, retryDelay: Duration = .zero) {
            self.retriesTooManyRequests = retriesTooManyRequests
            self.retryDelay = max(.zero, retryDelay)
            self.shards = max(1, shards)
            self.shard = min(max(0, shard), self.shards - 1)
            self.handsOffRetries = handsOffRetries
            self.poolSize = max(1, poolSize)
            self.queueCapacity = max(0, queueCapacity)
            self.maxRetries = max(0, maxRetries)
            self.backoffBase = backoffBase
            self.backoffMax = backoffMax
            self.stallGrace = stallGrace
            self.maxStreamsPerConnection = max(1, maxStreamsPerConnection)
        }

        /// No slot connects more often than this, whatever ended its last connection: twice the
        /// first backoff step, 2 s with the defaults. A peer that sends GOAWAY after every
        /// request ends connections that all carried work, so no backoff grows: this alone keeps
        /// the slot from reconnecting in a loop. Apple's routine GOAWAY comes after minutes or
        /// hours, so its replacement opens at once.
        var minimumConnectInterval: Duration { backoffBase * 2 }
    }

    /// How a stream ended, as the connection saw it. Use ``classify(_:)`` for Apple's answers.
    enum StreamOutcome: Sendable, Equatable {
        /// 200.
        case success(APNsResponse)
        /// An answer that retrying cannot change (4xx, 429 TooManyRequests, TooManyProviderTokenUpdates:
        /// the shared token was refused, not the connection, which stays).
        case final(APNsResponse)
        /// REFUSED_STREAM, a reset stream: worth another connection.
        case retryable(APNsError)
        /// Apple's 500, 503 or Shutdown: worth another attempt; the answer stands when none is left.
        case retryableAnswer(APNsResponse)
        /// 403 ExpiredProviderToken, with a newer provider token to retry with (the connection
        /// asked `APNsCredentials`; without one it reports the answer as `.final`).
        case expiredProviderToken(APNsResponse)
        /// The push never left us: the connection was closing, going away or out of stream ids
        /// when it came to submit it. Requeued without using a retry; the connection takes no
        /// new streams and is replaced.
        case notSent(APNsError)

        static func classify(_ response: APNsResponse) -> StreamOutcome {
            if response.ok { return .success(response) }
            if response.reason == .expiredProviderToken { return .expiredProviderToken(response) }
            if response.status == 500 || response.status == 503 || response.reason == .shutdown
                || response.reason == .internalServerError || response.reason == .serviceUnavailable {
                return .retryableAnswer(response)
            }
            return .final(response)
        }

        /// The error a retried answer stands for while it is retried.
        static func unavailable(_ response: APNsResponse) -> APNsError {
            .unavailable("APNs answered \(response.status) \(response.reason?.rawValue ?? "no reason"); try again later")
        }
    }

    enum Event: Sendable {
        /// Opens the pool's connections.
        case start
        case enqueue(PushID, deadline: Instant)
        /// A retry another machine handed off (`.handOff`), with the retries it has used.
        case adopt(PushID, deadline: Instant, retries: Int, tokenRetried: Bool)
        case connectionEstablished(ConnectionID)
        /// The connect failed, or a live connection broke (TLS error, missing PING ACK, …).
        case connectionFailed(ConnectionID)
        /// The connection ended cleanly (the peer closed it, or we did).
        case connectionClosed(ConnectionID)
        /// Apple's live SETTINGS_MAX_CONCURRENT_STREAMS.
        case maxConcurrentStreamsChanged(ConnectionID, Int)
        /// `unprocessed`: the pushes on streams above GOAWAY's last_stream_id, never seen by Apple.
        case goAwayReceived(ConnectionID, unprocessed: [PushID])
        case streamCompleted(ConnectionID, PushID, StreamOutcome)
        case timerFired
        case deadlinePassed(PushID)
        case shutdown
    }

    enum Action: Sendable, Equatable {
        case createConnection(ConnectionID)
        case send(PushID, on: ConnectionID)
        case failPush(PushID, APNsError)
        case completePush(PushID, APNsResponse)
        /// Close it once performed; the pool has forgotten it (its streams are already settled).
        case closeConnection(ConnectionID)
        /// Arm a timer and call `.timerFired` after the delay; a new connection replaces `ConnectionID`.
        case scheduleReconnect(ConnectionID, after: Duration)
        /// Arm a timer and call `.timerFired` after the delay: a delayed retry comes due then, and
        /// waiting for the regular tick could release it after its deadline.
        case wakeUp(after: Duration)
        /// Shutdown finished: every push ended, every connection closed.
        case shutdownComplete
        /// The retry left this machine (see `Configuration.handsOffRetries`); the owner must
        /// `.adopt` it into another one, which then ends it.
        case handOff(PushID, retries: Int, tokenRetried: Bool)
    }

    // MARK: State

    private enum ConnectionState { case connecting, ready, draining }

    private struct Connection {
        var state: ConnectionState
        /// The pool slot it fills; nil once a replacement has taken the slot (draining).
        var slot: Int?
        /// Streams handed to it so far, for `maxStreamsPerConnection`.
        var streamsOpened = 0
        /// Apple's live limit; 1 until Apple's SETTINGS say otherwise.
        var maxStreams = 1
        /// Apple answers a connection's first authenticated request before raising its limit,
        /// so a new connection carries one stream until then. An answer also means it carried
        /// work: its end does not count towards its slot's backoff (see `replace`).
        var answered = false
        /// Streams open on the wire, with their push's deadline; includes pushes that
        /// already ended by deadline (the stream still holds an HTTP/2 slot).
        var streams = IDTable<PushID, Instant>()

        var limit: Int { answered ? maxStreams : min(1, maxStreams) }
        var free: Int { state == .ready ? max(0, limit - streams.count) : 0 }

        /// Mutating, so that a caller reaching it through `connections.values[index]` changes it
        /// in place and reads what it needs in the same access (a read through the dictionary's
        /// getter copies the whole connection, its stream table retained).
        /// Returns the streams opened so far.
        mutating func openStream(_ id: PushID, deadline: Instant) -> Int {
            streams[id] = deadline
            streamsOpened += 1
            return streamsOpened
        }

        /// Ends stream `id`; `answered`: Apple answered on it. Returns whether the connection is
        /// draining (what `streamCompleted` needs of it, read in the same access), nil when the
        /// stream was not open here.
        mutating func endStream(_ id: PushID, answered: Bool) -> Bool? {
            guard streams.removeValue(forKey: id) != nil else { return nil }
            if answered { self.answered = true }
            return state == .draining
        }
    }

    private struct Slot {
        var connection: ConnectionID?
        /// Consecutive connections that failed to connect or ended without carrying work, for the
        /// backoff; reset by one that carried work.
        var failures = 0
        var reconnectAt: Instant?
        /// When its last connect began, for `minimumConnectInterval`.
        var lastConnectAt: Instant?
    }

    private enum PushState: Equatable { case queued, inFlight(ConnectionID) }

    private enum Affinity: Equatable { case avoid(ConnectionID), prefer(ConnectionID) }



    private struct Push {
        var deadline: Instant
        var state: PushState = .queued
        var retries = 0
        var tokenRetried = false
        /// Where the last attempt went: a retry avoids it (it failed there), or prefers it (an
        /// ExpiredProviderToken: the connection is fine and goes on with the newer token).
        var lastConnection: Affinity?
        /// The connection whose loss used one of this push's retries. The owner hops to the
        /// connection's loop to submit, so a push may be lost with a connection it never
        /// reached; when that connection then says so (`.notSent`), the retry is given back.
        var lossCountedOn: ConnectionID?
        /// A retried answer waits until then (`retryDelay` × attempt) in `delayedRetries`.
        var notBefore: Instant?
    }

    let configuration: Configuration
    private var random: any RandomNumberGenerator
    private var pushes = IDTable<PushID, Push>()
    /// New pushes in arrival order; entries whose push is no longer queued are skipped lazily.
    private var queue: [PushID] = []
    private var queueHead = 0
    /// Retries go before new pushes: they are older and closer to their deadlines.
    private var retryQueue: [PushID] = []
    private var retryHead = 0
    /// Retried answers waiting out their delay; at most `maxRetries` per push, bounded by the queue.
    private var delayedRetries: [PushID] = []
    /// Pushes currently waiting (both queues), the number the capacity bounds.
    private(set) var queuedCount = 0
    /// A handful per machine (its slots, and those draining): searched, not hashed.
    private var connections = SmallMap<ConnectionID, Connection>()
    private var slots: [Slot]
    /// Connections opened so far; the next id is made from it (see `Configuration.shard`).
    private var opened: UInt64 = 0
    private var started = false
    /// True once any connection was established: until then a failed connect fails the
    /// waiting pushes at once (see `failHopeless`).
    private var everEstablished = false
    private(set) var isShuttingDown = false
    private var shutdownReported = false

    init(configuration: Configuration = .init(), random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.configuration = configuration
        self.random = random
        self.slots = Array(repeating: Slot(), count: configuration.poolSize)
    }

    /// Pushes not yet ended.
    var livePushCount: Int { pushes.count }
    /// Connections the pool still tracks (connecting, ready or draining).
    var connectionCount: Int { connections.count }
    /// Connections that may take new streams now.
    var readyConnectionCount: Int { connections.values.count { $0.state == .ready } }
    /// True when a push enqueued now could go out: some connection is ready, not draining, and
    /// Apple allows it at least one stream. What `/ready` reports.
    var canSendNow: Bool { !isShuttingDown && connections.values.contains { $0.state == .ready && $0.limit > 0 } }
    /// Connection ids are handed out in order and the first `poolSize` open at `.start`: any
    /// later one replaces a connection that ended (a reconnect, for the metrics and logs).
    func isReconnect(_ c: ConnectionID) -> Bool {
        (c.value - 1 - UInt64(configuration.shard)) / UInt64(configuration.shards) >= UInt64(configuration.poolSize)
    }
    /// True when a push enqueued now goes out at once: nothing waits before it and a ready
    /// connection has a free stream. An owner with several machines prefers the one that can.
    var canTakeNow: Bool { started && !isShuttingDown && queuedCount == 0 && bestConnection(for: nil) != nil }
    /// True once `.start` was handled.
    var isStarted: Bool { started }
    /// True while some connection is ready or coming up, so a push queued here has a way out.
    var hasLiveConnection: Bool { connections.values.contains { $0.state != .draining } }
    /// Pushes handed to a connection and not yet ended.
    var inFlightCount: Int { pushes.count - queuedCount }

    /// What an owner publishes after every event, found in one pass over the connections: each
    /// property on its own walks them all, and the owner asked for four of them twice per push.
    struct Summary: Equatable {
        var canTakeNow = false
        var hasLiveConnection = false
        var canSendNow = false
        var readyConnectionCount = 0
        var isStarted = false
        var inFlightCount = 0
        var queuedCount = 0
    }

    /// The properties of the same names at once, as they stand after the last event: worked out
    /// once at the end of `handle` (which also returns it), so an owner reads one stored value
    /// (reading a computed property of the machine copied the whole machine, and each property
    /// read from the owner's stored machine was an exclusivity check of its own).
    private(set) var summary = Summary()

    private func summarize() -> Summary {
        var summary = Summary()
        var anyFree = false
        for connection in connections.values {
            if connection.free > 0 { anyFree = true }
            if connection.state != .draining { summary.hasLiveConnection = true }
            if connection.state == .ready {
                summary.readyConnectionCount += 1
                if connection.limit > 0 { summary.canSendNow = true }
            }
        }
        summary.canSendNow = summary.canSendNow && !isShuttingDown
        // `bestConnection(for: nil)` finds a connection exactly when one has a free stream.
        summary.canTakeNow = started && !isShuttingDown && queuedCount == 0 && anyFree
        summary.isStarted = started
        summary.inFlightCount = inFlightCount
        summary.queuedCount = queuedCount
        return summary
    }

    // MARK: Events

    mutating func handle(_ event: Event, now: Instant) -> [Action] {
        var actions: [Action] = []
        handle(event, now: now, into: &actions)
        return actions
    }

    /// `handle` appending its actions to `actions`, so an owner can hand the same storage back
    /// for every event instead of a new list each time. Returns `summary`.
    @discardableResult
    mutating func handle(_ event: Event, now: Instant, into actions: inout [Action]) -> Summary {
        switch event {
        case .start:
            guard !started, !isShuttingDown else { break }
            started = true
            for index in slots.indices { open(slot: index, now: now, into: &actions) }
        case .enqueue(let id, let deadline):
            enqueue(id, deadline: deadline, now: now, into: &actions)
        case .adopt(let id, let deadline, let retries, let tokenRetried):
            adopt(id, deadline: deadline, retries: retries, tokenRetried: tokenRetried, now: now, into: &actions)
        case .connectionEstablished(let c):
            guard var connection = connections[c], connection.state == .connecting else { break }
            if isShuttingDown {
                connections[c] = nil
                actions.append(.closeConnection(c))
                break
            }
            connection.state = .ready
            connections[c] = connection
            everEstablished = true
        case .connectionFailed(let c), .connectionClosed(let c):
            lose(c, now: now, into: &actions)
        case .maxConcurrentStreamsChanged(let c, let n):
            connections[c]?.maxStreams = max(0, n)
        case .goAwayReceived(let c, let unprocessed):
            goAway(c, unprocessed: unprocessed, now: now, into: &actions)
        case .streamCompleted(let c, let id, let outcome):
            streamCompleted(c, id, outcome, now: now, into: &actions)
        case .timerFired:
            timerFired(now: now, into: &actions)
        case .deadlinePassed(let id):
            // The owner's deadline timer is trusted; a stream still open keeps its slot until answered.
            end(id, with: .failPush(id, .timeout("no answer from APNs before the push's deadline")), into: &actions)
        case .shutdown:
            shutdown(into: &actions)
        }
        dispatch(now: now, into: &actions)
        failHopeless(now: now, into: &actions)
        if isShuttingDown, !shutdownReported, connections.isEmpty, pushes.isEmpty {
            shutdownReported = true
            actions.append(.shutdownComplete)
        }
        summary = summarize()
        return summary
    }

    // MARK: Pushes

    private mutating func enqueue(_ id: PushID, deadline: Instant, now: Instant, into actions: inout [Action]) {
        // A reused id would make one caller's push end twice; ignore it (ids must be unique).
        guard pushes[id] == nil else { return }
        if isShuttingDown {
            actions.append(.failPush(id, .shuttingDown("the APNs pool is shutting down; send the push to another instance")))
            return
        }
        guard now < deadline else {
            actions.append(.failPush(id, .timeout("the push's deadline had passed before it was queued")))
            return
        }
        // A free stream means the queue is empty (dispatch drains it), so the push goes out at once.
        if queuedCount >= configuration.queueCapacity, bestConnection(for: nil) == nil {
            actions.append(.failPush(id, .overloaded("the APNs queue is full (\(configuration.queueCapacity) pushes); try again later")))
            return
        }
        pushes[id] = Push(deadline: deadline)
        queue.append(id)
        queuedCount += 1
    }

    /// A handed-off retry queues like any retry: before new pushes, and past the capacity (the
    /// machine it left gave its place up, so the owner's total stays bounded).
    private mutating func adopt(_ id: PushID, deadline: Instant, retries: Int, tokenRetried: Bool,
                                now: Instant, into actions: inout [Action]) {
        guard pushes[id] == nil else { return }
        if isShuttingDown {
            actions.append(.failPush(id, .shuttingDown("the APNs pool is shutting down; the push was not sent")))
            return
        }
        guard now < deadline else {
            actions.append(.failPush(id, .timeout("the push's deadline passed while retrying")))
            return
        }
        pushes[id] = Push(deadline: deadline, retries: retries, tokenRetried: tokenRetried)
        retryQueue.append(id)
        queuedCount += 1
    }

    /// Ends a live push exactly once: removes it everywhere and emits its answer.
    private mutating func end(_ id: PushID, with action: Action, into actions: inout [Action]) {
        guard let push = pushes.removeValue(forKey: id) else { return }
        if push.state == .queued { queuedCount -= 1 }
        // An in-flight stream keeps its slot in `streams` until Apple answers or the connection goes.
        actions.append(action)
    }

    /// Puts a push back for another attempt, or fails it when retries, deadline or shutdown forbid.
    /// `delayed`: an answer from Apple, retried after `retryDelay` × the attempt, never past the deadline.
    /// `staysOnConnection`: the retry prefers `c` itself, where any other retry prefers another.
    private mutating func retryOrFail(_ id: PushID, _ error: APNsError, from c: ConnectionID, counts: Bool,
                                      delayed: Bool = false, staysOnConnection: Bool = false, now: Instant,
                                      into actions: inout [Action]) {
        guard var push = pushes[id] else { return }
        if isShuttingDown {
            end(id, with: .failPush(id, error), into: &actions)
            return
        }
        if counts && push.retries >= configuration.maxRetries {
            let message = "\(error.message) (after \(push.retries + 1) attempts)"
            end(id, with: .failPush(id, APNsError(code: error.code, message: message)), into: &actions)
            return
        }
        if now >= push.deadline {
            end(id, with: .failPush(id, .timeout("the push's deadline passed while retrying: \(error.message)")), into: &actions)
            return
        }
        if counts { push.retries += 1 }
        let delay = delayed ? configuration.retryDelay * push.retries : .zero
        if delay > .zero, now + delay >= push.deadline {
            end(id, with: .failPush(id, .timeout("the next retry would come after the push's deadline: \(error.message)")),
                into: &actions)
            return
        }
        push.lossCountedOn = nil
        push.state = .queued
        push.lastConnection = staysOnConnection ? .prefer(c) : .avoid(c)
        queuedCount += 1
        if delay > .zero {
            push.notBefore = now + delay
            pushes[id] = push
            delayedRetries.append(id)
            actions.append(.wakeUp(after: delay))
        } else {
            pushes[id] = push
            retryQueue.append(id)
        }
    }

    /// Moves the delayed retries whose time has come to the retry queue.
    private mutating func releaseDelayedRetries(now: Instant) {
        var waiting: [PushID] = []
        for id in delayedRetries {
            guard let push = pushes[id], push.state == .queued else { continue }
            if let at = push.notBefore, at > now { waiting.append(id); continue }
            pushes[id]!.notBefore = nil
            retryQueue.append(id)
        }
        delayedRetries = waiting
    }

    /// Sends waiting pushes while some connection has a free stream.
    private mutating func dispatch(now: Instant, into actions: inout [Action]) {
        if !delayedRetries.isEmpty { releaseDelayedRetries(now: now) }
        while let (id, push, fromRetry) = peekQueued() {
            if now >= push.deadline {
                popQueued(fromRetry: fromRetry)
                end(id, with: .failPush(id, .timeout("the push's deadline passed while it waited for a free stream")), into: &actions)
                continue
            }
            if configuration.handsOffRetries, case .avoid(let last)? = push.lastConnection,
               (bestConnection(for: push) ?? last) == last {
                // Only the connection it failed on, or none, could take it here: another machine's may.
                popQueued(fromRetry: fromRetry)
                pushes[id] = nil
                queuedCount -= 1
                actions.append(.handOff(id, retries: push.retries, tokenRetried: push.tokenRetried))
                continue
            }
            guard let c = bestConnection(for: push) else { return }
            popQueued(fromRetry: fromRetry)
            place(id, push, on: c, now: now, into: &actions)
        }
    }

    private mutating func place(_ id: PushID, _ push: Push, on c: ConnectionID, now: Instant, into actions: inout [Action]) {
        var push = push
        push.state = .inFlight(c)
        pushes[id] = push
        queuedCount -= 1
        // One lookup, and the connection changed where it is stored (see `streamCompleted`).
        let index = connections.index(forKey: c)!
        let streamsOpened = connections.values[index].openStream(id, deadline: push.deadline)
        actions.append(.send(id, on: c))
        if streamsOpened >= configuration.maxStreamsPerConnection {
            // Its stream ids would run out: drain it while its replacement opens. Planned, so
            // its slot does not back off even when a low budget makes it short-lived.
            retire(c, planned: true, now: now, into: &actions)
        }
    }

    /// The next push that is really still queued, skipping entries left by ended or moved pushes;
    /// with the push itself, found in the same lookup.
    private mutating func peekQueued() -> (PushID, Push, Bool)? {
        while retryHead < retryQueue.count {
            let id = retryQueue[retryHead]
            if let push = pushes[id], push.state == .queued { return (id, push, true) }
            retryHead += 1
        }
        if retryHead > 0 { retryQueue.removeAll(keepingCapacity: true); retryHead = 0 }
        while queueHead < queue.count {
            let id = queue[queueHead]
            if let push = pushes[id], push.state == .queued { return (id, push, false) }
            queueHead += 1
        }
        if queueHead > 0 { queue.removeAll(keepingCapacity: true); queueHead = 0 }
        return nil
    }

    private mutating func popQueued(fromRetry: Bool) {
        if fromRetry { retryHead += 1 } else { queueHead += 1 }
        // Compact now and then so skipped entries cannot pile up (the queue stays bounded).
        if queueHead > 64, queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        if retryHead > 64, retryHead * 2 > retryQueue.count {
            retryQueue.removeFirst(retryHead)
            retryHead = 0
        }
    }

    /// The ready connection with room and the lightest load: the fewest open streams relative
    /// to its limit, then the fewest streams so far, then the lowest id. So a new connection
    /// (limit 1 until its first answer) gets that first stream instead of the busiest one taking
    /// everything, and light traffic takes turns. A retry prefers a connection other than its
    /// last one, but takes that one rather than wait when it alone has room; one that stays on
    /// its connection takes it whenever it has room.
    private func bestConnection(for push: Push?) -> ConnectionID? {
        var avoided: ConnectionID?
        switch push?.lastConnection {
        case .prefer(let c)?:
            if let connection = connections[c], connection.free > 0 { return c }
        case .avoid(let c)?:
            avoided = c
        case nil:
            break
        }
        var best: (id: ConnectionID, open: Int, limit: Int, opened: Int)?
        var fallback: ConnectionID?
        for index in connections.values.indices {
            let id = connections.keys[index], connection = connections.values[index]
            guard connection.free > 0 else { continue }
            if id == avoided { fallback = id; continue }
            let open = connection.streams.count, limit = connection.limit
            if let current = best {
                // open / limit against current.open / current.limit, without division.
                let mine = open * current.limit, theirs = current.open * limit
                if mine > theirs { continue }
                if mine == theirs, (connection.streamsOpened, id) > (current.opened, current.id) { continue }
            }
            best = (id, open, limit, connection.streamsOpened)
        }
        return best?.id ?? fallback
    }

    // MARK: Streams

    private mutating func streamCompleted(_ c: ConnectionID, _ id: PushID, _ outcome: StreamOutcome,
                                          now: Instant, into actions: inout [Action]) {
        if case .notSent(let error) = outcome { return notSent(c, id, error, now: now, into: &actions) }
        // Changed where it is stored: a copy taken out and written back shared its `streams`
        // with the stored one, so removing the stream copied the whole table, once per answer.
        let answered: Bool
        switch outcome {
        case .success, .final, .expiredProviderToken, .retryableAnswer:
            answered = true
        case .retryable, .notSent:
            answered = false
        }
        guard let index = connections.index(forKey: c),
              let draining = connections.values[index].endStream(id, answered: answered) else { return }

        // The push may have ended already (deadline); the stream's answer then only frees the slot.
        if let push = pushes[id], push.state == .inFlight(c) {
            switch outcome {
            case .final(let response) where response.status == 429 && response.reason != .tooManyProviderTokenUpdates
                && configuration.retriesTooManyRequests:
                retryOrFail(id, .unavailable("APNs answered 429 TooManyRequests; try again later"), from: c, counts: true,
                            delayed: true, now: now, into: &actions)
            case .success(let response), .final(let response):
                end(id, with: .completePush(id, response), into: &actions)
            case .retryable(let error):
                retryOrFail(id, error, from: c, counts: true, now: now, into: &actions)
            case .retryableAnswer(let response):
                retryOrFail(id, StreamOutcome.unavailable(response), from: c, counts: true, delayed: true,
                            now: now, into: &actions)
            case .expiredProviderToken(let response):
                if push.tokenRetried {
                    end(id, with: .completePush(id, response), into: &actions)
                } else {
                    // The token is a request header: the retry goes out with the newer one, on
                    // this connection (another only when this one has no room), and uses no retry.
                    pushes[id]!.tokenRetried = true
                    retryOrFail(id, .unavailable("APNs said the provider token expired"), from: c, counts: false,
                                staysOnConnection: true, now: now, into: &actions)
                }
            case .notSent:
                break
            }
        }

        // No answer retires a connection: the provider token is shared and a request header.
        if draining { closeIfDrained(c, into: &actions) }
    }

    /// The push never reached the wire: requeue it as if untried, and stop using the connection
    /// (closing, going away or out of stream ids, it can only refuse the next one too).
    private mutating func notSent(_ c: ConnectionID, _ id: PushID, _ error: APNsError,
                                  now: Instant, into actions: inout [Action]) {
        if let push = pushes[id] {
            if push.state == .inFlight(c), connections[c]?.streams.removeValue(forKey: id) != nil {
                retryOrFail(id, error, from: c, counts: false, now: now, into: &actions)
            } else if push.lossCountedOn == c {
                // Its connection was lost before the push reached it: that retry was not used.
                pushes[id]!.retries -= 1
                pushes[id]!.lossCountedOn = nil
            }
        } else {
            connections[c]?.streams[id] = nil
        }
        retire(c, now: now, into: &actions)
    }

    // MARK: Connections

    private mutating func open(slot index: Int, now: Instant, into actions: inout [Action]) {
        let id = ConnectionID(UInt64(configuration.shard) + 1 + opened * UInt64(configuration.shards))
        opened += 1
        connections[id] = Connection(state: .connecting, slot: index)
        slots[index].connection = id
        slots[index].reconnectAt = nil
        slots[index].lastConnectAt = now
        actions.append(.createConnection(id))
    }

    /// Exponential backoff with jitter: half the delay fixed, half random, so reconnects of
    /// many relays after an Apple outage spread out.
    private mutating func backoffDelay(failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        var delay = configuration.backoffBase * (1 << exponent)
        if delay > configuration.backoffMax { delay = configuration.backoffMax }
        // 53 random bits as a fraction in [0, 1): no rejection loop, so any injected source works.
        let jitter = Double(random.next() >> 11) / Double(UInt64(1) << 53)
        return delay / 2 + (delay / 2) * jitter
    }

    /// Gives a slot whose connection ended its next one. At once when the old connection carried
    /// work (Apple answered on it, or took streams before its GOAWAY), whatever ended it, or when
    /// we retired it as `planned` (its stream budget); after the exponential backoff when it
    /// failed to connect or ended without carrying work, growing with each such connection in a
    /// row; and never sooner than `minimumConnectInterval` after the slot's last connect, so no
    /// mix of events can make a slot connect in a loop.
    private mutating func replace(slot index: Int, carriedWork: Bool, planned: Bool = false, id c: ConnectionID,
                                  now: Instant, into actions: inout [Action]) {
        slots[index].connection = nil
        guard !isShuttingDown else { return }
        var delay = Duration.zero
        if carriedWork {
            slots[index].failures = 0
        } else if !planned {
            slots[index].failures += 1
            delay = backoffDelay(failures: slots[index].failures)
        }
        if let last = slots[index].lastConnectAt {
            delay = max(delay, last + configuration.minimumConnectInterval - now)
        }
        guard delay > .zero else {
            open(slot: index, now: now, into: &actions)
            return
        }
        slots[index].reconnectAt = now + delay
        actions.append(.scheduleReconnect(c, after: delay))
    }

    /// Takes a connection out of service: no new streams, a replacement for its slot (at once or
    /// after backoff, see `replace`), and a close once its streams have finished. `tookStreams`:
    /// Apple kept streams of it (a GOAWAY's last_stream_id), which counts as carrying work.
    private mutating func retire(_ c: ConnectionID, planned: Bool = false, tookStreams: Bool = false, now: Instant,
                                 into actions: inout [Action]) {
        guard var connection = connections[c] else { return }
        let slot = connection.slot
        connection.state = .draining
        connection.slot = nil
        connections[c] = connection
        if let slot {
            replace(slot: slot, carriedWork: connection.answered || tookStreams, planned: planned, id: c, now: now, into: &actions)
        }
        closeIfDrained(c, into: &actions)
    }

    private mutating func closeIfDrained(_ c: ConnectionID, into actions: inout [Action]) {
        guard let connection = connections[c], connection.state == .draining, connection.streams.isEmpty else { return }
        connections[c] = nil
        actions.append(.closeConnection(c))
    }

    private mutating func goAway(_ c: ConnectionID, unprocessed: [PushID], now: Instant, into actions: inout [Action]) {
        guard var connection = connections[c] else { return }
        for id in unprocessed where connection.streams.removeValue(forKey: id) != nil {
            if pushes[id]?.state == .inFlight(c) {
                // Apple never saw these: another connection may take them without using a retry.
                connections[c] = connection
                retryOrFail(id, .unavailable("APNs sent GOAWAY before processing the push"), from: c, counts: false,
                            now: now, into: &actions)
            }
        }
        connections[c] = connection
        // Streams left after removing the unprocessed ones are at or below last_stream_id: Apple
        // took them, so the connection carried work, like one Apple answered on, and its
        // replacement opens at once (Apple recycles healthy connections with a graceful GOAWAY,
        // often before its answers). Only a GOAWAY that took nothing, on a connection never
        // answered, looks like one that cannot work: its slot backs off.
        retire(c, tookStreams: !connection.streams.isEmpty, now: now, into: &actions)
    }

    /// The connection is gone (a failed connect, or a close): its open streams are retried
    /// elsewhere, its slot reconnects.
    private mutating func lose(_ c: ConnectionID, now: Instant, into actions: inout [Action]) {
        guard let connection = connections.removeValue(forKey: c) else { return }
        lostStreams(of: connection, c, "the connection to APNs was lost", now: now, into: &actions)
        guard let slot = connection.slot else { return }
        replace(slot: slot, carriedWork: connection.answered, id: c, now: now, into: &actions)
    }

    /// Retries the pushes on a connection that is gone; each uses a retry, given back if the
    /// connection later says the push never left (`.notSent`).
    private mutating func lostStreams(of connection: Connection, _ c: ConnectionID, _ why: String,
                                      now: Instant, into actions: inout [Action]) {
        for id in connection.streams.sortedKeys where pushes[id]?.state == .inFlight(c) {
            retryOrFail(id, .unavailable(why), from: c, counts: true, now: now, into: &actions)
            if pushes[id]?.state == .queued { pushes[id]!.lossCountedOn = c }
        }
    }

    /// When no connection is up or coming up before a queued push's deadline (every slot in
    /// backoff past it), fail it now with `unavailable` (the sender retries) instead of holding
    /// it until it times out. A push enqueued then is answered at once. Before any connection
    /// was ever established (a wrong host, nothing listening, an untrusted certificate), every
    /// slot's failed connect fails the waiting pushes at once, whatever their deadline: the
    /// owner adds why the connect failed.
    private mutating func failHopeless(now: Instant, into actions: inout [Action]) {
        guard started, !isShuttingDown, queuedCount > 0 else { return }
        guard !connections.values.contains(where: { $0.state != .draining }) else { return }
        guard let earliest = slots.compactMap(\.reconnectAt).min() else { return }
        let wait = Int(((earliest - now) / .seconds(1)).rounded(.up))
        for id in queuedIDs() where !everEstablished || pushes[id]!.deadline <= earliest {
            let error = everEstablished
                ? APNsError.unavailable(
                    "every connection to APNs is failing and the next attempt, in \(wait) s, comes after the push's deadline; try again later")
                : APNsError.unavailable("no connection to APNs could be made yet; the next attempt is in \(wait) s; try again later")
            end(id, with: .failPush(id, error), into: &actions)
        }
    }

    private func queuedIDs() -> [PushID] {
        var ids: [PushID] = []
        for id in retryQueue[retryHead...] where pushes[id]?.state == .queued { ids.append(id) }
        for id in queue[queueHead...] where pushes[id]?.state == .queued { ids.append(id) }
        for id in delayedRetries where pushes[id]?.state == .queued { ids.append(id) }
        // A push can sit in both lists only after a stale entry; report it once.
        var seen = Set<PushID>()
        return ids.filter { seen.insert($0).inserted }
    }

    // MARK: Time

    private mutating func timerFired(now: Instant, into actions: inout [Action]) {
        if !isShuttingDown && started {
            for index in slots.indices where slots[index].connection == nil {
                if let at = slots[index].reconnectAt, at > now { continue }
                open(slot: index, now: now, into: &actions)
            }
        }
        for id in queuedIDs() where pushes[id]!.deadline <= now {
            end(id, with: .failPush(id, .timeout("no free stream to APNs before the push's deadline")), into: &actions)
        }
        // A stream unanswered well past its deadline means Apple stopped answering on that connection.
        let stalled = connections.keys { connection in
            connection.streams.containsValue { $0 + configuration.stallGrace <= now }
        }.sorted()
        for c in stalled {
            guard let connection = connections.removeValue(forKey: c) else { continue }
            actions.append(.closeConnection(c))
            lostStreams(of: connection, c, "the connection to APNs stalled", now: now, into: &actions)
            if let slot = connection.slot {
                replace(slot: slot, carriedWork: connection.answered, id: c, now: now, into: &actions)
            }
        }
    }

    private mutating func shutdown(into actions: inout [Action]) {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        for id in queuedIDs() {
            end(id, with: .failPush(id, .shuttingDown("the APNs pool is shutting down; the push was not sent")), into: &actions)
        }
        for index in slots.indices {
            slots[index].connection = nil
            slots[index].reconnectAt = nil
        }
        for c in connections.keys.sorted() {
            connections[c]!.slot = nil
            connections[c]!.state = .draining
            closeIfDrained(c, into: &actions)
        }
    }
}
