#if canImport(Glibc)
import Glibc
#endif
import APNs
import Basics
import EventLoop
import HTTPServer
import Observability
import OpenSSLSupport
import Synchronization

/// The whole relay in one process: the HTTP/1.1 server (plain or HTTPS) and the APNs clients (the
/// default app's, and one per other credentials of `APPS_FILE`) on one set of event loops, wired
/// to one responder, stopped in reverse order of start.
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
    /// Makes the client of an app's credentials (`RelayServer+Clients.swift`).
    let makeClient: ClientMaker
    /// Every running client by `AppCredentials.sharingKey`: the default app's and the apps'.
    let clients: Mutex<[String: APNsClient]>
    /// The default app's credentials in use: the configuration's, then each reload's.
    let defaultCredentials: Mutex<AppCredentials>
    /// Clients of apps a reload removed, stopping once their pushes have ended.
    let retiredClients = Mutex<[APNsClient]>([])
    /// The push certificates in use, by app, for the expiry gauge.
    let certificateApps = Mutex<[(app: String, certificate: PushCertificate)]>([])
    /// Holding what Apple could not take; nil when it is off.
    let holding: Holding?
    /// The CAs trusted for Apple's servers as last loaded (`trustedCAs`): a reload that finds
    /// them changed gives every client the new trust.
    let loadedCAs: Mutex<String>
    /// `Options.extraCAPEM`, which every trust the relay builds keeps.
    let extraCAPEM: String?

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

    /// Parses the key (or loads the certificate), starts the default app's APNs client (its
    /// production connections open at once), then the HTTP server, then the apps' clients, so the
    /// first request finds a client.
    ///
    /// - Throws: `ConfigurationError` naming the setting at fault (the key's variable when it is not
    ///   an ES256 key, the CA's, the HTTPS files', `APPS_FILE` and its app); the server's bind error
    ///   otherwise.
    package static func start(configuration: RelayConfiguration, logger: Logger, options: Options = Options(),
                             metrics: RelayMetrics = RelayMetrics()) throws -> RelayServer {
        let loopCount = max(1, options.loopCount ?? configuration.eventLoopCount)
        let (holdOwner, holdOff) = try openHoldStore(configuration.hold, logger: logger, metrics: metrics.store)
        let group: EventLoopGroup
        do { group = try EventLoopGroup(loopCount: loopCount) } catch {
            holdOwner?.close()
            throw error
        }
        let observer = APNsEventLog(metrics: metrics, logger: logger)
        let makeClient: ClientMaker = { configuration, credentials throws(ConfigurationError) in
            let clientConfiguration = try RelayServer.clientConfiguration(
                configuration, credentials: credentials, extraCAPEM: options.extraCAPEM, tune: options.tuneClient)
            do {
                return try APNsClient(configuration: clientConfiguration, group: group, observer: observer)
            } catch {
                throw ConfigurationError(.invalid, credentials.variable, "\(credentials.variable) cannot sign a provider token: \(error)")
            }
        }
        let client: APNsClient
        do {
            client = try makeClient(configuration, configuration.credentials)
        } catch {
            holdOwner?.close()
            group.shutdown()
            throw error
        }
        let apps = AppDirectory()
        let responder = RelayResponder(
            settings: .init(configuration), sender: client, apps: apps, logger: logger, metrics: metrics,
            readiness: { client.isReady ? nil : "no production connection to APNs (\(configuration.apnsHost)) is usable yet" },
            now: options.now)
        // Before the server listens: the first push may already need the store.
        let holding = holdOwner.map { owner in
            Holding(owner: owner, configuration: configuration.hold, pushTimeout: configuration.pushTimeout,
                    metrics: metrics.hold, logger: logger, now: options.now,
                    senders: { [weak responder] name in responder?.sender(forHeldApp: name) })
        }
        responder.holdWith(holding.map { .on($0) } ?? .off(why: holdOff ?? "not configured"))

        var limits = HTTPParserLimits()
        limits.maxBodyBytes = configuration.maxBodyBytes
        var serverConfiguration = HTTPServerConfiguration(
            host: configuration.bindAddress, port: configuration.port, limits: limits,
            requestTimeout: configuration.requestTimeout, maxConnections: configuration.maxConnections,
            maxBufferedRequestBytes: configuration.maxBufferedRequestBytes, loopCount: loopCount)
        let http: HTTPServer
        do {
            if let files = configuration.httpsCertificate { serverConfiguration.tls = try Self.https(files) }
            http = try HTTPServer.start(configuration: serverConfiguration, group: group, responder: responder,
                                        logger: { line in logger.debug(line) })
        } catch {
            let stopping = client
            let loops = group
            holding?.close()
            // The client's shutdown is async; bind errors are rare, so wait for it off the caller.
            Task { await stopping.shutdown(); loops.shutdown() }
            throw error
        }
        let relay = RelayServer(configuration: configuration, responder: responder, metrics: metrics, client: client,
                                http: http, group: group, makeClient: makeClient, holding: holding, extraCAPEM: options.extraCAPEM)
        do {
            let table = try relay.appTable(configuration.apps, configured: configuration.appsFile != nil,
                                           configuration: configuration, defaultKey: configuration.credentials.sharingKey)
            relay.install(table, defaultKey: configuration.credentials.sharingKey, drain: .zero)
        } catch {
            Task { await relay.shutdown(deadline: .zero) }
            throw error
        }
        responder.onScrape { [metrics, http, relay] in
            metrics.openConnections.set(http.openConnectionCount)
            metrics.queuedPushes.set(relay.clients.withLock { $0.values.reduce(0) { $0 + $1.connectionStats().queued } })
            let now = WallTime.unixSecondsNow
            for (app, certificate) in relay.certificates { metrics.setCertificateExpiry(app: app, seconds: certificate.secondsLeft(now: now)) }
            if let notAfter = relay.httpsCertificateNotAfter { metrics.httpsCertificateExpiry.set(Int(notAfter - now)) }
            relay.holding?.updateGauges(nowMs: options.now().nanosecondsSince1970 / 1_000_000)
            metrics.store.up.set(relay.holding?.storeAvailable == true ? 1 : 0)
            if let bytes = ProcessStats.residentBytes() { metrics.residentBytes.set(bytes) }
            if let fds = ProcessStats.openFileDescriptors() { metrics.openFileDescriptors.set(fds) }
            if let max = ProcessStats.maxFileDescriptors() { metrics.maxFileDescriptors.set(max) }
        }
        return relay
    }

    private init(configuration: RelayConfiguration, responder: RelayResponder, metrics: RelayMetrics,
                 client: APNsClient, http: HTTPServer, group: EventLoopGroup, makeClient: @escaping ClientMaker, holding: Holding?,
                 extraCAPEM: String?) {
        self.holding = holding
        self.extraCAPEM = extraCAPEM
        self.loadedCAs = Mutex(Self.trustedCAs(configuration))
        self.configuration = configuration
        self.responder = responder
        self.metrics = metrics
        self.client = client
        self.http = http
        self.group = group
        self.makeClient = makeClient
        self.clients = Mutex([configuration.credentials.sharingKey: client])
        self.defaultCredentials = Mutex(configuration.credentials)
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
        let all = clients.withLock { Array($0.values) } + retiredClients.withLock { $0 }
        await withTaskGroup(of: Void.self) { stopping in
            for client in all { stopping.addTask { await client.shutdown() } }
        }
        holding?.close()
        group.shutdown()
        return drained
    }

    /// What a reload did.
    package struct ReloadOutcome: Sendable {
        /// The settings that differ from the running ones and apply only after a restart.
        package var needRestart: [String]
        /// The default app's key (or certificate) changed and is in use now.
        package var credentialsChanged: Bool
        /// The CAs trusted for Apple's servers changed: connections are replaced with the new trust.
        package var trustChanged: Bool
    }

    /// Applies what a freshly loaded configuration (SIGHUP) may change while the relay runs:
    /// the default app's `.p8` key, key id and team (the next push sends a token they signed) or
    /// its push certificate (every connection drains while a replacement presents the new one),
    /// each only when it changed (a new token for an unchanged key would count against Apple's
    /// limit of one per 20 minutes); the HTTPS files; and the apps of `APPS_FILE` (new apps get
    /// their clients; removed ones' clients take no new push and stop once the pushes they hold
    /// have their answer or their deadline). Everything that can fail is tried first, so a
    /// reload that throws has changed nothing.
    ///
    /// - Throws: `ConfigurationError` naming the setting at fault; everything running stays.
    package func reload(_ new: RelayConfiguration) throws(ConfigurationError) -> ReloadOutcome {
        let running = defaultCredentials.withLock { $0 }
        var keyChange: (TokenKey, ES256PrivateKey)?
        var certificateChange: PushCertificate?
        switch (running, new.credentials) {
        case (.token(let old), .token(let key)):
            if old.keyID != key.keyID || old.teamID != key.teamID || old.authKey != key.authKey {
                let signer = try Self.signingKey(key)
                // Signed once here, so the swap below cannot fail on the key.
                do { _ = try ProviderToken(keyID: key.keyID, teamID: key.teamID, issuedAt: WallTime.unixSecondsNow, signer: signer) } catch {
                    throw ConfigurationError(.invalid, key.variable, "\(key.variable) cannot sign a provider token: \(error.message)")
                }
                keyChange = (key, signer)
            }
        case (.certificate(let old), .certificate(let certificate)):
            if old.identity.fingerprint != certificate.identity.fingerprint { certificateChange = certificate }
        default:
            throw ConfigurationError(
                .invalid, new.credentials.variable,
                "\(new.credentials.variable): switching between a .p8 key and a push certificate needs a restart; the running credentials stay")
        }
        let cas = Self.trustedCAs(new)
        let caPEM = extraCAPEM ?? new.caPEM
        let trustChanged = cas != loadedCAs.withLock { $0 }
        if trustChanged {
            // Tried first, like everything that can fail: a CA OpenSSL cannot load changes nothing.
            do { _ = try TLSContext.client(alpn: ["h2"], trustSystemStore: !new.caReplacesSystemStore, extraCAFile: new.caFile, extraCAPEM: caPEM) } catch {
                let name = new.caReplacesSystemStore ? ForeignVariable.caFile : Variable.caFile
                throw ConfigurationError(.invalid, name, "\(name) must name a PEM file of CA certificates OpenSSL can load: \(error)")
            }
        }
        let table = try appTable(new.apps, configured: new.appsFile != nil, configuration: new,
                                 defaultKey: new.credentials.sharingKey)
        if let tls = http.tls, let files = new.httpsCertificate, files.certificateFile == tls.certificatePath, files.keyFile == tls.keyPath {
            do { try tls.reload() } catch {
                discard(table)
                throw ConfigurationError(.invalid, files.variable, "\(files.variable): \(error.message)")
            }
        }
        if let (key, signer) = keyChange {
            // Signed above with the same key: cannot fail but for memory.
            try? client.configuration.credentials?.replace(with: .init(keyID: key.keyID, teamID: key.teamID, signer: signer))
        }
        if let certificate = certificateChange {
            do { try client.replaceCertificate(with: certificate.identity) } catch {
                discard(table)
                throw ConfigurationError(.invalid, certificate.variable, "\(certificate.variable): \(error.message)")
            }
        }
        defaultCredentials.withLock { $0 = new.credentials }
        install(table, defaultKey: new.credentials.sharingKey, drain: new.pushTimeout)
        if trustChanged {
            // Checked above: cannot fail but for memory. The apps' clients trust what the default's does.
            for client in clients.withLock({ Array($0.values) }) {
                try? client.replaceTrust(trustSystemStore: !new.caReplacesSystemStore, extraCAFile: new.caFile, extraCAPEM: caPEM)
            }
            loadedCAs.withLock { $0 = cas }
        }
        let reloaded: Set<String> = ["apns.key_id", "apns.team_id", "apns.certificate", "apns.certificate_expires", "apps_file", "config.names",
                                     "apns.ca_file"]
        let old = configuration.loggableSummary, now = new.loggableSummary
        let changed = Set(old.keys).union(now.keys).filter { !reloaded.contains($0) && old[$0] != now[$0] }
        return ReloadOutcome(needRestart: changed.sorted(), credentialsChanged: keyChange != nil || certificateChange != nil,
                             trustChanged: trustChanged)
    }

    /// What the relay trusts for Apple's servers besides (or instead of) the system store: the
    /// CA file's text as it reads now and `APNS_CA`, so a file edited in place counts as changed.
    static func trustedCAs(_ configuration: RelayConfiguration) -> String {
        var text = configuration.caReplacesSystemStore ? "replaces the system store\n" : ""
        if let file = configuration.caFile {
            text += file + "\n" + (((try? LocalFile.readText(atPath: file)) ?? nil) ?? "unreadable")
        }
        return text + (configuration.caPEM ?? "")
    }

    /// The HTTPS listener's certificate and key, loaded. - Throws: one line naming the variable and the file.
    static func https(_ files: HTTPSFiles) throws(ConfigurationError) -> HTTPServerTLS {
        do {
            return try HTTPServerTLS(certificatePath: files.certificateFile, keyPath: files.keyFile)
        } catch {
            throw ConfigurationError(.invalid, files.variable, "\(files.variable): \(error.message)")
        }
    }

    /// The certificate HTTPS is served with now: its notAfter (Unix seconds); nil without HTTPS.
    package var httpsCertificateNotAfter: Int64? { http.tls?.certificateNotAfter }

    /// The push certificates in use and the apps they serve, for the expiry warning and gauge.
    package var certificates: [(app: String, certificate: PushCertificate)] {
        certificateApps.withLock { $0 }
    }
}
