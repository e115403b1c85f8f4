// The HTTP/1.1 server on the event loops: accepts, parses, calls the responder, writes
// answers in order, enforces timeouts and the connection cap, drains on shutdown.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization

/// The only thing the server knows about the application, so routing and the relay's
/// logic stay testable without sockets.
public protocol HTTPResponder: Sendable {
    /// The simple form. Through the default `respond(to:completion:)` it runs on Swift's task
    /// pool, never on an event loop, so it may await as long as it needs (the relay bounds that
    /// with its push deadline).
    func respond(to request: HTTPRequest) async -> HTTPResponse

    /// What the server calls. It runs on the connection's event loop, so it must not block;
    /// `completion` runs exactly once, from any thread. The default runs `respond(to:)` in a
    /// Task; a responder that can answer from callbacks skips the Task and the hops through
    /// the cooperative pool, which cost several thread wake-ups per request.
    func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void)
}

extension HTTPResponder {
    public func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) {
        Task { completion(await respond(to: request)) }
    }
}

/// Receives one line per notable server event (bind, rejected connection); the server
/// takes a closure so it needs no logging framework.
public typealias HTTPServerLogger = @Sendable (_ message: String) -> Void

/// How the server listens and how long it waits for slow peers.
public struct HTTPServerConfiguration: Sendable {
    /// "0.0.0.0" for every IPv4 address, "::" for both families, "127.0.0.1" for loopback.
    public var host: String
    /// 0 picks any free port (tests); `HTTPServer.port` tells which.
    public var port: Int
    /// Caps on request size; also bound the pipelined input a busy connection may hold.
    public var limits: HTTPParserLimits
    /// From the first byte of a request to the end of its head; beyond it the answer is 408,
    /// so a slowloris client holds a connection for a bounded time.
    public var headerTimeout: Duration
    /// Longest pause while a body arrives; beyond it the answer is 408 (which Mastodon retries).
    public var bodyTimeout: Duration
    /// From the first byte of a request to its last, head and body together: past it the
    /// answer is 408 whatever the pace, so a body trickled a byte at a time can't hold its
    /// buffer forever.
    public var requestTimeout: Duration
    /// A kept connection with no request in progress closes silently after this. Longer than
    /// Mastodon's 30 s pool idle time, so the client closes first and never sends a request
    /// onto a connection the server is closing.
    public var idleTimeout: Duration
    /// A peer that does not take our bytes for this long is cut off, so it can't pin memory.
    public var writeTimeout: Duration
    /// At most this many connections are open, so a flood can't exhaust the file descriptors
    /// needed for the connections to Apple. At the cap an idle connection or the slowest request
    /// still arriving makes room for a new one (the order is `ConnectionCap`'s); when nothing
    /// may give way, the new one is closed at once.
    public var maxConnections: Int
    /// At the cap a kept connection gives way only once idle at least this long: a client between
    /// two requests (Mastodon's workers send every few milliseconds) is never cut as it sends,
    /// while connections held idle by a flood age past it within a second.
    public var minimumIdleBeforeEviction: Duration
    /// Bytes all half-received requests may hold together. Past it the connections holding
    /// the most stop being read and the slowest senders are answered 408 (see `RequestBudget`).
    public var maxBufferedRequestBytes: Int
    /// Loops of the group the server makes when none is given.
    public var loopCount: Int

    public init(
        host: String = "0.0.0.0", port: Int = 3000, limits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(75), writeTimeout: Duration = .seconds(10),
        maxConnections: Int = 10_000, maxBufferedRequestBytes: Int = 64 << 20,
        minimumIdleBeforeEviction: Duration = .seconds(1), loopCount: Int = System.coreCount
    ) {
        self.host = host
        self.port = port
        self.limits = limits
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.minimumIdleBeforeEviction = minimumIdleBeforeEviction
        self.maxBufferedRequestBytes = maxBufferedRequestBytes
        self.loopCount = loopCount
    }

