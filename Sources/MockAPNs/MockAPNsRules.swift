#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// Apple's rules for one request, judged by the emulator's own code (never the client's), so
/// a misunderstanding shared by both cannot make every test pass.
///
/// Pure: the HTTP/2 glue hands over a request head and the connection's state and carries out
/// the returned `MockDecision`. Checks run in this order, the first failure answers:
///
/// | check | answer |
/// | --- | --- |
/// | `:path` not `/3/device/…`, or a `/` in the token | 404 `BadPath` |
/// | `:method` not `POST` | 405 `MethodNotAllowed` |
/// | a header name repeated | 400 `DuplicateHeaders` |
/// | no `authorization` on a connection with a client certificate: the certificate's checks (`MockAPNsRules+Certificate.swift`) | 403 `BadCertificate`, `BadCertificateEnvironment` |
/// | no `authorization: bearer …` (and no client certificate) | 403 `MissingProviderToken` |
/// | JWT malformed, wrong `alg`, unknown `kid`, wrong `iss`, `iat` not an integer, bad signature, `iat` > 5 min ahead | 403 `InvalidProviderToken` |
/// | `iat` more than `providerTokenMaxAge` (3600) s ago | 403 `ExpiredProviderToken` |
/// | a token new for its key (`kid`) less than `providerTokenUpdateInterval` (1200) s after the key's previous new token, on any connection | 429 `TooManyProviderTokenUpdates` |
/// | `:path` is `/3/device/` | 400 `MissingDeviceToken` |
/// | token not hex, odd length, under 64 or over 200 digits, or all zeros (no device has it) | 400 `BadDeviceToken` |
/// | no `apns-topic` (a certificate's request without it is for the certificate's topic, its UID) | 400 `MissingTopic` |
/// | `apns-push-type` unknown, or missing when `requirePushType` is on (Apple requires it on watchOS only; missing is an alert) | 400 `InvalidPushType` |
/// | topic not derived from a configured base topic (with a certificate: from the certificate's topic) | 400 `TopicDisallowed` |
/// | topic suffix not the one the push type demands | 400 `BadTopic` |
/// | `apns-priority` not 1/5/10, or 10 for `background` | 400 `BadPriority` |
/// | `apns-expiration` not an integer | 400 `BadExpirationDate` |
/// | `apns-id` not a UUID | 400 `BadMessageId` |
/// | `apns-collapse-id` over 64 bytes | 400 `BadCollapseId` |
/// | empty body | 400 `PayloadEmpty` |
/// | body over 4096 bytes (5120 for `voip`) | 413 `PayloadTooLarge` |
/// | with `strictPayload` on: body not a JSON object with an `aps` object | 400 `BadPayload` (a reason Apple does not have: off by default, Apple accepts `{}`) |
///
/// Then the scripted faults (`MockFaults`: `everyPush`, else by token prefix), then 200.
///
/// The provider token is judged before the device token, as Apple does: a push to a token no
/// device has (all zeros) answers 403 with a bad provider token and 400 `BadDeviceToken` with a
/// good one, which is how `apns-relay check --connect` proves the credentials.
///
/// New provider tokens are counted per key across every connection, not per connection: Apple
/// asks that "the same provider token should be re-used", and answers a provider that signs a
/// token per connection (or per request) with 429 TooManyProviderTokenUpdates (Apple's
/// developer forums: threads 702056 and 770438 report the count is kept for the team and key,
/// whatever connection brings the token). A token already accepted stays valid on every
/// connection until it is `providerTokenMaxAge` old.
public final class MockAPNsRules: Sendable {
    /// The emulator's behaviour at start-up; `keys` and `maxConcurrentStreams` may change later.
    public let configuration: MockAPNsConfiguration
    private let faultState: Mutex<MockFaults>
    private let live: Mutex<LiveSettings>
    private let recorder: Mutex<RecordRing>
    private let tokens = Mutex<TokenLedger>(TokenLedger())
    private let makeID: @Sendable () -> String

    /// The reason answered, with `strictPayload` on, for a body that is not a JSON object with an
    /// `aps` object.
    public static let badPayloadReason = "BadPayload"

