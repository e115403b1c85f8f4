#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EventLoop
import OpenSSLSupport
internal import Basics

/// Sends pushes to Apple over a small pool of long-lived HTTP/2 connections per environment.
///
/// Every push ends exactly once: Apple's answer (Apple's last 500/503/`Shutdown` once the
/// bounded retries are used is an answer too), or an `APNsError` saying why there was none
/// (`timeout` at the push deadline, `overloaded` when the bounded queue is full, `unavailable`
/// when Apple could not be reached, `shuttingDown`). Retryable failures (500/503/`Shutdown`,
/// refused streams, GOAWAY, lost connections) are retried on another connection; a stream whose
/// connection died may already have reached Apple, and is retried anyway, because a duplicate
/// notification beats a lost one.
public final class APNsClient: APNsSending, Sendable {
    public let configuration: APNsClientConfiguration
    let production: APNsPool
    private let loops: [EventLoop]
    private let observer: (any APNsClientObserver)?
    private let unixTime: @Sendable () -> Int64
    /// The loops a client made for itself (`init(configuration:)`), stopped by `shutdown()`.
    private let ownedGroup: EventLoopGroup?
    /// The sandbox pool is made on the first sandbox push: most relays never need it.
    private let sandbox = Mutex<SandboxState>(SandboxState())

    private struct SandboxState {
        var pool: APNsPool?
        var shutDown = false
    }

    /// Opens the production connections at once (so `isReady` soon turns true).
    ///
    /// - Parameters:
    ///   - group: the loops the connections live on: each loop owns its share of the pool (the
    ///     first `poolSize` loops when the pool is smaller), and a push sent on a loop goes out
    ///     on that loop's connections when they have room.
    ///   - unixTime: the clock for provider tokens' `iat` and age, injectable for tests.
    /// - Throws: `APNsError.badKey` when the key cannot sign a token: no push could ever succeed.
    package convenience init(configuration: APNsClientConfiguration, group: EventLoopGroup, observer: (any APNsClientObserver)? = nil,
                 unixTime: @escaping @Sendable () -> Int64 = { WallTime.unixSecondsNow }) throws(APNsError) {
        try self.init(configuration: configuration, group: group, ownsGroup: false, observer: observer, unixTime: unixTime)
    }

    /// A client that owns its event loops (`loops` threads), stopped by `shutdown()`.
    /// - Throws: `APNsError.badKey` when the key cannot sign a token; `.badConfiguration` when
    ///   the loops cannot start.
    public convenience init(configuration: APNsClientConfiguration, loops: Int = 1) throws(APNsError) {
        try self.init(configuration: configuration, loops: loops, observer: nil)
    }

    /// The same, with an observer of the client's events (the relay's logs and metrics).
    package convenience init(configuration: APNsClientConfiguration, loops: Int,
                             observer: (any APNsClientObserver)?) throws(APNsError) {
        let group: EventLoopGroup
        do { group = try EventLoopGroup(loopCount: max(1, loops)) } catch {
            throw .badConfiguration("could not start the client's event loops: \(error)")
        }
        do {
            try self.init(configuration: configuration, group: group, ownsGroup: true, observer: observer,
                          unixTime: { WallTime.unixSecondsNow })
        } catch {
            group.shutdown()
            throw error
        }
    }

    /// A client configured from the environment (`APNsClientConfiguration.Variable`), owning one loop.
    public static func fromEnvironment(_ variables: [String: String]? = nil) throws(APNsError) -> APNsClient {
        var configuration = try APNsClientConfiguration(environment: variables)
        configuration.poolSize = 1
        return try APNsClient(configuration: configuration)
    }

