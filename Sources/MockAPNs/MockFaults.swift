/// One scripted misbehaviour of the emulator.
public enum MockFault: Sendable, Equatable {
    /// Answer with this status and Apple reason (a 410 also carries `timestamp` in milliseconds).
    case reject(status: Int, reason: String)
    /// Wait this long, then answer as if no fault applied.
    case delay(Duration)
    /// Never answer the stream.
    case neverAnswer
    /// Reset the stream with `REFUSED_STREAM`.
    case refuseStream

    /// 503 `{"reason":"ServiceUnavailable"}`: Apple's answer while the service is unavailable.
    public static let serviceUnavailable = MockFault.reject(status: 503, reason: "ServiceUnavailable")
}

/// Scripted faults: chosen by the device token's first hex digits, so that a test picks the
/// fault by picking the token, and the client under test cannot tell it from Apple.
///
/// Faults apply only to a request that passed every check (path, headers, provider token,
/// payload): a fault token in a malformed request gets the ordinary error.
///
/// The standard table (tokens stay 64+ hex digits, so the prefixes are hex too):
///
/// | prefix | fault |
/// | --- | --- |
/// | `dead` | 410 `Unregistered` + `timestamp` (ms) |
/// | `0ee0` | 410 `ExpiredToken` + `timestamp` (ms) |
/// | `0bad` | 400 `BadDeviceToken` |
/// | `d7f7` | 400 `DeviceTokenNotForTopic` |
/// | `4290` | 429 `TooManyRequests` |
/// | `5000` | 500 `InternalServerError` |
/// | `5030` | 503 `ServiceUnavailable` |
/// | `5031` | 503 `Shutdown` |
/// | `de1a` | answered normally after 2 s (set `byTokenPrefix["de1a"]` for another delay) |
/// | `0ff0` | never answered |
/// | `7e5e` | RST_STREAM `REFUSED_STREAM` |
///
/// `everyPush`, when set, is the fault of every push whatever its token (ahead of the table: a
/// service that is unavailable answers 503 to a dead token's push too), e.g. `.serviceUnavailable`
/// while Apple is unavailable (`MockAPNsServer.answerUnavailable`).
public struct MockFaults: Sendable {
    /// Lower-case hex prefix → fault; the longest matching prefix wins.
    public var byTokenPrefix: [String: MockFault]
    /// Delay every answer by this much (added to a prefix delay); nil for none.
    public var globalDelay: Duration?
    /// Send GOAWAY `Shutdown` after the Nth request on each connection (that request is answered).
    public var goAwayAfterRequests: Int?
    /// The fault of every push that passed the checks, ahead of `byTokenPrefix`; nil for none.
    public var everyPush: MockFault?

    public init(
        byTokenPrefix: [String: MockFault] = [:],
        globalDelay: Duration? = nil,
        goAwayAfterRequests: Int? = nil,
        everyPush: MockFault? = nil
    ) {
        self.byTokenPrefix = byTokenPrefix
        self.globalDelay = globalDelay
        self.goAwayAfterRequests = goAwayAfterRequests
        self.everyPush = everyPush
    }

    /// No faults at all: every valid request succeeds.
    public static let none = MockFaults()

    /// The table above.
    public static let standard = MockFaults(byTokenPrefix: standardTable)

    /// The prefixes of the standard table, named so tests need not repeat magic digits.
    public enum Prefix {
        public static let unregistered = "dead"
        public static let expiredToken = "0ee0"
        public static let badDeviceToken = "0bad"
        public static let deviceTokenNotForTopic = "d7f7"
        public static let tooManyRequests = "4290"
        public static let internalServerError = "5000"
        public static let serviceUnavailable = "5030"
        public static let shutdown = "5031"
        public static let delay = "de1a"
        public static let neverAnswer = "0ff0"
        public static let refuseStream = "7e5e"
    }

    static let standardTable: [String: MockFault] = [
        Prefix.unregistered: .reject(status: 410, reason: "Unregistered"),
        Prefix.expiredToken: .reject(status: 410, reason: "ExpiredToken"),
        Prefix.badDeviceToken: .reject(status: 400, reason: "BadDeviceToken"),
        Prefix.deviceTokenNotForTopic: .reject(status: 400, reason: "DeviceTokenNotForTopic"),
        Prefix.tooManyRequests: .reject(status: 429, reason: "TooManyRequests"),
        Prefix.internalServerError: .reject(status: 500, reason: "InternalServerError"),
        Prefix.serviceUnavailable: MockFault.serviceUnavailable,
        Prefix.shutdown: .reject(status: 503, reason: "Shutdown"),
        Prefix.delay: .delay(.seconds(2)),
        Prefix.neverAnswer: .neverAnswer,
        Prefix.refuseStream: .refuseStream,
    ]

    /// The fault for a (lower-cased) device token: `everyPush`, else the longest matching prefix's.
    func fault(forToken token: String) -> MockFault? {
        if let everyPush { return everyPush }
        var best: (length: Int, fault: MockFault)?
        for (prefix, fault) in byTokenPrefix where token.hasPrefix(prefix.lowercased()) {
            if let current = best, current.length >= prefix.count { continue }
            best = (prefix.count, fault)
        }
        return best?.fault
    }
}
