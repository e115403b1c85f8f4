/// Why a provider token was signed: the label of `relay_apns_provider_tokens_signed_total` and
/// of the log line each signing gets.
public struct ProviderTokenSigning: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    private init(_ name: String) { self.name = name }
    public var description: String { name }

    /// The first push of the process (or of a client) needed one.
    public static let firstUse = ProviderTokenSigning("first_use")
    /// The token was about 50 minutes old (`ProviderTokenPolicy.renewAfterSeconds`).
    public static let age = ProviderTokenSigning("age")
    /// Apple answered 403 ExpiredProviderToken to the current token.
    public static let expired = ProviderTokenSigning("expired")
    /// The key was replaced (SIGHUP).
    public static let keyRotation = ProviderTokenSigning("key_rotation")
}
