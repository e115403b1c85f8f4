/// Which of Apple's answers a push is sent again after, how many times and how soon.
///
/// Apple's 500, 503 and `Shutdown` always are (another connection may be fine); a lost
/// connection or a refused stream too; ExpiredProviderToken renews the token and retries once,
/// whatever the policy. When the retries run out, Apple's last answer is the result.
package struct APNsRetryPolicy: Sendable, Hashable {
    /// Extra attempts after a retryable answer or a lost connection.
    package var maxRetries: Int
    /// Whether 429 TooManyRequests (one device pushed too often) is retried too.
    package var retriesTooManyRequests: Bool
    /// A retried answer waits this long times the attempt (1st retry × 1, 2nd × 2), and is not
    /// retried when that wait would pass the push's deadline.
    package var delayPerAttempt: Duration

    package init(maxRetries: Int = 2, retriesTooManyRequests: Bool = true, delayPerAttempt: Duration = .milliseconds(500)) {
        self.maxRetries = maxRetries
        self.retriesTooManyRequests = retriesTooManyRequests
        self.delayPerAttempt = delayPerAttempt
    }

    /// The library's: 500/503/Shutdown and 429 up to 2 times, 0.5 s × attempt.
    package static let library = APNsRetryPolicy()

    /// The relay's: a 429 goes back to the sender at once (it has its own Retry-After), and a
    /// retry goes out at once on another connection, because Mastodon waits at most 10 s.
    package static let relay = APNsRetryPolicy(maxRetries: 2, retriesTooManyRequests: false, delayPerAttempt: .zero)
}
