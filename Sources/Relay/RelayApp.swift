/// One app the relay pushes for: the default one, which the environment describes and which
/// answers at `/push/…` and `/relay-to/…`, or one of `APPS_FILE`'s, at `/{name}/push/…` and
/// `/{name}/relay-to/…`.
package struct RelayApp: Sendable {
    /// The path prefix and the `app` of metrics and log lines; `default` for the environment's.
    package var name: String
    /// The `apns-topic` of `/push` (and of `/relay-to` unless `relayToTopic` differs).
    package var topic: String
    package var relayToTopic: String
    package var credentials: AppCredentials

    package static let defaultName = "default"

    package init(name: String, topic: String, relayToTopic: String? = nil, credentials: AppCredentials) {
        self.name = name
        self.topic = topic
        self.relayToTopic = relayToTopic ?? topic
        self.credentials = credentials
    }
}

/// The PEM certificate (chain, leaf first) and key the relay serves HTTPS with, and the settings
/// that named them.
package struct HTTPSFiles: Sendable, Equatable {
    package var certificateFile: String
    package var keyFile: String
    /// `TLS_CERT_FILE`, or toot-relay's `CRT_FILENAME`.
    package var variable: String

    package init(certificateFile: String, keyFile: String, variable: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.variable = variable
    }
}
