#if canImport(Glibc)
import Glibc
#endif
import APNs
import WebPush
import Observability
import EventLoop
import Basics

/// Validation, one variable at a time; each throws a message that says what the variable should hold.
struct Reader {
    let values: [String: String]
    /// Unix seconds, for a push certificate's expiry.
    let now: Int64

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
        guard Self.isAppleID(text) else {
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

    func configuration() throws(ConfigurationError) -> RelayConfiguration {
        let credentials = try credentials()
        let (topic, topicDefaulted) = try topic(for: credentials)
        var relayToTopic = topic
        if let text = value(Variable.relayToTopic) { relayToTopic = try bundleID(Variable.relayToTopic, text) }
        let relayToAlert = try relayToAlert()

        let loops: Int? = value(Variable.eventLoops) == nil ? nil : try integer(Variable.eventLoops, default: 1, in: 1...256, " (one per CPU the relay may use when unset)")
        // Unset: at least one connection per loop, so a push never has to cross to another loop's.
        let poolDefault = min(64, max(RelayConfiguration.Defaults.connectionPoolSize, loops ?? CPUBudget.current.cpus))
        let pool = try integer(Variable.connectionPoolSize, default: poolDefault, in: 1...64, "")
        let port = try port()
        let bindAddress = value(Variable.bindAddress) ?? RelayConfiguration.Defaults.bindAddress
        guard Self.isIPAddress(bindAddress) else {
            throw ConfigurationError(
                .invalid, Variable.bindAddress,
                "\(Variable.bindAddress) must be an IPv4 or IPv6 address to listen on (0.0.0.0, ::, 127.0.0.1), got \(quoted(bindAddress))")
        }
        let apnsHost = try endpoint(Variable.apnsHost, default: RelayConfiguration.defaultAPNsHost)
        let sandboxHost = try endpoint(Variable.apnsSandboxHost, default: RelayConfiguration.defaultAPNsSandboxHost)

        let (caFile, caReplacesSystemStore, caWarning) = try caFile(for: credentials)
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
            authKey: "", keyID: "", teamID: "", topic: topic, connectionPoolSize: pool, port: port,
            bindAddress: bindAddress, apnsHost: apnsHost, apnsSandboxHost: sandboxHost, caFile: caFile,
            pushTimeout: .milliseconds(timeoutMS), maxBodyBytes: maxBody, alertLocKey: locKey, logLevel: level,
            logFormat: format, maxQueuedPushes: maxQueued, maxConnections: maxConnections,
            relayToTopic: relayToTopic, relayToAlert: relayToAlert, apnsMaxStreamsPerConnection: maxStreams,
            requestTimeout: .milliseconds(requestTimeoutMS), maxBufferedRequestBytes: maxBuffered)
        configuration.credentials = credentials
        configuration.caReplacesSystemStore = caReplacesSystemStore
        configuration.httpsCertificate = try httpsFiles()
        configuration.foreignNames = foreignNames()
        if let (family, reason) = foreignFamily() {
            let taken = (value(Variable.port) == nil ? ["\(Variable.port)=\(port)"] : []) + (topicDefaulted ? ["\(Variable.topic)=\(topic)"] : [])
            if !taken.isEmpty { configuration.foreignDefaults = ForeignDefaults(family: family, reason: reason, taken: taken) }
        }
        configuration.warnings = caWarning.map { [$0] } ?? []
        if let appsFile = value(Variable.appsFile) {
            configuration.appsFile = appsFile
            configuration.apps = try AppsFile.read(path: appsFile, variable: Variable.appsFile, now: now)
        }
        configuration.hold = try hold()
        configuration.eventLoops = loops
        configuration.caPEM = value(Variable.caPEM).map(\.unescapingLineFeeds)
        return configuration
    }

    /// The `apns-topic` rule shared by `TOPIC` and `RELAY_TO_TOPIC`.
    func bundleID(_ name: String, _ text: String) throws(ConfigurationError) -> String {
        guard Self.isBundleID(text) else {
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

    /// Text framed as a PEM private key (`-----BEGIN PRIVATE KEY-----` … `-----`), what a `.p8`
    /// file holds; the APNs module parses the key itself.
    static func isPEMPrivateKey(_ text: String) -> Bool {
        text.hasPrefix("-----BEGIN ") && StringBytes.contains(text, "PRIVATE KEY-----") && text.hasSuffix("-----")
    }

    /// A team or key id as Apple writes them: 10 characters, capital letters and digits.
    static func isAppleID(_ text: String) -> Bool {
        text.unicodeScalars.count == 10 && text.unicodeScalars.allSatisfy { ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") }
    }

    /// What `apns-topic` may hold: letters, digits, '.' and '-', not starting or ending with '.'.
    static func isBundleID(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy {
            ($0 >= "A" && $0 <= "Z") || ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "." || $0 == "-"
        } && !text.hasPrefix(".") && !text.hasSuffix(".")
    }

    /// inet_pton parses without touching the network, so this stays free of I/O.
    static func isIPAddress(_ s: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, s, &v4) == 1 || inet_pton(AF_INET6, s, &v6) == 1
    }
}
