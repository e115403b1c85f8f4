internal import Basics

/// The pool's decisions, with no I/O (after async-http-client's HTTPConnectionPool.StateMachine).
///
/// The owner feeds it events (with the time) and performs the actions it returns: it opens and
/// closes connections, submits streams, arms timers and answers callers. Keeping the decisions
/// here lets every rule — stream limits, retries, backoff, GOAWAY, shutdown — be tested without
/// sockets, and guarantees that every enqueued push ends exactly once (completed or failed).
///
/// Each push has one record, `Push`, held here from `.enqueue` until the action that ends it
/// hands its `Request` back to the owner; connections and the HTTP/2 layer below know the push
/// only by its id.
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
struct PoolStateMachine<Request: PoolRequest> {
    typealias Instant = MonotonicInstant
    typealias Configuration = PoolConfiguration

    enum Event: Sendable {
        /// Opens the pool's connections.
        case start
        case enqueue(Request, deadline: Instant)
        /// A retry another machine handed off (`.handOff`): its record, retries used and all.
        case adopt(Push)
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
        /// Every connection's credentials changed (a new client certificate): each working
        /// connection drains while a replacement opens, as when its stream ids run out.
        case retireConnections
    }

    enum Action: Sendable {
        case createConnection(ConnectionID)
        /// Submit the push on the connection; `isRetry`: an earlier attempt was handed to a connection.
        case send(Request, on: ConnectionID, isRetry: Bool = false)
        /// The push ended: the machine holds nothing of it any more.
        case failPush(Request, APNsError)
        case completePush(Request, APNsResponse)
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
        case handOff(Push)
    }

    // MARK: State

    /// One push's record, from `.enqueue` to the action that ends it.
    struct Push: Sendable {
        let request: Request
        /// The push's one deadline: the machine's queue and stall checks and the owner's
        /// deadline timer (through `push(_:)`) all read it here.
        let deadline: Instant
        var state: PushState = .queued
        /// Attempts that used one of `maxRetries`.
        var retries = 0
        var tokenRetried = false
        /// Apple's last answer to a retried attempt: it stands when no later attempt gets one.
        var lastAnswer: APNsResponse?
        /// True once an attempt was handed to a connection: the next `.send` is a retry.
        var sent = false
        /// Where the last attempt went: a retry avoids it (it failed there), or prefers it (an
        /// ExpiredProviderToken: the connection is fine and goes on with the newer token).
        var lastConnection: Affinity?
        /// The connection whose loss used one of this push's retries. A send decided inside a
        /// connection's callback is submitted on the loop's next turn, so a push may be lost
        /// with a connection it never reached; when that connection then says so (`.notSent`),
        /// the retry is given back.
        var lossCountedOn: ConnectionID?
        /// A retried answer waits until then (`retryDelay` × attempt) in `delayedRetries`.
        var notBefore: Instant?

        init(request: Request, deadline: Instant, retries: Int = 0, tokenRetried: Bool = false) {
            self.request = request
            self.deadline = deadline
            self.retries = retries
            self.tokenRetried = tokenRetried
        }

        var id: PushID { request.id }
    }

    enum PushState: Equatable { case queued, inFlight(ConnectionID) }

    enum Affinity: Equatable { case avoid(ConnectionID), prefer(ConnectionID) }

    enum ConnectionState { case connecting, ready, draining }

    /// A stream open on the wire, as its connection's stall check sees it.
    enum OpenStream {
        /// Its push is live: the deadline is the push's record's.
        case pushLive
        /// Its push ended at its deadline (`.deadlinePassed`) before Apple answered; the stream
        /// still holds an HTTP/2 slot, and a stall is measured from then.
        case pushEnded(at: Instant)
    }

    struct Connection {
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
        /// Streams open on the wire, by push; includes pushes that already ended by deadline
        /// (the stream still holds an HTTP/2 slot).
        var streams = IDTable<PushID, OpenStream>(minimumCapacity: 64)

        var limit: Int { answered ? maxStreams : min(1, maxStreams) }
        var free: Int { state == .ready ? max(0, limit - streams.count) : 0 }