    /// How often each loop checks its connections' deadlines: an eighth of the shortest
    /// timeout (between 5 ms and 1 s), so a deadline is met within about 12 % and the
    /// check costs nothing per request.
    var sweepInterval: Duration {
        let shortest = min(min(headerTimeout, bodyTimeout), min(min(idleTimeout, writeTimeout), requestTimeout))
        return min(max(shortest / 8, .milliseconds(5)), .seconds(1))
    }
}

/// An HTTP/1.1 server whose connections live on event loops.
public final class HTTPServer: Sendable {
    private let core: ServerCore
    private let listener: TCPListener
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let stopped = Atomic<Bool>(false)

    /// Binds and starts serving. Without a `group` the server makes one of
    /// `configuration.loopCount` loops and shuts it down in `stop()`.
    public static func start(
        configuration: HTTPServerConfiguration, group: EventLoopGroup? = nil,
        responder: any HTTPResponder, logger: HTTPServerLogger? = nil
    ) throws -> HTTPServer {
        let ownsGroup = group == nil
        let group = try group ?? EventLoopGroup(loopCount: max(1, configuration.loopCount))
        let core = ServerCore(configuration: configuration, group: group, responder: responder, logger: logger)
        let listener: TCPListener
        do {
            listener = try TCPListener.bind(host: configuration.host, port: configuration.port, group: group) {
                [core] stream in core.accept(stream)
            }
        } catch {
            if ownsGroup { group.shutdown() }
            throw error
        }
        core.startSweeps()
        logger?("http server listening on \(listener.localAddress)")
        return HTTPServer(core: core, listener: listener, group: group, ownsGroup: ownsGroup)
    }

    private init(core: ServerCore, listener: TCPListener, group: EventLoopGroup, ownsGroup: Bool) {
        self.core = core
        self.listener = listener
        self.group = group
        self.ownsGroup = ownsGroup
    }

    /// The port actually bound (the one the kernel picked when configured with 0).
    public var port: Int { listener.localPort }

    /// Connections open now; drain waits for this to reach zero.
    public var openConnectionCount: Int { core.counters.open.load(ordering: .relaxed) }

    /// Connections closed at once because `maxConnections` were open and none was idle: a
    /// metric to watch.
    public var rejectedConnectionCount: Int { core.counters.rejected.load(ordering: .relaxed) }

    /// Connections closed to make room for a new one at `maxConnections`: idle ones, or the
    /// slowest request still arriving (answered 408).
    public var evictedConnectionCount: Int { core.counters.evicted.load(ordering: .relaxed) }

    /// Bytes held now by requests still arriving (see `maxBufferedRequestBytes`).
    public var bufferedRequestBytes: Int { core.counters.bufferedBytes.load(ordering: .relaxed) }

    /// Half-received requests answered 408 because the buffered bytes went over
    /// `maxBufferedRequestBytes`.
    public var budgetCutCount: Int { core.counters.budgetCuts.load(ordering: .relaxed) }