    private init(configuration: APNsClientConfiguration, group: EventLoopGroup, ownsGroup: Bool,
                 observer: (any APNsClientObserver)?, unixTime: @escaping @Sendable () -> Int64) throws(APNsError) {
        // The one provider token every connection shares, signed now: a key that cannot sign
        // fails here, not at the first push (reported as signed by the first connection using it).
        try configuration.credentials?.signFirstToken(now: unixTime())
        self.ownedGroup = ownsGroup ? group : nil
        self.configuration = configuration
        self.loops = group.loops
        self.observer = observer
        self.unixTime = unixTime
        self.production = APNsPool(environment: .production, endpoint: configuration.production,
                                   configuration: configuration, loops: group.loops, observer: observer, unixTime: unixTime)
        production.start()
    }

    private func pool(for environment: APNsEnvironment) -> APNsPool? {
        if environment == .production { return production }
        return sandbox.withLock { state -> APNsPool? in
            if let pool = state.pool { return pool }
            if state.shutDown { return nil }
            let pool = APNsPool(environment: .sandbox, endpoint: configuration.sandbox, configuration: configuration,
                                loops: loops, observer: observer, unixTime: unixTime)
            pool.start()
            state.pool = pool
            return pool
        }
    }

    /// The hot-path form: no Task, the completion runs once on an event-loop thread (or the
    /// caller's, for an immediate refusal); keep it short. Called on one of the group's loops,
    /// the push goes out on that loop's own connection when it has room, and the completion runs
    /// on that same loop: no lock, no thread hop.
    package func send(_ notification: APNsNotification, environment: APNsEnvironment,
                     completion: @escaping @Sendable (Result<APNsResponse, APNsError>) -> Void) {
        guard let pool = pool(for: environment) else {
            completion(.failure(APNsError(code: .shuttingDown, message: "the APNs client is shut down; send the push to another instance")))
            return
        }
        pool.send(notification, completion: completion)
    }

    package func send(_ notification: APNsNotification, environment: APNsEnvironment = .production) async -> Result<APNsResponse, APNsError> {
        await withCheckedContinuation { continuation in
            send(notification, environment: environment) { continuation.resume(returning: $0) }
        }
    }

    /// Sends `payload` to one device and waits for Apple's answer.
    ///
    /// A refusal is an answer (`ok` false, with `reason`); only a push that breaks a rule before
    /// anything goes out (`invalidNotification`) or that got no answer from Apple (`unavailable`,
    /// `timeout`, `overloaded`, `shuttingDown`) throws.
    /// `device` in the answer is the token as given here.
    public func send(_ payload: APNsPayload, to device: String,
                     options: APNsPushOptions = APNsPushOptions()) async throws(APNsError) -> APNsResponse {
        let notification = try options.notification(payload: payload, device: device, defaultTopic: configuration.topic)
        let result: Result<APNsResponse, APNsError> = await withCheckedContinuation { continuation in
            guard let pool = pool(for: options.environment) else {
                continuation.resume(returning: .failure(.shuttingDown("the APNs client is shut down")))
                return
            }
            pool.send(notification, timeout: options.timeout) { continuation.resume(returning: $0) }
        }
        return try result.get().answering(device: device)
    }

    /// Sends one payload to many devices with the same options, a bounded number at a time so
    /// the queue never overflows. One result per device, in the caller's order: Apple's answer,
    /// or reason `NotSent` with the cause (a token refused before sending, no answer from Apple).
    /// A fixed `options.apnsID` would make every push look like one to Apple: each gets its own.
    public func sendMany(_ payload: APNsPayload, to devices: [String],
                         options: APNsPushOptions = APNsPushOptions()) async -> SendManyResult {
        var each = options
        each.apnsID = nil
        let options = each
        let window = max(1, min(configuration.queueCapacity / 2, 500))
        // Up to `window` pushes in flight; each child settles its answer (Apple's, or NotSent)
        // and then returns (index, answer) from one place. The do and the catch each returning
        // `(index, …)` (`(index, try await send(…))` in the do) lost the index in -O builds:
        // Swift 6.3's LLVM dead-store elimination dropped its store on the success path.
        let answers = await withTaskGroup(of: (Int, APNsResponse).self, returning: [APNsResponse?].self) { group in
            var answers = [APNsResponse?](repeating: nil, count: devices.count)
            var next = 0
            var inFlight = 0
            while true {
                while next < devices.count && inFlight < window {
                    let index = next
                    let device = devices[index]
                    group.addTask {
                        let answer: APNsResponse
                        do throws(APNsError) {
                            answer = try await self.send(payload, to: device, options: options)
                        } catch {
                            answer = .notSent(device: device, cause: error)
                        }
                        return (index, answer)
                    }
                    next += 1
                    inFlight += 1
                }
                guard let (index, answer) = await group.next() else { return answers }
                inFlight -= 1
                answers[index] = answer
            }
        }
        return SendManyResult(results: answers.map { $0! })
    }

