import APNs

/// Which pushes the relay keeps on disk when Apple could not take them (README "When Apple is
/// out of reach"): a pure function of the client's result, tested as a table.
///
/// Held: no answer from Apple at all (`unavailable`: no usable connection and connecting
/// failed, or the connection ended before an answer; `timeout`: the push deadline passed,
/// written or not — a written push Apple did not answer may have reached it, but the sender
/// would have sent it again after a 504 all the same) and Apple's own trouble after the
/// client's retries (a 5xx: 500, 503 `ServiceUnavailable`, `Shutdown`). Never held: anything
/// Apple answered with a 4xx (the status table stands: a dead token must be heard), and what the
/// relay refuses itself (its queue full, its own shutdown, a push it could not build).
package enum HoldPolicy {
    /// What the push's log line says about why it was held; nil when the answer stands.
    package static func reason(for result: Result<APNsResponse, APNsError>) -> String? {
        switch result {
        case .success(let response):
            guard response.status >= 500 else { return nil }
            return "APNs answered \(response.status)" + (response.reason.map { " \($0.rawValue)" } ?? "")
        case .failure(let error):
            switch error.code {
            case .unavailable: return "APNs is unreachable: \(error.message)"
            case .timeout: return "APNs did not answer before the push deadline: \(error.message)"
            default: return nil
            }
        }
    }

    /// Whether a held push that was sent again is done with: Apple answered it (accepted, or
    /// refused for good with a 4xx). Anything else puts it back in the store.
    package static func isSettled(_ result: Result<APNsResponse, APNsError>) -> Bool {
        if case .success(let response) = result { return response.status < 500 }
        return false
    }
}