    /// Graceful shutdown: stop accepting, let requests in flight finish (answered with
    /// `Connection: close`), close idle connections at once. True when every connection
    /// closed before `deadline`; call `stop()` afterwards either way.
    public func drain(deadline: Duration) async -> Bool {
        let end = ContinuousClock.now + deadline
        core.draining.store(true, ordering: .sequentiallyConsistent)
        await Self.offLoop { [listener] in listener.close() }
        for context in core.contexts {
            context.loop.execute { context.beginDrain() }
        }
        while core.counters.open.load(ordering: .relaxed) > 0 {
            if ContinuousClock.now >= end { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Stops at once: closes the listener and every connection (answers in flight are
    /// dropped). Waits until the loops have done it. Safe to call twice.
    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        core.draining.store(true, ordering: .sequentiallyConsistent)
        listener.close()
        for context in core.contexts {
            let loop = context.loop
            if loop.inEventLoop {
                context.closeAll()
            } else {
                let done = DispatchSemaphore(value: 0)
                loop.execute { context.closeAll(); done.signal() }
                // A loop that has shut down drops the job; don't wait forever for it.
                _ = done.wait(timeout: .now() + .seconds(5))
            }
        }
        if ownsGroup { group.shutdown() }
    }

    /// Runs a blocking call on a serial queue's thread (an overcommit thread, so it can't
    /// be starved by a busy pool), so the task pool never blocks on a loop.
    private static func offLoop(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue(label: "http-server-drain").async {
                body()
                c.resume()
            }
        }
    }
}

/// The server's counters, shared by every loop.
final class ServerCounters: Sendable {
    let open = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let evicted = Atomic<Int>(0)
    /// What every connection's parser holds, summed (each connection adds its changes).
    let bufferedBytes = Atomic<Int>(0)
    let budgetCuts = Atomic<Int>(0)
}

/// What every connection of the server shares. Immutable apart from atomics; each loop's
/// mutable state is in its `LoopContext`.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let logger: HTTPServerLogger?
    /// One per loop, in the group's order.
    let contexts: [LoopContext]
    private let contextIndex: [ObjectIdentifier: Int]
    let counters = ServerCounters()
    let draining = Atomic<Bool>(false)
    let cap: ConnectionCap
    /// Unconsumed pipelined input a connection may hold while it answers; beyond it reading
    /// pauses and TCP slows the sender down.
    let maxBufferedInput: Int

    init(configuration: HTTPServerConfiguration, group: EventLoopGroup, responder: any HTTPResponder,
         logger: HTTPServerLogger?) {
        self.configuration = configuration
        self.responder = responder
        self.logger = logger
        cap = ConnectionCap(maxConnections: configuration.maxConnections,
                            minimumKeptIdle: configuration.minimumIdleBeforeEviction)
        let limits = configuration.limits
        maxBufferedInput = 2 * limits.maxBodyBytes + limits.maxHeaderBytes + limits.maxRequestLineBytes
        let epoch = ContinuousClock.now
        let counters = self.counters
        contexts = group.loops.enumerated().map { index, loop in
            LoopContext(loop: loop, configuration: configuration, counters: counters, epoch: epoch,
                        trimsMemory: index == 0, logger: logger)
        }
        var contextIndex: [ObjectIdentifier: Int] = [:]
        for (index, loop) in group.loops.enumerated() { contextIndex[ObjectIdentifier(loop)] = index }
        self.contextIndex = contextIndex
    }

    func startSweeps() {
        for context in contexts {
            context.loop.execute { context.scheduleSweep() }
        }
    }

    /// Runs on the accepted stream's loop.
    func accept(_ stream: TCPStream) {
        if draining.load(ordering: .relaxed) {
            stream.close()
            return
        }
        let open = counters.open.wrappingAdd(1, ordering: .relaxed).newValue
        guard let index = contextIndex[ObjectIdentifier(stream.loop)] else {
            counters.open.wrappingSubtract(1, ordering: .relaxed)
            stream.close()
            return
        }
        let context = contexts[index]
        var evictElsewhere: (LoopContext, IdleKind, Duration)?
        let now = ContinuousClock.now
        let decision = open > cap.maxConnections
            ? cap.decide(open: open, oldestIdle: contexts.map { c in IdleKind.allCases.map { c.oldestIdle($0) } },
                         local: index, now: now)
            : .accept
        let madeRoom: Bool
        switch decision {
        case .accept:
            madeRoom = true
        case .evict(let loop, let kind) where loop == index:
            madeRoom = context.evictLongestIdle(kind, idleAtLeast: cap.minimumIdle(kind), now: now)
            if madeRoom { noteEvicted() }
        case .evict(let loop, let kind):
            evictElsewhere = (contexts[loop], kind, cap.minimumIdle(kind))
            madeRoom = true
        case .cutSlowest(let fresh):
            if context.cutSlowestArriving(cap: cap, now: now) {
                madeRoom = true
                noteEvicted()
            } else if let loop = fresh, loop == index {
                madeRoom = context.evictLongestIdle(.fresh, idleAtLeast: .zero, now: now)
                if madeRoom { noteEvicted() }
            } else if let loop = fresh {
                evictElsewhere = (contexts[loop], .fresh, .zero)
                madeRoom = true
            } else {
                madeRoom = false
            }
        }
        guard madeRoom else {
            counters.open.wrappingSubtract(1, ordering: .relaxed)
            noteRejected()
            stream.close()
            return
        }
        let connection = HTTPConnection(stream: stream, core: self, context: context)
        context.add(connection)
        stream.handler = connection
        connection.settle()
        if let (remote, kind, minimum) = evictElsewhere {
            // The new connection is served while the other loop closes its longest-idle one;
            // if that one got busy meanwhile, the new one goes instead, so the cap holds.
            remote.loop.execute { [self] in
                if remote.evictLongestIdle(kind, idleAtLeast: minimum, now: .now) {
                    noteEvicted()
                } else {
                    context.loop.execute { [self] in
                        noteRejected()
                        connection.closeNow()
                    }
                }
            }
        }
    }

    /// Counted before the close, so whoever sees the close also sees the count.
    private func noteRejected() {
        let rejected = counters.rejected.wrappingAdd(1, ordering: .relaxed).newValue
        if rejected == 1 || rejected % 1000 == 0 {
            logger?("http connection cap of \(configuration.maxConnections) reached with no idle connection; \(rejected) connections rejected so far")
        }
    }

    private func noteEvicted() {
        let evicted = counters.evicted.wrappingAdd(1, ordering: .relaxed).newValue
        if evicted == 1 || evicted % 1000 == 0 {
            logger?("http connection cap of \(configuration.maxConnections) reached; closed an idle connection, or the slowest request still arriving, to make room (\(evicted) so far)")
        }
    }

    func connectionClosed() {
        counters.open.wrappingSubtract(1, ordering: .relaxed)
    }
}

/// One loop's share of the server: its connections (for the timeout sweep, drain and the
/// request budget), the idle ones in the order they became idle (for the connection cap),
/// the cached Date header and the buffer responses are serialized into.
///
/// `@unchecked Sendable`: it is shared through `ServerCore`, but every member except the
/// immutable ones and the atomics `oldestFreshNanos`/`oldestKeptNanos` is touched only on `loop`'s thread (all
/// callers hop with `execute`).
final class LoopContext: @unchecked Sendable {
    let loop: EventLoop
    let configuration: HTTPServerConfiguration
    let counters: ServerCounters
    let budget: RequestBudget
    private let logger: HTTPServerLogger?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private var draining = false
    private var closed = false
    private var dateSecond = -1
    private var dateText = ""
    /// Reused for every response on this loop: one serialization buffer, no per-request allocation.
    var output: [UInt8] = []

