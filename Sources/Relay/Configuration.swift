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
    /// Text of Apple's `.p8` signing key (PEM). Kept as text: the APNs module parses it, and
    /// this type never prints it (see `loggableSummary`).
    package var authKey: String
    /// Where `authKey` came from (`APNS_AUTH_KEY` or `APNS_AUTH_KEY_FILE`), so an error about
    /// the key names the variable the operator set.
    package var authKeyVariable: String = Variable.authKey
    /// The 10-character key ID Apple shows next to the key; it becomes the JWT's `kid`.
    package var keyID: String
    /// The 10-character team ID; it becomes the JWT's `iss`.
    package var teamID: String
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
        self.authKey = authKey
        self.keyID = keyID
        self.teamID = teamID
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
        Variable.requestTimeout, Variable.maxBufferedRequestBytes,
    ]

    /// The settings without secrets, for the start-up log line.
    package var loggableSummary: [String: String] {
        [
            "apns.key_id": keyID, "apns.team_id": teamID, "apns.topic": topic,
            "apns.host": apnsHost.description, "apns.sandbox_host": apnsSandboxHost.description,
            "apns.pool_size": String(connectionPoolSize), "apns.ca_file": caFile ?? "",
            "event_loops": String(eventLoopCount),
            "listen": APNsEndpoint(host: bindAddress, port: port).description,  // host:port, [v6]:port
            "push_timeout_ms": String(Int((pushTimeout / .milliseconds(1)).rounded())),
            "max_body_bytes": String(maxBodyBytes), "max_queued_pushes": String(maxQueuedPushes),
            "max_connections": String(maxConnections), "alert_loc_key": alertLocKey,
            "apns.max_streams_per_connection": String(apnsMaxStreamsPerConnection),
            "request_timeout_ms": String(Int((requestTimeout / .milliseconds(1)).rounded())),
            "max_buffered_request_bytes": String(maxBufferedRequestBytes),
            "log_level": logLevel.rawValue, "log_format": logFormat.rawValue,
            "relay_to.topic": relayToTopic, "relay_to.alert": relayToAlert,
        ]
    }
}

/// The names, in one place so the deploy check can find every variable read here.
enum Variable {
    static let authKey = "APNS_AUTH_KEY"
    static let authKeyFile = "APNS_AUTH_KEY_FILE"
    // The APNs library's names, accepted as aliases of the relay's (metatext-apns's) own.
    static let authKeyAlias = "APNS_KEY"
    static let authKeyFileAlias = "APNS_KEY_FILE"
    static let caPEM = "APNS_CA"
    static let keyID = "APNS_KEY_ID"
    static let teamID = "APPLE_TEAM_ID"
    static let teamIDAlias = "APNS_TEAM_ID"
    static let topic = "TOPIC"
    static let topicAlias = "APNS_TOPIC"
    static let connectionPoolSize = "CONNECTION_POOL_SIZE"
    static let eventLoops = "EVENT_LOOPS"
    static let port = "PORT"
    static let bindAddress = "BIND_ADDRESS"
    static let apnsHost = "APNS_HOST"
    static let apnsSandboxHost = "APNS_SANDBOX_HOST"
    static let caFile = "APNS_CA_FILE"
    static let pushTimeout = "PUSH_TIMEOUT_MS"
    static let maxBodyBytes = "MAX_BODY_BYTES"
    static let alertLocKey = "ALERT_LOC_KEY"
    static let logLevel = "LOG_LEVEL"
    static let logFormat = "LOG_FORMAT"
    static let maxQueuedPushes = "MAX_QUEUED_PUSHES"
    static let maxConnections = "MAX_CONNECTIONS"
    static let relayToTopic = "RELAY_TO_TOPIC"
    static let relayToAlert = "RELAY_TO_ALERT"
    static let apnsMaxStreamsPerConnection = "APNS_MAX_STREAMS_PER_CONNECTION"
    static let requestTimeout = "REQUEST_TIMEOUT_MS"
    static let maxBufferedRequestBytes = "MAX_BUFFERED_REQUEST_BYTES"
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
        environment: [String: String], envFile: String? = nil
    ) throws(ConfigurationError) -> RelayConfiguration {
        var merged = [String: String]()
        if let envFile {
            merged = try parseEnvFile(at: envFile)
        }
        for (key, value) in environment { merged[key] = value }
        return try Reader(values: merged).configuration()
    }
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

