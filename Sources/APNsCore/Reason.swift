/// Why Apple refused a push.
///
/// A struct over an internal enum with `unknown`, so a reason Apple adds tomorrow still
/// parses (and is treated as our fault, never as a dead token).
public struct APNsReason: Sendable, Hashable, CustomStringConvertible {
    enum Known: String, CaseIterable {
        case badCollapseId = "BadCollapseId"
        case badDeviceToken = "BadDeviceToken"
        case badExpirationDate = "BadExpirationDate"
        case badMessageId = "BadMessageId"
        case badPriority = "BadPriority"
        case badTopic = "BadTopic"
        case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
        case duplicateHeaders = "DuplicateHeaders"
        case idleTimeout = "IdleTimeout"
        case invalidPushType = "InvalidPushType"
        case missingDeviceToken = "MissingDeviceToken"
        case missingTopic = "MissingTopic"
        case payloadEmpty = "PayloadEmpty"
        case topicDisallowed = "TopicDisallowed"
        case badCertificate = "BadCertificate"
        case badCertificateEnvironment = "BadCertificateEnvironment"
        case expiredProviderToken = "ExpiredProviderToken"
        case forbidden = "Forbidden"
        case invalidProviderToken = "InvalidProviderToken"
        case missingProviderToken = "MissingProviderToken"
        case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
        case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
        case badPath = "BadPath"
        case methodNotAllowed = "MethodNotAllowed"
        case expiredToken = "ExpiredToken"
        case unregistered = "Unregistered"
        case payloadTooLarge = "PayloadTooLarge"
        case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
        case tooManyRequests = "TooManyRequests"
        case internalServerError = "InternalServerError"
        case serviceUnavailable = "ServiceUnavailable"
        case shutdown = "Shutdown"
    }

    enum Value: Hashable {
        case known(Known)
        case unknown(String)
    }

    let value: Value

    /// Parses Apple's reason string; anything unrecognised is kept as `unknown`.
    public init(_ rawValue: String) {
        if let known = Known(rawValue: rawValue) { value = .known(known) } else { value = .unknown(rawValue) }
    }

    init(_ known: Known) { value = .known(known) }

    /// Apple's spelling, for logs and the relay's JSON.
    public var rawValue: String {
        switch value {
        case .known(let k): k.rawValue
        case .unknown(let s): s
        }
    }

    public var description: String { rawValue }

    /// True when this is not one of the reasons Apple documents.
    public var isUnknown: Bool { if case .unknown = value { true } else { false } }

    // One constant per reason in Apple's table, so callers compare without spelling strings;
    // `meaning` and `category` below say what each one is.

    /// See ``meaning``.
    public static let badCollapseId = APNsReason(.badCollapseId)
    public static let badDeviceToken = APNsReason(.badDeviceToken)
    public static let badExpirationDate = APNsReason(.badExpirationDate)
    public static let badMessageId = APNsReason(.badMessageId)
    public static let badPriority = APNsReason(.badPriority)
    public static let badTopic = APNsReason(.badTopic)
    public static let deviceTokenNotForTopic = APNsReason(.deviceTokenNotForTopic)
    public static let duplicateHeaders = APNsReason(.duplicateHeaders)
    public static let idleTimeout = APNsReason(.idleTimeout)
    public static let invalidPushType = APNsReason(.invalidPushType)
    public static let missingDeviceToken = APNsReason(.missingDeviceToken)
    public static let missingTopic = APNsReason(.missingTopic)
    public static let payloadEmpty = APNsReason(.payloadEmpty)
    public static let topicDisallowed = APNsReason(.topicDisallowed)
    public static let badCertificate = APNsReason(.badCertificate)
    public static let badCertificateEnvironment = APNsReason(.badCertificateEnvironment)
    public static let expiredProviderToken = APNsReason(.expiredProviderToken)
    public static let forbidden = APNsReason(.forbidden)
    public static let invalidProviderToken = APNsReason(.invalidProviderToken)
    public static let missingProviderToken = APNsReason(.missingProviderToken)
    public static let unrelatedKeyIdInToken = APNsReason(.unrelatedKeyIdInToken)
    public static let badEnvironmentKeyIdInToken = APNsReason(.badEnvironmentKeyIdInToken)
    public static let badPath = APNsReason(.badPath)
    public static let methodNotAllowed = APNsReason(.methodNotAllowed)
    public static let expiredToken = APNsReason(.expiredToken)
    public static let unregistered = APNsReason(.unregistered)
    public static let payloadTooLarge = APNsReason(.payloadTooLarge)
    public static let tooManyProviderTokenUpdates = APNsReason(.tooManyProviderTokenUpdates)
    public static let tooManyRequests = APNsReason(.tooManyRequests)
    public static let internalServerError = APNsReason(.internalServerError)
    public static let serviceUnavailable = APNsReason(.serviceUnavailable)
    public static let shutdown = APNsReason(.shutdown)

