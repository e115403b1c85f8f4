// The relay's settings, read once at start-up from the environment (and optionally an env file).
// Variable names follow metatext-apns, so an existing deployment switches by changing its image.
#if canImport(Glibc)
import Glibc
#endif
import APNs
import WebPush
import Observability
import EventLoop
import Basics

/// Everything the relay needs to start. Built only by `load`, which validates every value, so
/// the rest of the relay never re-checks a setting or meets a half-configured state.
package struct RelayConfiguration: Sendable {
    /// How the default app (the one the environment describes) authenticates to Apple: a `.p8`
    /// key's provider tokens or a push certificate. Never printed (see `loggableSummary`).
    package var credentials: AppCredentials
    /// The token key's fields, for code that knows the relay uses a key; empty with a certificate.
    package var authKey: String {
        get { tokenKey?.authKey ?? "" }
        set { updateTokenKey { $0.authKey = newValue } }
    }
    /// Where `authKey` came from, so an error about the key names the variable the operator set.
    package var authKeyVariable: String {
        get { tokenKey?.variable ?? credentials.variable }
        set { updateTokenKey { $0.variable = newValue } }
    }
    package var keyID: String {
        get { tokenKey?.keyID ?? "" }
        set { updateTokenKey { $0.keyID = newValue } }
    }
    package var teamID: String {
        get { tokenKey?.teamID ?? "" }
        set { updateTokenKey { $0.teamID = newValue } }
    }
    package var tokenKey: TokenKey? {
        if case .token(let key) = credentials { return key }
        return nil
    }
    private mutating func updateTokenKey(_ change: (inout TokenKey) -> Void) {
        guard case .token(var key) = credentials else { return }
        change(&key)
        credentials = .token(key)
    }
    /// The app's bundle ID, sent as `apns-topic`.
    package var topic: String
    /// Kept HTTP/2 connections to each APNs host; unset, at least the loop count, so every loop
    /// has a connection of its own and no push crosses threads.
    package var connectionPoolSize: Int
    /// `EVENT_LOOPS`; nil: one per CPU the process may use (`CPUBudget`).
    package var eventLoops: Int?
    /// The event loops the relay runs.
    package var eventLoopCount: Int { eventLoops ?? CPUBudget.current.cpus }
    /// The inbound HTTP/1.1 port.
    package var port: Int
    /// The address the inbound listener binds (an IPv4 or IPv6 literal).
    package var bindAddress: String
    /// Apple's production host, overridable so tests and staging can point at an emulator.
    package var apnsHost: APNsEndpoint
    /// Apple's development host, used for `?sandbox=true`.
    package var apnsSandboxHost: APNsEndpoint
    /// An extra CA to trust besides the system store (an emulator's); never a pin of Apple's CA.
    package var caFile: String?
    /// True when `caFile` replaces the system store (toot-relay's `CA_FILENAME`) instead of adding to it.
    package var caReplacesSystemStore = false
    /// The certificate and key the relay serves HTTPS with (`TLS_CERT_FILE`, `TLS_KEY_FILE`); nil: plain HTTP.
    package var httpsCertificate: HTTPSFiles?
    /// `APPS_FILE`: the apps served beside the default one, each under `/{name}/…`.
    package var appsFile: String?
    package var apps: [RelayApp] = []
    /// Which relay's variable names the settings were read with, and the foreign ones read
    /// (`toot-relay: P12_FILENAME, P12_PASSWORD`); nil when only this relay's own names were used.
    package var foreignNames: String?
    /// Another relay's defaults, taken for variables its env file left unset; nil when none was.
    package var foreignDefaults: ForeignDefaults?
    /// What start-up (and SIGHUP) logs as warnings: settings read as leniently as the other relays
    /// read them (a `CA_FILENAME` ignored).
    package var warnings: [String] = []
    /// Where pushes Apple could not take are held, and how many (`load`'s default: the default
    /// path, used when it is writable).
    package var hold = HoldConfiguration(store: .file(path: HoldConfiguration.Defaults.path, chosenBy: .defaultPath))
    /// The same as PEM text (`APNS_CA`, the library's name), literal `\n` allowed.
    package var caPEM: String?
    /// How long a push may take end to end before the relay answers 504; below Mastodon's 10 s
    /// read timeout so the sender hears a status instead of timing out.
    package var pushTimeout: Duration
    /// The inbound body cap; bigger bodies answer 413.
    package var maxBodyBytes: Int
    /// The alert's `loc-key`: the app's fallback text when it cannot decrypt.
    package var alertLocKey: String
    package var logLevel: LogLevel
    package var logFormat: LogFormat
    /// Pushes waiting for an APNs stream; past this the relay answers 503 instead of queuing forever.
    package var maxQueuedPushes: Int
    /// Inbound connections held open at once; at the cap the longest-idle one makes room, and
    /// when none is idle new ones are refused.
    package var maxConnections: Int
    /// The `apns-topic` of `/relay-to` pushes; `topic` unless an operator serves another app there.
    package var relayToTopic: String
    /// The alert text of `/relay-to` pushes, shown when the app's extension cannot decrypt.
    package var relayToAlert: String

    /// The longest `RELAY_TO_ALERT`, in UTF-8 bytes, so a degraded `/relay-to` payload (the
    /// alert and an extra path of `PushRoute.maxIDBytes`) always fits Apple's 4096 bytes.
    package static let maxRelayToAlertBytes = 256
    /// Streams one APNs connection opens before it is drained and replaced: HTTP/2 stream ids
    /// end at 2^31, so a connection must retire before (at most 2^30 requests).
    package var apnsMaxStreamsPerConnection: Int
    /// From a request's first byte to its last, head and body together; past it the answer is
    /// 408 (which Mastodon retries), so a body trickled a byte at a time can't hold memory.
    package var requestTimeout: Duration
    /// Bytes all half-received requests may hold together; past it the slowest senders are
    /// answered 408, so slow clients can't push the relay past its memory limit.
    package var maxBufferedRequestBytes: Int

    /// For tests and the demo, which build a configuration in code; every default is the one
    /// `load` uses when the variable is unset.
    package init(
        authKey: String, keyID: String, teamID: String, topic: String, connectionPoolSize: Int = Defaults.connectionPoolSize,
        port: Int = Defaults.port, bindAddress: String = Defaults.bindAddress, apnsHost: APNsEndpoint = defaultAPNsHost,
        apnsSandboxHost: APNsEndpoint = defaultAPNsSandboxHost, caFile: String? = nil,
        pushTimeout: Duration = .milliseconds(Defaults.pushTimeoutMilliseconds), maxBodyBytes: Int = Defaults.maxBodyBytes,
        alertLocKey: String = Defaults.alertLocKey, logLevel: LogLevel = Defaults.logLevel, logFormat: LogFormat = Defaults.logFormat,
        maxQueuedPushes: Int = Defaults.maxQueuedPushes, maxConnections: Int = Defaults.maxConnections, relayToTopic: String? = nil,
        relayToAlert: String = PayloadMapper.defaultRelayToAlert, apnsMaxStreamsPerConnection: Int = Defaults.apnsMaxStreamsPerConnection,
        requestTimeout: Duration = .milliseconds(Defaults.requestTimeoutMilliseconds), maxBufferedRequestBytes: Int = Defaults.maxBufferedRequestBytes
    ) {
        self.credentials = .token(TokenKey(authKey: authKey, variable: Variable.authKey, keyID: keyID, teamID: teamID))
        self.topic = topic
        self.connectionPoolSize = connectionPoolSize
        self.port = port
        self.bindAddress = bindAddress
        self.apnsHost = apnsHost
        self.apnsSandboxHost = apnsSandboxHost
        self.caFile = caFile
        self.pushTimeout = pushTimeout
        self.maxBodyBytes = maxBodyBytes
        self.alertLocKey = alertLocKey
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.maxQueuedPushes = maxQueuedPushes
        self.maxConnections = maxConnections
        self.relayToTopic = relayToTopic ?? topic
        self.relayToAlert = relayToAlert
        self.apnsMaxStreamsPerConnection = apnsMaxStreamsPerConnection
        self.requestTimeout = requestTimeout
        self.maxBufferedRequestBytes = maxBufferedRequestBytes
    }

    /// What an unset variable means, for `init` and `load` alike.
    package enum Defaults {
        package static let connectionPoolSize = 2
        package static let port = 3000
        package static let bindAddress = "0.0.0.0"
        package static let pushTimeoutMilliseconds = 8000
        package static let maxBodyBytes = WebPushParser.defaultMaxBodyBytes
        package static let alertLocKey = "apns-default-message"
        package static let logLevel = LogLevel.info
        package static let logFormat = LogFormat.json
        package static let maxQueuedPushes = 10_000
        package static let maxConnections = 10_000
        package static let apnsMaxStreamsPerConnection = 1_000_000_000
        package static let requestTimeoutMilliseconds = 10_000
        package static let maxBufferedRequestBytes = 64 << 20
    }

    package static let defaultAPNsHost = APNsEndpoint.production
    package static let defaultAPNsSandboxHost = APNsEndpoint.sandbox

    /// How log lines are written.
    package enum LogFormat: String, Sendable, CaseIterable {
        /// One JSON object per line, for log shippers (the default).
        case json
        /// Human-readable lines, for a terminal.
        case text
    }

    /// Every variable the relay reads, in the order the example env file documents them.
    package static let variableNames: [String] = [
        Variable.authKey, Variable.authKeyFile, Variable.authKeyAlias, Variable.authKeyFileAlias, Variable.keyID, Variable.teamID, Variable.teamIDAlias,
        Variable.topic, Variable.topicAlias, Variable.connectionPoolSize, Variable.eventLoops, Variable.port, Variable.bindAddress,
        Variable.apnsHost, Variable.apnsSandboxHost, Variable.caFile, Variable.caPEM, Variable.pushTimeout, Variable.maxBodyBytes,
        Variable.alertLocKey, Variable.logLevel, Variable.logFormat, Variable.maxQueuedPushes,
        Variable.maxConnections, Variable.relayToTopic, Variable.relayToAlert, Variable.apnsMaxStreamsPerConnection,
        Variable.requestTimeout, Variable.maxBufferedRequestBytes, Variable.p12File, Variable.p12Base64, Variable.p12Password,
        Variable.certFile, Variable.certKeyFile, Variable.tlsCertFile, Variable.tlsKeyFile, Variable.appsFile,
        Variable.storePath, Variable.storeURL, Variable.holdMaxPushes, Variable.holdMaxBytes, Variable.holdMaxPerDevice, Variable.holdDeliveryInFlight,
    ] + ForeignVariable.all

    /// The settings without secrets, for the start-up log line: numbers as numbers, so a log
    /// pipeline that types a field once (Elastic, Loki's JSON, jq) reads every line alike.
    /// `apns.max_streams_per_connection` is there only when set: otherwise Apple's own limit holds.
    package var loggableSummary: [String: LogValue] {
        var summary: [String: LogValue] = [
            "apns.topic": .string(topic),
            "apns.host": .string(apnsHost.description), "apns.sandbox_host": .string(apnsSandboxHost.description),
            "apns.pool_size": .int(connectionPoolSize), "apns.ca_file": .string(caFile ?? ""),
            "event_loops": .int(eventLoopCount),
            "listen": .string(APNsEndpoint(host: bindAddress, port: port).description),  // host:port, [v6]:port
            "push_timeout_ms": .int(Int((pushTimeout / .milliseconds(1)).rounded())),
            "max_body_bytes": .int(maxBodyBytes), "max_queued_pushes": .int(maxQueuedPushes),
            "max_connections": .int(maxConnections), "alert_loc_key": .string(alertLocKey),
            "request_timeout_ms": .int(Int((requestTimeout / .milliseconds(1)).rounded())),
            "max_buffered_request_bytes": .int(maxBufferedRequestBytes),
            "log_level": .string(logLevel.rawValue), "log_format": .string(logFormat.rawValue),
            "relay_to.topic": .string(relayToTopic), "relay_to.alert": .string(relayToAlert),
        ]
        switch hold.store {
        case .off(let why): summary["hold"] = .string("off: \(why)")
        case .file, .redis:
            if case .file(let path, _) = hold.store { summary["hold.store_path"] = .string(path) }
            summary["hold.store"] = .string(hold.store.label)
            summary["hold.max_pushes"] = .int(hold.limits.maxEntries)
            summary["hold.max_bytes"] = .int(hold.limits.maxBytes)
            summary["hold.max_per_device"] = .int(hold.limits.maxPerDevice)
            summary["hold.delivery_in_flight"] = .int(hold.deliveryInFlight)
        }
        if apnsMaxStreamsPerConnection != Defaults.apnsMaxStreamsPerConnection {
            summary["apns.max_streams_per_connection"] = .int(apnsMaxStreamsPerConnection)
        }
        switch credentials {
        case .token(let key):
            summary["apns.key_id"] = .string(key.keyID)
            summary["apns.team_id"] = .string(key.teamID)
        case .certificate(let certificate):
            summary["apns.certificate"] = .string(certificate.identity.commonName ?? "")
            summary["apns.certificate_expires"] = .string(certificate.expiryDay)
        }
        if let httpsCertificate { summary["https.certificate_file"] = .string(httpsCertificate.certificateFile) }
        if let appsFile { summary["apps_file"] = .string(appsFile) }
        if let foreignNames { summary["config.names"] = .string(foreignNames) }
        return summary
    }
}