    /// Idle connections, longest idle first, one list per `IdleKind` (a connection joins its
    /// list's tail when it becomes idle, so each list stays in `idleSince` order).
    private var idleHeads: [HTTPConnection?] = [nil, nil]
    private var idleTails: [HTTPConnection?] = [nil, nil]
    /// Each head's `idleSince` as nanoseconds after `epoch` (0: none idle), for other loops'
    /// cap decisions.
    private let oldestFreshNanos = Atomic<Int64>(0)
    private let oldestKeptNanos = Atomic<Int64>(0)
    private let epoch: ContinuousClock.Instant
    /// Connections of this loop paused for the request budget.
    var budgetPausedCount = 0
    /// One loop decides when freed memory goes back to the system.
    private var trimPolicy: MemoryTrimPolicy?

    init(loop: EventLoop, configuration: HTTPServerConfiguration, counters: ServerCounters,
         epoch: ContinuousClock.Instant, trimsMemory: Bool, logger: HTTPServerLogger?) {
        self.loop = loop
        self.configuration = configuration
        self.counters = counters
        self.epoch = epoch
        self.logger = logger
        budget = RequestBudget(limit: configuration.maxBufferedRequestBytes)
        trimPolicy = trimsMemory ? MemoryTrimPolicy() : nil
        output.reserveCapacity(4096)
    }

    var isDraining: Bool { draining }

    /// The Date header value, formatted at most once per second per loop.
    var date: String {
        let now = Int(time(nil))
        if now != dateSecond {
            dateSecond = now
            dateText = httpDate(now)
        }
        return dateText
    }

