// WebPushCrypto — what a WebPush sender (Mastodon) and receiver (an iOS notification
// service extension) do to a message: RFC 8291 `aes128gcm` and the legacy `aesgcm`
// draft. The relay itself never decrypts; this exists for the demo, the benchmark's
// realistic bodies and tests that prove forwarded messages still decrypt. The primitives
// under it (P-256 ECDH, HKDF, AES-GCM, random bytes) call libcrypto; not in the APNs product.

internal import Basics

/// Why a WebPush message could not be encrypted or decrypted, with a message that says
/// which input to fix: on a device the difference between "wrong keys" and "corrupted in
/// transit" decides whether to re-subscribe. Equality is on the code (`CodedError`).
package struct WebPushCryptoError: CodedError {
    package enum Code: String, NamedCode {
        /// A P-256 key is malformed or not on the curve.
        case invalidKey
        /// A salt, auth secret, record size or padding has an impossible value.
        case invalidParameter
        /// The plaintext (plus padding) does not fit the single record WebPush allows.
        case messageTooLarge
        /// A field that should be base64url (`m`, `s`, `k`) is not.
        case badBase64
        /// An aes128gcm header is truncated or inconsistent.
        case badHeader
        /// A record's tag did not verify: altered bytes, or keys that are not this subscription's.
        case decryptionFailed
        /// The decrypted record's padding or delimiter is wrong (a truncated or spliced message).
        case badPadding
        /// `e` names a content coding this code does not know.
        case unsupportedEncoding
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
