// Every environment variable the relay reads, by name.

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
    // Certificate-based authentication: Apple's push certificate as a .p12 or a PEM pair.
    static let p12File = "APNS_P12_FILE"
    static let p12Base64 = "APNS_P12_BASE64"
    static let p12Password = "APNS_P12_PASSWORD"
    static let certFile = "APNS_CERT_FILE"
    static let certKeyFile = "APNS_CERT_KEY_FILE"
    // HTTPS served by the relay itself.
    static let tlsCertFile = "TLS_CERT_FILE"
    static let tlsKeyFile = "TLS_KEY_FILE"
    static let appsFile = "APPS_FILE"
    // Holding what Apple could not take.
    static let storePath = "STORE_PATH"
    static let storeURL = "STORE_URL"
    static let holdMaxPushes = "HOLD_MAX_PUSHES"
    static let holdMaxBytes = "HOLD_MAX_BYTES"
    static let holdMaxPerDevice = "HOLD_MAX_PER_DEVICE"
    static let holdDeliveryInFlight = "HOLD_DELIVERY_IN_FLIGHT"
}

/// The names toot-relay and mastodon/webpush-apn-relay read, accepted as they are so their
/// operators keep their env files (see README.md's migration sections). Each means what it meant there.
enum ForeignVariable {
    /// toot-relay's and webpush-apn-relay's: the push certificate, HTTPS, and Apple's CA.
    static let p12File = "P12_FILENAME"
    static let p12Base64 = "P12_BASE64"
    static let p12Password = "P12_PASSWORD"
    /// PEM roots that replace the system store for Apple's certificate.
    static let caFile = "CA_FILENAME"
    static let httpsCertFile = "CRT_FILENAME"
    static let httpsKeyFile = "KEY_FILENAME"
    /// webpush-apn-relay's token authentication.
    static let tokenKeyFile = "TOKEN_AUTH_KEY_FILENAME"
    static let tokenKeyID = "TOKEN_KEY_ID"
    static let tokenTeamID = "TOKEN_TEAM_ID"

    static let tootRelay: [String] = [p12File, p12Base64, p12Password, caFile, httpsCertFile, httpsKeyFile]
    static let webpushAPNRelay: [String] = [tokenKeyFile, tokenKeyID, tokenTeamID]
    static let all = tootRelay + webpushAPNRelay

    /// What both relays did when their own variables were unset, applied here when the default
    /// app's credentials are read under their names (`Reader.foreignDefaults`): `PORT` 42069
    /// (`env("PORT", "42069")` in both), and the topic `cx.c3.toot` (webpush-apn-relay's
    /// `env("TOPIC", "cx.c3.toot")`; toot-relay sent it always).
    static let defaultPort = 42069
    static let defaultTopic = "cx.c3.toot"

    /// toot-relay's defaults, in the working directory: the certificate when no credential is
    /// set, and HTTPS when both files exist.
    static let defaultP12File = "toot-relay.p12"
    static let defaultHTTPSCertFile = "toot-relay.crt"
    static let defaultHTTPSKeyFile = "toot-relay.key"
}