    /// Not Apple's: a push of `sendMany` that never reached Apple; the result's `meaning` says why.
    public static let notSent = APNsReason("NotSent")

    /// Every reason Apple documents, for tables and tests.
    public static var allKnown: [APNsReason] { Known.allCases.map(APNsReason.init) }

    /// What the caller should do about a push's outcome.
    public enum Category: String, Sendable, Hashable {
        /// Apple accepted the push.
        case delivered
        /// The token will never work again: forget the subscription.
        case tokenDead
        /// Apple or the device is busy: try again later, keep the subscription.
        case retryLater
        /// Our credentials, key, topic or environment are wrong: fix the relay, keep every subscription.
        case configurationError
        /// Our request broke a protocol rule: a bug in the relay, keep the subscription.
        case malformedRequest
    }

    /// Unknown reasons count as our fault: guessing "dead token" could unsubscribe every user.
    public var category: Category {
        guard case .known(let k) = value else { return .configurationError }
        switch k {
        case .badDeviceToken, .unregistered, .expiredToken:
            return .tokenDead
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout:
            return .retryLater
        case .badTopic, .deviceTokenNotForTopic, .topicDisallowed, .badCertificate, .badCertificateEnvironment,
            .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken,
            .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .tooManyProviderTokenUpdates:
            return .configurationError
        case .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .duplicateHeaders,
            .invalidPushType, .missingDeviceToken, .missingTopic, .payloadEmpty, .badPath,
            .methodNotAllowed, .payloadTooLarge:
            return .malformedRequest
        }
    }

    /// The subscription behind this token should be deleted: the token is dead (BadDeviceToken,
    /// Unregistered, ExpiredToken) or belongs to another app (DeviceTokenNotForTopic), so no
    /// push to it can ever arrive. The library's rule, which `APNsResponse.removeToken` follows;
    /// the relay answers by its own status table (DeviceTokenNotForTopic there is a 502).
    public var removeToken: Bool { category == .tokenDead || self == .deviceTokenNotForTopic }

    /// One line, after Apple's table "Handling notification responses from APNs".
    public var meaning: String {
        guard case .known(let k) = value else { return "APNs gave a reason this relay does not know: \(rawValue)" }
        switch k {
        case .badCollapseId: return "The collapse identifier is longer than Apple allows."
        case .badDeviceToken: return "The device token is invalid, or belongs to the other environment (sandbox vs production)."
        case .badExpirationDate: return "The apns-expiration value is invalid."
        case .badMessageId: return "The apns-id value is invalid."
        case .badPriority: return "The apns-priority value is invalid."
        case .badTopic: return "The apns-topic value is invalid."
        case .deviceTokenNotForTopic: return "The device token does not belong to the given topic."
        case .duplicateHeaders: return "A header was sent more than once."
        case .idleTimeout: return "The connection sat idle too long."
        case .invalidPushType: return "The apns-push-type value is invalid."
        case .missingDeviceToken: return "The :path holds no device token."
        case .missingTopic: return "The apns-topic header is missing but required."
        case .payloadEmpty: return "The payload is empty."
        case .topicDisallowed: return "Pushing to this topic is not allowed."
        case .badCertificate: return "The client certificate is invalid."
        case .badCertificateEnvironment: return "The client certificate is for the other environment."
        case .expiredProviderToken: return "The provider token is too old; make a new one."
        case .forbidden: return "The action is not allowed."
        case .invalidProviderToken: return "The provider token is invalid or its signature does not verify."
        case .missingProviderToken: return "No certificate and no provider token in the authorization header."
        case .unrelatedKeyIdInToken: return "The key id in the provider token does not match the connection's earlier token."
        case .badEnvironmentKeyIdInToken: return "The key id in the provider token is not valid for this environment."
        case .badPath: return "The request :path is invalid."
        case .methodNotAllowed: return "The request method was not POST."
        case .expiredToken: return "The device token has expired."
        case .unregistered: return "The device token is no longer active for the topic."
        case .payloadTooLarge: return "The payload is larger than Apple allows."
        case .tooManyProviderTokenUpdates: return "The provider token was renewed too often (at most once every 20 minutes)."
        case .tooManyRequests: return "Too many pushes in a row to the same device token."
        case .internalServerError: return "APNs had an internal error."
        case .serviceUnavailable: return "APNs is unavailable."
        case .shutdown: return "The APNs server is shutting down."
        }
    }
}