    func add(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = connection
        if draining { connection.beginDrain() }
    }

    func remove(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
        setIdle(connection, nil)
    }

    // MARK: Idle connections, for the cap

    /// Since when this loop's longest-idle connection of `kind` has been idle; readable from any loop.
    func oldestIdle(_ kind: IdleKind) -> ContinuousClock.Instant? {
        let nanos = kind == .fresh ? oldestFreshNanos.load(ordering: .relaxed) : oldestKeptNanos.load(ordering: .relaxed)
        return nanos == 0 ? nil : epoch + .nanoseconds(nanos)
    }

    /// Puts the connection on the tail of its kind's idle list, or takes it off.
    func setIdle(_ connection: HTTPConnection, _ idle: IdleKind?) {
        guard idle != connection.listedIdle else { return }
        if let listed = connection.listedIdle {
            let k = listed.rawValue
            let previous = connection.idlePrevious, next = connection.idleNext
            if let previous { previous.idleNext = next } else { idleHeads[k] = next }
            if let next { next.idlePrevious = previous } else { idleTails[k] = previous }
            connection.idlePrevious = nil
            connection.idleNext = nil
            connection.listedIdle = nil
            if previous == nil { publishOldestIdle(listed) }
        }
        if let idle {
            let k = idle.rawValue
            connection.listedIdle = idle
            connection.idlePrevious = idleTails[k]
            connection.idleNext = nil
            idleTails[k]?.idleNext = connection
            idleTails[k] = connection
            if idleHeads[k] == nil {
                idleHeads[k] = connection
                publishOldestIdle(idle)
            }
        }
    }

