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

extension MockKeyVerifier {
    /// Plugs a real P-256 public key into the pure rules, so the emulator checks the relay's
    /// signatures with OpenSSL exactly as Apple would, not with the relay's own code.
    public static func es256(_ key: ES256PublicKey) -> MockKeyVerifier {
        MockKeyVerifier { message, signature in key.verify(signature: signature, message: message) }
    }
}

/// The APNs emulator on the wire: TLS (ALPN h2) + HTTP/2 on loopback, every request judged by
/// `MockAPNsRules` and the decision carried out on the connection's event loop.
///
/// Besides answering, it can misbehave the way Apple's servers do (cut connections, GOAWAY,
/// refuse connections for a while, die and come back on the same port) and go out of reach in
/// every way Apple does (`MockAPNsServer+Outages.swift`), so the relay's recovery paths are
/// tested against real sockets rather than a fake.
///
/// Control methods (`stop`, `restart`, `dropAllConnections`…) block briefly until the loops
/// have acted; call them from a test or main thread, never from one of the emulator's loops.
public final class MockAPNsServer: Sendable {
    /// Judges every request; also holds the records and the faults, which tests change at run time.
    public let rules: MockAPNsRules
    /// The CA that signed the emulator's own server certificate: what a client must trust (its
    /// only extra root), until `presentCertificate` puts another CA's certificate forward.
    public let caPEM: String
    /// The CA, its key and the server certificate. The same CA vouches for clients: a client
    /// certificate it signed (`certificates.issuePushClientCertificate`) authenticates a
    /// connection as Apple's provider certificates do.
    public let certificates: TestCertificates
    /// The bound port; kept across `restart`, `refuseConnections` and every outage, as clients
    /// reconnect to it.
    public var port: Int { listener.port }

    let shared: MockServerShared
    let listener: MockListener

    /// Starts listening at once.
    ///
    /// - Parameters:
    ///   - port: 0 picks a free port (tests); `port` then tells which.
    ///   - certificates: the server certificate; fresh throw-away ones for "localhost" and
    ///     127.0.0.1 by default, whose CA is `caPEM`. The server asks each client for a
    ///     certificate (optional) and verifies one it sends against this CA.
    ///   - loopCount: event loops serving connections; one is plenty for tests.
    ///   - recordCapacity: requests kept in `records` (oldest dropped first).
    ///   - unixTime: the current Unix time in seconds, injectable so token ageing and the 410
    ///     `timestamp` are exact in tests.
    ///   - onRecord: called on a loop thread after each request is decided (e.g. a log line);
    ///     keep it short, it holds up that loop.
    ///   - onAnswerLost: called on a loop thread with the `apns-id` of a push decided (and
    ///     recorded) whose delayed answer never goes out, because its stream or connection closed
    ///     first (the emulator stopped, the client gave up): "Apple" has the push and the client
    ///     cannot know it, so a client that sends it again is right to.
    public static func start(
        configuration: MockAPNsConfiguration,
        host: String = "127.0.0.1",
        port: Int = 0,
        certificates: TestCertificates? = nil,
        loopCount: Int = 1,
        recordCapacity: Int = 10_000,
        unixTime: @escaping @Sendable () -> Int64 = { Int64(time(nil)) },
        onRecord: (@Sendable (MockRecord) -> Void)? = nil,
        onAnswerLost: (@Sendable (String) -> Void)? = nil
    ) throws -> MockAPNsServer {
        let certificates = try certificates ?? TestCertificates.make()
        let shared = MockServerShared(rules: MockAPNsRules(configuration: configuration, recordCapacity: recordCapacity), unixTime: unixTime,
                                      onRecord: onRecord, onAnswerLost: onAnswerLost)
        let listener = try MockListener(host: host, port: port, loopCount: max(1, loopCount),
                                        certificates: certificates, shared: shared)
        return MockAPNsServer(certificates: certificates, shared: shared, listener: listener)
    }

    private init(certificates: TestCertificates, shared: MockServerShared, listener: MockListener) {
        self.caPEM = certificates.caPEM
        self.certificates = certificates
        self.shared = shared
        self.rules = shared.rules
        self.listener = listener
    }

    deinit {
        stop()
    }

    // MARK: Observation

    /// Every request decided so far (see `MockAPNsRules.records`).
    public var records: [MockRecord] { rules.records }
    /// Connections accepted since start, across restarts.
    public var connectionCount: Int { shared.connectionCount.load(ordering: .relaxed) }
    /// Connections open now.
    public var openConnectionCount: Int { shared.openConnectionCount.load(ordering: .relaxed) }
    /// Requests (streams) received since start, across restarts.
    public var streamCount: Int { shared.streamCount.load(ordering: .relaxed) }
    /// The most streams ever open at once on one connection: proves a client obeyed
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxOpenStreamsPerConnection: Int { shared.maxOpenStreams.load(ordering: .relaxed) }
    /// The most connections ever open at once: proves a client kept to its pool size.
    public var maxOpenConnections: Int { shared.maxOpenConnections.load(ordering: .relaxed) }

    /// Waits until at least `count` records exist, for tests that must know a request reached
    /// "Apple" before acting; false on timeout.
    public func waitForRecords(count: Int, timeout: Duration) -> Bool {
        rules.waitForRecords(count: count, timeout: timeout)
    }

    // MARK: Misbehaviour

    /// Cuts every open connection without GOAWAY or close_notify, as a crashed server would:
    /// the client must fail (or retry) every stream in flight by itself.
    public func dropAllConnections() {
        shared.onEveryConnection { connection, _ in connection.close(abruptly: true) }
    }

    /// Sends GOAWAY (NO_ERROR, debug data `{"reason":…}`) on every open connection, as Apple
    /// does before a restart; the connections stay open for the streams already accepted.
    public func goAwayAll(debugReason: String = "Shutdown") {
        let debug = Array(#"{"reason":""#.utf8) + Array(debugReason.utf8) + Array(#""}"#.utf8)
        shared.onEveryConnection { connection, handler in handler.goAway(connection, lastStreamID: nil, debugData: debug) }
    }

    /// Sets the `SETTINGS_MAX_CONCURRENT_STREAMS` of every authenticated connection now (and
    /// of later ones after their first success), as Apple lowers or raises it at run time.
    public func advertiseMaxConcurrentStreams(_ limit: UInt32) {
        rules.maxConcurrentStreams = limit
        shared.onEveryConnection { connection, handler in handler.advertise(limit, on: connection) }
    }

    /// Stops listening (connects are refused) for `duration`, then listens again on the same
    /// port; open connections are left alone. Tests the client's reconnect back-off
    /// (`takeAway` also cuts them, as when Apple goes out of reach).
    public func refuseConnections(for duration: Duration) {
        guard let generation = try? listener.become(.away) else { return }
        listener.serve(after: duration, ifGeneration: generation)
    }

    /// Kills the emulator: stops listening, cuts every connection abruptly and stops its loops.
    /// Records and counters survive, so a test can inspect them; `restart` brings it back.
    public func stop() {
        guard let group = listener.stop() else { return }
        dropAllConnections()
        group.shutdown()
    }

    /// Starts again on the same port after `stop` (or kills and restarts a running emulator),
    /// as when Apple's front end is restarted: clients must reconnect on their own.
    public func restart() throws {
        stop()
        try listener.become(.serving)
    }
}
