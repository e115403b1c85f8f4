internal import Basics

/// Why a provider token was signed: the label of `relay_apns_provider_tokens_signed_total` and
/// of the log line each signing gets.
package enum ProviderTokenSigning: String, NamedCode {
    /// The first push of the process (or of a client) needed one.
    case firstUse = "first_use"
    /// The token's window ended (`ProviderTokenPolicy.renewalTime`).
    case age
    /// Apple answered 403 ExpiredProviderToken to the current token.
    case expired
    /// The key was replaced (SIGHUP).
    case keyRotation = "key_rotation"
}
