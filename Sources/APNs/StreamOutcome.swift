/// How a stream ended, as the connection saw it (`StreamOutcome.classify` reads Apple's answers),
/// which is what the pool decides on: complete, retry (on which connection, using a retry or
/// not), or let the answer stand.
enum StreamOutcome: Sendable, Equatable {
    /// 200.
    case success(APNsResponse)
    /// An answer that retrying cannot change (4xx, 429 TooManyRequests, TooManyProviderTokenUpdates:
    /// the shared token was refused, not the connection, which stays).
    case final(APNsResponse)
    /// REFUSED_STREAM, a reset stream: worth another connection.
    case retryable(APNsError)
    /// Apple's 500, 503 or Shutdown: worth another attempt; the answer stands when none is left.
    case retryableAnswer(APNsResponse)
    /// 403 ExpiredProviderToken, with a newer provider token to retry with (the connection
    /// asked `APNsCredentials`; without one it reports the answer as `.final`).
    case expiredProviderToken(APNsResponse)
    /// The push never left us: the connection was closing, going away or out of stream ids
    /// when it came to submit it. Requeued without using a retry; the connection takes no
    /// new streams and is replaced.
    case notSent(APNsError)
    /// The stream of a push that had already ended (its deadline passed) closed: it only frees
    /// its slot. `answered`: Apple answered on it, so the connection carried work.
    case late(answered: Bool)

    /// Whether Apple answered on the stream: a connection that was answered carried work.
    var answered: Bool {
        switch self {
        case .success, .final, .expiredProviderToken, .retryableAnswer: true
        case .retryable, .notSent: false
        case .late(let answered): answered
        }
    }

    static func classify(_ response: APNsResponse) -> StreamOutcome {
        if response.ok { return .success(response) }
        if response.reason == .expiredProviderToken { return .expiredProviderToken(response) }
        if response.status == 500 || response.status == 503 || response.reason == .shutdown
            || response.reason == .internalServerError || response.reason == .serviceUnavailable {
            return .retryableAnswer(response)
        }
        return .final(response)
    }

    /// The error a retried answer stands for while it is retried.
    static func unavailable(_ response: APNsResponse) -> APNsError {
        .unavailable("APNs answered \(response.status) \(response.reason?.rawValue ?? "no reason"); try again later")
    }
}

