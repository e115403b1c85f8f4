import EventLoop
internal import Basics

extension APNsClientConfiguration {
    /// The variables the library and `apns-relay send` read, by name.
    package enum Variable {
        /// The `.p8` key's text; literal `\n` sequences stand for line breaks.
        package static let key = "APNS_KEY"
        /// A path to the `.p8` key, when `APNS_KEY` is not set.
        package static let keyFile = "APNS_KEY_FILE"
        package static let keyID = "APNS_KEY_ID"
        package static let teamID = "APNS_TEAM_ID"
        /// The topic of a push sent without one: the app's bundle id.
        package static let topic = "APNS_TOPIC"
        /// `host[:port]` or `https://host[:port][/]` in place of Apple's production host.
        package static let host = "APNS_HOST"
        /// The same for the sandbox host; when unset, `APNS_HOST` (an emulator) serves both.
        package static let sandboxHost = "APNS_SANDBOX_HOST"
        /// An extra CA to trust, as PEM text or a file (the emulator's); the system store stays.
        package static let ca = "APNS_CA"
        package static let caFile = "APNS_CA_FILE"
    }

    /// Reads the configuration from environment variables (`Variable`); `variables` defaults to
    /// the process's environment.
    /// - Throws: `APNsError.badConfiguration` or `.badKey`, one line naming the variable that is wrong.
    public init(environment variables: [String: String]? = nil) throws(APNsError) {
        let variables = variables ?? ProcessEnvironment.variables
        func value(_ name: String) -> String? {
            guard let raw = variables[name] else { return nil }
            let trimmed = String(raw.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
            return trimmed.isEmpty ? nil : trimmed
        }
        func required(_ name: String, _ hint: String) throws(APNsError) -> String {
            guard let text = value(name) else { throw .badConfiguration("\(name) is not set; \(hint)") }
            return text
        }
        let key: APNsSigningKey
        if let text = value(Variable.key) {
            key = try APNsSigningKey(pem: text, named: Variable.key)
        } else if let path = value(Variable.keyFile) {
            key = try APNsSigningKey(file: path, named: "\(Variable.keyFile) (\(path))")
        } else {
            throw .badConfiguration("\(Variable.key) or \(Variable.keyFile) must be set to the .p8 key from Apple")
        }
        let keyID = try required(Variable.keyID, "set it to the 10-character Key ID of the .p8 key")
        let teamID = try required(Variable.teamID, "set it to the 10-character Apple Team ID")
        let caPEM = value(Variable.ca).map(\.unescapingLineFeeds)
        let caFile = value(Variable.caFile)
        if let topic = value(Variable.topic), !topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) {
            throw .badConfiguration("\(Variable.topic)=\(topic) is not a bundle id: no spaces or control characters")
        }
        try self.init(keyID: keyID, teamID: teamID, key: key, topic: value(Variable.topic), caFile: caFile, caPEM: caPEM)
        func endpoint(_ name: String) throws(APNsError) -> APNsEndpoint? {
            guard let text = value(name) else { return nil }
            guard let endpoint = APNsEndpoint.parse(text) else {
                throw .badConfiguration("\(name)=\(text) is not host, host:port or https://host[:port]\(APNsEndpoint.hint(refusing: text))")
            }
            return endpoint
        }
        if let host = try endpoint(Variable.host) {
            production = host
            productionHostSetting = Variable.host
            // One host for both (an emulator) unless the sandbox has its own.
            sandbox = host
            sandboxHostSetting = Variable.host
        }
        if let host = try endpoint(Variable.sandboxHost) {
            sandbox = host
            sandboxHostSetting = Variable.sandboxHost
        }
    }
}