    private func publishOldestIdle(_ kind: IdleKind) {
        var nanos: Int64 = 0
        if let head = idleHeads[kind.rawValue] {
            let (seconds, attoseconds) = (head.idleSince - epoch).components
            nanos = max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        switch kind {
        case .fresh: oldestFreshNanos.store(nanos, ordering: .relaxed)
        case .kept: oldestKeptNanos.store(nanos, ordering: .relaxed)
        }
    }

    /// Closes the connection of `kind` idle the longest (it has nothing in progress, so
    /// nothing is lost) if it has been idle at least `minimum`; false when there is none.
    func evictLongestIdle(_ kind: IdleKind, idleAtLeast minimum: Duration, now: ContinuousClock.Instant) -> Bool {
        guard let victim = idleHeads[kind.rawValue], now - victim.idleSince >= minimum else { return false }
        victim.closeNow()
        return true
    }

    /// At the cap with nothing idle: answers 408 to this loop's slowest request still arriving
    /// (a trickled body, a stuck head), so the new connection has room; false when there is none.
    func cutSlowestArriving(cap: ConnectionCap, now: ContinuousClock.Instant) -> Bool {
        let arriving = connections.values.filter { $0.budgetCandidate != nil }
        guard let index = cap.slowestToCut(arriving.map { $0.budgetCandidate! }, now: now) else { return false }
        arriving[index].cutForCap()
        return true
    }

    // MARK: The request budget

    /// Over the budget: answers 408 to the slowest of this loop's half-received requests until
    /// the total is back under the resume mark; under it, lets paused connections read again.
    func enforceBudget(now: ContinuousClock.Instant) {
        let total = counters.bufferedBytes.load(ordering: .relaxed)
        if total > budget.limit {
            let arriving = connections.values.filter { $0.budgetCandidate != nil }
            let open = counters.open.load(ordering: .relaxed)
            let cut = budget.victims(total: total, open: open, candidates: arriving.map { $0.budgetCandidate! }, now: now)
            for index in cut { arriving[index].cutForBudget() }
            if !cut.isEmpty {
                let cuts = counters.budgetCuts.wrappingAdd(cut.count, ordering: .relaxed).newValue
                if cuts == cut.count || cuts / 1000 != (cuts - cut.count) / 1000 {
                    logger?("http buffered request bytes over \(budget.limit); answered 408 to the slowest senders (\(cuts) so far)")
                }
            }
        }
        if budgetPausedCount > 0 && budget.mayResume(total: counters.bufferedBytes.load(ordering: .relaxed)) {
            for connection in Array(connections.values) { connection.resumeAfterBudgetPause() }
        }
    }

    // MARK: Sweep, drain, stop

    func scheduleSweep() {
        guard !closed else { return }
        loop.schedule(after: configuration.sweepInterval) { [self] in
            sweep(now: .now)
            scheduleSweep()
        }
    }

    private func sweep(now: ContinuousClock.Instant) {
        if var policy = trimPolicy {
            let trim = policy.observe(bufferedBytes: counters.bufferedBytes.load(ordering: .relaxed),
                                      openConnections: counters.open.load(ordering: .relaxed))
            trimPolicy = policy
            // It walks the whole heap: off the loop.
            if trim { DispatchQueue.global().async { Allocator.giveBackFreeMemory() } }
        }
        guard !connections.isEmpty else { return }
        // Acting may close connections, which mutates the dictionary: collect first.
        for connection in Array(connections.values) {
            connection.checkTimeouts(now: now)
        }
        enforceBudget(now: now)
    }

    func beginDrain() {
        draining = true
        for connection in Array(connections.values) {
            connection.beginDrain()
        }
    }

    func closeAll() {
        draining = true
        closed = true
        for connection in Array(connections.values) {
            connection.closeNow()
        }
    }
}

/// One accepted connection: reads into the parser, answers one request at a time (so
/// pipelined answers keep their order), and closes when the protocol or a timeout says so.
///
/// `@unchecked Sendable`: the responder's task carries it back to its loop through
/// `loop.execute`; every member is touched only on that loop's thread.
final class HTTPConnection: TCPStreamHandler, @unchecked Sendable {
    private let stream: TCPStream
    private let core: ServerCore
    private let context: LoopContext
    private var parser: HTTPParser
    private var timeouts: ConnectionTimeouts
    private let peer: String?
    /// The responder works on a request; later requests wait in the parser.
    private var responding = false
    /// A response is out with `Connection: close` (or an error): nothing more is read.
    private var closing = false
    /// Answers wait until the peer has taken the previous one (bounded output).
    private var waitingForDrain = false
    /// Reading stops while too much pipelined input waits, or for the server's request budget.
    private var pausedForPipelining = false
    private var pausedForBudget = false
    private var streamPaused = false
    private var isClosed = false
    /// What this connection's parser holds, as last added to the server's total.
    private var accountedBytes = 0
    /// Bytes read since the current request began: its sender's pace, for the budget.
    private var requestBytes = 0
    /// Some byte has arrived: the connection is no longer `.fresh` when idle.
    private var hasReceived = false
    /// Links of the loop's idle lists (`LoopContext.setIdle` keeps them).
    var listedIdle: IdleKind?
    var idleNext: HTTPConnection?
    weak var idlePrevious: HTTPConnection?
    /// The peer shut down its sending side: answer what is complete, then close.
    private var peerFinished = false
    /// An event parsed ahead, after the peer's EOF, to learn whether an answer is the last.
    private var lookahead: HTTPParserEvent?

    init(stream: TCPStream, core: ServerCore, context: LoopContext) {
        self.stream = stream
        self.core = core
        self.context = context
        peer = stream.peerAddress?.description
        parser = HTTPParser(limits: core.configuration.limits, peerAddress: peer)
        timeouts = ConnectionTimeouts(configuration: core.configuration, now: .now)
    }

    private var phase: ConnectionPhase {
        if responding || waitingForDrain { return .responding }
        if parser.isIdle { return .idle }
        return parser.isReceivingBody ? .receivingBody : .receivingHead
    }

    // MARK: TCPStreamHandler

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        if closing { return }
        let now = ContinuousClock.now
        if !responding && parser.isIdle {
            timeouts.headStart = now
            requestBytes = 0
        }
        requestBytes += bytes.count
        hasReceived = true
        timeouts.lastRead = now
        parser.append(bytes)
        if responding || waitingForDrain {
            if parser.bufferedByteCount > core.maxBufferedInput {
                pausedForPipelining = true
                updateReading()
            }
        } else {
            processInput()
        }
        settle()
        checkBudget(now: now)
    }

