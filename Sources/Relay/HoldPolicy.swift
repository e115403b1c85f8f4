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

    /// What a held push's try means for it.
    package enum Retry: Equatable, Sendable {
        /// Apple accepted it: it leaves the store.
        case delivered
        /// Apple refused it for good (a dead token, a request it can never take), or the client
        /// refused to send it: it leaves the store, counted, and the subscription hears of a
        /// dead token at its next live push.
        case refused
        /// Apple answered a 4xx that a later try or the operator may fix (429, the key or topic
        /// refused): it stays, leased, so the next try takes the push behind it; it is due again
        /// when the lease runs out, until its TTL. The next pushes likely meet the same answer:
        /// delivery slows to a try a second until one goes.
        case later
        /// Written to Apple and not answered by its deadline: Apple may have it. It stays, leased
        /// like `later`; Apple took the push, so delivery goes on at full pace with the others.
        case unanswered
        /// It never reached Apple, or Apple's servers failed it (5xx): it goes back first in line.
        case back
    }

    /// The rule for a held push's try. Nothing Apple could take later is ever dropped here: only
    /// expiry and the device cap drop what was answered 201.
    package static func retry(after result: Result<APNsResponse, APNsError>) -> Retry {
        switch result {
        case .success(let response):
            if response.ok { return .delivered }
            if response.status >= 500 { return .back }
            switch response.reason?.category {
            case .tokenDead?, .malformedRequest?: return .refused
            default: return .later
            }
        case .failure(let error):
            if error.wasWritten { return .unanswered }
            // The client's own rules refuse it (the push, not the relay): no try can send it.
            return error.code == .invalidNotification ? .refused : .back
        }
    }
}
