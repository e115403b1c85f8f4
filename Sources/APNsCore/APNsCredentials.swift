import Synchronization
internal import Basics

/// The key id, team id and key that sign provider tokens, replaceable while the client runs, and
/// the one provider token they signed, shared by every connection of every environment.
///
/// Apple counts new tokens per team and key across all connections, refuses a new one sooner
/// than 20 minutes after the last (429 `TooManyProviderTokenUpdates`) and an old one after 60
/// (403 `ExpiredProviderToken`): "the same provider token should be re-used". So one token lives
/// here, not one per connection: signed at first use, replaced when its window ends (`policy`),
/// signed again once when Apple calls the current one expired, and signed at once when the key
/// is replaced. Its `iat` is the start of a shared wall-clock window and its signature is
/// deterministic, so another process with the same key (a replica, this one restarted) signs
/// the byte-identical token, and Apple counts it once. The token is a request header: a
/// connection picks up a new one with its next push, and no connection is ever replaced because
/// of its token.
package final class APNsCredentials: Sendable {
    package struct Identity: Sendable {
        package var keyID: String
        package var teamID: String
        package var signer: any ProviderTokenSigner

        package init(keyID: String, teamID: String, signer: any ProviderTokenSigner) {
            self.keyID = keyID
            self.teamID = teamID
            self.signer = signer
        }
    }

    /// The token a connection sends, with what it needs to tell when to ask again.
    package struct Current: Sendable {
        package let token: ProviderToken
        /// Changes with every new token; a connection compares it with `generation` below.
        package let generation: UInt64
        /// Set once per signing, on the first `current(now:)` after it: the caller reports it
        /// (counted and logged), so each signing is reported exactly once, with its reason.
        package let signed: ProviderTokenSigning?
        /// Unix seconds from which `current(now:)` replaces the token; until then a connection
        /// need not ask again unless `generation` changes.
        package let renewAt: Int64
    }

    private struct State {
        var identity: Identity
        var token: ProviderToken?
        var generation: UInt64 = 0
        /// When the last signing that Apple's refusal forced happened: at most one per
        /// `minimumIntervalSeconds`, so a wrong clock (every token refused) cannot loop.
        var lastForcedAt: Int64?
        var unreported: ProviderTokenSigning?
        /// When the token was first handed to a connection (nil until then): it is kept
        /// `policy.minimumIntervalSeconds` after that, however late in its window that was.
        var inUseSince: Int64?
    }

    private let state: Mutex<State>
    /// `State.generation`, readable without the lock: a connection's per-push check.
    private let published = Atomic<UInt64>(0)
    /// The tokens' `iat` and when they are replaced.
    package let policy: ProviderTokenPolicy

    package init(_ identity: Identity, policy: ProviderTokenPolicy = ProviderTokenPolicy()) {
        self.state = Mutex(State(identity: identity))
        self.policy = policy
    }

    /// What the next provider token is made from.
    package var current: Identity { state.withLock { $0.identity } }

    /// The generation of the token in use now; 0 before the first is signed.
    package var generation: UInt64 { published.load(ordering: .acquiring) }

    /// The token to send now: signed at first use, replaced once `policy` says it is due.
    /// - Throws: `APNsError.badKey` when no token exists and the key cannot sign one (a renewal
    ///   that fails keeps the current token, which Apple accepts until it is an hour old).
    package func current(now: Int64) throws(APNsError) -> Current {
        try state.withLock { state throws(APNsError) -> Current in
            if let token = state.token {
                if now >= policy.renewalTime(issuedAt: token.issuedAt, inUseSince: state.inUseSince ?? token.issuedAt) {
                    try? sign(&state, issuedAt: policy.issuedAt(now: now), reason: .age)
                }
            } else {
                try sign(&state, issuedAt: policy.issuedAt(now: now), reason: .firstUse)
            }
            let token = state.token!
            if state.inUseSince == nil { state.inUseSince = now }
            let signed = state.unreported
            state.unreported = nil
            return Current(token: token, generation: state.generation, signed: signed,
                           renewAt: policy.renewalTime(issuedAt: token.issuedAt, inUseSince: state.inUseSince!))
        }
    }

    /// Signs the first token now unless one exists, so a key that cannot sign fails at once (the
    /// client's start); its signing is reported by the first `current(now:)`.
    /// - Throws: `APNsError.badKey` when the key cannot sign.
    package func signFirstToken(now: Int64) throws(APNsError) {
        try state.withLock { state throws(APNsError) in
            if state.token == nil { try sign(&state, issuedAt: policy.issuedAt(now: now), reason: .firstUse) }
        }
    }

    /// Apple refused the token of `generation` as expired. Returns true when a newer token is
    /// there to retry with: signed now (`ProviderTokenSigning.expired`), or already signed by
    /// someone else. False when the refused token is the current one and Apple's refusal already
    /// forced a signing less than `policy.minimumIntervalSeconds` ago: a clock that is wrong makes
    /// every token look expired, and signing again would only trip Apple's rate limit.
    ///
    /// The token signed for the refusal has `iat` = `now`, not its window's start: the window's
    /// token is the one refused (Apple's clock is half an hour or more ahead of ours), so only a
    /// later `iat` can help. That token is this process's own; the next window's is shared again.
    package func refusedAsExpired(generation refused: UInt64, now: Int64) -> Bool {
        state.withLock { state in
            if state.generation != refused { return state.token != nil }
            guard policy.mayRenew(now: now, lastIssuedAt: state.lastForcedAt) else { return false }
            do { try sign(&state, issuedAt: now, reason: .expired) } catch { return false }
            state.lastForcedAt = now
            return true
        }
    }

    /// Swaps in a new identity and signs its token at once (every connection sends it with its
    /// next push); a key that cannot sign leaves the old identity and token in place and throws
    /// `badKey`. The same key, key id and team sign the token in use again, byte for byte: that
    /// is no new token, and nothing changes for the connections.
    package func replace(with new: Identity) throws(APNsError) {
        try replace(with: new, unixTime: WallTime.unixSecondsNow)
    }

    /// `replace(with:)` signing at `unixTime` (Unix seconds), for tests with their own clock.
    package func replace(with new: Identity, unixTime: Int64) throws(APNsError) {
        let token = try ProviderToken(keyID: new.keyID, teamID: new.teamID, issuedAt: policy.issuedAt(now: unixTime), signer: new.signer)
        state.withLock { state in
            state.identity = new
            install(token, in: &state, reason: .keyRotation)
            state.lastForcedAt = nil
        }
    }

    private func sign(_ state: inout State, issuedAt: Int64, reason: ProviderTokenSigning) throws(APNsError) {
        let identity = state.identity
        let token = try ProviderToken(keyID: identity.keyID, teamID: identity.teamID, issuedAt: issuedAt, signer: identity.signer)
        install(token, in: &state, reason: reason)
    }

    /// Makes `token` the one to send, unless it is the one sent already (the same bytes).
    private func install(_ token: ProviderToken, in state: inout State, reason: ProviderTokenSigning) {
        guard token != state.token else { return }
        state.token = token
        state.generation += 1
        state.unreported = reason
        state.inUseSince = nil
        published.store(state.generation, ordering: .releasing)
    }
}