    func streamDidDrainWrites(_ stream: TCPStream) {
        timeouts.noteWriteBuffer(0, now: .now)
        guard waitingForDrain else { return }
        waitingForDrain = false
        resumeAfterResponse()
        settle()
    }

    /// Complete requests already received are still answered (every push ends with an
    /// answer); a partial one is dropped, since its sender gave up.
    func streamDidReadEOF(_ stream: TCPStream) {
        peerFinished = true
        if closing || responding || waitingForDrain { return }  // `finish` or the flush ends it
        processInput()
        settle()
    }

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        guard !isClosed else { return }
        isClosed = true
        if pausedForBudget {
            pausedForBudget = false
            context.budgetPausedCount -= 1
        }
        context.remove(self)
        settle()
        core.connectionClosed()
    }

    // MARK: Memory, idleness and the request budget

    /// Since when the connection has had nothing in progress (meaningful while idle).
    var idleSince: ContinuousClock.Instant { timeouts.idleSince }

    /// Brings the server's view up to date after any change: the bytes the parser holds in
    /// the shared total, and whether the connection is on its loop's idle list.
    func settle() {
        let held = isClosed ? 0 : parser.heldByteCount
        if held != accountedBytes {
            core.counters.bufferedBytes.wrappingAdd(held - accountedBytes, ordering: .relaxed)
            accountedBytes = held
        }
        let idle = !isClosed && !closing && phase == .idle
        context.setIdle(self, idle ? (hasReceived ? .kept : .fresh) : nil)
    }

    /// Over the budget: stop reading this connection if it holds a fair share or more, and
    /// let the loop cut the slowest senders.
    private func checkBudget(now: ContinuousClock.Instant) {
        let budget = context.budget
        let total = core.counters.bufferedBytes.load(ordering: .relaxed)
        guard total > budget.limit else { return }
        if !isClosed && !closing && !pausedForBudget && !parser.isIdle
            && budget.shouldPause(held: accountedBytes, total: total, open: core.counters.open.load(ordering: .relaxed)) {
            pausedForBudget = true
            context.budgetPausedCount += 1
            updateReading()
        }
        context.enforceBudget(now: now)
    }

    /// The half-received request as the budget sees it; nil unless one is arriving.
    var budgetCandidate: RequestBudget.Candidate? {
        guard !isClosed, !closing else { return nil }
        let phase = self.phase
        guard phase == .receivingHead || phase == .receivingBody else { return nil }
        return RequestBudget.Candidate(held: accountedBytes, received: requestBytes, since: timeouts.headStart)
    }

    /// Answers 408 (Mastodon retries it) and closes, freeing what the request held.
    func cutForBudget() {
        respondAndClose(HTTPResponse(
            status: 408, reason: "too many unfinished requests are held; send the whole request at once and retry"))
    }

    /// Answers 408 (Mastodon retries it) and closes, to make room at the connection cap.
    func cutForCap() {
        respondAndClose(HTTPResponse(
            status: 408, reason: "the server is at its connection cap and this request was the slowest to arrive; send the whole request at once and retry"))
    }

    func resumeAfterBudgetPause() {
        guard pausedForBudget, !isClosed else { return }
        pausedForBudget = false
        context.budgetPausedCount -= 1
        updateReading()
    }

    private func updateReading() {
        let pause = pausedForPipelining || pausedForBudget
        guard pause != streamPaused, !isClosed else { return }
        streamPaused = pause
        if pause { stream.pauseReading() } else { stream.resumeReading() }
    }

    // MARK: Requests

    /// Pulls events from the parser until a request goes to the responder or bytes run out.
    private func processInput() {
        while !responding && !closing && !isClosed {
            guard let event = nextEvent() else { break }
            switch event {
            case .expectContinue:
                if peerFinished { continue }  // the body can no longer come
                HTTPResponse.continueHead.withUnsafeBytes { stream.write($0) }
                noteWrite()
            case .error(let error):
                respondAndClose(HTTPResponse(parseError: error))
                return
            case .request(let request):
                dispatch(request)
            }
        }
        if pausedForPipelining && !closing && parser.bufferedByteCount <= core.maxBufferedInput {
            pausedForPipelining = false
            updateReading()
        }
        if !responding && !closing && (peerFinished || (context.isDraining && parser.isIdle)) {
            closeWhenFlushed()
        }
    }

