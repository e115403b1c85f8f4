/// A TLS failure with a code callers switch on and a message that says what to do,
/// because "handshake failed" alone leaves an operator guessing.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value: a struct over names rather than a public enum so
    /// new codes do not break callers' switches.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The peer's certificate chain did not verify (unknown issuer, expired, …).
        public static let certificateVerificationFailed = Code("certificateVerificationFailed")
        /// The certificate is valid but not for the host name (or IP address) we dialled.
        public static let hostnameMismatch = Code("hostnameMismatch")
        /// The handshake finished without HTTP/2 negotiated, or the peer refused every protocol we offered.
        public static let noALPN = Code("noALPN")
        /// The peer closed the TLS session (close_notify or EOF) before we were done.
        public static let peerClosed = Code("peerClosed")
        /// Any other handshake failure; the message carries OpenSSL's reason.
        public static let handshakeFailed = Code("handshakeFailed")
        /// A context, certificate, key or CA could not be loaded.
        public static let badConfiguration = Code("badConfiguration")
        /// Bad TLS data after the handshake (a corrupt record, an unexpected alert).
        public static let protocolError = Code("protocolError")
        /// Plaintext was written before the handshake completed: a bug in the caller.
        public static let notEstablished = Code("notEstablished")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "TLS \(code): \(message)" }
}
