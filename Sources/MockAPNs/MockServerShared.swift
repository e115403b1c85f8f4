#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
import Transport
import CertificateSupport

/// What the listener, the connections and the control methods share. Every member is either
/// immutable or behind a Mutex/Atomic.
final class MockServerShared: Sendable {
    let rules: MockAPNsRules
    let unixTime: @Sendable () -> Int64
    let onRecord: (@Sendable (MockRecord) -> Void)?
    let onAnswerLost: (@Sendable (String) -> Void)?
    let connectionCount = Atomic<Int>(0)
    let openConnectionCount = Atomic<Int>(0)
    let streamCount = Atomic<Int>(0)
    let maxOpenStreams = Atomic<Int>(0)
    let maxOpenConnections = Atomic<Int>(0)
    /// Bumped by every `answerUnavailable`/`answerNormally`, so a timed end scheduled before a
    /// later change does nothing.
    let answerGeneration = Atomic<Int>(0)
    /// Connections accepted while silent (never spoken to), since start.
    let silentConnectionCount = Atomic<Int>(0)
    /// Open connections by emulator connection id (unique across restarts), each with its
    /// handler, both touched on the connection's loop alone.
    let connections = Mutex<[Int: LoopBound<(HTTP2ServerConnection, MockConnectionHandler)>]>([:])

    init(rules: MockAPNsRules, unixTime: @escaping @Sendable () -> Int64, onRecord: (@Sendable (MockRecord) -> Void)?,
         onAnswerLost: (@Sendable (String) -> Void)? = nil) {
        self.rules = rules
        self.unixTime = unixTime
        self.onRecord = onRecord
        self.onAnswerLost = onAnswerLost
    }

    /// Runs `body` on each open connection's loop and waits (bounded) until all have run.
    func onEveryConnection(_ body: @escaping @Sendable (HTTP2ServerConnection, MockConnectionHandler) -> Void) {
        let all = connections.withLock { Array($0.values) }
        let done = DispatchGroup()
        for bound in all {
            done.enter()
            bound.loop.execute {
                let (connection, handler) = bound.value
                body(connection, handler)
                done.leave()
            }
        }
        // A loop already shut down drops the job; don't wait forever for it.
        _ = done.wait(timeout: .now() + 2)
    }
}
