#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import OpenSSLSupport
import Synchronization

/// What every connection of the server shares. Immutable apart from atomics; each loop's
/// mutable state is in its `LoopContext`.
final class HTTPServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let logger: HTTPServerLogger?
    /// One per loop, in the group's order.
    let contexts: [LoopContext]
    private let contextIndex: [ObjectIdentifier: Int]
    let counters = ServerCounters()
    let draining = Atomic<Bool>(false)
    let cap: ConnectionCap
    /// The configured timeouts in `LoopClock` nanoseconds, converted once for every connection.
    let timeoutLimits: ConnectionTimeouts.Limits
    /// Unconsumed pipelined input a connection may hold while it answers; beyond it reading
    /// pauses and TCP slows the sender down.
    let maxBufferedInput: Int
    /// The time connections are judged by (the configuration's).
    let clock: ServerClock
    /// HTTPS: the certificate every connection accepted now is given; nil serves plain HTTP.
    let tls: HTTPServerTLS?

    init(configuration: HTTPServerConfiguration, group: EventLoopGroup, responder: any HTTPResponder,
         logger: HTTPServerLogger?) {
        self.configuration = configuration
        self.responder = responder
        self.logger = logger
        clock = configuration.clock
        tls = configuration.tls
        cap = ConnectionCap(maxConnections: configuration.maxConnections,
                            minimumKeptIdle: configuration.minimumIdleBeforeEviction)
        timeoutLimits = ConnectionTimeouts.Limits(configuration)
        let limits = configuration.limits
        maxBufferedInput = 2 * limits.maxBodyBytes + limits.maxHeaderBytes + limits.maxRequestLineBytes
        let counters = self.counters
        contexts = group.loops.enumerated().map { index, loop in
            LoopContext(loop: loop, configuration: configuration, counters: counters,
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
        // Read before the connection is counted: whoever sees it counted (drain, a test moving the
        // server's clock) sees a connection whose idle time already runs from this reading.
        let now = clock.now()
        let open = counters.open.wrappingAdd(1, ordering: .relaxed).newValue
        guard let index = contextIndex[ObjectIdentifier(stream.loop)] else {
            counters.open.wrappingSubtract(1, ordering: .relaxed)
            stream.close()
            return
        }
        let context = contexts[index]
        var evictElsewhere: (LoopContext, IdleKind, Int64)?
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
                madeRoom = context.evictLongestIdle(.fresh, idleAtLeast: 0, now: now)
                if madeRoom { noteEvicted() }
            } else if let loop = fresh {
                evictElsewhere = (contexts[loop], .fresh, 0)
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
        var layer: TLSLayer?
        if let tls {
            do {
                layer = TLSLayer(stream: stream, session: try TLSSession(serverContext: tls.context), core: self, context: context)
            } catch {
                counters.open.wrappingSubtract(1, ordering: .relaxed)
                logger?("http connection from \(stream.peerAddress?.description ?? "a client") closed: \(error)")
                stream.close()
                return
            }
        }
        let connection = HTTPConnection(stream: stream, tls: layer, core: self, context: context, acceptedAt: now)
        context.add(connection)
        if let layer {
            layer.connection = connection
            stream.handler = layer
        } else {
            stream.handler = connection
        }
        connection.settle()
        if let (remote, kind, minimum) = evictElsewhere {
            // The new connection is served while the other loop closes its longest-idle one;
            // if that one got busy meanwhile, the new one goes instead, so the cap holds.
            let bound = LoopBound(connection, on: context.loop)
            remote.loop.execute { [self] in
                if remote.evictLongestIdle(kind, idleAtLeast: minimum, now: clock.now()) {
                    noteEvicted()
                } else {
                    context.loop.execute { [self] in
                        noteRejected()
                        bound.value.closeNow()
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

    /// Counted before the close; the first and every 1000th are logged (a scanner's garbage
    /// must not flood the log).
    func noteTLSFailure(_ message: String) {
        let failures = counters.tlsFailures.wrappingAdd(1, ordering: .relaxed).newValue
        if failures == 1 || failures % 1000 == 0 {
            logger?("\(message) (\(failures) TLS failures so far)")
        }
    }

    func connectionClosed() {
        counters.open.wrappingSubtract(1, ordering: .relaxed)
    }
}
