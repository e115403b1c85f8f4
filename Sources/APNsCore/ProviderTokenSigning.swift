/// Why a provider token was signed: the label of `relay_apns_provider_tokens_signed_total` and
/// of the log line each signing gets.
package struct ProviderTokenSigning: Sendable, Hashable, CustomStringConvertible {
    package let name: String
    private init(_ name: String) { self.name = name }
    package var description: String { name }

    /// The first push of the process (or of a client) needed one.
    package static let firstUse = ProviderTokenSigning("first_use")
    /// The token was about 50 minutes old (`ProviderTokenPolicy.renewAfterSeconds`).
    package static let age = ProviderTokenSigning("age")
    /// Apple answered 403 ExpiredProviderToken to the current token.
    package static let expired = ProviderTokenSigning("expired")
    /// The key was replaced (SIGHUP).
    package static let keyRotation = ProviderTokenSigning("key_rotation")
}
