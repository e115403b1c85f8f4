/// Checks one ES256 signature for one key id.
///
/// A closure rather than a key type so that this core stays free of OpenSSL: the TLS glue plugs
/// in a real P-256 public key, unit tests plug in a fake that accepts a known signature.
public struct MockKeyVerifier: Sendable {
    private let check: @Sendable ([UInt8], [UInt8]) -> Bool

    /// - Parameter verify: given the signed message (`header.claims` as ASCII) and the raw
    ///   64-byte r‖s signature, answers whether the signature is good.
    public init(_ verify: @escaping @Sendable (_ message: [UInt8], _ rawSignature64: [UInt8]) -> Bool) {
        self.check = verify
    }

    /// Answers whether `signature` (raw r‖s) signs `message`.
    public func verify(message: [UInt8], signature: [UInt8]) -> Bool {
        check(message, signature)
    }
}

/// A team of Apple's developer program: its apps (base topics) and its provider keys.
public struct MockTeam: Sendable {
    public var teamID: String
    public var topics: [String]
    public var keys: [String: MockKeyVerifier]

    public init(teamID: String, topics: [String], keys: [String: MockKeyVerifier]) {
        self.teamID = teamID
        self.topics = topics
        self.keys = keys
    }
}

/// What the emulator accepts; each value mirrors something Apple checks on a real connection.
public struct MockAPNsConfiguration: Sendable {
    /// Base topics (bundle ids) the provider key may push to; suffixed topics (`.voip`…) derive from them.
    public var topics: [String]
    /// The team id a provider token's `iss` must carry.
    public var teamID: String
    /// Key id (`kid`) → verifier: a token signed by an unknown key is refused like Apple does.
    public var keys: [String: MockKeyVerifier]
    /// Other teams Apple knows, each with its apps and keys: a token is checked against its key's
    /// team (`iss`), and pushes only to that team's topics, as Apple does for two teams' apps
    /// sent through one provider.
    public var otherTeams: [MockTeam] = []
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` advertised once a connection has had an authenticated
    /// success; before that the glue advertises 1, as Apple does.
    public var maxConcurrentStreams: UInt32 = 1000
    /// Drop the advertised limit to 1 after any rejected request, back after the next success,
    /// to test that a client obeys the live value.
    public var dropToOneAfterRejection: Bool = false
    /// Act as the development environment: successful answers also carry `apns-unique-id`.
    public var sandbox: Bool = false
    /// Scripted faults at start-up; tests can change them later through `MockAPNsRules.faults`.
    public var faults: MockFaults = .standard
    /// Refuse a request without `apns-push-type` (400 `InvalidPushType`), as Apple does only for
    /// watchOS; off, a missing push type is an alert, as Apple treats it on iOS.
    public var requirePushType: Bool = false
    /// Refuse a body that is not a JSON object with an `aps` object (400 `BadPayload`), which Apple
    /// does not check; for tests that want to see the client's payload is well formed.
    public var strictPayload: Bool = false
    /// Seconds after its `iat` a provider token is refused with `ExpiredProviderToken`: Apple's
    /// hour, shortened in tests so tokens age without moving clocks.
    public var providerTokenMaxAge: Int64 = 3600
    /// Seconds after a key's last new provider token before another new one is accepted; sooner
    /// is 429 `TooManyProviderTokenUpdates`, on whatever connection it comes. Apple's 20 minutes,
    /// shortened in tests that sign several tokens on purpose (0 turns the rule off).
    public var providerTokenUpdateInterval: Int64 = 1200

    public init(
        topics: [String],
        teamID: String,
        keys: [String: MockKeyVerifier],
        maxConcurrentStreams: UInt32 = 1000,
        dropToOneAfterRejection: Bool = false,
        sandbox: Bool = false,
        faults: MockFaults = .standard,
        requirePushType: Bool = false,
        strictPayload: Bool = false,
        providerTokenMaxAge: Int64 = 3600,
        providerTokenUpdateInterval: Int64 = 1200
    ) {
        self.topics = topics
        self.teamID = teamID
        self.keys = keys
        self.maxConcurrentStreams = maxConcurrentStreams
        self.dropToOneAfterRejection = dropToOneAfterRejection
        self.sandbox = sandbox
        self.faults = faults
        self.requirePushType = requirePushType
        self.strictPayload = strictPayload
        self.providerTokenMaxAge = providerTokenMaxAge
        self.providerTokenUpdateInterval = providerTokenUpdateInterval
    }
}

/// One request as the HTTP/2 glue received it, before any judgement.
public struct MockRequestHead: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// Regular headers (no pseudo-headers) in the order received, names lower-case; kept as a list
    /// so that a repeated header can be answered `DuplicateHeaders` as Apple does.
    public var headers: [(name: String, value: String)]
    /// The DATA frames joined.
    public var body: [UInt8]
    /// The HTTP/2 stream id, kept only for the record.
    public var streamID: Int32

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8], streamID: Int32 = 0) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.streamID = streamID
    }
}

/// What one connection remembers between requests (new provider tokens are counted per key, by
/// `MockAPNsRules`, across connections).
public struct MockConnectionState: Sendable {
    /// Names the connection in the records.
    public var connectionID: Int
    /// Requests decided on this connection so far (including this one once `decide` returns).
    public var requestCount: Int = 0
    /// The last provider token accepted here: the same one again needs no signature check.
    public var acceptedToken: String?
    /// The accepted token's `iat`, so a reused token is still refused once an hour old.
    public var acceptedTokenIssuedAt: Int64?
    /// The accepted token's key id (`kid`), for the records.
    public var acceptedTokenKeyID: String?
    /// The client certificate the TLS handshake verified against the emulator's CA, if the
    /// client sent one: a request without `authorization` is then authenticated by it.
    public var clientCertificate: MockClientCertificate?
    /// Whether any request on this connection has passed the provider-token or certificate check.
    public var authenticated: Bool = false
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` the glue has advertised, as far as the rules know.
    public var advertisedMaxConcurrentStreams: UInt32 = 1