    /// True when a production connection can take a push now (the relay's readiness probe).
    public var isReady: Bool { production.isReady }

    /// Production and sandbox together: ready connections, pushes on the wire, pushes waiting.
    public func connectionStats() -> (open: Int, inFlight: Int, queued: Int) {
        var total = production.stats
        if let sandboxPool = sandbox.withLock({ $0.pool }) {
            let more = sandboxPool.stats
            total = (total.open + more.open, total.inFlight + more.inFlight, total.queued + more.queued)
        }
        return total
    }

    /// Presents `identity` from now on: every connection drains while its replacement opens with
    /// the new certificate (Apple checks a certificate in the handshake only).
    /// - Throws: `APNsError.badConfiguration` when the client uses provider tokens, or when no TLS
    ///   context can be made with the certificate; the current one stays.
    package func replaceCertificate(with identity: TLSClientIdentity) throws(APNsError) {
        guard case .certificate(let certificate) = configuration.authentication else {
            throw .badConfiguration("this client authenticates with provider tokens, not a certificate")
        }
        do { try certificate.replace(with: identity) } catch {
            throw .badConfiguration("the new certificate cannot be used: \(error)")
        }
        production.retireConnections()
        sandbox.withLock { $0.pool }?.retireConnections()
    }

    /// Trusts `extraCAFile` / `extraCAPEM` (and the system store when `trustSystemStore`) for
    /// Apple's servers from now on: every connection drains while its replacement opens with the
    /// new trust. For a CA that changed under a running relay (Apple moving to another root,
    /// SIGHUP after the operator added it).
    /// - Throws: `APNsError.badConfiguration` when no TLS context can be made with the CAs; the
    ///   current trust stays.
    package func replaceTrust(trustSystemStore: Bool, extraCAFile: String?, extraCAPEM: String?) throws(APNsError) {
        do {
            switch configuration.authentication {
            case .token:
                configuration.trustOverride.replace(with: try TLSContext.client(
                    alpn: ["h2"], trustSystemStore: trustSystemStore, extraCAFile: extraCAFile, extraCAPEM: extraCAPEM))
            case .certificate(let certificate):
                try certificate.replaceTrust { identity in
                    try TLSContext.client(alpn: ["h2"], trustSystemStore: trustSystemStore, extraCAFile: extraCAFile,
                                          extraCAPEM: extraCAPEM, clientIdentity: identity)
                }
            }
        } catch {
            throw .badConfiguration("the new CA cannot be used: \(error)")
        }
        production.retireConnections()
        sandbox.withLock { $0.pool }?.retireConnections()
    }

    /// Stops taking pushes and fails the queued ones (`shuttingDown`); pushes already sent get
    /// their answer or their deadline; then every connection is closed. A client that made its
    /// own loops (`init(configuration:loops:)`, `fromEnvironment`) stops them too; loops given
    /// to it stay running.
    public func shutdown() async {
        let sandboxPool = sandbox.withLock { state -> APNsPool? in
            state.shutDown = true
            return state.pool
        }
        async let sandboxDone: Void = { if let sandboxPool { await sandboxPool.shutdown() } }()
        await production.shutdown()
        await sandboxDone
        ownedGroup?.shutdown()
    }
}
