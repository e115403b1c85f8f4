#if canImport(Glibc)
import Glibc
#endif
import APNs
import Basics
import EventLoop
import HTTPServer
import Observability
import OpenSSLSupport

/// The whole relay in one process: the HTTP/1.1 server and the APNs client on one set of event
/// loops, wired to one responder, stopped in reverse order of start.
///
/// `serve`, `demo` and the end-to-end tests all start the relay through this type, so the
/// tests exercise exactly the wiring that runs in production.
package final class RelayServer: Sendable {
    package let configuration: RelayConfiguration
    package let responder: RelayResponder
    package let metrics: RelayMetrics
    package let client: APNsClient
    private let http: HTTPServer
    private let group: EventLoopGroup

    /// Knobs the configuration does not expose (tests shrink back-off and ticks; the demo trusts
    /// its emulator's CA from memory).
    package struct Options: Sendable {
        /// An extra CA (PEM text) to trust besides the system store and `APNS_CA_FILE`.
        package var extraCAPEM: String?
        /// Event loops shared by the server and the client; nil: the configuration's
        /// (`EVENT_LOOPS`, else one per CPU the process may use).
        package var loopCount: Int?
        /// Final adjustments to the client configuration, applied last.
        package var tuneClient: (@Sendable (inout APNsClientConfiguration) -> Void)?
        /// The wall clock for payload expirations and 410 timestamps.
        package var now: @Sendable () -> WallTime = { .now }

        package init(extraCAPEM: String? = nil) { self.extraCAPEM = extraCAPEM }
    }

    /// Parses the key, starts the APNs client (its production connections open at once) and
    /// then the HTTP server, so the first request finds a client.
    ///
    /// - Throws: `ConfigurationError` naming `APNS_AUTH_KEY` when the key is not an ES256 key,
    ///   `APNS_CA_FILE` when the CA cannot be loaded; the server's bind error otherwise.
    package static func start(configuration: RelayConfiguration, logger: Logger, options: Options = Options(),
                             metrics: RelayMetrics = RelayMetrics()) throws -> RelayServer {
        let clientConfiguration = try clientConfiguration(configuration, extraCAPEM: options.extraCAPEM,
                                                          tune: options.tuneClient)
        let loopCount = max(1, options.loopCount ?? configuration.eventLoopCount)
        let group = try EventLoopGroup(loopCount: loopCount)
        let client: APNsClient
        do {
            client = try APNsClient(configuration: clientConfiguration, group: group,
                                observer: APNsEventLog(metrics: metrics, logger: logger))
        } catch {
            group.shutdown()
            throw ConfigurationError(.invalid, configuration.authKeyVariable,
                                     "\(configuration.authKeyVariable) cannot sign a provider token: \(error)")
        }
        let responder = RelayResponder(
            settings: .init(configuration), sender: client, logger: logger, metrics: metrics,
            readiness: { client.isReady ? nil : "no production connection to APNs (\(configuration.apnsHost)) is usable yet" },
            now: options.now)

        var limits = HTTPParserLimits()
        limits.maxBodyBytes = configuration.maxBodyBytes
        let serverConfiguration = HTTPServerConfiguration(
            host: configuration.bindAddress, port: configuration.port, limits: limits,
            requestTimeout: configuration.requestTimeout, maxConnections: configuration.maxConnections,
            maxBufferedRequestBytes: configuration.maxBufferedRequestBytes, loopCount: loopCount)
        let http: HTTPServer
        do {
            http = try HTTPServer.start(configuration: serverConfiguration, group: group, responder: responder,
                                        logger: { line in logger.debug(line) })
        } catch {
            let stopping = client
            let loops = group
            // The client's shutdown is async; bind errors are rare, so wait for it off the caller.
            Task { await stopping.shutdown(); loops.shutdown() }
            throw error
        }
        responder.onScrape { [metrics, http, client] in
            metrics.openConnections.set(http.openConnectionCount)
            metrics.queuedPushes.set(client.connectionStats().queued)
            if let bytes = ProcessStats.residentBytes() { metrics.residentBytes.set(bytes) }
            if let fds = ProcessStats.openFileDescriptors() { metrics.openFileDescriptors.set(fds) }
            if let max = ProcessStats.maxFileDescriptors() { metrics.maxFileDescriptors.set(max) }
        }
        return RelayServer(configuration: configuration, responder: responder, metrics: metrics, client: client,
                           http: http, group: group)
    }

    private init(configuration: RelayConfiguration, responder: RelayResponder, metrics: RelayMetrics,
                 client: APNsClient, http: HTTPServer, group: EventLoopGroup) {
        self.configuration = configuration
        self.responder = responder
        self.metrics = metrics
        self.client = client
        self.http = http
        self.group = group
    }

    /// The port bound (the kernel's pick when configured with 0).
    package var port: Int { http.port }

    /// True when a production connection can take a push (what `/ready` reports).
    package var isReady: Bool { client.isReady }

    /// Graceful stop, in reverse order of start: stop accepting and let pushes in flight get
    /// their answer (up to `deadline`), then stop the client (queued pushes fail, connections
    /// close), then the loops. True when every HTTP connection finished before the deadline.
    @discardableResult
    package func shutdown(deadline: Duration = .seconds(10)) async -> Bool {
        let drained = await http.drain(deadline: deadline)
        http.stop()
        await client.shutdown()
        group.shutdown()
        return drained
    }

    /// Applies the credentials of a freshly loaded configuration (SIGHUP): its key, key id and
    /// team sign the tokens of new connections and of renewals; connections keep their current
    /// token until it is due. Nothing changes when the key cannot sign.
    ///
    /// - Returns: the other settings that differ from the running ones; they need a restart.
    /// - Throws: `ConfigurationError` naming the key's variable; the old credentials stay.
    package func reload(_ new: RelayConfiguration) throws(ConfigurationError) -> [String] {
        let key = try Self.signingKey(new)
        do {
            try client.configuration.credentials.replace(with: .init(keyID: new.keyID, teamID: new.teamID, signer: key))
        } catch {
            throw ConfigurationError(.invalid, new.authKeyVariable, "\(new.authKeyVariable) cannot sign a provider token: \(error.message)")
        }
        let reloaded: Set<String> = ["apns.key_id", "apns.team_id"]
        let running = configuration.loggableSummary
        return new.loggableSummary.filter { !reloaded.contains($0.key) && running[$0.key] != $0.value }.map(\.key).sorted()
    }

    /// The APNs client's settings from the relay's: hosts, pool, queue bound, push deadline.
    /// Shared with `apns-relay check --connect`, so the check connects exactly as `serve` would.
    package static func clientConfiguration(
        _ configuration: RelayConfiguration, extraCAPEM: String? = nil,
        tune: (@Sendable (inout APNsClientConfiguration) -> Void)? = nil
    ) throws(ConfigurationError) -> APNsClientConfiguration {
        let key = try signingKey(configuration)
        var clientConfiguration: APNsClientConfiguration
        do {
            clientConfiguration = try APNsClientConfiguration(
                keyID: configuration.keyID, teamID: configuration.teamID, signingKey: key,
                extraCAFile: configuration.caFile, extraCAPEM: extraCAPEM ?? configuration.caPEM)
        } catch {
            throw ConfigurationError(.invalid, Variable.caFile,
                                     "\(Variable.caFile) must name a PEM file of CA certificates OpenSSL can load: \(error)")
        }
        clientConfiguration.production = configuration.apnsHost
        clientConfiguration.sandbox = configuration.apnsSandboxHost
        // The relay's APNS_HOST moves production only (its sandbox keeps Apple's unless set).
        if configuration.apnsHost != RelayConfiguration.defaultAPNsHost { clientConfiguration.productionHostSetting = "APNS_HOST" }
        if configuration.apnsSandboxHost != RelayConfiguration.defaultAPNsSandboxHost {
            clientConfiguration.sandboxHostSetting = "APNS_SANDBOX_HOST"
        }
        clientConfiguration.retryPolicy = .relay
        clientConfiguration.poolSize = configuration.connectionPoolSize
        clientConfiguration.queueCapacity = configuration.maxQueuedPushes
        clientConfiguration.pushTimeout = configuration.pushTimeout
        clientConfiguration.maxStreamsPerConnection = configuration.apnsMaxStreamsPerConnection
        tune?(&clientConfiguration)
        return clientConfiguration
    }

    /// The `.p8` key, parsed once at start-up so a bad key stops the relay with one line.
    package static func signingKey(_ configuration: RelayConfiguration) throws(ConfigurationError) -> ES256PrivateKey {
        do {
            return try ES256PrivateKey(pem: configuration.authKey)
        } catch {
            // The key text never appears in the message: it is a secret.
            let variable = configuration.authKeyVariable
            throw ConfigurationError(.invalid, variable,
                                     "\(variable) must hold Apple's ES256 (P-256) .p8 key; OpenSSL could not use it: \(error)")
        }
    }
}
