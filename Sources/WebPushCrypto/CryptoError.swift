internal import Basics

/// Why a WebPush-style primitive (ECDH, HKDF, AES-GCM, random bytes) failed, with a code
/// callers switch on: a forged message and a malformed key call for different answers.
/// Equality is on the code (`CodedError`).
package struct CryptoError: CodedError {
    /// What went wrong, as a value.
    package enum Code: String, NamedCode {
        /// A key is not a valid P-256 key: wrong length, no 0x04 prefix, off the curve, or a zero scalar.
        case invalidKey
        /// A parameter has the wrong size (AES key, nonce, HKDF output length).
        case invalidInput
        /// AES-GCM's tag did not verify: wrong key or nonce, or tampered ciphertext.
        case authenticationFailed
        /// OpenSSL itself failed (out of memory, broken provider).
        case operationFailed
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
