import APNs
import Observability
import OpenSSLSupport

/// Makes the APNs client of one set of credentials, with the relay's settings.
typealias ClientMaker = @Sendable (RelayConfiguration, AppCredentials) throws(ConfigurationError) -> APNsClient

/// The relay's APNs clients: one per distinct credentials (`AppCredentials.sharingKey`), so apps
/// of one team and key share connections and one provider token, and apps of another team or
/// certificate get their own.
extension RelayServer {
    /// The apps of a configuration with their clients, made but not yet serving.
    struct AppTable {
        var apps: [AppDirectory.App] = []
        var configured: Bool
        /// Every client the table uses, by sharing key (the default app's not included).
        var clients: [String: APNsClient] = [:]
        /// The clients made for this table, shut down if it is discarded.
        var made: [APNsClient] = []
        var certificates: [(app: String, certificate: PushCertificate)] = []
    }

    /// The clients and settings of `apps`, reusing the running client of any credentials already
    /// in use. - Throws: the first app whose client cannot be made; clients made so far are stopped.
    func appTable(_ apps: [RelayApp], configured: Bool, configuration: RelayConfiguration,
                  defaultKey: String) throws(ConfigurationError) -> AppTable {
        // The default client is filed under the default app's credentials of now (`defaultKey`):
        // under its old key (a rotated key) it would send for an app that still names that key.
        let running = clients.withLock { $0 }.filter { $0.value !== client }
        var table = AppTable(configured: configured)
        if case .certificate(let certificate) = configuration.credentials {
            table.certificates.append((RelayApp.defaultName, certificate))
        }
        for app in apps {
            let key = app.credentials.sharingKey
            var sender = key == defaultKey ? client : table.clients[key] ?? running[key]
            if sender == nil {
                do {
                    let made = try makeClient(configuration, app.credentials)
                    table.made.append(made)
                    sender = made
                } catch {
                    discard(table)
                    throw ConfigurationError(error.code, Variable.appsFile, "\(Variable.appsFile): app \(quoted(app.name)): \(error.message)")
                }
            }
            if key != defaultKey { table.clients[key] = sender }
            if case .certificate(let certificate) = app.credentials { table.certificates.append((app.name, certificate)) }
            let settings = RelayResponder.Settings(
                topic: app.topic, alertLocKey: configuration.alertLocKey, maxBodyBytes: configuration.maxBodyBytes,
                relayToTopic: app.relayToTopic, relayToAlert: configuration.relayToAlert)
            table.apps.append(AppDirectory.App(name: app.name, settings: settings, sender: sender!))
        }
        return table
    }

    /// Serves `table` from now on. The clients it no longer uses take no new push; they stop
    /// after `drain` (the push deadline), when every push they held has had its answer or its
    /// deadline, so a reload answers no queued push with a refusal.
    func install(_ table: AppTable, defaultKey: String, drain: Duration) {
        var next = table.clients
        next[defaultKey] = client
        let retired = clients.withLock { clients in
            let old = clients
            clients = next
            return old.filter { key, client in next[key] !== client && client !== self.client }.map(\.value)
        }
        responder.apps.replace(with: table.apps, configured: table.configured)
        let gone = certificateApps.withLock { apps in
            let old = apps
            apps = table.certificates
            return old.map(\.app).filter { name in !table.certificates.contains { $0.app == name } }
        }
        for app in gone { metrics.forgetCertificateExpiry(app: app) }
        guard !retired.isEmpty else { return }
        retiredClients.withLock { $0 += retired }
        Task { [self] in
            try? await Task.sleep(for: drain + .seconds(1))
            for client in retired { await client.shutdown() }
            retiredClients.withLock { list in list.removeAll { client in retired.contains { $0 === client } } }
        }
    }

    /// Stops the clients a table made that never served.
    func discard(_ table: AppTable) {
        for client in table.made { Task { await client.shutdown() } }
    }

    /// The APNs client's settings from the relay's: hosts, pool, queue bound, push deadline, and
    /// the credentials (the default app's unless given). Shared with `apns-relay check --connect`,
    /// so the check connects exactly as `serve` would.
    package static func clientConfiguration(
        _ configuration: RelayConfiguration, credentials: AppCredentials? = nil, extraCAPEM: String? = nil,
        tune: (@Sendable (inout APNsClientConfiguration) -> Void)? = nil
    ) throws(ConfigurationError) -> APNsClientConfiguration {
        var clientConfiguration: APNsClientConfiguration
        let caPEM = extraCAPEM ?? configuration.caPEM
        switch credentials ?? configuration.credentials {
        case .token(let key):
            let signer = try signingKey(key)
            do {
                clientConfiguration = try APNsClientConfiguration(
                    keyID: key.keyID, teamID: key.teamID, signingKey: signer, trustSystemStore: !configuration.caReplacesSystemStore,
                    extraCAFile: configuration.caFile, extraCAPEM: caPEM)
            } catch {
                throw caError(configuration, error)
            }
        case .certificate(let certificate):
            do {
                clientConfiguration = try APNsClientConfiguration(
                    certificate: certificate.identity, trustSystemStore: !configuration.caReplacesSystemStore,
                    extraCAFile: configuration.caFile, extraCAPEM: caPEM)
            } catch {
                // The CA, or the certificate: say which the context refused.
                guard configuration.caFile != nil || caPEM != nil else {
                    throw ConfigurationError(.invalid, certificate.variable, "\(certificate.variable): OpenSSL cannot use the push certificate: \(error)")
                }
                throw caError(configuration, error)
            }
        }
        clientConfiguration.production = configuration.apnsHost
        clientConfiguration.sandbox = configuration.apnsSandboxHost
        // The relay's APNS_HOST moves production only (its sandbox keeps Apple's unless set).
        if configuration.apnsHost != RelayConfiguration.defaultAPNsHost { clientConfiguration.productionHostSetting = Variable.apnsHost }
        if configuration.apnsSandboxHost != RelayConfiguration.defaultAPNsSandboxHost {
            clientConfiguration.sandboxHostSetting = Variable.apnsSandboxHost
        }
        if configuration.caReplacesSystemStore { clientConfiguration.caSetting = ForeignVariable.caFile }
        clientConfiguration.retryPolicy = .relay
        clientConfiguration.poolSize = configuration.connectionPoolSize
        clientConfiguration.queueCapacity = configuration.maxQueuedPushes
        clientConfiguration.pushTimeout = configuration.pushTimeout
        clientConfiguration.maxStreamsPerConnection = configuration.apnsMaxStreamsPerConnection
        tune?(&clientConfiguration)
        return clientConfiguration
    }

    private static func caError(_ configuration: RelayConfiguration, _ error: any Error) -> ConfigurationError {
        let name = configuration.caReplacesSystemStore ? ForeignVariable.caFile : Variable.caFile
        return ConfigurationError(.invalid, name, "\(name) must name a PEM file of CA certificates OpenSSL can load: \(error)")
    }

    /// The `.p8` key, parsed once at start-up so a bad key stops the relay with one line.
    package static func signingKey(_ key: TokenKey) throws(ConfigurationError) -> ES256PrivateKey {
        do {
            return try ES256PrivateKey(pem: key.authKey)
        } catch {
            // The key text never appears in the message: it is a secret.
            throw ConfigurationError(.invalid, key.variable,
                                     "\(key.variable) must hold Apple's ES256 (P-256) .p8 key; OpenSSL could not use it: \(error)")
        }
    }
}
