// The HTTP/1.1 server on the event loops: accepts, parses, calls the responder, writes
// answers in order, enforces timeouts and the connection cap, drains on shutdown. Its parts:
// HTTPServerCore (what all connections share), LoopContext (one loop's share), HTTPConnection.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization

/// An HTTP/1.1 server whose connections live on event loops.
package final class HTTPServer: Sendable {
    let core: HTTPServerCore
    private let listener: TCPListener
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let stopped = Atomic<Bool>(false)

    /// Binds and starts serving. Without a `group` the server makes one of
    /// `configuration.loopCount` loops and shuts it down in `stop()`.
    package static func start(
        configuration: HTTPServerConfiguration, group: EventLoopGroup? = nil,
        responder: any HTTPResponder, logger: HTTPServerLogger? = nil
    ) throws -> HTTPServer {
        let ownsGroup = group == nil
        let group = try group ?? EventLoopGroup(loopCount: max(1, configuration.loopCount))
        let core = HTTPServerCore(configuration: configuration, group: group, responder: responder, logger: logger)
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
        logger?("http server listening on \(listener.localAddress)\(configuration.tls == nil ? "" : " (HTTPS)")")
        return HTTPServer(core: core, listener: listener, group: group, ownsGroup: ownsGroup)
    }

    private init(core: HTTPServerCore, listener: TCPListener, group: EventLoopGroup, ownsGroup: Bool) {
        self.core = core
        self.listener = listener
        self.group = group
        self.ownsGroup = ownsGroup
    }

    /// The port actually bound (the one the kernel picked when configured with 0).
    package var port: Int { listener.localPort }

    /// Connections open now; drain waits for this to reach zero.
    package var openConnectionCount: Int { core.counters.open.load(ordering: .relaxed) }

    /// Connections closed at once because `maxConnections` were open and none was idle: a
    /// metric to watch.
    package var rejectedConnectionCount: Int { core.counters.rejected.load(ordering: .relaxed) }

    /// Connections closed to make room for a new one at `maxConnections`: idle ones, or the
    /// slowest request still arriving (answered 408).
    package var evictedConnectionCount: Int { core.counters.evicted.load(ordering: .relaxed) }

    /// Bytes held now by requests still arriving (see `maxBufferedRequestBytes`).
    package var bufferedRequestBytes: Int { core.counters.bufferedBytes.load(ordering: .relaxed) }

    /// Half-received requests answered 408 because the buffered bytes went over
    /// `maxBufferedRequestBytes`.
    package var budgetCutCount: Int { core.counters.budgetCuts.load(ordering: .relaxed) }

    /// HTTPS connections closed for a TLS failure: a handshake that failed (garbage, plain HTTP,
    /// a client that closed half-way) or a bad record after it.
    package var tlsFailureCount: Int { core.counters.tlsFailures.load(ordering: .relaxed) }

    /// The certificate and key served (the configuration's); call its `reload()` on SIGHUP.
    package var tls: HTTPServerTLS? { core.tls }

    /// Graceful shutdown: stop accepting, let requests in flight finish (answered with
    /// `Connection: close`), close idle connections at once. True when every connection
    /// closed before `deadline`; call `stop()` afterwards either way.
    package func drain(deadline: Duration) async -> Bool {
        let end = LoopClock.now() + LoopClock.nanoseconds(deadline)
        core.draining.store(true, ordering: .sequentiallyConsistent)
        await Self.offLoop { [listener] in listener.close() }
        for context in core.contexts {
            context.loop.execute { context.beginDrain() }
        }
        while core.counters.open.load(ordering: .relaxed) > 0 {
            if LoopClock.now() >= end { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Stops at once: closes the listener and every connection (answers in flight are
    /// dropped). Waits until the loops have done it. Safe to call twice.
    package func stop() {
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