    private func nextEvent() -> HTTPParserEvent? {
        if let event = lookahead {
            lookahead = nil
            return event
        }
        return parser.next()
    }

    /// After the peer's EOF: whether another complete request (or an error to answer)
    /// waits, so the answer before it keeps the connection and the last one says close.
    private func hasMoreToAnswer() -> Bool {
        while lookahead == nil, let event = parser.next() {
            if case .expectContinue = event { continue }
            lookahead = event
        }
        return lookahead != nil
    }

    private func dispatch(_ request: HTTPRequest) {
        responding = true
        let responder = core.responder
        let loop = stream.loop
        let keepAlive = request.keepAlive
        // RFC 9110 §9.3.2: a HEAD answer has no content, or the peer reads it as the next answer.
        let isHead = request.method == "HEAD"
        // Always hop back, even when the answer comes at once on this loop: `finish` reads the
        // next request, and must not run inside this one's `processInput`.
        responder.respond(to: request) { [self] answer in
            var headless = answer
            if isHead { headless.body = [] }
            let response = headless
            loop.execute { self.finish(response, keepAlive: keepAlive) }
        }
    }

    private func finish(_ response: HTTPResponse, keepAlive: Bool) {
        responding = false
        guard !isClosed else { return }
        defer { settle() }
        let close = !keepAlive || context.isDraining || (peerFinished && !hasMoreToAnswer())
        write(response, close: close)
        if close {
            closeWhenFlushed()
            return
        }
        if stream.pendingWriteBytes > 0 {
            waitingForDrain = true  // the peer reads slowly: answer the next one after this is out
            return
        }
        resumeAfterResponse()
    }

    private func resumeAfterResponse() {
        let now = ContinuousClock.now
        timeouts.idleSince = now
        if !parser.isIdle { timeouts.headStart = now }
        processInput()
    }

    private func write(_ response: HTTPResponse, close: Bool) {
        context.output.removeAll(keepingCapacity: true)
        serialize(response, date: context.date, close: close, into: &context.output)
        context.output.withUnsafeBytes { stream.write($0) }
        noteWrite()
    }

    private func noteWrite() {
        let pending = stream.pendingWriteBytes
        if pending > 0 { timeouts.noteWriteBuffer(pending, now: .now) }
    }

    /// Error answers end the connection: after a parse error the framing is lost.
    private func respondAndClose(_ response: HTTPResponse) {
        guard !closing, !isClosed else { return }
        write(response, close: true)
        closeWhenFlushed()
    }

    /// Nothing more is parsed once closing, so the parser's memory goes back at once (a
    /// connection cut for the budget must not hold its buffers until its answer is out).
    private func closeWhenFlushed() {
        closing = true
        parser = HTTPParser(limits: core.configuration.limits, peerAddress: peer)
        lookahead = nil
        settle()
        stream.closeAfterFlush()
    }

    // MARK: Timeouts, drain, stop

    func checkTimeouts(now: ContinuousClock.Instant) {
        guard !isClosed else { return }
        let phase = closing ? ConnectionPhase.responding : self.phase
        switch timeouts.action(phase: phase, pendingWriteBytes: stream.pendingWriteBytes, now: now) {
        case .none:
            break
        case .close:
            stream.close()
        case .requestTimeout(let reason):
            respondAndClose(HTTPResponse(status: 408, reason: reason))
        }
    }

    /// Idle connections close now; one with a request in flight or arriving finishes it
    /// (answered with `Connection: close`; the header and body timeouts still bound it).
    func beginDrain() {
        guard !isClosed, !closing else { return }
        if !responding && parser.isIdle { closeWhenFlushed() }
    }

    func closeNow() {
        guard !isClosed else { return }
        stream.close()
    }
}