    public init(connectionID: Int) {
        self.connectionID = connectionID
    }
}

/// An answer with its status, headers and JSON body (empty on success, as Apple sends it).
public struct MockResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header with this (lower-case) name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// The `reason` of an error body, read with the emulator's own JSON reader.
    public var reason: String? {
        MockJSON.parse(body)?["reason"]?.stringValue
    }
}

/// What the glue must do with one request; the rules do no I/O, so they return this instead.
public struct MockDecision: Sendable {
    public enum Action: Sendable {
        /// Send this answer now.
        case respond(MockResponse)
        /// Keep the stream open and never answer, as Apple sometimes does: clients need deadlines.
        case neverAnswer
        /// Reset the stream with `REFUSED_STREAM`: the request was not processed and may be retried.
        case refuseStream
        /// Wait, then send the answer: for deadline and concurrency tests.
        case delay(Duration, MockResponse)
    }

    public var action: Action
    /// Send GOAWAY (NO_ERROR, debug data `goAwayDebugData`) after this stream's answer.
    public var goAwayAfter: Bool
    /// Advertise this `SETTINGS_MAX_CONCURRENT_STREAMS` now; nil leaves it unchanged.
    public var newMaxConcurrentStreams: UInt32?
    /// How the request was authenticated; nil when it was refused before or by that check.
    public var auth: MockAuth?
    /// The topic it was judged for (see `MockRecord.topic`).
    public var topic: String?

    public init(action: Action, goAwayAfter: Bool = false, newMaxConcurrentStreams: UInt32? = nil,
                auth: MockAuth? = nil, topic: String? = nil) {
        self.action = action
        self.goAwayAfter = goAwayAfter
        self.newMaxConcurrentStreams = newMaxConcurrentStreams
        self.auth = auth
        self.topic = topic
    }

    /// The debug data Apple puts in a GOAWAY when it shuts a connection down.
    public static let goAwayDebugData: [UInt8] = Array(#"{"reason":"Shutdown"}"#.utf8)

    /// The immediate or delayed answer, if any.
    public var response: MockResponse? {
        switch action {
        case .respond(let r), .delay(_, let r): return r
        case .neverAnswer, .refuseStream: return nil
        }
    }
}

/// One request and what the emulator did with it, so tests can assert what reached "Apple".
public struct MockRecord: Sendable {
    public var connectionID: Int
    public var streamID: Int32
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var payload: [UInt8]
    /// The answered status; nil when the stream was refused or never answered.
    public var status: Int?
    /// Apple's `reason` for an error answer.
    public var reason: String?
    /// The `apns-id` answered (the request's, or one the emulator made).
    public var apnsID: String?
    /// How the request was authenticated (which team's key, or which certificate); nil when it
    /// was refused before or by that check.
    public var auth: MockAuth? = nil
    /// The topic the push was judged for: the `apns-topic` header, or the certificate's when a
    /// certificate-authenticated request left it out; nil when refused before the topic check.
    public var topic: String? = nil

    /// The value of the first request header with this (lower-case) name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// The credential a request was authenticated with, as the emulator saw it.
public enum MockAuth: Sendable, Equatable {
    /// A provider token: its `iss` (the team) and the key id that signed it.
    case token(teamID: String, keyID: String)
    /// The connection's client certificate: its topic (the subject's UID) and team (its OU).
    case certificate(topic: String, teamID: String?)
}