/// Validation, one variable at a time; each throws a message that says what the variable should hold.
private struct Reader {
    let values: [String: String]

    /// A set-but-blank variable counts as unset: Docker passes `VAR=` through as empty.
    func value(_ name: String) -> String? {
        guard let raw = values[name] else { return nil }
        let trimmed = raw.trimmingWhitespace
        return trimmed.isEmpty ? nil : trimmed
    }

    func required(_ name: String, _ what: String) throws(ConfigurationError) -> String {
        guard let value = value(name) else {
            throw ConfigurationError(.missing, name, "\(name) must be set to \(what)")
        }
        return value
    }

    /// A variable and its alias must agree when both are set, or the relay would silently pick one.
    func aliased(_ name: String, _ alias: String, _ what: String) throws(ConfigurationError) -> String {
        switch (value(name), value(alias)) {
        case (let a?, let b?) where a != b:
            throw ConfigurationError(
                .conflict, name, "\(name) and \(alias) must not disagree (set only one to \(what)), got \(quoted(a)) and \(quoted(b))")
        case (let a?, _): return a
        case (nil, let b?): return b
        case (nil, nil):
            throw ConfigurationError(.missing, name, "\(name) (or \(alias)) must be set to \(what)")
        }
    }

    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>, _ what: String) throws(ConfigurationError) -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw ConfigurationError(
                .invalid, name, "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)\(what), got \(quoted(text))")
        }
        return number
    }

    func appleID(_ name: String, _ text: String, _ what: String) throws(ConfigurationError) -> String {
        let valid = text.unicodeScalars.count == 10
            && text.unicodeScalars.allSatisfy { ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") }
        guard valid else {
            throw ConfigurationError(
                .invalid, name, "\(name) must be \(what): 10 characters, capital letters A-Z and digits, got \(quoted(text))")
        }
        return text
    }

    func endpoint(_ name: String, default defaultValue: APNsEndpoint) throws(ConfigurationError) -> APNsEndpoint {
        guard let text = value(name) else { return defaultValue }
        guard let endpoint = APNsEndpoint.parse(text) else {
            throw ConfigurationError(
                .invalid, name,
                "\(name) must be host[:port] or https://host[:port] with a port from 1 to 65535 and no path (e.g. api.push.apple.com:443), got \(quoted(text))\(APNsEndpoint.hint(refusing: text))")
        }
        return endpoint
    }

    func authKey() throws(ConfigurationError) -> (text: String, variable: String) {
        let inline = value(Variable.authKey) ?? value(Variable.authKeyAlias)
        let path = value(Variable.authKeyFile) ?? value(Variable.authKeyFileAlias)
        let inlineName = value(Variable.authKey) != nil ? Variable.authKey : Variable.authKeyAlias
        let pathName = value(Variable.authKeyFile) != nil ? Variable.authKeyFile : Variable.authKeyFileAlias
        var text: String
        var source: String
        switch (inline, path) {
        case (_?, _?):
            throw ConfigurationError(
                .conflict, Variable.authKey, "\(Variable.authKey) and \(Variable.authKeyFile) must not both be set: keep the key text or the path to the .p8 file, not both")
        case (nil, nil):
            throw ConfigurationError(
                .missing, Variable.authKey,
                "\(Variable.authKey) must be set to the text of Apple's .p8 key (or \(Variable.authKeyFile) to its path)")
        case (let t?, nil):
            text = t
            source = inlineName
        case (nil, let p?):
            guard let read = LocalFile.text(atPath: p) else {
                throw ConfigurationError(
                    .unreadableFile, pathName, "\(pathName) must name a readable .p8 file, could not read \(quoted(p))")
            }
            text = read
            source = pathName
        }
        // Env files and Docker cannot hold multi-line values, so metatext-apns deployments
        // write the key on one line with literal \n.
        // CR LF is one Character, so the standard library splits on it.
        text = text.unescapingLineFeeds.split(separator: "\r\n", omittingEmptySubsequences: false).joined(separator: "\n")
            .trimmingWhitespace
        // The message never repeats the key: it is a secret and would land in logs.
        // Byte by byte, with the standard library: contains(_:) with a string would link _StringProcessing.
        let namesPrivateKey = text.utf8.indices.contains { text.utf8[$0...].starts(with: "PRIVATE KEY-----".utf8) }
        guard text.hasPrefix("-----BEGIN "), namesPrivateKey, text.hasSuffix("-----") else {
            let what = source == inlineName ? "the text of" : "a path to"
            throw ConfigurationError(
                .invalid, source,
                "\(source) must hold \(what) Apple's .p8 key (-----BEGIN PRIVATE KEY----- ... -----END PRIVATE KEY-----), got \(text.count) characters that are not a PEM key")
        }
        return (text + "\n", source)
    }

    func configuration() throws(ConfigurationError) -> RelayConfiguration {
        let (authKey, authKeyVariable) = try authKey()
        let keyID = try appleID(Variable.keyID, try required(Variable.keyID, "the 10-character key ID of the .p8 key"), "the key ID of the .p8 key")
        let teamText = try aliased(Variable.teamID, Variable.teamIDAlias, "the 10-character Apple team ID")
        let teamID = try appleID(value(Variable.teamID) != nil ? Variable.teamID : Variable.teamIDAlias, teamText, "the Apple team ID")
        let topicName = value(Variable.topic) != nil ? Variable.topic : Variable.topicAlias
        let topic = try bundleID(topicName, try aliased(Variable.topic, Variable.topicAlias, "the app's bundle ID (e.g. com.example.app)"))
        var relayToTopic = topic
        if let text = value(Variable.relayToTopic) { relayToTopic = try bundleID(Variable.relayToTopic, text) }
        let relayToAlert = try relayToAlert()

        let loops: Int? = value(Variable.eventLoops) == nil ? nil : try integer(Variable.eventLoops, default: 1, in: 1...256, " (one per CPU the relay may use when unset)")
        // Unset: at least one connection per loop, so a push never has to cross to another loop's.
        let poolDefault = min(64, max(RelayConfiguration.Defaults.connectionPoolSize, loops ?? CPUBudget.current.cpus))
        let pool = try integer(Variable.connectionPoolSize, default: poolDefault, in: 1...64, "")
        let port = try integer(Variable.port, default: RelayConfiguration.Defaults.port, in: 1...65535, "")
        let bindAddress = value(Variable.bindAddress) ?? RelayConfiguration.Defaults.bindAddress
        guard Self.isIPAddress(bindAddress) else {
            throw ConfigurationError(
                .invalid, Variable.bindAddress,
                "\(Variable.bindAddress) must be an IPv4 or IPv6 address to listen on (0.0.0.0, ::, 127.0.0.1), got \(quoted(bindAddress))")
        }
        let apnsHost = try endpoint(Variable.apnsHost, default: RelayConfiguration.defaultAPNsHost)
        let sandboxHost = try endpoint(Variable.apnsSandboxHost, default: RelayConfiguration.defaultAPNsSandboxHost)

        let caFile = value(Variable.caFile)
        if let caFile, !LocalFile.isReadable(atPath: caFile) {
            throw ConfigurationError(
                .unreadableFile, Variable.caFile, "\(Variable.caFile) must name a readable PEM file of CA certificates, could not read \(quoted(caFile))")
        }
        let timeoutMS = try integer(Variable.pushTimeout, default: RelayConfiguration.Defaults.pushTimeoutMilliseconds, in: 100...60_000, " milliseconds (keep it below the sender's timeout, 10000 for Mastodon)")
        let maxBody = try integer(Variable.maxBodyBytes, default: RelayConfiguration.Defaults.maxBodyBytes, in: 4096...16_777_216, " bytes")
        let locKey = value(Variable.alertLocKey) ?? RelayConfiguration.Defaults.alertLocKey
        let levelText = value(Variable.logLevel) ?? RelayConfiguration.Defaults.logLevel.rawValue
        guard let level = LogLevel(rawValue: levelText.lowercased()) else {
            throw ConfigurationError(
                .invalid, Variable.logLevel,
                "\(Variable.logLevel) must be one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")), got \(quoted(levelText))")
        }
        let formatText = value(Variable.logFormat) ?? RelayConfiguration.Defaults.logFormat.rawValue
        guard let format = RelayConfiguration.LogFormat(rawValue: formatText.lowercased()) else {
            throw ConfigurationError(.invalid, Variable.logFormat, "\(Variable.logFormat) must be json or text, got \(quoted(formatText))")
        }
        let maxQueued = try integer(Variable.maxQueuedPushes, default: RelayConfiguration.Defaults.maxQueuedPushes, in: 1...1_000_000, "")
        let maxConnections = try integer(Variable.maxConnections, default: RelayConfiguration.Defaults.maxConnections, in: 1...1_000_000, "")
        // 2^30: the requests one HTTP/2 connection can carry (odd client ids up to 2^31 - 1).
        let maxStreams = try integer(Variable.apnsMaxStreamsPerConnection, default: RelayConfiguration.Defaults.apnsMaxStreamsPerConnection, in: 1...1_073_741_824,
                                     " streams (a connection is replaced after that many; HTTP/2 allows 2^30)")
        let requestTimeoutMS = try integer(Variable.requestTimeout, default: RelayConfiguration.Defaults.requestTimeoutMilliseconds, in: 100...600_000, " milliseconds")
        let maxBuffered = try integer(Variable.maxBufferedRequestBytes, default: RelayConfiguration.Defaults.maxBufferedRequestBytes, in: 1 << 20...1 << 40, " bytes")
        guard maxBuffered >= maxBody else {
            throw ConfigurationError(
                .invalid, Variable.maxBufferedRequestBytes,
                "\(Variable.maxBufferedRequestBytes) must be at least \(Variable.maxBodyBytes) (\(maxBody)), so one whole body fits, got \(maxBuffered)")
        }

        var configuration = RelayConfiguration(
            authKey: authKey, keyID: keyID, teamID: teamID, topic: topic, connectionPoolSize: pool, port: port,
            bindAddress: bindAddress, apnsHost: apnsHost, apnsSandboxHost: sandboxHost, caFile: caFile,
            pushTimeout: .milliseconds(timeoutMS), maxBodyBytes: maxBody, alertLocKey: locKey, logLevel: level,
            logFormat: format, maxQueuedPushes: maxQueued, maxConnections: maxConnections,
            relayToTopic: relayToTopic, relayToAlert: relayToAlert, apnsMaxStreamsPerConnection: maxStreams,
            requestTimeout: .milliseconds(requestTimeoutMS), maxBufferedRequestBytes: maxBuffered)
        configuration.authKeyVariable = authKeyVariable
        configuration.eventLoops = loops
        configuration.caPEM = value(Variable.caPEM).map(\.unescapingLineFeeds)
        return configuration
    }

    /// The `apns-topic` rule shared by `TOPIC` and `RELAY_TO_TOPIC`.
    func bundleID(_ name: String, _ text: String) throws(ConfigurationError) -> String {
        let valid = text.unicodeScalars.allSatisfy {
            ($0 >= "A" && $0 <= "Z") || ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "." || $0 == "-"
        } && !text.hasPrefix(".") && !text.hasSuffix(".")
        guard valid else {
            throw ConfigurationError(
                .invalid, name, "\(name) must be the app's bundle ID (letters, digits, '.' and '-', e.g. com.example.app), got \(quoted(text))")
        }
        return text
    }

    func relayToAlert() throws(ConfigurationError) -> String {
        guard let text = value(Variable.relayToAlert) else { return PayloadMapper.defaultRelayToAlert }
        let max = RelayConfiguration.maxRelayToAlertBytes
        guard text.utf8.count <= max, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw ConfigurationError(
                .invalid, Variable.relayToAlert,
                "\(Variable.relayToAlert) must be the alert text of /relay-to pushes, at most \(max) bytes of UTF-8 without control characters, got \(text.utf8.count) bytes")
        }
        return text
    }

    /// inet_pton parses without touching the network, so this stays free of I/O.
    static func isIPAddress(_ s: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, s, &v4) == 1 || inet_pton(AF_INET6, s, &v6) == 1
    }
}
