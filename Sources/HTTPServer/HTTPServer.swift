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
    /// A kept connection with no request in progress closes silently after this. Longer than
    /// Mastodon's 30 s pool idle time, so the client closes first and never sends a request
    /// onto a connection the server is closing.
    public var idleTimeout: Duration
    /// A peer that does not take our bytes for this long is cut off, so it can't pin memory.
    public var writeTimeout: Duration
    /// Beyond this many open connections new ones are closed at once, so a flood can't
    /// exhaust file descriptors needed for the connections to Apple.
    public var maxConnections: Int
    /// Loops of the group the server makes when none is given.
    public var loopCount: Int

    public init(
        host: String = "0.0.0.0", port: Int = 3000, limits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(75), writeTimeout: Duration = .seconds(10),
        maxConnections: Int = 10_000, loopCount: Int = System.coreCount
    ) {
        self.host = host
        self.port = port
        self.limits = limits
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.loopCount = loopCount
    }

    /// How often each loop checks its connections' deadlines: an eighth of the shortest
    /// timeout (between 5 ms and 1 s), so a deadline is met within about 12 % and the
    /// check costs nothing per request.
    var sweepInterval: Duration {
        let shortest = min(min(headerTimeout, bodyTimeout), min(idleTimeout, writeTimeout))
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
    public var openConnectionCount: Int { core.openCount.load(ordering: .relaxed) }

    /// Connections closed at once because `maxConnections` were open: a metric to watch.
    public var rejectedConnectionCount: Int { core.rejectedCount.load(ordering: .relaxed) }

    /// Graceful shutdown: stop accepting, let requests in flight finish (answered with
    /// `Connection: close`), close idle connections at once. True when every connection
    /// closed before `deadline`; call `stop()` afterwards either way.
    public func drain(deadline: Duration) async -> Bool {
        let end = ContinuousClock.now + deadline
        core.draining.store(true, ordering: .sequentiallyConsistent)
        await Self.offLoop { [listener] in listener.close() }
        for context in core.contexts.values {
            context.loop.execute { context.beginDrain() }
        }
        while core.openCount.load(ordering: .relaxed) > 0 {
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
        for context in core.contexts.values {
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

/// What every connection of the server shares. Immutable apart from atomics; each loop's
/// mutable state is in its `LoopContext`.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let logger: HTTPServerLogger?
    let contexts: [ObjectIdentifier: LoopContext]
    let openCount = Atomic<Int>(0)
    let rejectedCount = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)
    /// Unconsumed pipelined input a connection may hold while it answers; beyond it reading
    /// pauses and TCP slows the sender down.
    let maxBufferedInput: Int

    init(configuration: HTTPServerConfiguration, group: EventLoopGroup, responder: any HTTPResponder,
         logger: HTTPServerLogger?) {
        self.configuration = configuration
        self.responder = responder
        self.logger = logger
        let limits = configuration.limits
        maxBufferedInput = 2 * limits.maxBodyBytes + limits.maxHeaderBytes + limits.maxRequestLineBytes
        var contexts: [ObjectIdentifier: LoopContext] = [:]
        for loop in group.loops {
            contexts[ObjectIdentifier(loop)] = LoopContext(loop: loop, configuration: configuration)
        }
        self.contexts = contexts
    }

    func startSweeps() {
        for context in contexts.values {
            context.loop.execute { context.scheduleSweep() }
        }
    }

    /// Runs on the accepted stream's loop.
    func accept(_ stream: TCPStream) {
        if draining.load(ordering: .relaxed) {
            stream.close()
            return
        }
        let open = openCount.wrappingAdd(1, ordering: .relaxed).newValue
        if open > configuration.maxConnections {
            openCount.wrappingSubtract(1, ordering: .relaxed)
            let rejected = rejectedCount.wrappingAdd(1, ordering: .relaxed).newValue
            stream.close()
            if rejected == 1 || rejected % 1000 == 0 {
                logger?("http connection cap of \(configuration.maxConnections) reached; \(rejected) connections rejected so far")
            }
            return
        }
        guard let context = contexts[ObjectIdentifier(stream.loop)] else {
            openCount.wrappingSubtract(1, ordering: .relaxed)
            stream.close()
            return
        }
        let connection = HTTPConnection(stream: stream, core: self, context: context)
        context.add(connection)
        stream.handler = connection
    }

    func connectionClosed() {
        openCount.wrappingSubtract(1, ordering: .relaxed)
    }
}

/// One loop's share of the server: its connections (for the timeout sweep and drain), the
/// cached Date header and the buffer responses are serialized into.
///
/// `@unchecked Sendable`: it is shared through `ServerCore`, but every member except the
/// immutable `loop` is touched only on `loop`'s thread (all callers hop with `execute`).
final class LoopContext: @unchecked Sendable {
    let loop: EventLoop
    let configuration: HTTPServerConfiguration
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private var draining = false
    private var closed = false
    private var dateSecond = -1
    private var dateText = ""
    /// Reused for every response on this loop: one serialization buffer, no per-request allocation.
    var output: [UInt8] = []

    init(loop: EventLoop, configuration: HTTPServerConfiguration) {
        self.loop = loop
        self.configuration = configuration
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
    }

    func scheduleSweep() {
        guard !closed else { return }
        loop.schedule(after: configuration.sweepInterval) { [self] in
            sweep(now: .now)
            scheduleSweep()
        }
    }

    private func sweep(now: ContinuousClock.Instant) {
        guard !connections.isEmpty else { return }
        // Acting may close connections, which mutates the dictionary: collect first.
        for connection in Array(connections.values) {
            connection.checkTimeouts(now: now)
        }
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
    private var readingPaused = false
    private var isClosed = false
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
        if !responding && parser.isIdle { timeouts.headStart = now }
        timeouts.lastRead = now
        parser.append(bytes)
        if responding || waitingForDrain {
            if parser.bufferedByteCount > core.maxBufferedInput && !readingPaused {
                readingPaused = true
                stream.pauseReading()
            }
            return
        }
        processInput()
    }

    func streamDidDrainWrites(_ stream: TCPStream) {
        timeouts.noteWriteBuffer(0, now: .now)
        guard waitingForDrain else { return }
        waitingForDrain = false
        resumeAfterResponse()
    }

    /// Complete requests already received are still answered (every push ends with an
    /// answer); a partial one is dropped, since its sender gave up.
    func streamDidReadEOF(_ stream: TCPStream) {
        peerFinished = true
        if closing || responding || waitingForDrain { return }  // `finish` or the flush ends it
        processInput()
    }

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        guard !isClosed else { return }
        isClosed = true
        context.remove(self)
        core.connectionClosed()
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
        if readingPaused && !closing && parser.bufferedByteCount <= core.maxBufferedInput {
            readingPaused = false
            stream.resumeReading()
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

    private func closeWhenFlushed() {
        closing = true
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
