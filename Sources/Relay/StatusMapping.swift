import APNs
import Basics

/// What the relay answers the sender for one push that reached the APNs client (docs/ARCHITECTURE.md §6).
///
/// A value, not a response: the mapping is the heart of the relay (a wrong 4xx unsubscribes a
/// user for good), so it is a pure function with a table test of its own.
package struct RelayAnswer: Sendable, Equatable {
    /// The HTTP status for the sender.
    package var status: Int
    /// One line saying what was wrong (nil for a 201). For a 410 it is Apple's reason as Apple
    /// spelled it (`Unregistered`), mirroring Apple's own `{reason, timestamp}` body.
    package var reason: String?
    /// Seconds for `Retry-After`, on 429 and 503 only: the sender may wait that long.
    package var retryAfter: Int?
    /// For a 410: since when the token is dead (Unix milliseconds), so the sender can tell a stale
    /// subscription from one re-registered after that moment.
    package var timestamp: Int64?
    /// The fault is ours (key, team, topic, a header we built): logged as an error and counted,
    /// because it fails every push until an operator fixes the deployment.
    package var misconfiguration: Bool

    package init(status: Int, reason: String? = nil, retryAfter: Int? = nil, timestamp: Int64? = nil,
                misconfiguration: Bool = false) {
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
        self.timestamp = timestamp
        self.misconfiguration = misconfiguration
    }

    /// The JSON body for a non-2xx answer: `{"reason":…}`, plus `"timestamp"` for a 410.
    package var jsonBody: String {
        JSONString.reasonBody(reason ?? "HTTP \(status)", timestamp: timestamp)
    }
}

/// Maps the APNs client's result to the relay's answer.
///
/// Retry-After values (seconds), chosen so a retry is likely to find the cause gone:
/// - 429 `TooManyRequests`: 60 — Apple throttles one device that got too many pushes in a row;
///   a minute lets it cool down (Mastodon's own back-off retries for ~10 minutes).
/// - 503 after Apple's 500/503/`Shutdown` or an unreachable Apple (`unavailable`): 30 — the
///   client has already retried on another connection; its reconnect back-off runs in that range.
/// - 503 when our queue is full (`overloaded`) or the relay is stopping (`shuttingDown`): 5 — a
///   burst passes in seconds, and a restarted relay (or its twin behind the proxy) is back as fast.
package enum StatusMapping {
    package static let retryAfterTooManyRequests = 60
    package static let retryAfterAppleUnavailable = 30
    package static let retryAfterOverloaded = 5

    /// - Parameter nowMilliseconds: the time for a 410 whose dead-since time Apple did not give
    ///   (400 `BadDeviceToken` carries none).
    package static func answer(for result: Result<APNsResponse, APNsError>, nowMilliseconds: Int64) -> RelayAnswer {
        switch result {
        case .success(let response):
            return answer(for: response, nowMilliseconds: nowMilliseconds)
        case .failure(let error):
            return answer(for: error)
        }
    }

    static func answer(for response: APNsResponse, nowMilliseconds: Int64) -> RelayAnswer {
        if response.ok { return RelayAnswer(status: 201) }
        let status = response.status
        let reason = response.reason
        let said = "APNs answered \(status)" + (reason.map { " \($0.rawValue)" } ?? "")

        // A dead token: 410 (any reason, Apple uses 410 for nothing else) or 400 BadDeviceToken.
        if status == 410 || reason?.category == .tokenDead {
            return RelayAnswer(status: 410, reason: reason?.rawValue ?? "Unregistered",
                               timestamp: response.goneSinceMs ?? nowMilliseconds)
        }
        // This device gets too many pushes. TooManyProviderTokenUpdates is also a 429, but ours.
        if status == 429 && reason != .tooManyProviderTokenUpdates {
            return RelayAnswer(status: 429, reason: "\(said): \(response.meaning) Retry later.",
                               retryAfter: retryAfterTooManyRequests)
        }
        // Apple's trouble (500, 503, Shutdown, IdleTimeout) that outlived the client's retries.
        if status >= 500 || reason?.category == .retryLater {
            return RelayAnswer(status: 503, reason: "\(said): \(response.meaning) Retry later.",
                               retryAfter: retryAfterAppleUnavailable)
        }
        // Everything else (403s, BadTopic, DeviceTokenNotForTopic, TopicDisallowed,
        // TooManyProviderTokenUpdates, PayloadTooLarge, any 400 about our headers, a reason we
        // do not know) is the relay's fault: never a 4xx, or every user would be unsubscribed.
        return RelayAnswer(status: 502,
                           reason: "\(said): \(response.meaning) The relay is misconfigured; the push was not delivered.",
                           misconfiguration: true)
    }

    static func answer(for error: APNsError) -> RelayAnswer {
        switch error.code {
        case .timeout:
            return RelayAnswer(status: 504, reason: "APNs did not answer before the push deadline: \(error.message)")
        case .overloaded:
            return RelayAnswer(status: 503, reason: "The relay is saturated: \(error.message)",
                               retryAfter: retryAfterOverloaded)
        case .shuttingDown:
            return RelayAnswer(status: 503, reason: "The relay is shutting down: \(error.message)",
                               retryAfter: retryAfterOverloaded)
        case .unavailable:
            return RelayAnswer(status: 503, reason: "APNs is unreachable: \(error.message)",
                               retryAfter: retryAfterAppleUnavailable)
        case .badKey, .invalidNotification:
            // Our key or our own request is wrong: no push can work until the relay is fixed.
            return RelayAnswer(status: 502, reason: "The relay is misconfigured: \(error.message)",
                               misconfiguration: true)
        default:
            // A failure kind this relay does not know yet: retryable, so no subscription is lost.
            return RelayAnswer(status: 503, reason: "APNs push failed (\(error.code)): \(error.message)",
                               retryAfter: retryAfterAppleUnavailable)
        }
    }
}
