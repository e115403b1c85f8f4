import Synchronization
internal import Encoders

/// The key id, team id and key that sign provider tokens, replaceable while the client runs.
///
/// Read once per token (a connection opening, a renewal), never per push: a replacement applies
/// to new connections and to renewals, and tokens already accepted stay valid until they are
/// renewed, as Apple keeps accepting them until the old key is revoked.
public final class APNsCredentials: Sendable {
    public struct Identity: Sendable {
        public var keyID: String
        public var teamID: String
        public var signer: any ProviderTokenSigner

        public init(keyID: String, teamID: String, signer: any ProviderTokenSigner) {
            self.keyID = keyID
            self.teamID = teamID
            self.signer = signer
        }
    }

    private let identity: Mutex<Identity>

    public init(_ identity: Identity) {
        self.identity = Mutex(identity)
    }

    /// What the next provider token is made from.
    public var current: Identity { identity.withLock { $0 } }

    /// Swaps in a new identity once it has signed a token; a key that cannot sign leaves the
    /// old identity in place and throws `badKey`.
    public func replace(with new: Identity) throws(APNsError) {
        try replace(with: new, unixTime: WallTime.unixSecondsNow)
    }

    /// `replace(with:)` signing at `unixTime` (Unix seconds), for tests with their own clock.
    public func replace(with new: Identity, unixTime: Int64) throws(APNsError) {
        _ = try ProviderToken(keyID: new.keyID, teamID: new.teamID, issuedAt: unixTime, signer: new.signer)
        identity.withLock { $0 = new }
    }
}
