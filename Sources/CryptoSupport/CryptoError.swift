internal import Basics

/// Why a WebPush-style primitive (ECDH, HKDF, AES-GCM, random bytes) failed, with a code
/// callers switch on: a forged message and a malformed key call for different answers.
/// Equality is on the code (`CodedError`).
package struct CryptoError: CodedError {
    /// What went wrong, as a value: a struct over names so new codes do not break switches.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        private init(_ name: String) { self.name = name }
        package var description: String { name }

        /// A key is not a valid P-256 key: wrong length, no 0x04 prefix, off the curve, or a zero scalar.
        package static let invalidKey = Code("invalidKey")
        /// A parameter has the wrong size (AES key, nonce, HKDF output length).
        package static let invalidInput = Code("invalidInput")
        /// AES-GCM's tag did not verify: wrong key or nonce, or tampered ciphertext.
        package static let authenticationFailed = Code("authenticationFailed")
        /// OpenSSL itself failed (out of memory, broken provider).
        package static let operationFailed = Code("operationFailed")
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
