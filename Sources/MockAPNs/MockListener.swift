import Dispatch
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
import Transport
import CertificateSupport

/// What stands on the emulator's port, and how a client finds it.
enum MockReach: Sendable, Equatable {
    /// TLS + HTTP/2, answering.
    case serving
    /// Nothing listens; the port is kept bound (`PortHold`), so a connect is refused at once.
    case away
    /// TCP accepted, never a byte back (`MockSilentListener`).
    case silent
}

/// The listening side of `MockAPNsServer`: its loops, the port in each `MockReach`, and the
/// server certificate presented. The lock is never taken on a loop thread, so binding (which
/// waits for a loop) cannot deadlock with a connection callback.
final class MockListener: Sendable {
    let host: String
    let port: Int
    private let loopCount: Int
    private let clientCAPEM: String
    private let shared: MockServerShared
    private let state: Mutex<State>

    private struct State {
        var group: EventLoopGroup?
        var reach: MockReach = .serving
        var server: HTTP2Server?
        var silent: MockSilentListener?
        /// The port, kept while nothing listens on it (away, stopped): a connect is refused, and
        /// no other server (a parallel test's) is given the port before this one comes back.
        var hold: PortHold?
        var presented: TestCertificates
        var tls: TLSContext
        /// Bumped by every change of reach, so a timed comeback scheduled before a later change
        /// does nothing.
        var generation = 0
    }

    /// Binds and serves at once; `port` 0 picks a free one (then `port` tells which).
    init(host: String, port: Int, loopCount: Int, certificates: TestCertificates, shared: MockServerShared) throws {
        let tls = try Self.context(certificates, clientCAPEM: certificates.caPEM)
        let group = try EventLoopGroup(loopCount: loopCount)
        let server: HTTP2Server
        do {
            server = try Self.listen(host: host, port: port, tls: tls, group: group, shared: shared)
        } catch {
            group.shutdown()
            throw error
        }
        self.host = host
        self.port = server.port
        self.loopCount = loopCount
        self.clientCAPEM = certificates.caPEM
        self.shared = shared
        self.state = Mutex(State(group: group, server: server, presented: certificates, tls: tls))
    }

    var reach: MockReach { state.withLock { $0.reach } }
    var presented: TestCertificates { state.withLock { $0.presented } }

    /// Puts `reach` on the port (starting loops again after `stop`); returns the generation a
    /// timed comeback must still find. Open connections are left to the caller.
    @discardableResult
    func become(_ reach: MockReach) throws -> Int {
        try state.withLock { state in
            state.generation += 1
            try put(reach, into: &state)
            return state.generation
        }
    }

    /// After `delay`, serves again unless the reach changed meanwhile; retries a failed bind
    /// for 5 s (a timed comeback has no caller to tell).
    func serve(after delay: Duration, ifGeneration generation: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Self.nanoseconds(delay))) { [weak self] in
            self?.serveAgain(ifGeneration: generation, attempts: 50)
        }
    }

    private func serveAgain(ifGeneration generation: Int, attempts: Int) {
        let failed = state.withLock { state -> Bool in
            guard state.generation == generation, state.reach != .serving else { return false }
            return (try? put(.serving, into: &state)) == nil
        }
        if failed && attempts > 1 {
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { [weak self] in
                self?.serveAgain(ifGeneration: generation, attempts: attempts - 1)
            }
        }
    }

    /// Presents `certificates` to every new TLS handshake from now on (listening again at once
    /// when serving); client certificates are still judged against the emulator's own CA.
    /// Connections already open keep the old one: the caller cuts them.
    func present(_ certificates: TestCertificates) throws {
        let tls = try Self.context(certificates, clientCAPEM: clientCAPEM)
        try state.withLock { state in
            state.presented = certificates
            state.tls = tls
            guard state.reach == .serving, state.server != nil else { return }
            state.server?.close()
            state.server = nil
            try put(.serving, into: &state)
        }
    }

    /// Stops listening (the port held) and shuts the loops down; returns the loops' group, for
    /// the caller to shut down after cutting the connections on them.
    func stop() -> EventLoopGroup? {
        state.withLock { state -> EventLoopGroup? in
            state.generation += 1
            try? put(.away, into: &state)
            defer { state.group = nil }
            return state.group
        }
    }

    /// Moves the port to `reach`: closes what stood there, then binds what is wanted.
    private func put(_ reach: MockReach, into state: inout State) throws {
        if reach != .serving { state.server?.close(); state.server = nil }
        if reach != .silent { state.silent?.close(); state.silent = nil }
        if reach == .away {
            if state.hold == nil { state.hold = try? PortHold(host: host, port: port) }
            state.reach = .away
            return
        }
        let group: EventLoopGroup
        if let existing = state.group {
            group = existing
        } else {
            group = try EventLoopGroup(loopCount: loopCount)
            state.group = group
        }
        state.hold = nil
        do {
            switch reach {
            case .serving:
                if state.server == nil {
                    state.server = try Self.listen(host: host, port: port, tls: state.tls, group: group, shared: shared)
                }
            case .silent:
                if state.silent == nil {
                    let shared = self.shared
                    state.silent = try MockSilentListener.start(host: host, port: port, group: group) {
                        shared.silentConnectionCount.add(1, ordering: .relaxed)
                    }
                }
            case .away:
                break
            }
        } catch {
            // Keep the port ours while the caller decides what to do.
            state.hold = try? PortHold(host: host, port: port)
            state.reach = .away
            throw error
        }
        state.reach = reach
    }

    private static func context(_ certificates: TestCertificates, clientCAPEM: String) throws -> TLSContext {
        try TLSContext.server(certificateChainPEM: certificates.certificatePEM, privateKeyPEM: certificates.privateKeyPEM,
                              clientCertificateCAPEM: clientCAPEM)
    }

    private static func listen(host: String, port: Int, tls: TLSContext, group: EventLoopGroup, shared: MockServerShared) throws -> HTTP2Server {
        // Apple advertises one stream until the first authenticated request; the rules raise it.
        try HTTP2Server.start(host: host, port: port, tls: tls, group: group, maxConcurrentStreams: 1) { connection in
            let id = shared.connectionCount.add(1, ordering: .relaxed).newValue
            let open = shared.openConnectionCount.add(1, ordering: .relaxed).newValue
            shared.maxOpenConnections.max(open, ordering: .relaxed)
            let handler = MockConnectionHandler(id: id, shared: shared)
            shared.connections.withLock { $0[id] = LoopBound((connection, handler), on: connection.loop) }
            return handler
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int {
        Int(min(max(duration, .zero), .seconds(86_400 * 365)) / .nanoseconds(1))
    }
}
