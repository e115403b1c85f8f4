import Foundation
import EventLoop
import Testing
import PushStore
import Observability
@testable import Relay

/// Not a real key: the configuration only checks the PEM framing; the APNs module parses it.
private let pem = "-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQgFAKEFAKEFAKE\n-----END PRIVATE KEY-----\n"

/// The smallest environment that starts the relay.
private let minimal: [String: String] = [
    "APNS_AUTH_KEY": pem, "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "TEAM123456", "TOPIC": "com.example.app",
]

private func load(_ overrides: [String: String?], envFile: String? = nil) throws(ConfigurationError) -> RelayConfiguration {
    var env = minimal
    for (key, value) in overrides { env[key] = value }
    return try RelayConfiguration.load(environment: env, envFile: envFile)
}

/// The error `load` throws for these overrides, or nil when it succeeds.
private func failure(_ overrides: [String: String?], envFile: String? = nil) -> ConfigurationError? {
    do {
        _ = try load(overrides, envFile: envFile)
        return nil
    } catch {
        return error
    }
}

/// A file in a fresh temporary directory, removed by the caller with `cleanup`.
private func temporaryFile(_ name: String, _ contents: String) throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("config-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let path = dir.appendingPathComponent(name).path
    try contents.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

private func cleanup(_ path: String) {
    try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
}

@Suite("Configuration defaults and values")
struct ConfigurationValueTests {
    @Test("EVENT_LOOPS sets the loops, and the pool follows it unless CONNECTION_POOL_SIZE is set")
    func eventLoops() throws {
        let four = try load(["EVENT_LOOPS": "4"])
        #expect(four.eventLoopCount == 4 && four.connectionPoolSize == 4)
        #expect(four.loggableSummary["event_loops"] == 4)
        let one = try load(["EVENT_LOOPS": "1"])
        #expect(one.eventLoopCount == 1 && one.connectionPoolSize == 2)
        let pinned = try load(["EVENT_LOOPS": "4", "CONNECTION_POOL_SIZE": "1"])
        #expect(pinned.connectionPoolSize == 1)
        for bad in ["0", "257", "many"] {
            #expect(throws: ConfigurationError(.invalid, "EVENT_LOOPS", "")) { try load(["EVENT_LOOPS": bad]) }
        }
    }

    @Test("the four metatext-apns variables alone start the relay with documented defaults")
    func defaults() throws {
        let c = try load([:])
        #expect(c.authKey == pem)
        #expect(c.keyID == "ABC123DEFG")
        #expect(c.teamID == "TEAM123456")
        #expect(c.topic == "com.example.app")
        // At least one connection per event loop (one per CPU the process may use), at least 2.
        #expect(c.connectionPoolSize == max(2, CPUBudget.current.cpus))
        #expect(c.eventLoops == nil && c.eventLoopCount == CPUBudget.current.cpus)
        #expect(c.port == 3000)
        #expect(c.bindAddress == "0.0.0.0")
        #expect(c.apnsHost == .init(host: "api.push.apple.com", port: 443))
        #expect(c.apnsSandboxHost == .init(host: "api.sandbox.push.apple.com", port: 443))
        #expect(c.caFile == nil)
        #expect(c.pushTimeout == .milliseconds(8000))
        #expect(c.maxBodyBytes == 65536)
        #expect(c.alertLocKey == "apns-default-message")
        #expect(c.logLevel == .info)
        #expect(c.logFormat == .json)
        #expect(c.maxQueuedPushes == 10_000)
        #expect(c.maxConnections == 10_000)
        #expect(c.relayToTopic == "com.example.app")
        #expect(c.relayToAlert == "🎺")
        #expect(c.requestTimeout == .milliseconds(10_000))
        #expect(c.maxBufferedRequestBytes == 64 << 20)
    }

    @Test("/relay-to takes TOPIC unless RELAY_TO_TOPIC names another app, and its alert from RELAY_TO_ALERT")
    func relayToVariables() throws {
        let c = try load(["RELAY_TO_TOPIC": "com.example.toot", "RELAY_TO_ALERT": "New notification"])
        #expect(c.topic == "com.example.app")
        #expect(c.relayToTopic == "com.example.toot")
        #expect(c.relayToAlert == "New notification")
        let aliased = try load(["TOPIC": nil, "APNS_TOPIC": "org.example.x", "RELAY_TO_TOPIC": " "])
        #expect(aliased.relayToTopic == "org.example.x")
        #expect(RelayResponder.Settings(c).relayToTopic == "com.example.toot")
        #expect(RelayResponder.Settings(c).relayToAlert == "New notification")
    }

    @Test("every optional variable is read")
    func everyVariable() throws {
        let ca = try temporaryFile("ca.pem", "-----BEGIN CERTIFICATE-----\n")
        defer { cleanup(ca) }
        let c = try load([
            "CONNECTION_POOL_SIZE": "4", "PORT": "8080", "BIND_ADDRESS": "::1",
            "APNS_HOST": "127.0.0.1:2197", "APNS_SANDBOX_HOST": "[::1]:8443", "APNS_CA_FILE": ca,
            "PUSH_TIMEOUT_MS": "5000", "MAX_BODY_BYTES": "8192", "ALERT_LOC_KEY": "my-fallback",
            "LOG_LEVEL": "DEBUG", "LOG_FORMAT": "text", "MAX_QUEUED_PUSHES": "500", "MAX_CONNECTIONS": "200",
            "REQUEST_TIMEOUT_MS": "4000", "MAX_BUFFERED_REQUEST_BYTES": "8388608",
        ])
        #expect(c.connectionPoolSize == 4)
        #expect(c.port == 8080)
        #expect(c.bindAddress == "::1")
        #expect(c.apnsHost == .init(host: "127.0.0.1", port: 2197))
        #expect(c.apnsSandboxHost == .init(host: "::1", port: 8443))
        #expect(c.apnsSandboxHost.description == "[::1]:8443")
        #expect(c.caFile == ca)
        #expect(c.pushTimeout == .milliseconds(5000))
        #expect(c.maxBodyBytes == 8192)
        #expect(c.alertLocKey == "my-fallback")
        #expect(c.logLevel == .debug)
        #expect(c.logFormat == .text)
        #expect(c.maxQueuedPushes == 500)
        #expect(c.maxConnections == 200)
        #expect(c.requestTimeout == .milliseconds(4000))
        #expect(c.maxBufferedRequestBytes == 8 << 20)
    }

    @Test("a request budget smaller than one body is refused, naming the variable")
    func budgetBelowOneBody() {
        let error = failure(["MAX_BODY_BYTES": "4194304", "MAX_BUFFERED_REQUEST_BYTES": "2097152"])
        #expect(error?.code == .invalid)
        #expect(error?.variable == "MAX_BUFFERED_REQUEST_BYTES")
        #expect(error?.message.contains("MAX_BODY_BYTES") == true)
    }

    @Test("a host without a port keeps 443")
    func hostWithoutPort() throws {
        let c = try load(["APNS_HOST": "apns.internal", "APNS_SANDBOX_HOST": "[fd00::1]"])
        #expect(c.apnsHost == .init(host: "apns.internal", port: 443))
        #expect(c.apnsSandboxHost == .init(host: "fd00::1", port: 443))
    }

    @Test("the key accepts literal \\n, as metatext-apns deployments write it on one line")
    func literalNewlines() throws {
        let oneLine = pem.replacingOccurrences(of: "\n", with: "\\n")
        let c = try load(["APNS_AUTH_KEY": oneLine])
        #expect(c.authKey == pem)
    }

    @Test("the key can come from APNS_AUTH_KEY_FILE")
    func keyFile() throws {
        let path = try temporaryFile("AuthKey.p8", pem)
        defer { cleanup(path) }
        let c = try load(["APNS_AUTH_KEY": nil, "APNS_AUTH_KEY_FILE": path])
        #expect(c.authKey == pem)
    }

    @Test("APNS_TEAM_ID and APNS_TOPIC are accepted as aliases; equal duplicates are fine")
    func aliases() throws {
        let c = try load(["APPLE_TEAM_ID": nil, "APNS_TEAM_ID": "ZZZ9999999", "TOPIC": nil, "APNS_TOPIC": "org.example.x"])
        #expect(c.teamID == "ZZZ9999999")
        #expect(c.topic == "org.example.x")
        let same = try load(["APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "com.example.app"])
        #expect(same.teamID == "TEAM123456")
    }

    @Test("surrounding spaces are trimmed and a blank variable counts as unset")
    func trimming() throws {
        let c = try load(["APNS_KEY_ID": "  ABC123DEFG \n", "PORT": " ", "LOG_FORMAT": ""])
        #expect(c.keyID == "ABC123DEFG")
        #expect(c.port == 3000)
        #expect(c.logFormat == .json)
    }

    @Test("the loggable summary never contains the key")
    func summaryHasNoSecret() throws {
        let c = try load([:])
        let summary = c.loggableSummary
        #expect(summary["apns.key_id"] == "ABC123DEFG")
        #expect(summary["push_timeout_ms"] == 8000)
        #expect(!summary.values.contains { $0.description.contains("PRIVATE") || $0.description.contains("MIGT") })
    }

    @Test("the code-built configuration uses the same defaults as load")
    func publicInit() throws {
        let built = RelayConfiguration(authKey: pem, keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "com.example.app")
        let loaded = try load([:])
        #expect(built.loggableSummary == loaded.loggableSummary)
    }
}

@Suite("Configuration errors")
struct ConfigurationErrorTests {
    /// Every message is one line that names the variable.
    private func check(_ error: ConfigurationError?, _ code: ConfigurationError.Code, _ variable: String, mentions: String...) {
        guard let error else {
            Issue.record("expected \(variable) to be rejected")
            return
        }
        #expect(error.code == code)
        #expect(error.variable == variable)
        #expect(error.message.hasPrefix(variable) || error.message.hasPrefix("--env-file"))
        #expect(!error.message.contains("\n"))
        for text in mentions { #expect(error.message.contains(text), "\(error.message)") }
    }

    @Test("missing required variables are named")
    func missing() {
        check(failure(["APNS_AUTH_KEY": nil]), .missing, "APNS_AUTH_KEY", mentions: "APNS_AUTH_KEY_FILE")
        check(failure(["APNS_KEY_ID": nil]), .missing, "APNS_KEY_ID")
        check(failure(["APPLE_TEAM_ID": nil]), .missing, "APPLE_TEAM_ID", mentions: "APNS_TEAM_ID")
        check(failure(["TOPIC": nil]), .missing, "TOPIC", mentions: "APNS_TOPIC", "bundle ID")
        check(failure(["TOPIC": "   "]), .missing, "TOPIC")
    }

    @Test("a pool size of 0 and other out-of-range numbers are refused")
    func numbers() {
        #expect(failure(["CONNECTION_POOL_SIZE": "0"])?.message
            == #"CONNECTION_POOL_SIZE must be a whole number from 1 to 64, got "0""#)
        check(failure(["CONNECTION_POOL_SIZE": "65"]), .invalid, "CONNECTION_POOL_SIZE")
        check(failure(["CONNECTION_POOL_SIZE": "two"]), .invalid, "CONNECTION_POOL_SIZE", mentions: "\"two\"")
        check(failure(["PORT": "0"]), .invalid, "PORT", mentions: "1 to 65535")
        check(failure(["PORT": "70000"]), .invalid, "PORT")
        check(failure(["PORT": "3000.5"]), .invalid, "PORT")
        check(failure(["PUSH_TIMEOUT_MS": "50"]), .invalid, "PUSH_TIMEOUT_MS", mentions: "milliseconds")
        check(failure(["PUSH_TIMEOUT_MS": "8s"]), .invalid, "PUSH_TIMEOUT_MS")
        check(failure(["MAX_BODY_BYTES": "100"]), .invalid, "MAX_BODY_BYTES", mentions: "bytes")
        check(failure(["MAX_QUEUED_PUSHES": "0"]), .invalid, "MAX_QUEUED_PUSHES")
        check(failure(["MAX_QUEUED_PUSHES": "-1"]), .invalid, "MAX_QUEUED_PUSHES")
        check(failure(["MAX_CONNECTIONS": "0"]), .invalid, "MAX_CONNECTIONS")
        check(failure(["MAX_CONNECTIONS": "lots"]), .invalid, "MAX_CONNECTIONS")
    }

    @Test("RELAY_TO_TOPIC follows TOPIC's rule; RELAY_TO_ALERT is short text without control characters")
    func relayTo() {
        check(failure(["RELAY_TO_TOPIC": "com.example.app/"]), .invalid, "RELAY_TO_TOPIC", mentions: "bundle ID")
        check(failure(["RELAY_TO_TOPIC": ".com.example"]), .invalid, "RELAY_TO_TOPIC")
        check(failure(["RELAY_TO_ALERT": String(repeating: "🎺", count: 65)]), .invalid, "RELAY_TO_ALERT", mentions: "256 bytes")
        check(failure(["RELAY_TO_ALERT": "new\u{7}post"]), .invalid, "RELAY_TO_ALERT", mentions: "control")
        #expect(failure(["RELAY_TO_ALERT": String(repeating: "🎺", count: 64)]) == nil)
    }

    @Test("key and team IDs must be Apple's 10 capital letters and digits")
    func appleIDs() {
        check(failure(["APNS_KEY_ID": "ABC123"]), .invalid, "APNS_KEY_ID", mentions: "10 characters", "\"ABC123\"")
        check(failure(["APNS_KEY_ID": "abc123defg"]), .invalid, "APNS_KEY_ID")
        check(failure(["APNS_KEY_ID": "ABC123DEFGH"]), .invalid, "APNS_KEY_ID")
        check(failure(["APPLE_TEAM_ID": "TEAM-12345"]), .invalid, "APPLE_TEAM_ID", mentions: "team ID")
        check(failure(["APPLE_TEAM_ID": nil, "APNS_TEAM_ID": "short"]), .invalid, "APNS_TEAM_ID")
    }

    @Test("disagreeing aliases are a conflict, not a silent choice")
    func conflicts() {
        check(failure(["APNS_TEAM_ID": "OTHER12345"]), .conflict, "APPLE_TEAM_ID", mentions: "APNS_TEAM_ID")
        check(failure(["APNS_TOPIC": "com.other.app"]), .conflict, "TOPIC", mentions: "APNS_TOPIC")
        check(failure(["APNS_AUTH_KEY_FILE": "/etc/key.p8"]), .conflict, "APNS_AUTH_KEY", mentions: "APNS_AUTH_KEY_FILE")
    }

    @Test("a key that is not PEM is refused without echoing it")
    func badKey() {
        let error = failure(["APNS_AUTH_KEY": "s3cr3t-not-a-key"])
        check(error, .invalid, "APNS_AUTH_KEY", mentions: "BEGIN PRIVATE KEY")
        #expect(error?.message.contains("s3cr3t") == false)
    }

    @Test("an unreadable or non-PEM key file is named")
    func badKeyFile() throws {
        check(failure(["APNS_AUTH_KEY": nil, "APNS_AUTH_KEY_FILE": "/nonexistent/AuthKey.p8"]),
              .unreadableFile, "APNS_AUTH_KEY_FILE", mentions: "/nonexistent/AuthKey.p8")
        let path = try temporaryFile("junk.p8", "hello")
        defer { cleanup(path) }
        check(failure(["APNS_AUTH_KEY": nil, "APNS_AUTH_KEY_FILE": path]), .invalid, "APNS_AUTH_KEY_FILE")
    }

    @Test("topic must look like a bundle ID")
    func badTopic() {
        check(failure(["TOPIC": "com.example app"]), .invalid, "TOPIC")
        check(failure(["TOPIC": ".com.example"]), .invalid, "TOPIC")
        check(failure(["TOPIC": nil, "APNS_TOPIC": "com/example"]), .invalid, "APNS_TOPIC")
    }

    @Test("hosts are read by the library's parser: https://host[:port] and a trailing slash are accepted")
    func urlHosts() throws {
        let c = try load(["APNS_HOST": "https://api.push.apple.com", "APNS_SANDBOX_HOST": "https://[::1]:8443/"])
        #expect(c.apnsHost == .init(host: "api.push.apple.com", port: 443))
        #expect(c.apnsSandboxHost == .init(host: "::1", port: 8443))
    }

    @Test("hosts must be host[:port] or https://host[:port], nothing else")
    func badHosts() {
        check(failure(["APNS_HOST": "http://api.push.apple.com"]), .invalid, "APNS_HOST", mentions: "https://host[:port]")
        check(failure(["APNS_HOST": "https://api.push.apple.com/3/device"]), .invalid, "APNS_HOST")
        check(failure(["APNS_HOST": "api.push.apple .com"]), .invalid, "APNS_HOST")
        check(failure(["APNS_HOST": "api.push.apple.com:0"]), .invalid, "APNS_HOST")
        check(failure(["APNS_HOST": "api.push.apple.com:https"]), .invalid, "APNS_HOST")
        check(failure(["APNS_HOST": ":443"]), .invalid, "APNS_HOST")
        check(failure(["APNS_SANDBOX_HOST": "::1:443"]), .invalid, "APNS_SANDBOX_HOST")
        check(failure(["APNS_SANDBOX_HOST": "[::1"]), .invalid, "APNS_SANDBOX_HOST")
        check(failure(["APNS_SANDBOX_HOST": "[::1]x"]), .invalid, "APNS_SANDBOX_HOST")
    }

    @Test("the bind address must be an IP literal")
    func badBindAddress() {
        check(failure(["BIND_ADDRESS": "localhost"]), .invalid, "BIND_ADDRESS")
        check(failure(["BIND_ADDRESS": "256.0.0.1"]), .invalid, "BIND_ADDRESS")
    }

    @Test("a missing CA file is caught at start-up, not at the first push")
    func badCAFile() {
        check(failure(["APNS_CA_FILE": "/nonexistent/ca.pem"]), .unreadableFile, "APNS_CA_FILE", mentions: "/nonexistent/ca.pem")
    }

    @Test("log level and format must be known words")
    func badLogging() {
        check(failure(["LOG_LEVEL": "verbose"]), .invalid, "LOG_LEVEL", mentions: "trace", "critical")
        check(failure(["LOG_FORMAT": "xml"]), .invalid, "LOG_FORMAT", mentions: "json or text")
    }
}

@Suite("Env file")
struct EnvFileTests {
    @Test("comments, blank lines, export, quotes and spaces are understood")
    func syntax() throws {
        let values = try RelayConfiguration.parseEnvFile(text: """
            # a comment
              # an indented comment

            PORT=4000
            export LOG_LEVEL=debug
            TOPIC = com.example.app
            ALERT_LOC_KEY="quoted \\"value\\" # not a comment"
            APNS_KEY_ID='ABC123DEFG'
            MAX_BODY_BYTES=8192 # kept as written, like Docker
            EMPTY=
            APNS_AUTH_KEY="-----BEGIN PRIVATE KEY-----\\nAAA\\n-----END PRIVATE KEY-----"
            """, path: "test.env")
        #expect(values["PORT"] == "4000")
        #expect(values["LOG_LEVEL"] == "debug")
        #expect(values["TOPIC"] == "com.example.app")
        #expect(values["ALERT_LOC_KEY"] == #"quoted "value" # not a comment"#)
        #expect(values["APNS_KEY_ID"] == "ABC123DEFG")
        #expect(values["MAX_BODY_BYTES"] == "8192 # kept as written, like Docker")
        #expect(values["EMPTY"] == "")
        #expect(values["APNS_AUTH_KEY"] == #"-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----"#)
        #expect(values.count == 8)
    }

    @Test("a line that is not KEY=VALUE names the file and line")
    func syntaxErrors() {
        #expect(throws: ConfigurationError.self) { try RelayConfiguration.parseEnvFile(text: "PORT=1\njunk", path: "a.env") }
        do {
            _ = try RelayConfiguration.parseEnvFile(text: "PORT=1\n\njunk line", path: "a.env")
        } catch {
            #expect(error.code == .envFileSyntax)
            #expect(error.message == #"--env-file a.env line 3 must be KEY=VALUE, got "junk line""#)
        }
        do {
            _ = try RelayConfiguration.parseEnvFile(text: "1PORT=1", path: "a.env")
            Issue.record("a name starting with a digit was accepted")
        } catch {
            #expect(error.code == .envFileSyntax)
            #expect(error.message.contains("line 1"))
        }
    }

    @Test("the file supplies what the environment lacks, and the environment wins")
    func precedence() throws {
        let oneLineKey = pem.replacingOccurrences(of: "\n", with: "\\n")
        let path = try temporaryFile("relay.env", """
            APNS_AUTH_KEY=\(oneLineKey)
            APNS_KEY_ID=FILE123456
            APPLE_TEAM_ID=TEAM123456
            TOPIC=com.file.app
            PORT=4000
            LOG_FORMAT=text
            """)
        defer { cleanup(path) }
        let c = try RelayConfiguration.load(environment: ["PORT": "5000", "APNS_KEY_ID": "ENV1234567"], envFile: path)
        #expect(c.port == 5000)
        #expect(c.keyID == "ENV1234567")
        #expect(c.topic == "com.file.app")
        #expect(c.logFormat == .text)
        #expect(c.authKey == pem)
    }

    @Test("an invalid value from the file is reported like one from the environment")
    func invalidFromFile() throws {
        let path = try temporaryFile("relay.env", "CONNECTION_POOL_SIZE=0\n")
        defer { cleanup(path) }
        let error = failure([:], envFile: path)
        #expect(error?.variable == "CONNECTION_POOL_SIZE")
    }

    @Test("a missing env file is an error naming the path")
    func missingFile() {
        let error = failure([:], envFile: "/nonexistent/relay.env")
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains("/nonexistent/relay.env") == true)
    }

    @Test("the documented variable list matches the names read")
    func variableList() {
        #expect(RelayConfiguration.variableNames.count == Set(RelayConfiguration.variableNames).count)
        #expect(RelayConfiguration.variableNames.contains("MAX_CONNECTIONS"))
        #expect(RelayConfiguration.variableNames.contains("RELAY_TO_TOPIC"))
        #expect(RelayConfiguration.variableNames.contains("RELAY_TO_ALERT"))
        #expect(RelayConfiguration.variableNames.contains("APNS_MAX_STREAMS_PER_CONNECTION"))
        #expect(RelayConfiguration.variableNames.contains("REQUEST_TIMEOUT_MS"))
        #expect(RelayConfiguration.variableNames.contains("MAX_BUFFERED_REQUEST_BYTES"))
        #expect(RelayConfiguration.variableNames.contains("APNS_KEY"))
        #expect(RelayConfiguration.variableNames.contains("APNS_KEY_FILE"))
        #expect(RelayConfiguration.variableNames.contains("APNS_CA"))
        #expect(RelayConfiguration.variableNames.contains("EVENT_LOOPS"))
        for name in ["STORE_PATH", "STORE_URL", "HOLD_MAX_PUSHES", "HOLD_MAX_BYTES", "HOLD_MAX_PER_DEVICE", "HOLD_DELIVERY_IN_FLIGHT"] {
            #expect(RelayConfiguration.variableNames.contains(name))
        }
        #expect(RelayConfiguration.variableNames.count == 52)
    }

    @Test("STORE_URL holds in Redis; with STORE_PATH too, or rediss://, or a bad URL, it is refused in one line without the password")
    func storeURL() throws {
        let configuration = try load(["STORE_URL": "redis://relay:hunter2@redis.internal:6380/2"])
        #expect(configuration.hold.store == .redis(RedisAddress(host: "redis.internal", port: 6380, database: 2, user: "relay", password: "hunter2")))
        #expect(configuration.hold.store.label == "redis://redis.internal:6380/2")
        #expect(configuration.loggableSummary["hold.store"] == .string("redis://redis.internal:6380/2"))
        #expect(!"\(configuration.loggableSummary)".contains("hunter2"))
        let both = failure(["STORE_URL": "redis://h:6379", "STORE_PATH": "/tmp/held.sqlite"])
        #expect(both?.variable == "STORE_URL" && both?.message.contains("STORE_PATH") == true)
        for (url, what) in [("rediss://:hunter2@h:6379", "no TLS"), ("redis://:hunter2@h:x", "port"), ("redis://:hunter2@", "no host")] {
            let error = failure(["STORE_URL": url])
            #expect(error?.variable == "STORE_URL", "\(url)")
            #expect(error?.message.contains(what) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("hunter2") == false && error?.message.contains("\n") == false)
        }
    }
}

@Suite("Configuration: the APNs library's names as aliases")
struct LibraryAliasTests {
    @Test("APNS_KEY stands for APNS_AUTH_KEY, and an error about it names APNS_KEY")
    func keyAlias() throws {
        let configuration = try load(["APNS_AUTH_KEY": nil, "APNS_KEY": pem.replacingOccurrences(of: "\n", with: "\\n")])
        #expect(configuration.authKey == pem && configuration.authKeyVariable == "APNS_KEY")
        #expect(failure(["APNS_AUTH_KEY": nil, "APNS_KEY": "nonsense"])?.variable == "APNS_KEY")
    }

    @Test("APNS_KEY_FILE stands for APNS_AUTH_KEY_FILE")
    func keyFileAlias() throws {
        let path = try temporaryFile("AuthKey.p8", pem)
        defer { cleanup(path) }
        let configuration = try load(["APNS_AUTH_KEY": nil, "APNS_KEY_FILE": path])
        #expect(configuration.authKey == pem && configuration.authKeyVariable == "APNS_KEY_FILE")
        #expect(failure(["APNS_AUTH_KEY": nil, "APNS_KEY_FILE": path + ".missing"])?.variable == "APNS_KEY_FILE")
    }

    @Test("APNS_CA holds the CA as PEM text, literal \\n allowed")
    func caPEM() throws {
        let configuration = try load(["APNS_CA": "-----BEGIN CERTIFICATE-----\\nMII\\n-----END CERTIFICATE-----"])
        #expect(configuration.caPEM == "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----")
    }
}

@Suite("Configuration errors as values")
struct ConfigurationErrorEqualityTests {
    @Test("equal when code and variable agree, whatever the words; the description is the operator's line alone")
    func equalityOnCodeAndVariable() {
        let error = ConfigurationError(.invalid, "PORT", "PORT must be 1 to 65535, got \"x\"")
        #expect(error == ConfigurationError(.invalid, "PORT", "other words"))
        #expect(error != ConfigurationError(.invalid, "EVENT_LOOPS", "PORT must be 1 to 65535, got \"x\""))
        #expect(error != ConfigurationError(.missing, "PORT", "PORT must be 1 to 65535, got \"x\""))
        #expect("\(error)" == "PORT must be 1 to 65535, got \"x\"")
    }
}
