internal import Basics

/// A TLS failure with a code callers switch on and a message that says what to do,
/// because "handshake failed" alone leaves an operator guessing. Equality is on the code
/// (`CodedError`).
package struct TLSError: CodedError {
    /// What went wrong, as a value.
    package enum Code: String, NamedCode {
        /// The peer's certificate chain did not verify (unknown issuer, expired, …); `verifyResult` says which.
        case certificateVerificationFailed
        /// The certificate is valid but not for the host name (or IP address) we dialled.
        case hostnameMismatch
        /// The handshake finished without HTTP/2 negotiated, or the peer refused every protocol we offered.
        case noALPN
        /// The peer closed the TLS session (close_notify or EOF) before we were done.
        case peerClosed
        /// Any other handshake failure; the message carries OpenSSL's reason.
        case handshakeFailed
        /// A context, certificate, key or CA could not be loaded.
        case badConfiguration
        /// A server context's private key is not the one its (first) certificate was made for.
        case keyMismatch
        /// Bad TLS data after the handshake (a corrupt record, an unexpected alert).
        case protocolError
        /// Plaintext was written before the handshake completed: a bug in the caller.
        case notEstablished
    }

    package let code: Code
    /// OpenSSL's X509 verify result (`X509_V_ERR_*`) for `.certificateVerificationFailed` and
    /// `.hostnameMismatch`, e.g. 20 (`X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY`) for an
    /// untrusted CA; 0 (`X509_V_OK`) otherwise.
    package let verifyResult: Int
    package let message: String

    package init(_ code: Code, _ message: String, verifyResult: Int = 0) {
        self.code = code
        self.verifyResult = verifyResult
        self.message = message
    }

    package var description: String { "TLS \(code): \(message)" }
}