extension RelayConfiguration {
    /// Reads and validates every setting.
    ///
    /// - Parameters:
    ///   - environment: usually `ProcessEnvironment.variables`.
    ///   - envFile: the path given with `--env-file`. Its `KEY=VALUE` lines fill in only the
    ///     variables the real environment leaves unset, so an operator can override one
    ///     setting of a shared file with `VAR=… apns-relay --env-file …`, as with Docker and systemd.
    package static func load(
        environment: [String: String], envFile: String? = nil, now: Int64 = WallTime.unixSecondsNow
    ) throws(ConfigurationError) -> RelayConfiguration {
        try Reader(values: merged(environment, envFile: envFile), now: now).configuration()
    }

    /// Only the port and the HTTPS files `load` would find, by the same rules: for `healthcheck`,
    /// which must ask where and how the relay serves without loading its credentials.
    package static func listener(environment: [String: String], envFile: String? = nil) throws(ConfigurationError) -> (port: Int, https: HTTPSFiles?) {
        let reader = Reader(values: try merged(environment, envFile: envFile), now: WallTime.unixSecondsNow)
        return (try reader.port(), try reader.httpsFiles())
    }

    private static func merged(_ environment: [String: String], envFile: String?) throws(ConfigurationError) -> [String: String] {
        var merged = [String: String]()
        if let envFile {
            merged = try parseEnvFile(at: envFile)
        }
        for (key, value) in environment { merged[key] = value }
        return merged
    }
}

/// The defaults of toot-relay or webpush-apn-relay that start-up took (`Reader.foreignFamily`).
package struct ForeignDefaults: Sendable, Equatable {
    /// `webpush-apn-relay` or `toot-relay`.
    package var family: String
    /// Why its defaults apply: `the credentials are read from TOKEN_AUTH_KEY_FILENAME`.
    package var reason: String
    /// The values taken, as `PORT=42069`.
    package var taken: [String]
}

/// Shows a value inside a message so an empty or space-padded one is visible, its backslashes,
/// quotes and line breaks escaped (scalar by scalar: a CR LF pair is one Character).
func quoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