    /// - Parameters:
    ///   - recordCapacity: how many records are kept (the oldest go first), so a long benchmark
    ///     run cannot grow memory without bound.
    ///   - makeID: makes the `apns-id` / `apns-unique-id` values; injectable for stable tests.
    public init(
        configuration: MockAPNsConfiguration,
        recordCapacity: Int = 10_000,
        makeID: @escaping @Sendable () -> String = { MockAPNsRules.randomUUID() }
    ) {
        self.configuration = configuration
        self.faultState = Mutex(configuration.faults)
        self.live = Mutex(LiveSettings(keys: configuration.keys, maxConcurrentStreams: configuration.maxConcurrentStreams))
        self.recorder = Mutex(RecordRing(capacity: max(1, recordCapacity)))
        self.makeID = makeID
    }

    /// The faults in force; tests change them while the emulator runs.
    public var faults: MockFaults {
        get { faultState.withLock { $0 } }
        set { faultState.withLock { $0 = newValue } }
    }

    /// Changes the faults in one step (e.g. add one prefix) without losing a concurrent change.
    public func updateFaults(_ body: (inout MockFaults) -> Void) {
        faultState.withLock { body(&$0) }
    }

    /// What a running emulator may be told to change, as Apple changes it under a client.
    struct LiveSettings: Sendable {
        var keys: [String: MockKeyVerifier]
        var maxConcurrentStreams: UInt32
    }