        /// Mutating, so that a caller reaching it through `connections.values[index]` changes it
        /// in place and reads what it needs in the same access (a read through the dictionary's
        /// getter copies the whole connection, its stream table retained).
        /// Returns the streams opened so far.
        mutating func openStream(_ id: PushID) -> Int {
            streams[id] = .pushLive
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

    struct Slot {
        var connection: ConnectionID?
        /// Consecutive connections that failed to connect or ended without carrying work, for the
        /// backoff; reset by one that carried work.
        var failures = 0
        var reconnectAt: Instant?
        /// When its last connect began, for `minimumConnectInterval`.
        var lastConnectAt: Instant?
    }

    // The machine's state. Internal rather than private only so that its extensions in other
    // files (+Pushes, +Connections) reach it; nothing outside the machine touches it.
    let configuration: Configuration
    var random: any RandomNumberGenerator
    var pushes = IDTable<PushID, Push>(minimumCapacity: 64)
    /// New pushes in arrival order; entries whose push is no longer queued are skipped lazily.
    var queue: [PushID] = []
    var queueHead = 0
    /// Retries go before new pushes: they are older and closer to their deadlines.
    var retryQueue: [PushID] = []
    var retryHead = 0
    /// Retried answers waiting out their delay; at most `maxRetries` per push, bounded by the queue.
    var delayedRetries: [PushID] = []
    /// Pushes currently waiting (both queues), the number the capacity bounds.
    var queuedCount = 0
    /// A handful per machine (its slots, and those draining): searched, not hashed.
    var connections = SmallMap<ConnectionID, Connection>()
    var slots: [Slot]
    /// Connections opened so far; the next id is made from it (see `Configuration.shard`).
    var opened: UInt64 = 0
    var started = false
    /// True once any connection was established: until then a failed connect fails the
    /// waiting pushes at once (see `failHopeless`).
    var everEstablished = false
    var isShuttingDown = false
    var shutdownReported = false

    init(configuration: Configuration = .init(), random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.configuration = configuration
        self.random = random
        self.slots = Array(repeating: Slot(), count: configuration.poolSize)
    }

    /// Pushes not yet ended.
    var livePushCount: Int { pushes.count }
    /// The record of a push not yet ended.
    func push(_ id: PushID) -> Push? { pushes[id] }
    /// Connections the pool still tracks (connecting, ready or draining).
    var connectionCount: Int { connections.count }
    /// Connection ids are handed out in order and the first `poolSize` open at `.start`: any
    /// later one replaces a connection that ended (a reconnect, for the metrics and logs).
    func isReconnect(_ c: ConnectionID) -> Bool {
        (c.value - 1 - UInt64(configuration.shard)) / UInt64(configuration.shards) >= UInt64(configuration.poolSize)
    }
    /// What an owner publishes after every event, found in one pass over the connections: the
    /// owner reads several of its fields twice per push, and each worked out alone walked them all.
    struct Summary: Equatable {
        /// A push enqueued now goes out at once: nothing waits before it and a ready connection
        /// has a free stream. An owner with several machines prefers the one that can.
        var canTakeNow = false
        /// Some connection is ready or coming up, so a push queued here has a way out.
        var hasLiveConnection = false
        /// A push enqueued now could go out: some connection is ready, not draining, and Apple
        /// allows it at least one stream. What `/ready` reports.
        var canSendNow = false
        /// Connections that may take new streams now.
        var readyConnectionCount = 0
        /// `.start` was handled.
        var isStarted = false
        /// Pushes handed to a connection and not yet ended.
        var inFlightCount = 0
        /// Pushes waiting for a connection.
        var queuedCount = 0
    }

    /// The summary as it stands after the last event: worked out once at the end of `handle`
    /// (which also returns it), so an owner reads one stored value (reading a computed property
    /// of the machine would copy the whole machine, and each read from the owner's stored
    /// machine would be an exclusivity check of its own).
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
        summary.inFlightCount = pushes.count - queuedCount
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
        case .enqueue(let request, let deadline):
            enqueue(Push(request: request, deadline: deadline), now: now, into: &actions)
        case .adopt(let push):
            adopt(push, now: now, into: &actions)
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
            // The owner's deadline timer is trusted; a stream still open keeps its slot until
            // answered, and the stall check measures from now on.
            if case .inFlight(let c)? = pushes[id]?.state, let index = connections.index(forKey: c) {
                connections.values[index].streams.update(id) { $0 = .pushEnded(at: now) }
                end(id, with: .failure(.unanswered("no answer from APNs before the push's deadline")), into: &actions)
            } else {
                end(id, with: .failure(.timeout("the push's deadline passed before it was written to APNs")), into: &actions)
            }
        case .shutdown:
            shutdown(into: &actions)
        case .retireConnections:
            for c in connections.keys where connections[c]?.state != .draining {
                retire(c, planned: true, now: now, into: &actions)
            }
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
}

// Compared in the machine's tests, whose requests are bare push ids.
extension PoolStateMachine.Push: Equatable where Request: Equatable {}
extension PoolStateMachine.Action: Equatable where Request: Equatable {}