    /// The provider keys trusted now (key id → verifier), first `configuration.keys`: a test
    /// registers a second key before rotating to it, or revokes the old one after.
    public var keys: [String: MockKeyVerifier] {
        get { live.withLock { $0.keys } }
        set { live.withLock { $0.keys = newValue } }
    }

    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` advertised after an authenticated success, first
    /// `configuration.maxConcurrentStreams`; a change reaches each connection with its next
    /// success (`MockAPNsServer.advertiseMaxConcurrentStreams` sends it at once).
    public var maxConcurrentStreams: UInt32 {
        get { live.withLock { $0.maxConcurrentStreams } }
        set { live.withLock { $0.maxConcurrentStreams = newValue } }
    }

    /// Every request decided so far, oldest first (at most `recordCapacity`).
    public var records: [MockRecord] {
        recorder.withLock { $0.all }
    }

    /// New provider tokens accepted so far, by key id: each one Apple would count as an update.
    public var newTokensAccepted: [String: Int] {
        tokens.withLock { $0.keys.mapValues(\.accepted) }
    }

    /// Requests answered 429 TooManyProviderTokenUpdates so far.
    public var tokenUpdatesRefused: Int {
        tokens.withLock { $0.refused }
    }

    /// Blocks the calling thread until at least `count` records are held or `timeout` has passed;
    /// false on timeout. The recorder wakes it when the record that makes the count arrives.
    public func waitForRecords(count: Int, timeout: Duration) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        guard recorder.withLock({ $0.wait(for: count, semaphore: semaphore) }) else { return true }
        let nanoseconds = Int(min(timeout, .seconds(86_400)) / .nanoseconds(1))
        if semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success { return true }
        return recorder.withLock { ring in
            ring.stopWaiting(semaphore)
            return ring.count >= count
        }
    }

    /// Forgets the records, e.g. between test phases.
    public func clearRecords() {
        recorder.withLock { $0.removeAll() }
    }

    /// Judges one request.
    ///
    /// - Parameters:
    ///   - connection: the state of the connection it came on; updated (token accepted, request
    ///     counted, advertised limit) so the glue keeps one per connection.
    ///   - now: unix seconds, passed in so that token ageing is tested without sleeping.
    public func decide(_ request: MockRequestHead, connection: inout MockConnectionState, now: Int64) -> MockDecision {
        connection.requestCount += 1
        let faults = self.faults

        let requestID = request.headers.first { $0.name == "apns-id" }.map(\.value)
        let answerID = requestID.flatMap { Self.isUUID($0) ? $0 : nil } ?? makeID()

        var action: MockDecision.Action
        var status: Int?
        var reason: String?
        var judged = Judged()
        switch check(request, connection: &connection, now: now, judged: &judged) {
        case .failure(let rejection):
            action = .respond(errorResponse(rejection, apnsID: answerID, now: now))
            status = rejection.status
            reason = rejection.reason
        case .success(let token):
            switch faults.fault(forToken: token) {
            case .reject(let s, let r)?:
                let rejection = Rejection(s, r)
                action = .respond(errorResponse(rejection, apnsID: answerID, now: now))
                status = s
                reason = r
            case .delay(let d)?:
                action = .delay(d, successResponse(apnsID: answerID))
                status = 200
            case .neverAnswer?:
                action = .neverAnswer
            case .refuseStream?:
                action = .refuseStream
            case nil:
                action = .respond(successResponse(apnsID: answerID))
                status = 200
            }
        }

        if let extra = faults.globalDelay {
            switch action {
            case .respond(let r): action = .delay(extra, r)
            case .delay(let d, let r): action = .delay(d + extra, r)
            case .neverAnswer, .refuseStream: break
            }
        }

        var newLimit: UInt32?
        if status == 200 {
            let limit = maxConcurrentStreams
            if connection.advertisedMaxConcurrentStreams != limit {
                newLimit = limit
            }
        } else if status != nil, configuration.dropToOneAfterRejection, connection.advertisedMaxConcurrentStreams != 1 {
            newLimit = 1
        }
        if let newLimit { connection.advertisedMaxConcurrentStreams = newLimit }

        let goAway = faults.goAwayAfterRequests.map { connection.requestCount >= $0 } ?? false

        let record = MockRecord(
            connectionID: connection.connectionID,
            streamID: request.streamID,
            method: request.method,
            path: request.path,
            headers: request.headers,
            payload: request.body,
            status: status,
            reason: reason,
            apnsID: status == nil ? nil : answerID,
            auth: judged.auth,
            topic: judged.topic
        )
        recorder.withLock { $0.append(record) }

        return MockDecision(action: action, goAwayAfter: goAway, newMaxConcurrentStreams: newLimit,
                            auth: judged.auth, topic: judged.topic)
    }

    // MARK: - Answers

    private func successResponse(apnsID: String) -> MockResponse {
        var headers: [(name: String, value: String)] = [("apns-id", apnsID)]
        if configuration.sandbox { headers.append(("apns-unique-id", makeID())) }
        return MockResponse(status: 200, headers: headers, body: [])
    }

    private func errorResponse(_ rejection: Rejection, apnsID: String, now: Int64) -> MockResponse {
        var json = #"{"reason":""# + rejection.reason + "\""
        if rejection.status == 410 {
            // Apple: when the token stopped being valid, in milliseconds.
            json += #","timestamp":"# + String(now * 1000)
        }
        json += "}"
        return MockResponse(
            status: rejection.status,
            headers: [("apns-id", apnsID), ("content-type", "application/json")],
            body: Array(json.utf8)
        )
    }

    // MARK: - Checks

    struct Rejection: Error {
        let status: Int
        let reason: String
        init(_ status: Int, _ reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// What the checks learned before answering, kept for the record even when a later check fails.
    struct Judged {
        var auth: MockAuth?
        var topic: String?
    }

    /// Runs every check; on success returns the device token, lower-cased.
    private func check(_ request: MockRequestHead, connection: inout MockConnectionState, now: Int64,
                       judged: inout Judged) -> Result<String, Rejection> {
        do throws(Rejection) {
            let path = try Self.checkPathAndMethod(method: request.method, path: request.path)

            var headers: [String: String] = [:]
            for (name, value) in request.headers {
                if headers.updateValue(value, forKey: name) != nil { throw Rejection(400, "DuplicateHeaders") }
            }

            let auth: MockAuth
            if headers["authorization"] == nil, let certificate = connection.clientCertificate {
                auth = try checkCertificate(certificate, connection: &connection, now: now)
            } else {
                auth = try checkProviderToken(headers["authorization"], connection: &connection, now: now)
            }
            judged.auth = auth
            let token = try Self.checkDeviceToken(path)

            // A certificate with one topic stands for it when the header is left out (Apple: "If you
            // omit this header and your APNs certificate doesn't specify multiple topics, the APNs
            // server uses the certificate's Subject as the default topic").
            var certificateTopic: String?
            if case .certificate(let topic, _) = auth { certificateTopic = topic }
            guard let topic = headers["apns-topic"] ?? certificateTopic else { throw Rejection(400, "MissingTopic") }
            judged.topic = topic
            if headers["apns-push-type"] == nil && configuration.requirePushType { throw Rejection(400, "InvalidPushType") }
            let pushType = headers["apns-push-type"] ?? "alert"
            guard let suffix = Self.topicSuffix[pushType] else { throw Rejection(400, "InvalidPushType") }
            if let certificateTopic {
                try Self.checkTopic(topic, suffix: suffix, bases: [certificateTopic])
            } else if case .token(let teamID, _) = auth {
                // A key pushes to its own team's apps only.
                try Self.checkTopic(topic, suffix: suffix, bases: teamID == configuration.teamID
                    ? configuration.topics : configuration.otherTeams.first { $0.teamID == teamID }?.topics ?? [])
            }

            if let priority = headers["apns-priority"] {
                guard priority == "1" || priority == "5" || priority == "10" else { throw Rejection(400, "BadPriority") }
                if pushType == "background" && priority == "10" { throw Rejection(400, "BadPriority") }
            }
            if let expiration = headers["apns-expiration"] {
                guard !expiration.isEmpty, expiration.utf8.allSatisfy(Self.isDigit), Int64(expiration) != nil else {
                    throw Rejection(400, "BadExpirationDate")
                }
            }
            if let id = headers["apns-id"], !Self.isUUID(id) { throw Rejection(400, "BadMessageId") }
            if let collapse = headers["apns-collapse-id"], collapse.utf8.count > 64 { throw Rejection(400, "BadCollapseId") }

            try Self.checkPayload(request.body, limit: pushType == "voip" ? 5120 : 4096, strict: configuration.strictPayload)
            return .success(token)
        } catch {
            return .failure(error)
        }
    }

    /// Returns the path's device-token part, unchecked.
    private static func checkPathAndMethod(method: String, path: String) throws(Rejection) -> Substring {
        let prefix = "/3/device/"
        guard path.hasPrefix(prefix) else { throw Rejection(404, "BadPath") }
        let token = path.dropFirst(prefix.count)
        if token.contains("/") { throw Rejection(404, "BadPath") }
        guard method == "POST" else { throw Rejection(405, "MethodNotAllowed") }
        return token
    }

    /// The device token, lower-cased. An all-zero token is well formed but no device has it.
    private static func checkDeviceToken(_ token: Substring) throws(Rejection) -> String {
        if token.isEmpty { throw Rejection(400, "MissingDeviceToken") }
        let digits = token.utf8
        guard digits.count >= 64, digits.count <= 200, digits.count % 2 == 0, digits.allSatisfy(isHexDigit),
              !digits.allSatisfy({ $0 == UInt8(ascii: "0") }) else {
            throw Rejection(400, "BadDeviceToken")
        }
        return token.lowercased()
    }

    /// The topic suffix each push type demands, after the app's bundle id.
    static let topicSuffix: [String: String] = [
        "alert": "",
        "background": "",
        "mdm": "",
        "voip": ".voip",
        "complication": ".complication",
        "fileprovider": ".pushkit.fileprovider",
        "location": ".location-query",
        "liveactivity": ".push-type.liveactivity",
        "pushtotalk": ".voip-ptt",
        "widgets": ".push-type.widgets",
    ]

    /// `bases`: the configured topics for a token (the team's apps), the certificate's one topic
    /// for a certificate, which covers no other app (400 `TopicDisallowed`, as for a token).
    static func checkTopic(_ topic: String, suffix: String, bases: [String]) throws(Rejection) {
        // The longest base topic that this topic starts with decides.
        var base: String?
        for candidate in bases where topic == candidate || topic.hasPrefix(candidate + ".") {
            if base == nil || candidate.count > base!.count { base = candidate }
        }
        guard let base else { throw Rejection(400, "TopicDisallowed") }
        guard topic.dropFirst(base.count) == suffix else { throw Rejection(400, "BadTopic") }
    }

    /// Returns the token's team and key.
    private func checkProviderToken(_ authorization: String?, connection: inout MockConnectionState, now: Int64) throws(Rejection) -> MockAuth {
        guard let authorization else { throw Rejection(403, "MissingProviderToken") }
        let scheme = "bearer "
        let trimmed = authorization.trimmingWhitespace
        if trimmed.isEmpty || trimmed.lowercased() == "bearer" { throw Rejection(403, "MissingProviderToken") }
        guard authorization.prefix(scheme.count).lowercased() == scheme else { throw Rejection(403, "InvalidProviderToken") }
        let jwt = String(authorization.dropFirst(scheme.count))

        if jwt == connection.acceptedToken, let issuedAt = connection.acceptedTokenIssuedAt, let keyID = connection.acceptedTokenKeyID {
            if now - issuedAt > configuration.providerTokenMaxAge { throw Rejection(403, "ExpiredProviderToken") }
            return .token(teamID: team(ofKey: keyID)?.teamID ?? configuration.teamID, keyID: keyID)
        }

        guard let (keyID, issuedAt) = verifiedToken(jwt) else { throw Rejection(403, "InvalidProviderToken") }
        if issuedAt > now + 300 { throw Rejection(403, "InvalidProviderToken") }
        if now - issuedAt > configuration.providerTokenMaxAge { throw Rejection(403, "ExpiredProviderToken") }
        let maxAge = configuration.providerTokenMaxAge, interval = configuration.providerTokenUpdateInterval
        let accepted = tokens.withLock { ledger in
            ledger.accept(jwt, keyID: keyID, issuedAt: issuedAt, now: now, maxAge: maxAge, interval: interval)
        }
        guard accepted else { throw Rejection(429, "TooManyProviderTokenUpdates") }
        connection.acceptedToken = jwt
        connection.acceptedTokenIssuedAt = issuedAt
        connection.acceptedTokenKeyID = keyID
        connection.authenticated = true
        return .token(teamID: team(ofKey: keyID)?.teamID ?? configuration.teamID, keyID: keyID)
    }

    /// The team that holds key `kid`, and the key: the configured team's (`keys`, changeable while
    /// running) or one of `otherTeams`; nil for a key no team holds.
    private func team(ofKey kid: String) -> (teamID: String, key: MockKeyVerifier)? {
        if let key = keys[kid] { return (configuration.teamID, key) }
        for team in configuration.otherTeams { if let key = team.keys[kid] { return (team.teamID, key) } }
        return nil
    }

    /// Decodes and verifies an ES256 JWT; returns its `kid` and `iat`, or nil if anything is wrong.
    private func verifiedToken(_ jwt: String) -> (keyID: String, issuedAt: Int64)? {
        let parts = jwt.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = MockBase64URL.decode(parts[0]),
              let claimBytes = MockBase64URL.decode(parts[1]),
              let signature = MockBase64URL.decode(parts[2]), signature.count == 64,
              let header = MockJSON.parse(headerBytes), header.isObject,
              let claims = MockJSON.parse(claimBytes), claims.isObject,
              header["alg"]?.stringValue == "ES256",
              let kid = header["kid"]?.stringValue, let (teamID, key) = team(ofKey: kid),
              claims["iss"]?.stringValue == teamID,
              let issuedAt = claims["iat"]?.integerValue
        else { return nil }
        let message = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        return key.verify(message: message, signature: signature) ? (kid, issuedAt) : nil
    }

    private static func checkPayload(_ body: [UInt8], limit: Int, strict: Bool) throws(Rejection) {
        if body.isEmpty { throw Rejection(400, "PayloadEmpty") }
        if body.count > limit { throw Rejection(413, "PayloadTooLarge") }
        guard strict else { return }
        guard let json = MockJSON.parse(body), json["aps"]?.isObject == true else {
            throw Rejection(400, badPayloadReason)
        }
    }

    static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    static func isHexDigit(_ c: UInt8) -> Bool {
        isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }

    /// A random (version 4) UUID in lower case, the emulator's default `apns-id` /
    /// `apns-unique-id`: its own code, like the emulator's decoders, not the client's.
    public static func randomUUID() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (i, b) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(b >> 4)])
            text.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// 8-4-4-4-12 hex digits, either case, as Apple accepts in `apns-id`.
    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, c) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !isHexDigit(c) {
                return false
            }
        }
        return true
    }
}
